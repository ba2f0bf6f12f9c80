"""The built site in headless Chromium: charts render, tables sort, no request leaves 127.0.0.1, payloads stay
text."""

from __future__ import annotations

import itertools
import json
import math
from urllib.parse import urlparse

import pytest
from support.browser import (
    CHARTS_DRAWN,
    assert_charts_drawn,
    assert_no_mark_outside_its_frame,
    column,
    hover_marks,
    html_pages,
    open_page,
    visit_pages,
)
from support.results import PAYLOAD

pytestmark = pytest.mark.browser

EXPERIMENT_PAGE = "reports/cnn-int8/index.html"
PROFILE_PAGE = "reports/cnn-int8/profile-int8.html"


# One open page each for the tests that read or work one part of it (a page load with its charts was about
# 1.5 s on 2 cores, as much as a test's own clicks): each test changes only its own control (a table's sort,
# the threshold, the search box, closed again, the colour scheme, the viewport, a column group) and reads no
# other test's, and the shared Visit holds every console error of the page's whole life. The every-page test
# checks them as it checks the site's other pages (hovering their marks), instead of loading them again.
@pytest.fixture(scope="module")
def experiment_page(chromium, payload_url):
    context, page, visit = open_page(chromium, payload_url + EXPERIMENT_PAGE)
    yield page, visit
    context.close()


@pytest.fixture(scope="module")
def profile_page(chromium, payload_url):
    context, page, visit = open_page(chromium, payload_url + PROFILE_PAGE, viewport={"width": 1400, "height": 900})
    yield page, visit
    context.close()


def _search_requests(requests: list[str]) -> list[str]:
    """The search index and the search worker among a page's requests."""
    return [r for r in requests if "/search/search_index." in r or "/workers/search." in r]


def test_clicking_a_header_sorts_the_trials_table(experiment_page):
    page, visit = experiment_page
    table = page.locator("article table", has=page.locator("th", has_text="Throughput (items/s)")).last
    before = column(page, table, "Throughput")
    table.locator("th", has_text="Throughput (items/s)").click()
    after = column(page, table, "Throughput")
    assert after != before and sorted(after) == sorted(before)
    figures = [float(v.replace(",", "")) for v in after if v != "—"]
    assert figures in (sorted(figures), sorted(figures, reverse=True))
    table.locator("th", has_text="Throughput (items/s)").click()
    assert column(page, table, "Throughput") == list(reversed(after))
    assert not visit.errors


def test_a_page_opened_from_disk_renders_its_charts_and_searches(chromium, payload_site):
    """mkdocs-material's offline plugin inlines the search index; the vendored iframe-worker shim runs the search
    worker, which a file:// page cannot start (the plugin would have fetched the shim from unpkg.com)."""
    url = (payload_site / EXPERIMENT_PAGE).as_uri()
    context, page, visit = open_page(chromium, url)
    assert assert_charts_drawn(page, url) == 2  # the latency-throughput chart and every version side by side
    assert not [u for u in visit.requests if urlparse(u).scheme in ("http", "https")]
    # The index and the search worker wait for the reader to search (perfsite-search.js).
    assert not _search_requests(visit.requests), visit.requests
    page.locator("input.md-search__input").click()
    page.keyboard.type("sweet spot")
    page.locator(".md-search-result__item").first.wait_for(timeout=15_000)
    assert "matching document" in page.locator(".md-search-result__meta").inner_text()
    assert len(_search_requests(visit.requests)) == 2, visit.requests  # the index and the worker, once
    assert not visit.errors and all(r.startswith(("file:", "data:", "blob:")) for r in visit.requests)
    assert "unpkg.com" not in (payload_site / "index.html").read_text()
    context.close()


