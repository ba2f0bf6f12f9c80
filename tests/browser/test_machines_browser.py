"""The machines page of a real build (the small synthetic experiment copied onto a second machine with a hostile
hostname): linked from the overview and the site's nav, built with mkdocs --strict, and in Chromium its chart
drawn with nothing outside its frame at desktop width and on a phone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.browser import PHONE, assert_charts_drawn, assert_charts_fit, visit_pages
from support.machines import ARM, copy_onto
from support.results import write_results

from generator.site import build_site
from generator.site import pages as site_pages
from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser
PAGES = ["reports/cnn-int8/machines.html"]  # the overview of several machines links their own reports


@pytest.fixture(scope="module")
def machines_site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("machines-site")
    copy_onto(write_results(root / "results"), ARM, 0.6, "run-arm")
    # Without the chooser page, which costs most of a build (bench/chooser_cost.py leaves it out the same way).
    kinds = {k: v for k, v in site_pages.PAGE_KINDS.items() if k != "choose"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(site_pages, "PAGE_KINDS", kinds)
        (root / "project").mkdir()
        return build_site(root / "results", root / "site", root / "project")


@pytest.fixture(scope="module")
def machines_url(machines_site: Path) -> Iterator[str]:
    with BackgroundServer(machines_site) as url:
        yield url


def test_the_site_links_the_machines_page_and_builds_strict(machines_site):
    folder = machines_site / "reports" / "cnn-int8"
    assert 'href="machines.html"' in (folder / "index.html").read_text()
    assert 'href="cnn-int8/machines.html"' in (machines_site / "reports" / "index.html").read_text()
    html = (folder / "machines.html").read_text()
    assert '<a href="machines.html" class="md-nav__link md-nav__link--active">' in html  # in the site's nav
    assert "<script>alert" not in html and "&#60;script&#62;alert" in html  # the hostname, inert
    assert re.search(r"<strong>ARM Neoverse-N1 · [0-9a-f]{6}</strong>", html)


@pytest.mark.parametrize("viewport", [{"width": 1400, "height": 900}, PHONE], ids=["desktop", "phone"])
def test_the_machines_chart_keeps_its_title_axes_and_legends_in_its_frame(chromium, machines_url, viewport):
    for url, page, visit in visit_pages(chromium, [machines_url + rel for rel in PAGES], viewport=viewport):
        rel = url.removeprefix(machines_url)
        assert assert_charts_drawn(page, rel) >= 1
        assert_charts_fit(page, rel)
        assert visit.errors == [] and visit.dialogs == [], rel
