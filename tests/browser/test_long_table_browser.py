"""A large model's profile page opened from file:// in headless Chromium: its long tables turn pages, loading
their rows from the data files with script tags (fetch is refused for file://), with no console error."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

STATUS = ".perfsite-long-table[data-table='{}'] .perfsite-pager-status"


def _details(page):
    """The Layer details table (the page's second long table, in execution order) and its pager."""
    pager = page.locator(".perfsite-long-table[data-table='profile-a.table-2']")
    table = page.locator("article table").filter(has=page.locator("th", has_text="Data time"))
    return pager, table


def _first_cells(table) -> list[str]:
    return [c.strip() for c in table.locator("tbody tr td:nth-child(1)").all_inner_texts()]


def test_long_tables_turn_pages_from_file_urls(chromium, large_model_site):
    page = chromium.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((large_model_site / "reports" / "chain" / "profile-a.html").as_uri(), wait_until="load")
    pager, table = _details(page)
    rows = int(pager.get_attribute("data-rows"))
    status = page.locator(STATUS.format("profile-a.table-2"))
    page.wait_for_function("document.querySelectorAll('.perfsite-pager-status').length === 2")
    assert status.inner_text() == f"Rows 1–100 of {rows:,}"
    assert _first_cells(table)[:2] == ["0", "1"] and len(_first_cells(table)) == 100
    assert pager.get_by_role("button", name="‹ Previous").is_disabled()

    pager.get_by_role("button", name="Next ›").click()
    page.wait_for_function(f"document.querySelector(\"{STATUS.format('profile-a.table-2')}\")"
                           ".textContent.startsWith('Rows 101')")
    assert _first_cells(table)[0] == "100" and len(_first_cells(table)) == 100
    # Right-aligned columns stay right-aligned in the rows the script wrote.
    assert table.locator("tbody tr:first-child td:nth-child(1)").evaluate("td => td.style.textAlign") == "right"

    pager.get_by_role("button", name="Last »").click()
    last_first = (rows - 1) // 100 * 100
    page.wait_for_function(f"document.querySelector(\"{STATUS.format('profile-a.table-2')}\")"
                           f".textContent === 'Rows {last_first + 1:,}–{rows:,} of {rows:,}'")
    assert _first_cells(table)[0] == f"{last_first:,}" and len(_first_cells(table)) == rows - last_first
    assert pager.get_by_role("button", name="Next ›").is_disabled()
    assert not errors, errors
    page.close()
