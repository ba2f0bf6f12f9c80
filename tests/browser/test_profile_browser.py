"""Profile pages in headless Chromium: every chart (time per op type, operations vs time, roofline) renders
offline without a console error, the layer results table sorts, and hostile text stays text. One site serves
every test: the results carry hostile text (a node name, the description), which must change nothing else."""

from __future__ import annotations

import itertools

import pytest
from support.browser import assert_charts_drawn, column, open_page, visit_pages
from support.profile import EXPERIMENT, write_profile_results
from support.results import PAYLOAD

from generator.site import build_site
from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser

PAGES = [f"reports/{EXPERIMENT}/profile-{version}.html" for version in ("fp32", "int8")]


@pytest.fixture(scope="module")
def profile_url(tmp_path_factory):
    root = tmp_path_factory.mktemp("profile-site")
    (root / "project").mkdir()
    write_profile_results(root / "results", payload=True)
    with BackgroundServer(build_site(root / "results", root / "site", root / "project")) as url:
        yield url


# The first profile page, opened once for both tests (a load was about 2 s on 2 cores): the sorting test
# changes only its table's order, which the every-page test's checks do not read, and the shared Visit holds
# every console error of the page's whole life.
@pytest.fixture(scope="module")
def first_page(chromium, profile_url):
    context, page, visit = open_page(chromium, profile_url + PAGES[0])
    yield page, visit
    context.close()


def test_profile_pages_draw_every_chart_without_errors_and_hostile_names_stay_text(chromium, profile_url,
                                                                                   first_page):
    """One visit of each page for both: its charts, and the hostile node name and description shown as text, in
    a tooltip too, without a dialog or an error. (The first page is the module's open one, also sorted.)"""
    visits = visit_pages(chromium, [profile_url + rel for rel in PAGES[1:]])
    for url, page, visit in itertools.chain([(profile_url + PAGES[0], *first_page)], visits):
        rel = url.removeprefix(profile_url)
        charts = assert_charts_drawn(page, rel)
        assert charts == 3 * page.locator("h3", has_text="Model summary").count()
        roofline = page.locator('.perfsite-chart[data-chart^="chart-roofline-"]').first
        assert roofline.locator("svg .mark-line path").count() > 0, f"{rel}: no roofline drawn"
        assert roofline.locator("svg .mark-symbol path").count() > 0, f"{rel}: no layer on the roofline"
        assert page.locator("img[src='x']").count() == 0, rel
        assert page.locator("a[href^='javascript']").count() == 0, rel
        assert PAYLOAD.split(" | ")[0] in page.locator("article").inner_text(), rel
        page.locator("svg .mark-symbol path").first.hover(force=True)  # a tooltip with the node's name
        page.wait_for_timeout(100)  # time for a payload's image error handler to fire, had it got in
        assert not visit.dialogs, f"{rel}: {visit.dialogs}"
        assert not visit.errors, f"{rel}: console errors {visit.errors}"
        assert not visit.foreign_requests(), f"{rel}: requests outside 127.0.0.1: {visit.foreign_requests()}"


def test_the_layer_results_table_sorts(first_page):
    page, visit = first_page
    table = page.locator("article table", has=page.locator("th", has_text="Operations per byte")).first
    before = column(page, table, "Exec order")
    table.locator("th", has_text="Exec order").click()
    after = column(page, table, "Exec order")
    assert after != before and sorted(after) == sorted(before)
    assert [int(v) for v in after] in (sorted(int(v) for v in after), sorted((int(v) for v in after), reverse=True))
    table.locator("th", has_text="Of roofline").click()
    shares = [float(v.rstrip("%")) for v in column(page, table, "Of roofline") if v != "—"]
    assert shares in (sorted(shares), sorted(shares, reverse=True))
    assert not visit.errors
