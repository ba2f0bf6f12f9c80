"""The quickstart end to end, as `make demo` does it: real measurements (quick mode), `perfsite build`, and
every page of the built site in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from support.browser import (
    PHONE,
    READY,
    assert_charts_drawn,
    assert_charts_fit,
    assert_no_mark_outside_its_frame,
    html_pages,
    open_layer,
    visit_pages,
)
from support.cli import ROOT, perfsite
from support.site import loaded_from_elsewhere

from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def quickstart_site(tmp_path_factory, example_models, _probe_cache) -> Path:
    """A copy of this repository's project files, the quickstart measured into results/, the site built."""
    project = tmp_path_factory.mktemp("quickstart-project")
    shutil.copytree(ROOT / "docs", project / "docs")
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    (project / "experiments" / "models").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "quickstart.yaml", project / "experiments")
    shutil.copy(example_models["cnn"], project / "experiments" / "models" / "cnn.onnx")
    # A clone: the project root is the git top level, so results/ and site/ land beside experiments/.
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    # Every version and every page kind, on the spec's profiled configuration (b1 t2 c1) alone, a twelfth of the
    # sweep: measuring processes are most of the suite's time; `make demo` runs the whole sweep.
    # The suite's caches (machine probe, quantized models), never the home folder's: a module fixture runs before
    # the autouse fixtures that set PERFSITE_CACHE_DIR for each test.
    env = {"PERFSITE_QUICK": "1", "PERFSITE_CACHE_DIR": str(_probe_cache)}
    run = perfsite("run", "experiments/quickstart.yaml", "--only", "batch=1,threads=2,concurrency=1", cwd=project,
                   env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    trials = pd.read_parquet(project / "results" / "quickstart" / "trials")
    assert len(trials) == 3 and set(trials["status"]) == {"ok"}
    build = perfsite("build", cwd=project, env=env, timeout=300)
    assert build.returncode == 0, build.stderr
    return project / "site"


WHATIF = "reports/quickstart/profile-fp32.html"
CHOOSER = "reports/quickstart/choose.html"


def test_quickstart_site_renders_every_chart_without_errors_or_network(chromium, quickstart_site):
    pages = html_pages(quickstart_site)
    for version in ("fp32", "int8-static", "int8-dyn"):
        assert f"reports/quickstart/profile-{version}.html" in pages
    assert {"methodology.html", "spec.html", "cli.html"} <= set(pages)
    # Every report page and the home page; of the hand-written documentation one page stands for all (same theme,
    # same scripts, no charts): test_built_pages_reference_no_network_resource reads every page's HTML.
    visited = [rel for rel in pages if rel.startswith("reports/") or rel in ("index.html", "methodology.html")]
    # The chooser opened at the compared pair, as the layer panel's check needs it (the same page).
    visited[visited.index(CHOOSER)] = CHOOSER + "#a=fp32&ac=b1%20t2%20c1&b=int8-static&bc=b1%20t2%20c1"
    charts = 0
    with BackgroundServer(quickstart_site) as base:
        for url, page, visit in visit_pages(chromium, [base + rel for rel in visited]):
            rel = url.removeprefix(base)
            charts += assert_charts_drawn(page, rel)
            assert_no_mark_outside_its_frame(page, rel)
            assert_charts_fit(page, rel)
            if rel == "index.html":  # the home page's body leads to the reports (its nav did, its text did not)
                assert page.locator("article a[href='reports/index.html']").count() >= 1, rel
            # Two pages' controls are worked on the same visit (a page load was about 1.5 s on 2 cores).
            if rel == WHATIF:
                _profile_page_switches_between_what_if_scenarios(page)
            if rel.startswith(CHOOSER):
                _layer_panel_shows_attributes_shapes_and_quantization_side_by_side(page)
            assert not visit.errors, f"{rel}: console errors {visit.errors}"
            assert not visit.foreign_requests(), f"{rel}: requests outside 127.0.0.1: {visit.foreign_requests()}"
    assert charts >= 4  # the experiment chart and one op-time chart per version's profile


# One page of each kind holds every chart kind of a measured experiment: the overview (latency against
# throughput, every version), a profile (op types, timeline and its rates) and a compare page (results, layer
# types, inference time, Pareto, precision).
PHONE_PAGES = ["reports/quickstart/index.html", "reports/quickstart/profile-int8-static.html",
               "reports/quickstart/compare-fp32-vs-int8-static.html"]


LEGENDS_UNDER_PLOTS = """() => {
  const svg = document.querySelector(
    "[data-chart='chart-latency-throughput'] svg, [data-chart='chart-compare-results'] svg");
  if (!svg) return null;
  const legend = svg.querySelector("g.role-legend").getBoundingClientRect();
  return Array.from(svg.querySelectorAll("g.role-axis"))
    .every((a) => legend.top >= a.getBoundingClientRect().bottom - 1);
}"""


def test_at_390_px_every_chart_keeps_its_title_axes_and_legends_in_its_frame(chromium, quickstart_site):
    """On a phone the legends go under the plot, titles wrap and crowded axis labels thin out (perfsite.js
    `narrowed`): at 390 px the legends took half a chart, a title ended "every configuration o", a timeline's
    legend ran out of its frame and a throughput axis read "1,0001,5002,000"."""
    with BackgroundServer(quickstart_site) as base:
        for url, page, visit in visit_pages(chromium, [base + rel for rel in PHONE_PAGES], viewport=PHONE):
            rel = url.removeprefix(base)
            assert assert_charts_drawn(page, rel) >= 2
            assert_charts_fit(page, rel)
            # The version legends sit under their plots, not beside them.
            assert page.evaluate(LEGENDS_UNDER_PLOTS) is not False, rel
            assert visit.errors == [], rel


def test_built_pages_reference_no_network_resource(quickstart_site):
    # Every page, the hand-written documentation's too (some of which quote such URLs as text, in errors.md).
    for page in quickstart_site.rglob("*.html"):
        assert loaded_from_elsewhere(page.read_text()) == [], page


def _profile_page_switches_between_what_if_scenarios(page) -> None:
    """One control for the estimated speed-ups (Sparsify's summary type): each op type faster alone, the spec's
    `whatif` factors and the op speeds measured for the compared version, as content tabs."""
    tabs = page.locator(".tabbed-set").first
    labels = tabs.locator(".tabbed-labels label")
    assert labels.all_inner_texts() == ["Each op type 2× faster", "The spec's whatif factors",
                                        "At int8-static's op speeds"]
    blocks = tabs.locator(".tabbed-content > .tabbed-block")
    assert [blocks.nth(i).is_visible() for i in range(3)] == [True, False, False]
    labels.nth(1).click()
    assert [blocks.nth(i).is_visible() for i in range(3)] == [False, True, False]
    assert "Estimated" in blocks.nth(1).inner_text() and "| Conv" not in blocks.nth(1).inner_text()
    assert blocks.nth(1).locator("table tbody tr").first.locator("td").first.inner_text() == "Conv"
    labels.nth(2).click()
    assert blocks.nth(2).is_visible() and "Factors are this version's time per op family" in blocks.nth(2).inner_text()


def _layer_panel_shows_attributes_shapes_and_quantization_side_by_side(page) -> None:
    """On results measured today the panel has what the model files say: attributes, element types and the
    int8 weight with its scale and zero point, the differences from FP32 marked."""
    page.wait_for_selector(READY)
    convs = page.locator('[data-section="kernels"] tbody tr', has_text="Conv")
    index = page.locator('[data-section="kernels"] tbody tr').all_inner_texts().index(convs.first.inner_text())
    open_layer(page, index)
    compared = dict(tuple(r.split("\t")[1:3]) if r.count("\t") >= 2 else (r, "") for r in
                    page.locator('[data-section="layer"] .perfsite-layer-compare tbody tr').all_inner_texts())
    panel = page.inner_text('[data-section="layer"]')
    assert "not recorded" not in panel and "kernel_shape" in panel and "strides" in panel
    assert "int8 [" in panel and "scale " in panel and "zero point " in panel  # the int8 weight, dequantized
    assert "float32 [1, " in panel  # the input's element type and shape
    marked = page.locator('[data-section="layer"] .perfsite-layer-compare tr.perfsite-differs').all_inner_texts()
    assert any("Precision" in m for m in marked) and any("Weight" in m for m in marked), (marked, compared)
    # Not differences: one provider written once per kernel, an attribute left at its default (auto_pad NOTSET
    # against none), and results measured today are not "measured before perfsite recorded them".
    assert not any("Provider" in m or "auto_pad" in m or "Attribute group" in m for m in marked), marked
    assert "measured before perfsite recorded" not in panel
