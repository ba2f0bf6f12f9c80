"""The README's and the docs' screenshots, taken from a built site in Debian's headless Chromium.

Not a benchmark: it lives beside them because it also drives a browser over a built site. After `make demo`::

    python bench/screenshots.py [--site site] [--out docs/images]

writes quickstart.png (the experiment page's chart and threshold control), chooser.png (the choose-A-and-B
page with two versions at different configurations) and layer-panel.png (that page's panel for the first Conv
layer, FP32 against static INT8). Pages are opened from disk, as readers may.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
WIDTH = 1400


def _experiment(page, site: Path, out: Path) -> None:
    page.goto((site / "reports" / "quickstart" / "index.html").as_uri())
    page.wait_for_selector(".perfsite-chart svg", timeout=20_000)
    chart = page.locator(".perfsite-chart").first
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    top = max(0, box["y"] - 120)  # the heading and the sentence above the chart
    page.screenshot(path=str(out / "quickstart.png"),
                    clip={"x": 0, "y": top, "width": WIDTH, "height": min(900, box["height"] + 260)}, full_page=True)


def _chooser(page, site: Path, out: Path) -> None:
    url = (site / "reports" / "quickstart" / "choose.html").as_uri()
    page.goto(url + "#a=fp32&ac=b1%20t2%20c1&b=int8-static&bc=b8%20t2%20c1")
    page.wait_for_selector(".perfsite-chooser-status[data-ready]", timeout=20_000)
    form = page.locator(".perfsite-chooser").bounding_box()
    page.screenshot(path=str(out / "chooser.png"),
                    clip={"x": 0, "y": max(0, form["y"] - 20), "width": WIDTH, "height": 900}, full_page=True)


def _layer_panel(page, site: Path, out: Path) -> None:
    url = (site / "reports" / "quickstart" / "choose.html").as_uri()
    page.goto(url + "#a=fp32&ac=b1%20t1%20c1&b=int8-static&bc=b1%20t1%20c1")
    page.wait_for_selector(".perfsite-chooser-status[data-ready]", timeout=20_000)
    row = page.locator('[data-section="kernels"] tbody tr', has_text="Conv").first
    row.locator("button.perfsite-layer-open").click()
    page.wait_for_selector('[data-section="layer"] .perfsite-layer-compare', timeout=20_000)
    panel = page.locator('[data-section="layer"]')
    panel.scroll_into_view_if_needed()
    top = panel.bounding_box()["y"] + page.evaluate("window.scrollY")  # a full-page clip is in page coordinates
    page.screenshot(path=str(out / "layer-panel.png"),
                    clip={"x": 0, "y": max(0, top - 60), "width": WIDTH, "height": 900}, full_page=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=Path("site"))
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        _experiment(page, args.site.resolve(), args.out)
        _chooser(page, args.site.resolve(), args.out)
        _layer_panel(page, args.site.resolve(), args.out)
        browser.close()
    print(f"wrote {args.out / 'quickstart.png'}, {args.out / 'chooser.png'} and {args.out / 'layer-panel.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
