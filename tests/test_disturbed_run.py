"""A site built from a real run recorded beside two busy neighbours (tests/data/disturbed-run: the example CNN,
FP32 and static INT8 at 2 threads, measured by `perfsite run` while two processes multiplied matrices on both
cores, its limits probed at that moment): no page may state a layer share, an estimated speed-up or a roofline
claim that its own parts-versus-whole line or its limits' quality contradicts (issue 34's acceptance)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.analysis.findings.profile import limits_unsettled
from generator.analysis.profile import time_accounting
from generator.analysis.roofline import roofline
from generator.results.store import load_experiment
from generator.site import pages as site_pages

RECORDING = Path(__file__).parent / "data" / "disturbed-run" / "disturbed"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("disturbed") / "disturbed"
    shutil.copytree(RECORDING, folder)
    results = load_experiment(folder)
    view = site_pages.site_view(results, "disturbed")
    pages = site_pages.view_pages(site_pages.template_env(), view, ["overview", "profiles", "compare"])
    return results, view, {p.path.rsplit("/", 1)[-1]: p.markdown for p in pages}


def _sections(page: str) -> dict[str, str]:
    """A profile page's sections by configuration label."""
    parts = page.split("\n## ")[1:]
    return {part.split("\n", 1)[0].split(" · ")[0]: part for part in parts}


def test_the_recording_is_disturbed(site):
    """What the other tests check must be there to check: limits the probe could not settle, and profiled
    inferences that do not fit in the measured latency (or a neighbour's preempted requests)."""
    results, view, _ = site
    trials = [t for t in view.trials if t.ok]
    unsettled = {limits_unsettled(roofline(results.environments, t)) for t in trials} - {None}
    accountings = [time_accounting(results, t) for t in trials if t.profiled]
    assert unsettled or any(a is not None and a.disturbed for a in accountings)
    assert max(t.preempted_share or 0.0 for t in trials) > 0.05  # the neighbours took CPU from the requests


def test_no_roofline_claim_rests_on_limits_that_did_not_settle(site):
    results, view, pages = site
    findings = view.findings.findings
    for version in view.versions:
        page = pages[version.profile_path]
        for label, section in _sections(page).items():
            trial = next((t for t in view.trials if t.version == version.info.version and t.config_label == label),
                         None)
            if trial is None or not trial.ok:
                continue
            why = limits_unsettled(roofline(results.environments, trial))
            if why is None:
                continue
            assert "The machine's limits are unknown on this machine" in section
            assert 'data-chart="chart-roofline' not in section and "far below the roofline" not in section
            assert "of the measured FP32 peak" not in section and "limit underestimated" not in section
            assert not any(f.kind in ("roofline", "far_below") and f.id.startswith(
                f"profile/{trial.version}/{label}/") for f in findings)


def test_shares_and_speedups_never_contradict_their_parts_versus_whole_line(site):
    results, view, pages = site
    settled_estimates = [f for f in view.findings.findings if f.kind in ("speedup", "far_below") and f.settled]
    for version in view.versions:
        for label, section in _sections(pages[version.profile_path]).items():
            trial = next((t for t in view.trials if t.version == version.info.version and t.config_label == label),
                         None)
            if trial is None or not trial.ok or not trial.profiled:
                continue
            accounting = time_accounting(results, trial)
            if accounting.consistent:
                assert "The kernels fit in the measured latency within their intervals." in section
                continue
            # The section says the parts do not add up, once at its top and in its accounting, and settles no
            # estimate and no roofline position built on them.
            assert '!!! warning "The profiled kernels do not fit in the measured latency"' in section
            assert "**The parts do not add up**" in section
            prefix = f"profile/{trial.version}/{label}/"
            assert not [f.id for f in settled_estimates if f.id.startswith(prefix)]
            estimates = section.split("### Estimated speedup", 1)[1].split("### Thread-pool efficiency", 1)[0]
            assert "| settled |" not in estimates
