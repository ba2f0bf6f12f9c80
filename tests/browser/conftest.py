"""Browser fixtures: Debian's Chromium driven by playwright (never `playwright install`), sites, servers.

Without Chromium the browser tests are skipped, unless PERFSITE_REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the shared helpers in support/

from support.compare import write_compare_results  # noqa: E402
from support.results import write_results  # noqa: E402

from generator.site import build_site  # noqa: E402
from generator.site.serve import BackgroundServer  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
# Flags that keep Chromium from contacting anything on its own (updates, sync, safe browsing, QUIC probes).
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def _missing(reason: str) -> None:
    if os.environ.get("PERFSITE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (PERFSITE_REQUIRE_BROWSER=1 requires the browser tests to run)")
    pytest.skip(f"{reason}; install it with `apt-get install -y chromium` to run the browser tests")


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """A headless Chromium browser (playwright Browser), shared by the session."""
    if not CHROMIUM.exists():
        _missing(f"Chromium not found at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def payload_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of tests/support/results.py with hostile payloads in its names: every page of the plain site and
    one more version, so the tests of sorting, controls, search and layout read it too (one build, not two)."""
    root = tmp_path_factory.mktemp("payload-site")
    (root / "project").mkdir()
    write_results(root / "results", payload=True)
    return build_site(root / "results", root / "site", root / "project")


@pytest.fixture(scope="session")
def instant_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A site with mkdocs-material's instant navigation on (pages swapped in without a reload)."""
    root = tmp_path_factory.mktemp("instant-site")
    with socket.socket() as probe:  # instant navigation needs site_url, so pick the port before building
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (root / "project").mkdir()
    (root / "project" / "mkdocs.yml").write_text(
        f"site_name: instant\nsite_url: http://127.0.0.1:{port}/\nuse_directory_urls: false\n"
        "theme: {name: material, font: false, features: [navigation.instant]}\n"
    )
    write_results(root / "results")
    site = build_site(root / "results", root / "site", root / "project")
    with BackgroundServer(site, port) as url:
        yield url


@pytest.fixture(scope="session")
def payload_url(payload_site: Path) -> Iterator[str]:
    with BackgroundServer(payload_site) as url:
        yield url


@pytest.fixture(scope="session")
def compare_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of the recorded compare results (tests/support/compare.py), built once for the session: its two
    modules (test_compare_browser, test_chooser_browser) only read it, and tests/support/tiers.py sends them to
    one worker (SAME_WORKER_AS), where a module-scoped site was built twice."""
    root = tmp_path_factory.mktemp("compare-site")
    (root / "project").mkdir()
    write_compare_results(root / "results")
    return build_site(root / "results", root / "site", root / "project")


@pytest.fixture(scope="session")
def compare_url(compare_site: Path) -> Iterator[str]:
    with BackgroundServer(compare_site) as url:
        yield url
