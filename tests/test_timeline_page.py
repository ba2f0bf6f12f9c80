"""The Timeline, Temporal statistics and Layer details sections of profile pages, on the fixed results of
tests/support/profile.py with a `timeline` table made from their nodes (tests/support/timeline.py): snapshots of
the pages, of the two charts and of the Perfetto trace files, byte-identical re-generation, and hostile node names
kept inert.

Regenerate after an intended change with `PERFSITE_UPDATE_SNAPSHOTS=1 pytest tests/test_timeline_page.py`.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import pytest
from support.cli import check_snapshots
from support.profile import EXPERIMENT
from support.timeline import write_timeline_results

from generator.results.store import load_experiment
from generator.site import pages as site_pages
from generator.timeline import timeline_from_table

SNAPSHOTS = Path(__file__).parent / "snapshots" / "timeline"
UPDATE = os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1"
CHART_RE = re.compile(r'<script type="application/json" id="(chart-(?:timeline|temporal)-[0-9]+)">(.*?)</script>')
ANY_CHART_RE = re.compile(r'<script type="application/json" id="([a-z0-9-]+)">.*?</script>')  # JSON-escaped data


def _pages(folder: Path) -> list[site_pages.Page]:
    view = site_pages.experiment_view(load_experiment(folder), EXPERIMENT)
    return site_pages.profile_pages(site_pages.template_env(), view)


def _generated(pages: list[site_pages.Page]) -> dict[str, str]:
    """Snapshot name -> text: each page with its charts' inline JSON elided (test_profile_page snapshots the
    other charts), and the first section's timeline and temporal charts and Perfetto trace, pretty-printed."""
    out = {}
    for page in pages:
        name = page.path.removeprefix(f"{site_pages.REPORTS_DIR}/")
        out[name] = ANY_CHART_RE.sub(lambda m: f'<script type="application/json" id="{m[1]}">…</script>',
                                     page.markdown)
        for chart_id, spec in CHART_RE.findall(page.markdown):
            if chart_id.endswith("-1"):
                (chart,) = json.loads(spec)
                out[f"{name.removesuffix('.md')}.{chart_id}.json"] = json.dumps(
                    chart, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        path, text = page.files[0]
        out[path.removeprefix(f"{site_pages.REPORTS_DIR}/")] = json.dumps(json.loads(text), indent=1) + "\n"
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[site_pages.Page]]:
    """The results folder and its profile pages, made once: the tests below only read them (a generation is about
    a second on 2 cores, and the module made eight)."""
    folder = write_timeline_results(tmp_path_factory.mktemp("timeline"))
    return folder, _pages(folder)


def test_timeline_sections_match_snapshots(built):
    check_snapshots(_generated(built[1]), SNAPSHOTS)


def test_timeline_sections_are_byte_identical_across_runs(built, tmp_path):
    assert _generated(built[1]) == _generated(_pages(write_timeline_results(tmp_path)))


def test_every_profiled_section_has_its_timeline_and_trace(built):
    folder, pages = built
    results = load_experiment(folder)
    for page in pages:
        sections = page.markdown.count("### Model summary")
        assert page.markdown.count("### Timeline") == sections
        assert page.markdown.count("### Layer details") == len(page.files) == sections
        for path, text in page.files:
            assert f"({Path(path).name})" in page.markdown
            trace = json.loads(text)
            calls = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] != "model_run"]
            label = trace["otherData"]["title"].split(" · ")[-1]
            assert label in set(results.trials["config_label"]) and calls
            body = [c for c in calls if "parent" in c["args"]]
            assert body and all(c["args"]["parent"] == "/branch/If" for c in body)
    for _, rows in results.timeline.groupby("trial_key"):
        tl = timeline_from_table(rows)
        assert sum(e.dur_us for e in tl.top_level) == rows["kernel_sum_us"].iloc[0]


def test_hostile_node_names_stay_inert(tmp_path):
    for page in _pages(write_timeline_results(tmp_path, payload=True)):
        start = page.markdown.index("### Timeline")
        text = ANY_CHART_RE.sub("", page.markdown[start:])
        assert "<img" not in text and "<script>" not in text and "](javascript" not in text
        assert "&#60;img src&#61;x onerror&#61;alert&#40;1&#41;&#62;" in text  # the Layer details row, escaped


