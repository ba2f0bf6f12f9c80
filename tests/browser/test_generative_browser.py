"""A generative experiment's pages in headless Chromium, from the real run of tests/conftest.py's
`generative_results`: every chart draws with no console error and no request leaving the site, and the limits'
sliders move the sweet spots' rings (one a workload; gone when no configuration is within the limits, back when
one is)."""

from __future__ import annotations

import pytest
from support.browser import PHONE, assert_charts_drawn, assert_charts_fit, open_page, visit_pages

from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser

PAGE = "reports/gen/index.html"
RING = "[data-chart='chart-generative-limits'] .sweet_spot_marks path"


@pytest.fixture(scope="module")
def generative_page(chromium, generative_site):
    with BackgroundServer(generative_site) as url:
        context, page, visit = open_page(chromium, url + PAGE)
        yield page, visit, url
        context.close()


def _slide(page, name: str, value: float) -> None:
    """Move a slider as a reader does: the input's value, then the event Vega listens for."""
    page.evaluate("([name, value]) => { const i = document.querySelector(`input[name=${name}]`); i.value = value; "
                  "i.dispatchEvent(new Event('input', {bubbles: true})); }", [name, str(value)])
    page.wait_for_timeout(150)


def test_the_generative_page_draws_every_chart_offline(generative_page):
    page, visit, url = generative_page
    assert assert_charts_drawn(page, PAGE) == 4
    assert visit.errors == [] and visit.dialogs == []
    assert all(r.startswith(url) or r.startswith("data:") for r in visit.requests), visit.requests
    headings = page.locator("article h2").all_inner_texts()
    assert [h.replace("¶", "").strip() for h in headings] == [
        "Sweet spot", "Compared versions: prefill and decode apart", "Output agreement",
        "Prefill, decode and throughput", "Where the time goes", "Decode against the memory's speed",
        "Every configuration"]


def test_at_390_px_the_generative_charts_keep_titles_axes_and_legends_in_their_frames(chromium, generative_page):
    """Every generative chart kind (sweet spot under the limits, phases, decode steps, a pair's ratios) on a
    phone held upright: nothing reaches out of its frame and no axis label touches another."""
    url = generative_page[2]
    for visited, page, visit in visit_pages(chromium, [url + PAGE, url + "reports/gen/compare-fp32-vs-int4.html"],
                                            viewport=PHONE):
        assert assert_charts_drawn(page, visited) >= 1
        assert_charts_fit(page, visited)
        assert visit.errors == [], visited


def test_the_limit_sliders_move_the_sweet_spot(generative_page):
    page, _, _ = generative_page
    assert page.locator(RING).count() == 2  # the spec's limits hold every configuration: each workload's best
    _slide(page, "tpot_limit", 0)
    assert page.locator(RING).count() == 0  # no decode step is that fast: no sweet spot
    _slide(page, "tpot_limit", 1000)
    _slide(page, "ttft_limit", 0)
    assert page.locator(RING).count() == 0
    _slide(page, "ttft_limit", 1000)
    assert page.locator(RING).count() == 2


def test_the_pairs_page_is_linked_from_the_overview_and_draws_its_ratios(generative_page, chromium):
    page, visit, url = generative_page
    page.locator("article a", has_text="fp32 vs int4").click()
    page.wait_for_url("**/compare-fp32-vs-int4.html")
    page.wait_for_function("() => document.querySelectorAll('.vega-embed svg, .vega-embed canvas').length > 0")
    assert assert_charts_drawn(page, "compare-fp32-vs-int4.html") == 1
    # Two phases at each of two configurations: four ratios, each a point of the chart.
    assert page.locator("[data-chart^='chart-generative-pair'] .ratios_marks path").count() == 4
    headings = [h.replace("¶", "").strip() for h in page.locator("article h2").all_inner_texts()]
    assert headings == ["Verdicts", "Side by side", "Where the time goes", "Output agreement of B with A"]
    # Node by node: the version's profile page, one section a configuration, a table a phase.
    page.locator("article a", has_text="int4's profile").click()
    page.wait_for_url("**/profile-int4.html")
    sections = [h.replace("¶", "").strip() for h in page.locator("article h2").all_inner_texts()]
    assert sections == ["b1 t1 c1 prompt=4 new=4", "b1 t1 c1 prompt=12 new=4"]
    phases = [h.replace("¶", "").strip() for h in page.locator("article h3").all_inner_texts()]
    assert phases[:2] == ["Prefill of a 4-token prompt", "One decode step at a context of 6 tokens"]
    assert page.locator("article table").nth(1).locator("tbody tr", has_text="MatMulNBits").count() >= 4
    assert not visit.errors
    page.go_back()
    page.go_back()
    page.wait_for_url("**" + PAGE)


def test_choosing_a_and_b_shows_that_pairs_verdicts_and_back_undoes_the_choice(chromium, generative_site):
    with BackgroundServer(generative_site) as url:
        context, page, visit = open_page(chromium, url + "reports/gen/choose.html")
        root = page.locator(".perfsite-generative-choice")
        page.wait_for_function("() => document.querySelector('.perfsite-generative-choice[data-ready]')")
        assert root.get_attribute("data-ready") == "fp32\nint4"  # the spec's compared pair first
        rows = root.locator('[data-section="verdicts"] tbody tr')
        assert rows.count() == 4  # two configurations, two phases
        page.select_option('select[data-side="a"]', "int8")
        page.wait_for_function("() => document.querySelector('.perfsite-generative-choice')"
                               ".getAttribute('data-ready') === 'int8\\nint4'")
        assert page.evaluate("location.hash") == "#a=int8&b=int4"
        first = rows.first.locator("td").all_inner_texts()
        assert first[0] == "b1 t1 c1 prompt=4 new=4" and first[1] == "prefill (TTFT)"
        assert first[6].split(":")[0] in ("slower", "faster", "no change", "unsettled")
        assert root.locator('[data-section="summaries"] li').first.inner_text().startswith(
            "Prefill (time to first token): ")
        root.locator('[data-action="swap"]').click()
        assert root.get_attribute("data-ready") == "int4\nint8"
        page.go_back()  # undoes the swap, then the choice of A
        page.wait_for_function("() => document.querySelector('.perfsite-generative-choice')"
                               ".getAttribute('data-ready') === 'int8\\nint4'")
        page.go_back()
        page.wait_for_function("() => document.querySelector('.perfsite-generative-choice')"
                               ".getAttribute('data-ready') === 'fp32\\nint4'")
        assert visit.errors == [] and all(r.startswith(url) for r in visit.requests)
        context.close()
