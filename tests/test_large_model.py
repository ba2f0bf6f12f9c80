"""Pages of a model with thousands of nodes stay small (issue 13, item 11): long tables keep their first page
in the page and every row in data files, charts draw at most a few hundred marks, no file is over 3 MB.

bench/large_model_page.py builds the same kind of site for a 20,000-node model and times opening it in Chromium.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.models import LARGE_MODEL_NODES

from generator.site.charts_profile import ROOFLINE_POINTS
from generator.site.charts_timeline import TIMELINE_CALLS
from generator.site.long_tables import CHUNK_ROWS, LONG_TABLE_ROWS, PAGE_ROWS, cell_html, page_long_tables

MAX_FILE_BYTES = 3 * 1024 * 1024
DATA_CALL = re.compile(r"^perfsiteLongTable\((\"[^\"]+\"), (\d+), (.*)\);\n$", re.S)


def _rows(files: list[Path]) -> list[list[str]]:
    rows: list[list[str]] = []
    for path in sorted(files, key=lambda p: int(p.name.rsplit(".", 2)[1])):
        match = DATA_CALL.match(path.read_text(encoding="utf-8"))
        assert match, path
        rows += json.loads(match.group(3))
    return rows


def _chart_data(html: str, chart_id: str) -> list[dict]:
    text = html.split(f'id="{chart_id}">', 1)[1].split("</script>", 1)[0]
    spec = json.loads(text)[0]
    datasets = [spec.get("data", {}).get("values") or []] + [lay.get("data", {}).get("values") or []
                                                           for lay in spec.get("layer", [])]
    return max(datasets, key=len)


def test_no_file_of_a_large_models_site_is_over_3_mb(large_model_site):
    sizes = {p.relative_to(large_model_site).as_posix(): p.stat().st_size
             for p in large_model_site.rglob("*") if p.is_file()}
    over = {name: size for name, size in sizes.items() if size > MAX_FILE_BYTES}
    assert not over, over
    # Pages do not grow with the model: each long table shows one page of rows.
    for page in ("reports/chain/profile-a.html", "reports/chain/compare-a-vs-b.html"):
        assert sizes[page] < 1024 * 1024, (page, sizes[page])


def test_long_tables_show_a_page_and_keep_every_row_in_data_files(large_model_site):
    folder = large_model_site / "reports" / "chain"
    html = (folder / "profile-a.html").read_text(encoding="utf-8")
    # The layer results and the layer details: one row per executed node (the chain's nodes; the graph's
    # output Identity may be folded away by onnxruntime).
    for table in ("profile-a.table-1", "profile-a.table-2"):
        assert f'data-table="{table}"' in html
        rows = _rows(list(folder.glob(f"{table}.*.js")))
        assert LARGE_MODEL_NODES <= len(rows) <= LARGE_MODEL_NODES + 1
        assert f'data-rows="{len(rows)}"' in html
        assert all(len(r) == len(rows[0]) for r in rows)
    assert html.count('class="perfsite-long-table"') == 2
    compare = (folder / "compare-a-vs-b.html").read_text(encoding="utf-8")
    assert 'data-table="compare-a-vs-b.table-1"' in compare


def test_large_charts_are_limited(large_model_site):
    html = (large_model_site / "reports" / "chain" / "profile-a.html").read_text(encoding="utf-8")
    roofline = _chart_data(html, "chart-roofline-1")
    # A node has a place on the roofline when its time, less the profiler's own cost a call, is above 0: the
    # chain's nodes take a few µs, about that cost, so how many keep a time depends on the calibration (393 of
    # 2,400 once beside busy neighbours). Past ROOFLINE_POINTS, the shortest are one combined point.
    combined = re.search(r"The ([\d,]+) shortest nodes are one combined point", " ".join(html.split()))
    if combined:
        assert len(roofline) == ROOFLINE_POINTS + 1
        assert roofline[-1]["node"] == f"{combined.group(1)} shorter nodes, combined", roofline[-1]
    else:
        assert len(roofline) <= ROOFLINE_POINTS and not any("combined" in p["node"] for p in roofline)
    assert len(_chart_data(html, "chart-timeline-1")) == TIMELINE_CALLS
    assert f"draws the {TIMELINE_CALLS:,} longest" in html


def _table(rows: int, indent: str = "") -> str:
    lines = [f"{indent}| Node | Time (µs) |", f"{indent}|---|--:|"]
    lines += [f"{indent}| **n&#60;{i}&#62;** | {i} |" for i in range(rows)]
    return "\n".join(lines)


def test_short_tables_are_left_as_they_are():
    markdown = f"# Page\n\n{_table(LONG_TABLE_ROWS)}\n\ntext\n"
    assert page_long_tables(markdown, "reports/x/profile-a.md") == (markdown, ())


def test_a_long_table_keeps_its_header_and_first_page_and_splits_its_rows_into_data_files():
    rows = 2 * CHUNK_ROWS + 7
    markdown, files = page_long_tables(f"# Page\n\n{_table(rows)}\n\nafter\n", "reports/x/profile-a.md")
    kept = [line for line in markdown.splitlines() if line.startswith("| **n")]
    assert len(kept) == PAGE_ROWS and kept[0] == "| **n&#60;0&#62;** | 0 |"
    assert [path for path, _ in files] == [f"reports/x/profile-a.table-1.{k}.js" for k in range(3)]
    assert '<div class="perfsite-long-table" data-table="profile-a.table-1" data-rows="4007"' in markdown
    # Markdown links to the data files, so mkdocs rewrites them for any use_directory_urls.
    assert "[1–2,000](profile-a.table-1.0.js), [2,001–4,000](profile-a.table-1.1.js)" in markdown
    assert markdown.rstrip().endswith("after")
    first = json.loads(DATA_CALL.match(files[0][1]).group(3))
    assert first[0] == ["<strong>n&#60;0&#62;</strong>", "0"] and len(first) == CHUNK_ROWS


def test_a_long_table_of_links_stays_whole():
    # mkdocs rewrites Markdown links for the site's URL style; a data file's HTML could not follow.
    markdown = _table(LONG_TABLE_ROWS + 1).replace("| 0 |", "| [profile](profile-a.md) |")
    assert page_long_tables(markdown, "reports/x/p.md") == (markdown, ())


def test_a_long_table_in_an_admonition_keeps_its_indent():
    markdown, files = page_long_tables(f"!!! tip \"slow\"\n\n{_table(LONG_TABLE_ROWS + 1, '    ')}\n",
                                       "reports/x/p.md")
    assert '\n    <div class="perfsite-long-table" data-table="p.table-1"' in markdown
    assert len(files) == 1


def test_data_file_cells_cannot_carry_markup():
    # Cells come from the templates with untrusted text as character references; a raw tag is escaped.
    assert cell_html("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert cell_html("&#60;script&#62; *em* `code`") == "&#60;script&#62; <em>em</em> <code>code</code>"
    assert cell_html("<code>ok</code>") == "<code>ok</code>"
