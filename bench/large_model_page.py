"""How large the pages of a very large model are, and how long headless Chromium takes to open them.

Builds a chain of 20,000 tiny nodes (generator.models.chain), measures it with `perfsite run --quick` as two
versions (so that there is a compare page), builds the site and opens the profile and compare pages from
file:// in Debian's headless Chromium (as tests/browser/ does), printing each page's size and the seconds to
its load event and until its charts are drawn::

    model: 20,000 nodes; run 111.8 s, build 26.5 s
    largest file under the site: assets/javascripts/bundle.a5f9d56c.min.js.map, 1.03 MB (limit 3 MB)
    reports/chain/profile-a.html          0.58 MB   load   2.1 s   charts drawn   2.2 s
    reports/chain/compare-a-vs-b.html     0.09 MB   load   1.1 s   charts drawn   1.2 s

Before pages were paged and charts limited (issue 13, item 11), the profile page was 27 MB and took 73 s.

Usage: ``python bench/large_model_page.py [--nodes 20000] [--keep DIR]``. Exit status 1 when a file of the
site is over 3 MB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MAX_FILE_BYTES = 3 * 1024 * 1024  # no file of a site over 3 MB (issue 13)
SPEC = """\
name: chain
description: a chain of {nodes} tiny nodes, for page sizes
models:
  a: {{path: chain.onnx}}
  b: {{path: chain.onnx}}
inputs:
  input: {{shape: [batch, 8], dtype: float32}}
sweep: {{batch: [1]}}
measure: {{warmup: 2, min_iterations: 5, min_seconds: 0.02, repeats: 2, profile_iterations: 2}}
compare:
  - {{a: a, b: b}}
"""


def perfsite(*args: str, cwd: Path) -> float:
    """Run the perfsite command line; returns its seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "generator.cli", *args], cwd=cwd, check=True,
                   env={**os.environ, "PERFSITE_QUICK": "1"})
    return time.perf_counter() - start


def build_project(root: Path, nodes: int) -> tuple[Path, float, float]:
    from generator.models.builder import model_bytes, write_if_changed
    from generator.models.chain import build_chain

    write_if_changed(root / "chain.onnx", model_bytes(build_chain(nodes)))
    (root / "spec.yaml").write_text(SPEC.format(nodes=nodes))
    run_s = perfsite("run", "spec.yaml", "--results", "results", "--quick", cwd=root)
    build_s = perfsite("build", "--results", "results", "--site", "site", cwd=root)
    return root / "site", run_s, build_s


def largest_file(site: Path) -> tuple[Path, int]:
    sizes = [(p, p.stat().st_size) for p in site.rglob("*") if p.is_file()]
    return max(sizes, key=lambda item: item[1])


def open_pages(pages: list[Path]) -> list[tuple[float, float]]:
    """Seconds to the load event and until every chart of the page is drawn, per page (a fresh tab each)."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        for page_file in pages:
            tab = browser.new_page()
            start = time.perf_counter()
            tab.goto(page_file.as_uri(), wait_until="load", timeout=600_000)
            loaded = time.perf_counter() - start
            tab.wait_for_function(
                "Array.from(document.querySelectorAll('.perfsite-chart'))"
                ".every(el => el.querySelector('svg') || el.textContent.trim())", timeout=600_000)
            times.append((loaded, time.perf_counter() - start))
            tab.close()
        browser.close()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        site, run_s, build_s = build_project(root, args.nodes)
        print(f"model: {args.nodes:,} nodes; run {run_s:.1f} s, build {build_s:.1f} s")
        path, size = largest_file(site)
        print(f"largest file under the site: {path.relative_to(site)}, {size / 1e6:.2f} MB (limit 3 MB)")
        pages = sorted((site / "reports" / "chain").glob("profile-*.html"))[:1]
        pages += sorted((site / "reports" / "chain").glob("compare-*.html"))
        if not CHROMIUM.exists():
            print(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium): page sizes only")
        times = open_pages(pages) if CHROMIUM.exists() else [(float("nan"), float("nan"))] * len(pages)
        for page_file, (loaded, drawn) in zip(pages, times, strict=True):
            print(f"{str(page_file.relative_to(site)):36s}{page_file.stat().st_size / 1e6:6.2f} MB   "
                  f"load {loaded:5.1f} s   charts drawn {drawn:5.1f} s")
    return 0 if size <= MAX_FILE_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
