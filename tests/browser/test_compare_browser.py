"""The compare pages in headless Chromium, built from the recorded results of tests/support/compare.py: the
threshold slider moves the sweet spot, a legend click hides a version, the metric switch, sorting, no errors."""

from __future__ import annotations

import json
import re

import pytest
from support.browser import (
    assert_charts_drawn,
    assert_no_mark_outside_its_frame,
    column,
    html_pages,
    open_page,
    visit_pages,
)

pytestmark = pytest.mark.browser

PAGE = "reports/tiny-compare/compare-fp32-vs-int8-static.html"
RESULTS = "[data-chart='chart-compare-results']"


# One open compare page for the module's tests of its controls (a load with its five charts was about 1.5 s on 2
# cores): each test works one chart's control and reads only that chart, or its own threshold's text and table,
# and puts a hidden version back; the shared Visit holds every console error of the page's whole life.
@pytest.fixture(scope="module")
def results_page(chromium, compare_url):
    context, page, visit = open_page(chromium, compare_url + PAGE)
    page.wait_for_function(f"() => document.querySelector(\"{RESULTS}\").__perfsiteView !== undefined")
    yield page, visit
    context.close()


def _view_data(page, chart: str, dataset: str) -> list[dict]:
    """The data behind a mark of a rendered chart, read from its Vega view (perfsite.js exposes it)."""
    script = f"""() => document.querySelector("[data-chart='{chart}']").__perfsiteView
        .data("{dataset}").map(item => item.datum)"""
    return page.evaluate(script)


def _points(page) -> list[dict]:
    """The results chart's inline data: every ok trial of every version."""
    text = page.locator(f"{RESULTS} + script").text_content()
    return json.loads(text)[0]["data"]["values"]


def _expected_spot(points: list[dict], threshold: float) -> str | None:
    """The sweet spot as generator.analysis picks it: highest throughput within the threshold, ties to the
    lower latency, then the trial key."""
    under = [p for p in points if p["latency_ms"] <= threshold]
    best = min(under, key=lambda p: (-p["throughput_ips"], p["latency_ms"], p["key"]), default=None)
    return best["key"] if best else None


CONTROL = ".perfsite-threshold:has(+ [data-chart='chart-compare-results'])"


def _set_threshold(page, value: float) -> None:
    """Type the threshold into the control's number field, as a reader would."""
    page.locator(f"{CONTROL} input[type=number]").fill(str(value))
    page.wait_for_function(f"""() => Math.abs(document.querySelector("{RESULTS}").__perfsiteView
        .signal('latency_threshold') - {value}) < 1e-9""")


def _spot(page) -> str | None:
    spots = _view_data(page, "chart-compare-results", "sweet_spot_marks")
    assert len(spots) <= 1
    return spots[0]["key"] if spots else None


def test_every_compare_page_renders_without_errors_or_network(chromium, compare_site, compare_url):
    pages = [p for p in html_pages(compare_site) if "/compare-" in p]
    assert PAGE in pages and "reports/tiny-compare/compare-fp32-vs-best.html" in pages
    for url, page, visit in visit_pages(chromium, [compare_url + rel for rel in pages]):
        rel = url.removeprefix(compare_url)
        assert assert_charts_drawn(page, rel) == 5
        assert_no_mark_outside_its_frame(page, rel)
        assert not visit.errors, f"{rel}: console errors {visit.errors}"
        assert not visit.foreign_requests(), f"{rel}: {visit.foreign_requests()}"


