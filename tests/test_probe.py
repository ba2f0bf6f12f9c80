"""The machine-limits probe: real measurements through onnxruntime (quick mode), its disturbance checks, the rule
that settles limits only when two undisturbed attempts agree, and the per-user, per-environment cache that
`perfsite run` and `perfsite profile` share."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from generator.machine import probe, probe_runs
from generator.machine.environment import capture_environment
from generator.machine.probe_runs import ProbeAttempt
from generator.machine.probe_settle import settle


@pytest.fixture(scope="module")
def quick_limits() -> probe.MachineLimits:
    # Its duration is a benchmark figure (bench/analysis_speed.py), never asserted here: machines are shared.
    return probe.probe_machine(quick=True, threads=2, isa=("AVX2", "FMA"))


def test_quick_probe_measures_every_limit(quick_limits):
    limits = quick_limits
    # Plausible for any CPU that runs the test suite, far from a unit slip (MFLOP/s, TB/s).
    assert 1.0 < limits.peak_gflops_fp32 < 50_000
    assert limits.peak_gops_int8 is not None and 1.0 < limits.peak_gops_int8 < 100_000
    assert 0.5 < limits.bandwidth_gbs < 5_000
    assert limits.quick and limits.threads == 2


def test_notes_say_how_each_figure_was_measured(quick_limits):
    limits = quick_limits
    fp32, int8, bandwidth = limits.notes
    assert "MatMul 512×512×512" in fp32 and "2 intra-op threads" in fp32
    assert "MatMulInteger" in int8 and "none (16-bit multiply-add path)" in int8
    assert "onnxruntime Add over 64 MiB" in bandwidth and "numpy copy" in bandwidth
    vnni = probe_runs.probe_once(quick=True, threads=1, isa=("AVX512-VNNI",)).notes[1]
    assert "int8 dot-product instructions: AVX512-VNNI" in vnni


def _fake(quick: bool, value: float, settled: bool = True) -> probe.MachineLimits:
    return probe.MachineLimits(peak_gflops_fp32=value, peak_gops_int8=2 * value, bandwidth_gbs=value / 10,
                               threads=2, quick=quick, notes=("fake",), measured_at="2026-01-05T10:00:00+00:00",
                               settled=settled, reason="" if settled else "they disagreed", attempts=2,
                               undisturbed=2)


def test_ensure_limits_fills_the_environment_and_caches_per_fingerprint(tmp_path, monkeypatch, quick_limits):
    quick_limits = dataclasses.replace(quick_limits, settled=True)  # a busy machine's are not: probed each run
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): quick_limits)
    env = capture_environment()
    filled = probe.ensure_limits(env, quick=True, cache_dir=tmp_path)
    assert filled.peak_gflops_fp32 == quick_limits.peak_gflops_fp32
    assert filled.bandwidth_gbs == quick_limits.bandwidth_gbs
    assert dataclasses.replace(filled, peak_gflops_fp32=None, peak_gops_int8=None, bandwidth_gbs=None,
                               limits_probed_at=None, limits_quality=None, limits_settled=None) == env
    assert filled.limits_probed_at == quick_limits.measured_at
    assert filled.limits_quality.startswith(quick_limits.quality)
    assert filled.limits_settled == quick_limits.settled
    cached = json.loads((tmp_path / f"probe-{env.fingerprint}.json").read_text())
    assert cached["fingerprint"] == env.fingerprint and cached["limits"]["quick"] is True

    def no_probe(*args, **kwargs):
        raise AssertionError("probed again although the cache holds a good enough probe")

    monkeypatch.setattr(probe, "probe_machine", no_probe)
    said: list[str] = []
    assert probe.ensure_limits(env, quick=True, cache_dir=tmp_path, announce=said.append) == filled
    assert said == []  # nothing is announced when nothing is probed


def test_the_probe_is_announced_as_it_starts(tmp_path, monkeypatch):
    """`perfsite profile` said it measured the machine before the model file was checked; the probe is now
    announced by ensure_limits itself, when (and only when) it runs."""
    said: list[str] = []

    def fake_probe(quick, threads=None, isa=()):
        said.append("probed")
        return _fake(quick, 10.0)

    monkeypatch.setattr(probe, "probe_machine", fake_probe)
    probe.ensure_limits(capture_environment(), quick=True, cache_dir=tmp_path, announce=said.append)
    assert said == ["Measuring the machine's peak and bandwidth (cached once per machine)...", "probed"]


def test_a_quick_probe_does_not_stand_in_for_a_full_one(tmp_path, monkeypatch):
    env = capture_environment()
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 10.0))
    probe.ensure_limits(env, quick=True, cache_dir=tmp_path)
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 99.0))
    assert probe.ensure_limits(env, quick=False, cache_dir=tmp_path).peak_gflops_fp32 == 99.0
    # A full probe serves quick runs too.
    assert probe.ensure_limits(env, quick=True, cache_dir=tmp_path).peak_gflops_fp32 == 99.0


def test_a_damaged_or_foreign_cache_file_is_probed_again(tmp_path, monkeypatch):
    env = capture_environment()
    path = tmp_path / f"probe-{env.fingerprint}.json"
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 42.0))
    for text in ("{not json", json.dumps({"version": 1, "fingerprint": "another", "limits": {}}), "[]"):
        path.write_text(text)
        assert probe.ensure_limits(env, quick=True, cache_dir=tmp_path).peak_gflops_fp32 == 42.0


def _uncached(folder: Path) -> list[str]:
    """ensure_limits with `folder` as its cache: the probe's figures are used, and the warnings it gave."""
    warnings: list[str] = []
    env = probe.ensure_limits(capture_environment(), quick=True, cache_dir=folder, warn=warnings.append)
    assert env.peak_gflops_fp32 == 1.0
    return warnings


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_cache_folder_is_a_warning_and_the_probe_is_used(tmp_path, monkeypatch):
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 1.0))
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert _uncached(folder) == [f"Warning: cannot use the cache folder {folder} (Permission denied); the "
                                     "machine's limits are measured without caching. Set PERFSITE_CACHE_DIR to a "
                                     "writable folder to keep the cache."]
    finally:
        folder.chmod(0o700)


