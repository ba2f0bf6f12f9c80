"""Profile pages: every section from a fixed results directory with static analysis (`layers`) and probed
machine limits, snapshotted; hostile text stays inert; the sweet spot and measured comparisons appear.

The results (tests/support/profile.py) reuse the site results' trials (tests/support/results.py) and add what
the profile needs: executed nodes with real-looking fused names, shapes, sizes and pool shares, hand-written
`layers` rows, and an environment with measured peaks. Regenerate the snapshots after an intended change with
`PERFSITE_UPDATE_SNAPSHOTS=1 pytest tests/test_profile_page.py` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from support.cli import check_snapshots
from support.profile import EXPERIMENT, write_profile_results

from generator.results.store import load_experiment
from generator.site import pages as site_pages
from generator.site.escape import md_text

SNAPSHOTS = Path(__file__).parent / "snapshots" / "profile"
UPDATE = os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1"
CHART_RE = re.compile(r'<script type="application/json" id="([a-z0-9-]+)">(.*?)</script>')
def _profile_pages(folder: Path) -> dict[str, str]:
    view = site_pages.experiment_view(load_experiment(folder), EXPERIMENT)
    return {page.path: page.markdown for page in site_pages.profile_pages(site_pages.template_env(), view)}


def _generated(tmp_path: Path) -> dict[str, str]:
    """Snapshot name -> text: every profile page and, pretty-printed beside it, every chart in it."""
    out = {}
    for path, markdown in _profile_pages(write_profile_results(tmp_path)).items():
        name = path.removeprefix(f"{site_pages.REPORTS_DIR}/")
        out[name] = markdown
        for chart_id, spec in CHART_RE.findall(markdown):
            (chart,) = json.loads(spec)
            out[f"{name.removesuffix('.md')}.{chart_id}.json"] = json.dumps(chart, indent=1, sort_keys=True,
                                                                            ensure_ascii=False) + "\n"
    return out


def test_profile_pages_match_snapshots(tmp_path):
    generated = _generated(tmp_path)
    check_snapshots(generated, SNAPSHOTS)


def test_profile_pages_are_byte_identical_across_runs(tmp_path):
    assert _generated(tmp_path / "a") == _generated(tmp_path / "b")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, str]:
    return _profile_pages(write_profile_results(tmp_path_factory.mktemp("profile")))


def _section(markdown: str, heading: str) -> str:
    """The text of one `## heading` section of a page."""
    start = markdown.index(f"\n## {heading}")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:] if end < 0 else markdown[start:end]


def test_every_section_of_the_issue_is_on_each_profiled_configuration(pages):
    page = pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"]
    assert re.findall(r"^## .*", page, re.M) == ["## b1 t1 c1", "## b1 t2 c1", "## b8 t2 c1 · sweet spot"]
    for heading in ("b1 t2 c1", "b8 t2 c1 · sweet spot"):
        section = _section(page, heading)
        for part in ("### Model summary", "### Machine limits", "### Layer summaries", "#### By execution provider",
                     "### FLOPs profile", "### Layer results", "### Estimated speedup", "### Thread-pool efficiency",
                     "### Unattributed time", 'data-chart="chart-roofline-', 'data-chart="chart-ops-time-'):
            assert part in section, f"{heading}: {part} missing"


def test_model_summary_shows_static_totals_and_share_of_the_probed_peak(pages):
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert "| Instruction sets | AVX, AVX2, FMA |" in section
    assert "| FLOPs per request (GFLOP, a multiply-add counts 2) | 0.0464 |" in section
    assert "| Parameters (millions) | 0.0396 |" in section
    assert re.search(r"\| Achieved GFLOP/s .* \| [\d.]+ \([\d.]+% of the measured FP32 peak\) \|", section)
    assert "If: listed, not guessed" in section
    assert "| FP32 peak (GFLOP/s) | 180 | 180 |" in section


def test_one_thread_scales_the_compute_peaks_and_has_no_pool(pages):
    page = pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-int8.md"]
    assert re.findall(r"^## .*", page, re.M) == ["## b1 t1 c1", "## b1 t2 c1 · sweet spot"]
    section = _section(page, "b1 t1 c1")
    assert "| FP32 peak (GFLOP/s) | 180 | 90.0 |" in section
    assert "| INT8 peak (GOP/s) | 340 | 170 |" in section
    assert "One intra-op thread: there is no pool" in section


def test_whatif_from_the_spec_and_from_the_compared_version(pages):
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    # One control, three scenarios: content tabs (each op type alone, the spec's factors, int8's speeds).
    assert re.findall(r'^=== "(.*)"$', section, re.M) == [
        "Each op type 2× faster", "The spec's whatif factors", "At int8's op speeds"]
    assert "    Not found among the executed nodes: Attention." in section
    assert f"    | {md_text('/fc/Gemm')} | 1.50× |" in section
    assert "    Op families only int8 ran are not in the estimate: QuantizeLinear, Transpose." in section
    assert "    | Conv | " in section.split('=== "At int8\'s op speeds"')[1]


def test_layers_far_below_the_roofline_are_listed_and_bold(pages):
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert '!!! tip "' in section and "far below the roofline" in section
    assert f"| **{md_text('/relu/Relu_output_0_nchwc')}** |" in section


def test_unprobed_environment_says_so_and_keeps_the_flops_profile(tmp_path):
    pages = _profile_pages(write_profile_results(tmp_path, probed=False))
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert "Machine limits not probed" in section
    assert 'data-chart="chart-ops-time-2"' in section and 'data-chart="chart-roofline-2"' in section
    assert "of the measured FP32 peak" not in section


def test_hostile_text_in_results_stays_inert(tmp_path):
    for markdown in _profile_pages(write_profile_results(tmp_path, payload=True)).values():
        text = CHART_RE.sub("", markdown)
        assert "<script>" not in text and "<img" not in text and "{{" not in text
        assert "](javascript:" not in text
        for _, spec in CHART_RE.findall(markdown):
            assert "</script" not in spec and "<img" not in spec


def test_figures_above_a_limit_say_limit_underestimated(tmp_path):
    low = {"peak_gflops_fp32": 0.5, "peak_gops_int8": 0.5, "bandwidth_gbs": 0.01,
           "limits_quality": "disturbed (2 probes)"}
    section = _section(_profile_pages(write_profile_results(tmp_path, probed=low))[
        f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert '!!! warning "Limit underestimated"' in section
    assert "Probed 2026-01-05 09:58 UTC, disturbed &#40;2 probes&#41;." in section
    assert "of the measured FP32 peak" in section and "% (limit underestimated) of the measured FP32 peak" in section
    assert re.search(r"\| \d[\d,]*\.\d% \(limit underestimated\) \|$", section, re.M)  # a layer's roofline share
    unmarked = re.findall(r"\| (\d[\d,]*\.\d)% \|$", section, re.M)  # the last column: of roofline / at the limit
    assert all(float(v.replace(",", "")) <= 100 for v in unmarked)


def test_profiled_times_add_up_to_the_measured_latency_with_the_overhead_as_its_own_line(pages):
    page = pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"]
    assert "Per-layer and per-op-type times are as profiled" in page
    section = _section(page, "b1 t2 c1")
    lines = dict(re.findall(r"^\| (Kernels|Outside the kernels|Minus the profiler overhead|\*\*Measured latency)"
                            r"[^|]*\| \**(-?[\d,.]+)\** \|", section, re.M))
    names = ("Kernels", "Outside the kernels", "Minus the profiler overhead")
    parts = [float(lines[k].replace(",", "")) for k in names]
    assert sum(parts) == pytest.approx(float(lines["**Measured latency"].replace(",", "")), rel=0.01)
