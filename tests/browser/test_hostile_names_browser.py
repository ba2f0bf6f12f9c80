"""Names carrying terminal escapes, a bidirectional override and a newline (a node, an op type, a version, a
CPU) reach every part of a page the way its Markdown tables print them: as visible `\\x1b` / `\\u202e`
escapes, never as raw characters that recolour a copied line or reorder the rest of a label's display. The
chooser's tables and the charts' labels and tooltips come from JSON data, not from the Markdown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.browser import READY, hover_marks, open_page
from support.results import write_results

from generator.site import build_site
from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser

NAME = "\x1b[31mred \u202eevil\nnext"
SHOWN = "\\x1b[31mred \\u202eevil next"  # as generator.terminal_text.safe and the tables print it
RAW = ("\x1b", "\u202e", "evil\nnext")


@pytest.fixture(scope="module")
def hostile_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("hostile-names")
    (root / "project").mkdir()
    write_results(root / "results", payload=NAME)
    with BackgroundServer(build_site(root / "results", root / "site", root / "project")) as url:
        yield url


def _assert_shown(text: str, where: str) -> None:
    assert SHOWN in text, f"{where}: the name is not shown with visible escapes: {text[:300]!r}"
    assert not [r for r in RAW if r in text], f"{where}: raw control or bidi characters reach the screen"


def test_the_chooser_shows_control_characters_as_the_tables_do(chromium, hostile_url):
    context, page, visit = open_page(chromium, hostile_url + "reports/cnn-int8/choose.html")
    page.wait_for_selector(READY)
    _assert_shown(page.locator('[data-section="kernels"]').inner_text(), "chooser kernels")
    _assert_shown(page.locator("article").inner_text(), "chooser page")
    assert not visit.errors
    context.close()


def test_chart_labels_and_tooltips_show_control_characters_as_the_tables_do(chromium, hostile_url):
    context, page, visit = open_page(chromium, hostile_url + "reports/cnn-int8/index.html")
    _assert_shown(page.locator("article table").last.inner_text(), "trials table")  # the reference
    legend = page.locator(".perfsite-chart svg").first.text_content()  # the version names in the legend
    _assert_shown(legend, "experiment chart's legend")
    hover_marks(page)
    tooltips = page.locator("#vg-tooltip-element").text_content()
    assert not [r for r in RAW if r in tooltips], tooltips
    assert not visit.errors
    context.close()