def test_charts_render_after_instant_navigation(chromium, instant_url):
    context, page, visit = open_page(chromium, instant_url + "reports/index.html")
    # A global survives only if the next page is swapped in by instant navigation, not loaded afresh.
    page.evaluate("window.perfsiteNoReload = true")
    # Instant navigation takes over a link only once mkdocs-material's bundle has set up (it exports location$
    # then) and has read the site's sitemap.xml: the click handler takes the sitemap with RxJS's
    # withLatestFrom, which drops a click made before the sitemap arrived, and the browser then loads the page
    # afresh. On a busy machine the sitemap can arrive seconds after the bundle ran. Its response ending is the
    # last event the page shows; parsing it follows in the same task chain, which the short pause covers.
    page.wait_for_function("() => typeof window.location$ !== 'undefined' && performance.getEntriesByType"
                           "('resource').some(e => e.name.endsWith('/sitemap.xml') && e.responseEnd > 0)",
                           timeout=20_000)
    page.wait_for_timeout(200)
    page.locator("article a", has_text="cnn-int8").first.click()
    page.wait_for_url("**/reports/cnn-int8/index.html")
    # The swapped-in page loads the chart library first (it is not on every page): wait for its marks, not
    # only for CHARTS_DRAWN, which holds trivially while the old page, without charts, is still shown.
    page.locator(".perfsite-chart svg .mark-symbol path").first.wait_for(timeout=20_000)
    assert page.evaluate("window.perfsiteNoReload") is True, "instant navigation did not happen"
    assert assert_charts_drawn(page, "after instant navigation") == 2
    # The search worker starts on the first search, after the page's address changed: its URL was resolved
    # against the page that asked for it (a relative one from the new address was a 404 and search never
    # answered).
    assert not _search_requests(visit.requests)
    page.locator("input.md-search__input").click()
    page.keyboard.type("sweet spot")
    page.locator(".md-search-result__item").first.wait_for(timeout=15_000)
    assert all(r.split("/assets/")[0] + "/" == instant_url.rstrip("/") + "/" for r in visit.requests
               if "/workers/search." in r), visit.requests
    assert not visit.errors and not visit.foreign_requests()
    context.close()


def test_every_page_renders_its_charts_offline_and_payloads_in_results_show_as_text_and_never_run(
        chromium, payload_site, payload_url, experiment_page, profile_page):
    """Every page of the site of tests/support/results.py, whose names carry hostile payloads: its charts drawn
    inside their frames, no console error, no request leaving 127.0.0.1, the chart library fetched only where a
    chart is drawn, and every payload shown as text. (One visit of each page for both: the payload site has
    every page of the plain one. The experiment and profile pages are the module's open ones, each loaded once
    for all its tests; this test runs before the ones that move the threshold, the viewport or the scheme, in
    file order, and only the trials table's sort is changed by then, which none of its checks reads.)"""
    pages = html_pages(payload_site)
    opened = {EXPERIMENT_PAGE: experiment_page, PROFILE_PAGE: profile_page}
    assert set(opened) <= set(pages)
    visits = visit_pages(chromium, [payload_url + rel for rel in pages if rel not in opened])
    total = 0
    for url, page, visit in itertools.chain(visits, ((payload_url + rel, *shown) for rel, shown in opened.items())):
        rel = url.removeprefix(payload_url)
        charts = assert_charts_drawn(page, rel)
        total += charts
        assert_no_mark_outside_its_frame(page, rel)
        assert any("vega-embed.min.js" in r for r in visit.requests) == (charts > 0), rel
        assert not _search_requests(visit.requests), rel  # not until the reader searches
        assert not visit.errors, f"{rel}: console errors {visit.errors}"
        assert page.locator("img[src='x']").count() == 0, rel
        assert page.locator("a[href^='javascript']").count() == 0, rel
        if "profile" in rel or rel.endswith("cnn-int8/index.html"):
            assert PAYLOAD.split(" | ")[0] in page.locator("article").inner_text(), rel
        if rel.endswith("choose.html"):  # the chooser fills its tables from data files, with textContent
            page.wait_for_selector(".perfsite-chooser-status[data-ready]")
            assert PAYLOAD.split(" | ")[0] in page.locator('[data-section="kernels"]').inner_text(), rel
        hover_marks(page)
        assert not visit.dialogs, f"{rel}: a dialog fired: {visit.dialogs}"
        assert not visit.foreign_requests(), f"{rel}: requests outside 127.0.0.1: {visit.foreign_requests()}"
    assert total >= 3  # the experiment's chart and one op-time chart per profile page


def test_searching_for_a_payload_lists_it_as_text(experiment_page):
    page, visit = experiment_page
    page.locator("input.md-search__input").click()
    page.keyboard.type("onerror")  # Material searches on key events, not on a programmatic value
    page.locator(".md-search-result__item").first.wait_for(timeout=10_000)
    assert any(r.endswith("search/search_index.json") for r in visit.requests), visit.requests
    assert "<img src=x onerror=alert(1)>" in page.locator(".md-search-result").inner_text()
    assert page.locator(".md-search-result img[src='x'], .md-search-result script").count() == 0
    assert not visit.dialogs and not visit.errors
    page.keyboard.press("Escape")  # closes the search, which would cover the page for the other tests
    page.wait_for_function("() => !document.getElementById('__search').checked")