def test_a_file_in_the_way_of_the_cache_folder_is_a_warning_and_the_probe_is_used(tmp_path, monkeypatch):
    """A cache only saves a probe next time: an unusable one must not stop a measurement (docs/errors.md)."""
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 1.0))
    blocker = tmp_path / "cache"
    blocker.write_text("a file, not a folder")
    assert _uncached(blocker) == [f"Warning: cannot use the cache folder {blocker} (it is a file, not a folder); "
                                  "the machine's limits are measured without caching. Set PERFSITE_CACHE_DIR to a "
                                  "writable folder to keep the cache."]


def test_a_probe_says_whether_it_settled(quick_limits):
    assert 1 <= quick_limits.attempts <= probe.MAX_ATTEMPTS[True]
    assert quick_limits.settled == (quick_limits.undisturbed >= 2 and not quick_limits.reason)
    assert quick_limits.quality_text.startswith(f"{quick_limits.quality}: ")


def test_disagreeing_runs_waiting_threads_or_missing_cores_mark_an_attempt_disturbed():
    assert probe_runs.disturbances(1.05, "FP32", 0.001, 1.0, 2, 1.9, "INT8") == ()
    spread = probe_runs.disturbances(1.6, "FP32", 0.0, 1.0, 2)
    assert spread == ("FP32 runs disagreed, median 60 % above the best",)
    waited = probe_runs.disturbances(1.0, "FP32", 0.5, 1.0, 2)  # 0.5 s of 2 thread-seconds: 25 %
    assert waited == ("its threads waited for a CPU 25 % of the time",)
    assert probe_runs.disturbances(1.0, "FP32", None, 1.0, 2) == ()  # no schedstat: the other rules decide
    # One core for two threads: every run agrees, at half the peak, and no thread waited.
    assert probe_runs.disturbances(1.0, "FP32", 0.0, 1.0, 2, 1.02, "FP32") == ("its FP32 runs used 1.0 of 2 cores",)
    assert probe_runs.disturbances(1.0, "FP32", 0.0, 1.0, 1, 0.5, "FP32") == ()  # one thread: run-delay's job


