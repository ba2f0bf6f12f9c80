"""The changes page (`perfsite build --baseline git:REF`) and the trend page (`--trend N`) in headless Chromium:
every chart draws, no console error, and a hostile node name stays text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.browser import PHONE, assert_charts_drawn, assert_charts_fit, visit_pages
from support.diff import PAYLOAD, REGRESSION, Side, git, write_side

from generator.site import build_site
from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def history_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose results were committed three times (baseline, drift, regression), built with both
    history pages."""
    repo = tmp_path_factory.mktemp("history")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.org")
    git(repo, "config", "user.name", "CI")
    (repo / ".gitignore").write_text(".perfsite/\n")
    steps = [Side(node_payload=True), Side(latency={1: 1.04, 4: 1.02}, node_payload=True, seed=1,
                                           finished="2026-01-06T10:00:00Z"),
             Side(**{**REGRESSION.__dict__, "node_payload": True, "seed": 2, "finished": "2026-01-07T10:00:00Z"})]
    for i, side in enumerate(steps):
        write_side(repo / "results", side)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"results {i}")
    return build_site(repo / "results", tmp_path_factory.mktemp("site") / "site", repo, baseline="git:HEAD~2",
                      trend=10)


@pytest.fixture(scope="module")
def history_url(history_site: Path) -> Iterator[str]:
    with BackgroundServer(history_site) as url:
        yield url


def test_history_pages_draw_every_chart_and_the_changes_page_names_the_regression(chromium, history_url):
    """One visit of each page (in one context, as visit_pages does) for its charts and, on the changes page,
    its text: the regressed configuration, its layers and the hostile node name shown as text."""
    paths = ["reports/_changes/", "reports/_trend/"]
    for url, page, visit in visit_pages(chromium, [history_url + path for path in paths]):
        path = url.removeprefix(history_url)
        assert assert_charts_drawn(page, path) >= 2
        if path == "reports/_changes/":
            text = page.inner_text("article")
            assert "Slower" in text and "cnn · fp32 · b1 t1 c1" in text
            assert "/layer4/conv/Conv" in text and "added" in text
            assert "/layer1/conv/Conv" + PAYLOAD in text  # the hostile node name, shown as text
        assert visit.errors == [] and visit.dialogs == [], path
        assert visit.foreign_requests() == [], path


def test_at_390_px_the_history_charts_keep_titles_axes_and_legends_in_their_frames(chromium, history_url):
    paths = ["reports/_changes/", "reports/_trend/"]
    for url, page, visit in visit_pages(chromium, [history_url + path for path in paths], viewport=PHONE):
        path = url.removeprefix(history_url)
        assert assert_charts_drawn(page, path) >= 2
        assert_charts_fit(page, path)
        assert visit.errors == [], path