def test_the_threshold_control_moves_the_sweet_spot_and_the_text_and_table_follow(results_page):
    page, visit = results_page
    points = _points(page)
    initial = page.evaluate(f"() => document.querySelector(\"{RESULTS}\").__perfsiteView.signal('latency_threshold')")
    assert initial == 6.0  # the spec's latency_threshold_ms
    assert page.locator(f"{CONTROL} input[type=number]").input_value() == "6"
    first = _spot(page)
    assert first == _expected_spot(points, initial)
    # A typed threshold just under the sweet spot's latency excludes it: the spot, the sentence and the
    # version's row in the table move to another point.
    latency = next(p["latency_ms"] for p in points if p["key"] == first)
    lower = round(latency * 0.995, 6)
    _set_threshold(page, lower)
    moved = _spot(page)
    assert moved != first and moved == _expected_spot(points, lower)
    spot = next(p for p in points if p["key"] == moved)
    sentence = page.locator("[data-perfsite-threshold='chart-compare-results'][data-role='sentence']").inner_text()
    assert f"under {lower:.3g}" in sentence and spot["version"] in sentence and spot["label"] in sentence
    rows = page.locator("[data-perfsite-threshold='chart-compare-results'][data-role='table'] tbody tr")
    cells = {rows.nth(i).locator("td").first.inner_text(): rows.nth(i).locator("td").nth(1).inner_text()
             for i in range(rows.count())}
    assert cells[spot["version"]] == spot["label"]
    # The slider is logarithmic and reaches below every latency: no sweet spot, and the page says so.
    slider = page.locator(f"{CONTROL} input[type=range]")
    slider.evaluate("el => { el.value = '0'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    bottom = page.evaluate(f"() => document.querySelector(\"{RESULTS}\").__perfsiteView.signal('latency_threshold')")
    assert bottom < min(p["latency_ms"] for p in points) / 1.9
    signal = f"document.querySelector(\"{RESULTS}\").__perfsiteView.signal('latency_threshold')"
    page.wait_for_function(f"() => {signal} === {bottom}")
    assert _spot(page) is None
    assert _view_data(page, "chart-compare-results", "no_sweet_spot_marks")
    assert "No configuration meets" in page.locator(
        "[data-perfsite-threshold='chart-compare-results'][data-role='sentence']").inner_text()
    assert set(cells) == {page.locator(
        "[data-perfsite-threshold='chart-compare-results'][data-role='table'] tbody tr").nth(i).locator("td").first
        .inner_text() for i in range(rows.count())}
    assert rows.nth(0).locator("td").nth(1).inner_text() == "none under the threshold"
    assert not visit.errors


def test_a_legend_click_hides_and_shows_a_version(results_page):
    page, visit = results_page
    before = {d["version"] for d in _view_data(page, "chart-compare-results", "points_marks")}
    assert before == {"fp32", "int8-static", "int8-dyn"}
    legend = page.locator(f"{RESULTS} .role-legend-label text", has_text="int8-dyn")
    legend.click()
    shown = {d["version"] for d in _view_data(page, "chart-compare-results", "points_marks")}
    assert shown == {"fp32", "int8-static"}
    assert page.locator(f"{RESULTS} .role-legend-label text", has_text="int8-dyn (hidden)").count() == 1
    page.locator(f"{RESULTS} .role-legend-label text", has_text="int8-dyn").click()
    assert {d["version"] for d in _view_data(page, "chart-compare-results", "points_marks")} == before
    assert not visit.errors


def test_inference_time_switches_between_throughput_and_latency(results_page):
    page, visit = results_page
    chart = "chart-compare-time"
    assert {d["metric"] for d in _view_data(page, chart, "time_bars_marks")} == {"throughput"}
    page.locator(f"[data-chart='{chart}'] input[type=radio][value=latency]").check()
    page.wait_for_function(f"""() => document.querySelector("[data-chart='{chart}']").__perfsiteView
        .data('time_bars_marks').every(item => item.datum.metric === 'latency')""")
    assert len(_view_data(page, chart, "time_bars_marks")) == 2
    assert not visit.errors


def test_layer_types_leave_the_distribution_on_a_legend_click(results_page):
    page, visit = results_page
    chart = "chart-compare-layer-types"
    types = [d["op_type"] for d in _view_data(page, chart, "layer_types_marks")]
    first = types[0]
    page.locator(f"[data-chart='{chart}'] .role-legend-label text", has_text=re.compile(f"^{re.escape(first)}$"))\
        .click()
    after = _view_data(page, chart, "layer_types_marks")
    assert first not in {d["op_type"] for d in after} and after
    shares = {}
    for d in after:
        shares[d["run"]] = shares.get(d["run"], 0) + d["share"]
    assert all(abs(total - 1) < 1e-6 for total in shares.values() if total)  # shares of what is shown
    assert not visit.errors


def test_clicking_a_header_sorts_the_layer_type_table(results_page):
    page, visit = results_page
    table = page.locator("article table", has=page.locator("th", has_text="Nodes by precision, A"))
    before = column(page, table, "Time B (µs)")
    table.locator("th", has_text="Time B (µs)").click()
    after = column(page, table, "Time B (µs)")
    figures = [float(v.replace(",", "")) for v in after if v != "—"]
    assert sorted(after) == sorted(before)
    assert figures in (sorted(figures), sorted(figures, reverse=True))
    table.locator("th", has_text="Time B (µs)").click()
    assert column(page, table, "Time B (µs)") == list(reversed(after))
    assert not visit.errors