def _attempt(fp32: float, bandwidth: float, int8: float | None = 400.0, disturbed: bool = False) -> ProbeAttempt:
    return ProbeAttempt(fp32, int8, bandwidth, ("fake",), ("busy",) if disturbed else ())


def _probe_with(monkeypatch, attempts: list[ProbeAttempt], quick: bool = True) -> tuple[probe.MachineLimits, int]:
    """probe_machine over a fixed sequence of attempts; also how many it made."""
    made = iter(attempts)
    used = []
    monkeypatch.setattr(probe, "probe_once", lambda quick, threads, isa: used.append(1) or next(made))
    return probe.probe_machine(quick=quick, threads=2), len(used)


def test_two_agreeing_undisturbed_attempts_settle_the_limits_at_their_best(monkeypatch):
    limits, made = _probe_with(monkeypatch, [_attempt(190.0, 40.0), _attempt(194.0, 39.0), _attempt(1.0, 1.0)])
    assert made == 2 and limits.settled and limits.reason == ""
    assert (limits.peak_gflops_fp32, limits.peak_gops_int8, limits.bandwidth_gbs) == (194.0, 400.0, 40.0)
    assert limits.quality_text == "settled: two undisturbed probes agreed within 10 % (2 probes)"


def test_the_best_figure_must_be_confirmed_so_a_disagreement_takes_a_third_attempt(monkeypatch):
    # Bandwidth 29 against 41: not settled at two; the third confirms the best (40.5 within 10 % of 41).
    limits, made = _probe_with(monkeypatch, [_attempt(193.0, 29.0), _attempt(194.0, 41.0), _attempt(192.0, 40.5)])
    assert made == 3 and limits.settled and limits.bandwidth_gbs == 41.0
    # Two attempts agreeing low (29, 29.5) do not settle below the 41 another undisturbed attempt reached.
    low = settle([_attempt(193.0, 29.0), _attempt(194.0, 41.0), _attempt(192.0, 29.5)])
    assert not low.settled and "bandwidth 29.5 against 41 GB/s" in low.reason


def test_disturbed_attempts_neither_settle_nor_unsettle(monkeypatch):
    limits, made = _probe_with(monkeypatch, [_attempt(90.0, 10.0, disturbed=True), _attempt(190.0, 40.0),
                                             _attempt(300.0, 90.0, disturbed=True), _attempt(191.0, 39.5)], quick=False)
    assert made == 4 and limits.settled and (limits.peak_gflops_fp32, limits.bandwidth_gbs) == (191.0, 40.0)
    assert limits.quality_text == "settled: two undisturbed probes agreed within 10 % (4 probes, 2 disturbed)"


def test_attempts_that_never_agree_leave_the_limits_unsettled_and_say_why(monkeypatch):
    limits, made = _probe_with(monkeypatch, [_attempt(193.0, 5.9), _attempt(194.0, 17.6), _attempt(150.0, 12.0)])
    assert made == probe.MAX_ATTEMPTS[True] == 3 and not limits.settled
    assert limits.quality_text == ("unsettled: the undisturbed probes disagreed by more than 10 %: bandwidth 12 "
                                   "against 17.6 GB/s (3 undisturbed of 3)")
    # An INT8 peak onnxruntime could not measure needs no agreement; the FP32 one does.
    apart = settle([_attempt(100.0, 40.0, None), _attempt(190.0, 40.0, None)])
    assert apart.reason.endswith("FP32 peak 100 against 190 GFLOP/s (2 undisturbed of 2)")
    assert apart.peak_gops_int8 is None