def test_a_large_trace_is_written_gzip_compressed(tmp_path, monkeypatch):
    # A 20,000-call inference made a 5.6 MB trace; above TRACE_GZIP_ABOVE it is written as .trace.json.gz.
    monkeypatch.setattr(site_pages, "TRACE_GZIP_ABOVE", 100)
    page = _pages(write_timeline_results(tmp_path))[0]
    path, data = page.files[0]
    assert path.endswith(".trace.json.gz") and f"({Path(path).name})" in page.markdown
    assert "(Chrome trace JSON, gzip-compressed: open it in" in page.markdown
    trace = json.loads(gzip.decompress(data))
    assert any(e["name"] == "model_run" for e in trace["traceEvents"])
    assert data == _pages(write_timeline_results(tmp_path / "again"))[0].files[0][1]  # same bytes per build


def test_a_long_placeholder_name_makes_a_trace_file_name_the_file_system_takes(tmp_path):
    """A placeholder name has no length limit, and the configuration label holds it (`… lo…ng=4`): its trace
    file name (`profile-fp32-1-b1-t1-c1-lo…ng-4.trace.json`) passed 255 bytes, and every `perfsite build` of the
    experiment ended in `OSError: [Errno 36] File name too long`. The label in the name is cut as names are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = write_timeline_results(tmp_path / "results")
    long_name = "l" + "o" * 250 + "ng"
    for file in sorted((folder / "trials").glob("*.parquet")):
        table = pq.read_table(file)
        index = table.schema.get_field_index("config_label")
        labels = [f"{label} {long_name}=4" for label in table.column(index).to_pylist()]
        pq.write_table(table.set_column(index, "config_label", pa.array(labels, pa.string())), file)
    written = []
    for page in _pages(folder):
        for path, data in page.files:
            target = tmp_path / "site" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data if isinstance(data, bytes) else data.encode())  # refused when too long
            written.append(target.name)
            assert f"({target.name})" in page.markdown
    assert written and all(len(name.encode()) <= 120 and "-loooo" in name for name in written), written


def test_the_temporal_chart_names_the_compute_rate_as_the_table_beside_it(built):
    """Item 7 of the figures tour: an INT8 model's chart said GFLOP/s (unit flops) beside a table in INT8
    GOP/s; the chart's title, tooltip and unit follow the table, section by section."""
    titles = {}
    for page in built[1]:
        for section in page.markdown.split("\n## ")[1:]:
            specs = [s for chart_id, s in CHART_RE.findall(section) if "temporal" in chart_id]
            if not specs:
                continue  # a configuration without a timeline
            (table,), (spec,) = re.findall(r"^\| (Compute rate \([^)]*\)) \|", section, re.M), specs
            (chart,) = json.loads(spec)
            data = [r for r in chart["data"]["values"] if r["measure"].startswith("Compute")]
            compute = chart["vconcat"][1]
            tooltip = [t["title"] for t in compute["layer"][0]["encoding"]["tooltip"]]
            assert {r["measure"] for r in data} == {compute["layer"][0]["encoding"]["y"]["title"]} == {table}
            assert table in tooltip
            units = {r["unit"] for r in data}
            assert units == ({"operations"} if "INT8" in table else {"flops"})
            titles[page.path.rsplit("/", 1)[-1]] = table
    assert titles == {"profile-fp32.md": "Compute rate (GFLOP/s)", "profile-int8.md": "Compute rate (INT8 GOP/s)"}


def test_the_timeline_tooltip_writes_shapes_as_the_tables_do(built):
    """The tooltip showed a call's shapes as their JSON (`[[1,16,16,48],[],…]`): now as the tables write them."""
    shown = set()
    for page in built[1]:
        for chart_id, spec in CHART_RE.findall(page.markdown):
            if "chart-timeline" in chart_id:
                (chart,) = json.loads(spec)
                rows = next(layer["data"]["values"] for layer in _layers(chart) if "data" in layer)
                shown |= {r[k] for r in rows for k in ("inputs", "outputs")}
    assert shown and not [s for s in shown if "[" in s], sorted(shown)[:5]
    assert any(re.fullmatch(r"\d+(×\d+)*(, (\d+(×\d+)*|scalar|\?))*", s) for s in shown), sorted(shown)[:5]


def _layers(chart: dict) -> list[dict]:
    """Every layer of a chart, through its concatenations, itself first."""
    found, stack = [], [chart]
    while stack:
        node = stack.pop()
        found.append(node)
        for key in ("layer", "vconcat", "hconcat"):
            stack.extend(node.get(key, []))
    return found