def test_the_experiment_page_threshold_control_moves_the_rings_and_the_best_results(experiment_page):
    page, visit = experiment_page
    chart = "[data-chart='chart-latency-throughput']"
    page.wait_for_function(f"() => document.querySelector(\"{chart}\").__perfsiteThreshold !== undefined")
    typed = page.locator(f".perfsite-threshold:has(+ {chart}) input[type=number]")
    # A box the reader sees as one in the light scheme (Material resets inputs' borders).
    assert typed.evaluate("e => getComputedStyle(e).borderTopStyle + ' ' + getComputedStyle(e).borderTopWidth") \
        == "solid 1px"
    points = json.loads(page.locator(f"{chart} + script").text_content())[0]
    rows = next(t for t in points["datasets"].values() if len(t) > 1) if "datasets" in points else None
    rows = rows or next(layer["data"]["values"] for layer in points["layer"] if layer.get("name") == "points")
    fp32 = sorted((r for r in rows if r["version"] == "fp32"), key=lambda r: r["latency_ms"])
    # A threshold between fp32's two fastest latencies leaves it one sweet spot: its fastest configuration.
    value = round((fp32[0]["latency_ms"] + fp32[1]["latency_ms"]) / 2, 3)
    typed.fill(str(value))
    signal = f"document.querySelector(\"{chart}\").__perfsiteView.signal('latency_threshold')"
    page.wait_for_function(f"() => {signal} === {value}")
    table = page.locator("[data-perfsite-threshold='chart-latency-throughput'][data-role='table'] table")
    assert f"≤ {value:.3g} ms" in table.locator("thead").inner_text()
    row = next(i for i, v in enumerate(column(page, table, "Version")) if v == "fp32")
    cells = table.locator("tbody tr").nth(row).locator("td")  # column 7: where the sweet spot was measured
    assert cells.nth(7).inner_text().startswith(fp32[0]["label"])
    rings = page.evaluate(f"() => document.querySelector(\"{chart}\").__perfsiteView.data('sweet_spots_marks')"
                          ".map(d => d.datum ? d.datum.label + '/' + d.datum.version : null)")
    assert f"{fp32[0]['label']}/fp32" in rings
    # The rule's label writes the threshold as the box and the table do: three significant digits.
    label = page.locator(f"{chart} svg text", has_text="threshold ").first.text_content()
    assert label == f"threshold {float(f'{value:.3g}'):.{max(0, 2 - math.floor(math.log10(value)))}f} ms", label
    # "Click a version in the legend to highlight it": the legend-bound selection sits on the layer whose only
    # legend is the versions' (on the points' layer, with the interval's shape legend too, clicks did nothing).
    [views] = [p["views"] for p in points["params"] if p["name"] == "version_pick"]
    assert views == ["lines"] and "shape" not in next(la for la in points["layer"] if la["name"] == "lines")["encoding"]
    assert not visit.errors


def test_report_pages_show_their_table_of_contents_at_1400_px(profile_page):
    """A profile page can be 30,000 px tall: its sections are listed in the left navigation (toc.integrate),
    visible beside the content, and the tables keep the page's width."""
    page, _ = profile_page
    page.set_viewport_size({"width": 1400, "height": 900})
    toc = page.locator(".md-sidebar--primary nav.md-nav--secondary")
    assert toc.is_visible()
    entries = toc.locator("a.md-nav__link").all_inner_texts()
    assert any("Model summary" in e for e in entries) and any("Layer results" in e for e in entries)
    assert page.locator(".md-sidebar--secondary").is_hidden() or not page.locator(".md-sidebar--secondary").count()


