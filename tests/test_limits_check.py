"""`perfsite run`'s check of the machine limits after a sweep, on a real results folder (tests/data/v1): a layer
above a cached limit makes it probe once more, and the pages mark what still exceeds a limit."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from generator.analysis.limits import LIMIT_UNDERESTIMATED, limit_overruns
from generator.machine import probe
from generator.machine.environment import capture_environment
from generator.results.store import ResultsDir
from generator.runner import limits_check
from generator.site.formatting import of_limit

V1 = Path(__file__).parent / "data" / "v1" / "v1-sample"


@pytest.fixture
def results(tmp_path) -> ResultsDir:
    shutil.copytree(V1, tmp_path / "results")
    return ResultsDir(tmp_path / "results")


def _env(fp32: float, int8: float, bandwidth: float):
    return dataclasses.replace(capture_environment(), physical_cores=2, logical_cores=2, peak_gflops_fp32=fp32,
                               peak_gops_int8=int8, bandwidth_gbs=bandwidth, limits_settled=True)


def _excesses(results: ResultsDir, env) -> list[limits_check.LimitExcess]:
    tables = {t: results.read_table(t) for t in ("nodes", "layers", "trials")}
    return limits_check.limit_excesses(tables["nodes"], tables["layers"], tables["trials"], env)


def test_layers_above_a_limit_are_found_and_none_under_generous_limits(results):
    assert _excesses(results, _env(1e6, 1e6, 1e6)) == []
    compute = [e for e in _excesses(results, _env(0.01, 0.01, 1e6))]
    assert compute and {e.limit for e in compute} <= {"FP32 peak", "INT8 peak"}
    # One thread of two physical cores: the peak the layer is held to is half the machine's.
    assert all(e.allowed == pytest.approx(0.005) for e in compute)
    memory = _excesses(results, _env(1e6, 1e6, 0.001))
    assert memory and {e.limit for e in memory} == {"bandwidth"}
    assert "above the measured bandwidth" in memory[0].text


def test_run_probes_again_once_when_a_layer_exceeds_the_cached_limits(results, tmp_path, monkeypatch):
    monkeypatch.setenv(probe.CACHE_ENV, str(tmp_path / "cache"))
    env = _env(0.01, 0.01, 0.001)
    low = probe.MachineLimits(0.01, 0.01, 0.001, threads=2, quick=True, notes=(), measured_at="2026-01-05T10:00:00",
                              settled=True)
    probe.store(probe.probe_cache_dir(), env.fingerprint, low)
    high = dataclasses.replace(low, peak_gflops_fp32=1e6, peak_gops_int8=1e6, bandwidth_gbs=1e6,
                               measured_at="2026-01-06T10:00:00")
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): high)
    said: list[str] = []
    keys = set(results.read_table("trials")["trial_key"])
    after = limits_check.recheck_limits(results, keys, env, True, said.append)
    assert after.peak_gflops_fp32 == 1e6 and "the cached machine limits are too low" in said[0]
    stored = results.read_table("environments")
    row = stored[stored["env_id"] == env.env_id].iloc[0]
    assert row["bandwidth_gbs"] == 1e6 and "re-probed" in row["limits_quality"]
    assert row["limits_probed_at"] == "2026-01-06T10:00:00"

    def no_probe(*args, **kwargs):
        raise AssertionError("probed a second time")

    monkeypatch.setattr(probe, "probe_machine", no_probe)
    assert limits_check.recheck_limits(results, keys, env, True, said.append) == env  # once per cached probe


def test_a_figure_above_its_limit_is_never_a_silent_percentage():
    assert of_limit(0.5) == "50.0%"
    assert of_limit(1.06) == f"106.0% ({LIMIT_UNDERESTIMATED})"
    over = limit_overruns([("a", 0.9), ("b", 1.12), ("c", None), ("d", 1.06)])
    assert (over.count, over.worst_what, over.worst_share) == (2, "b", 1.12)
    assert limit_overruns([("a", 1.0), ("b", None)]) is None


def test_unsettled_limits_are_not_checked_nor_probed_again_after_the_sweep(results, tmp_path, monkeypatch):
    """No page sets a figure against unsettled limits, and the next run probes them again anyway."""
    monkeypatch.setenv(probe.CACHE_ENV, str(tmp_path / "cache"))
    env = dataclasses.replace(_env(0.01, 0.01, 0.001), limits_settled=False)
    low = probe.MachineLimits(0.01, 0.01, 0.001, threads=2, quick=True, notes=(), measured_at="2026-01-05T10:00:00",
                              settled=False, reason="they disagreed")
    probe.store(probe.probe_cache_dir(), env.fingerprint, low)

    def no_probe(*args, **kwargs):
        raise AssertionError("re-probed unsettled limits")

    monkeypatch.setattr(probe, "probe_machine", no_probe)
    keys = set(results.read_table("trials")["trial_key"])
    assert limits_check.recheck_limits(results, keys, env, True, print) == env