def test_it_stops_when_the_attempts_left_cannot_give_two_undisturbed_ones(monkeypatch):
    busy = _attempt(90.0, 10.0, disturbed=True)
    limits, made = _probe_with(monkeypatch, [busy, busy, _attempt(190.0, 40.0)])
    assert made == 2 and not limits.settled  # a third of three could not make two undisturbed
    assert limits.reason == "none of 2 probes ran undisturbed (busy)"
    assert (limits.peak_gflops_fp32, limits.bandwidth_gbs) == (90.0, 10.0)  # the best of what there is


def test_run_and_profile_share_one_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(probe.CACHE_ENV, str(tmp_path / "mine"))
    assert probe.probe_cache_dir() == tmp_path / "mine" / "probe"
    monkeypatch.delenv(probe.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert probe.probe_cache_dir() == tmp_path / "xdg" / "perfsite" / "probe"


def test_the_tests_never_touch_the_real_cache():
    assert os.environ.get(probe.CACHE_ENV) and not str(probe.probe_cache_dir()).startswith(
        str(os.path.expanduser("~/.cache")))


def test_a_reprobe_that_settles_keeps_the_better_figures_and_says_so(tmp_path, monkeypatch):
    env = capture_environment()
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 10.0))
    probe.ensure_limits(env, quick=True, cache_dir=tmp_path)
    fresh = dataclasses.replace(_fake(True, 30.0), bandwidth_gbs=0.5)  # faster compute, slower bandwidth
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): fresh)
    again = probe.reprobe(env, quick=True, cache_dir=tmp_path)
    assert again.peak_gflops_fp32 == 30.0 and again.bandwidth_gbs == 1.0 and again.limits_settled
    assert "re-probed after a layer exceeded the earlier limits" in again.limits_quality
    assert probe.cached_limits(tmp_path, env.fingerprint, quick=True).reprobed


def test_a_reprobe_that_does_not_settle_leaves_the_settled_limits(tmp_path, monkeypatch):
    env = capture_environment()
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 10.0))
    probe.ensure_limits(env, quick=True, cache_dir=tmp_path)
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 99.0, False))
    again = probe.reprobe(env, quick=True, cache_dir=tmp_path)
    assert again.peak_gflops_fp32 == 10.0 and again.limits_settled and "re-probed" in again.limits_quality


def test_unsettled_cached_limits_are_probed_again_by_the_next_run(tmp_path, monkeypatch):
    env = capture_environment()
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 10.0, False))
    first = probe.ensure_limits(env, quick=True, cache_dir=tmp_path)
    assert first.limits_settled is False and first.limits_quality == "unsettled: they disagreed"
    said: list[str] = []
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 20.0))
    again = probe.ensure_limits(env, quick=True, cache_dir=tmp_path, announce=said.append)
    assert said == [probe.REPROBING_MESSAGE] and again.limits_settled and again.peak_gflops_fp32 == 20.0


def test_a_quick_reprobe_of_a_full_probe_still_serves_a_full_run(tmp_path, monkeypatch):
    """A quick run re-probed a full probe: the cache was marked quick, so the next full run (a CI diff) probed
    the machine from scratch again, about 9 s on a busy runner."""
    env = capture_environment()
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): _fake(quick, 10.0))
    probe.ensure_limits(env, quick=False, cache_dir=tmp_path)
    probe.reprobe(env, quick=True, cache_dir=tmp_path)
    cached = probe.cached_limits(tmp_path, env.fingerprint, quick=False)
    assert cached is not None and cached.reprobed and not cached.quick
    probe.reprobe(env, quick=True, cache_dir=tmp_path / "quick-only")
    assert probe.cached_limits(tmp_path / "quick-only", env.fingerprint, quick=False) is None