def test_a_wide_table_scrolled_sideways_keeps_its_first_column_in_view(profile_page):
    page, visit = profile_page
    page.set_viewport_size({"width": 900, "height": 900})  # the next test sets its own width again
    wrap = page.evaluate_handle("""() => Array.from(document.querySelectorAll('article .md-typeset__scrollwrap'))
        .find(w => w.scrollWidth > w.clientWidth + 200)""").as_element()
    assert wrap is not None, "a profile page at 900 px has a table wider than the page"
    wrap.evaluate("w => { w.scrollIntoView({block: 'center', behavior: 'instant'}); w.scrollLeft = 300; }")
    wrap_left, cell_left = wrap.evaluate("""w => [w.getBoundingClientRect().left,
        w.querySelector('tbody td').getBoundingClientRect().left]""")
    assert wrap.evaluate("w => w.scrollLeft") > 0 and abs(cell_left - wrap_left) < 2, (wrap_left, cell_left)
    # Opaque: the columns scrolled under it do not show through.
    assert wrap.evaluate("w => getComputedStyle(w.querySelector('tbody td')).backgroundColor") != "rgba(0, 0, 0, 0)"
    wrap.evaluate("w => { w.scrollLeft = 0; }")
    page.set_viewport_size({"width": 1400, "height": 900})
    assert not visit.errors


# The lowest contrast (WCAG) between a chart's visible text and the page behind it, with the text that has it.
LOWEST_CONTRAST = """() => {
  const rgb = c => (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
  const channel = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = c => { const [r, g, b] = rgb(c).map(channel); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const page = lum(getComputedStyle(document.body).backgroundColor);
  let worst = [99, ''];
  document.querySelectorAll('.perfsite-chart svg text').forEach(t => {
    if (!t.textContent.trim() || t.getBoundingClientRect().width === 0) return;
    const style = getComputedStyle(t);
    if (style.fill === 'none' || Number(style.fillOpacity) < 0.5 || Number(style.opacity) < 0.5) return;
    const l = lum(style.fill), ratio = (Math.max(l, page) + 0.05) / (Math.min(l, page) + 0.05);
    if (ratio < worst[0]) worst = [ratio, t.textContent.trim() + ' ' + style.fill];
  });
  return worst;
}"""


@pytest.mark.parametrize("shown", ["experiment_page", "profile_page"])
def test_charts_follow_the_dark_scheme_with_readable_text(request, shown):
    page, visit = request.getfixturevalue(shown)
    path = EXPERIMENT_PAGE if shown == "experiment_page" else PROFILE_PAGE
    assert page.evaluate(LOWEST_CONTRAST)[0] >= 4.5
    page.locator("label[for='__palette_1']").click()  # the header's palette toggle: to the dark scheme
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    page.wait_for_function(CHARTS_DRAWN)
    page.locator(".perfsite-chart svg text").first.wait_for()
    ratio, text = page.evaluate(LOWEST_CONTRAST)
    assert ratio >= 4.5, f"{path}: {text!r} has contrast {ratio:.2f} on the dark page"
    assert page.locator(".perfsite-chart").count() == page.locator(".perfsite-chart svg.marks").count()
    assert not visit.errors


def test_wide_tables_keep_their_names_in_view_and_hide_column_groups(profile_page):
    # 1000 px: the recorded model's names are short, so its 17-column table only overflows a narrower page.
    page, visit = profile_page
    page.set_viewport_size({"width": 1000, "height": 900})
    marker = page.locator(".perfsite-table-controls").first
    marker.locator("input[data-group='Operations']").wait_for()
    table = page.locator("table[data-perfsite-table]").first
    wrap = table.locator("xpath=ancestor::div[contains(@class, 'md-typeset__scrollwrap')]")
    name = table.locator("tbody tr").first.locator("td").nth(1)
    before = name.bounding_box()["x"]
    # Scrolling and the sticky column's new place are synchronous: reading a box lays the page out.
    wrap.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    assert wrap.evaluate("el => el.scrollLeft") > 50, "the 17-column table is wider than the page"
    wrap_left = wrap.bounding_box()["x"]
    assert name.bounding_box()["x"] >= wrap_left - 1 and name.bounding_box()["x"] <= before + 1, \
        "the executed node's name scrolled out of view"
    headers = table.locator("thead th")
    assert headers.nth(12).is_visible()  # MOP
    marker.locator("input[data-group='Operations']").uncheck()
    assert not headers.nth(12).is_visible() and not table.locator("tbody tr").first.locator("td").nth(16).is_visible()
    assert headers.nth(8).is_visible()  # Mean (µs): another group stays
    mean = table.locator("tbody tr").first.locator("td").nth(8)
    assert mean.evaluate("el => getComputedStyle(el).textAlign") == "right" and "(µs)" in headers.nth(8).inner_text()
    assert not visit.errors
