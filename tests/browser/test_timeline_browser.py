"""The timeline sections of a profile page in headless Chromium, from a real `perfsite run` of the example CNN:
the timeline and temporal charts draw (a bar per kernel call), the x axis zooms, the Perfetto trace link
serves the trace file, and every chart's "Download data" links give its data as CSV and JSON."""

from __future__ import annotations

import csv
import io
import json

import pytest
from support.browser import assert_charts_drawn, open_page
from support.timeline import write_timeline_results

from generator.site import build_site
from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser

PAGE = "reports/timeline/profile-fp32.html"


@pytest.fixture(scope="module")
def timeline_site(tmp_path_factory, cnn_timeline_results):
    """The real run's experiment (`timeline`, the session's run: conftest.py) and the recorded one with a
    sub-graph (`cnn-profile`), in one site: one mkdocs build for the module instead of one per fixture."""
    root = tmp_path_factory.mktemp("timeline-site")
    (root / "project").mkdir()
    write_timeline_results(root / "recorded")
    return build_site([cnn_timeline_results.parent, root / "recorded"], root / "site", root / "project")


@pytest.fixture(scope="module")
def timeline_url(timeline_site):
    with BackgroundServer(timeline_site) as url:
        yield url


# The profile page of the real run, opened once for the two tests that read it (a load was about 1.5 s on 2
# cores): one zooms the timeline's x axis, the other reads links and downloads data, which zooming leaves as
# they were.
@pytest.fixture(scope="module")
def timeline_page(chromium, timeline_url):
    context, page, visit = open_page(chromium, timeline_url + PAGE)
    yield page, visit
    context.close()


X_DOMAIN = "document.querySelector('[data-chart=\"chart-timeline-1\"]').__perfsiteView.scale('timeline_1_x').domain()"


def _download(page, link) -> str:
    with page.expect_download() as info:
        link.click()
    return info.value.path().read_text(encoding="utf-8")


def test_timeline_chart_draws_and_zooms(timeline_page):
    page, visit = timeline_page
    assert_charts_drawn(page, PAGE)
    timeline = page.locator('.perfsite-chart[data-chart="chart-timeline-1"]')
    bars = timeline.locator("svg .mark-rect path")
    assert bars.count() > 5, "no kernel call drawn"
    assert page.locator('.perfsite-chart[data-chart="chart-temporal-1"] svg .mark-rect path').count() >= 100
    before = page.evaluate(X_DOMAIN)
    timeline.scroll_into_view_if_needed()
    box = timeline.locator("svg.marks").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 20)
    page.mouse.wheel(0, -400)
    # Scrolling zooms the time axis: wait for a narrower domain (Vega redraws in an animation frame).
    page.wait_for_function(f"() => {{ const d = {X_DOMAIN}; return d[1] - d[0] < {before[1] - before[0]}; }}")
    assert not visit.errors, visit.errors
    assert not visit.foreign_requests(), visit.foreign_requests()


def test_trace_and_data_downloads(timeline_page, timeline_url):
    page, visit = timeline_page
    trace_link = page.locator("a", has_text="Download this inference as a trace file")
    response = page.request.get(timeline_url + "reports/timeline/" + trace_link.get_attribute("href"))
    trace = response.json()
    assert any(e["ph"] == "X" and e["name"] == "model_run" for e in trace["traceEvents"])
    charts = page.locator(".perfsite-chart").count()
    downloads = page.locator(".perfsite-downloads")
    assert downloads.count() == charts  # every chart on the page, not only the timeline's
    box = page.locator('.perfsite-chart[data-chart="chart-timeline-1"] + script + .perfsite-downloads')
    rows = list(csv.DictReader(io.StringIO(_download(page, box.locator("a", has_text="CSV")))))
    records = json.loads(_download(page, box.locator("a", has_text="JSON")))
    assert len(rows) == len(records) > 5
    assert [r["node"] for r in rows] == [r["node"] for r in records]
    assert float(rows[0]["dur_us"]) == records[0]["dur_us"]
    temporal = page.locator('.perfsite-chart[data-chart="chart-temporal-1"] + script + .perfsite-downloads')
    bins = json.loads(_download(page, temporal.locator("a", has_text="JSON")))
    assert {b["measure"] for b in bins} >= {"Memory traffic (GB/s)"} and len(bins) >= 100
    assert not visit.errors, visit.errors


def test_subgraph_calls_draw_in_their_own_row_under_the_thread(chromium, timeline_url):
    context, page, visit = open_page(chromium, timeline_url + "reports/cnn-profile/profile-fp32.html")
    assert_charts_drawn(page, "profile-fp32")
    lanes = page.evaluate("document.querySelector('[data-chart=\"chart-timeline-1\"]').__perfsiteView"
                          ".scale('timeline_1_y').domain()")
    assert lanes == ["thread 1", "thread 1 · sub-graph"]
    labels = page.evaluate("Array.from(document.querySelectorAll('[data-chart=\"chart-timeline-1\"] svg text'))"
                           ".map(t => t.textContent)")
    assert "thread 1 · sub-graph" in labels
    assert not visit.errors, visit.errors
    context.close()
