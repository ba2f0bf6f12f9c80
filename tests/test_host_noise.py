"""The machine's own noise (generator.machine.host_noise, which bench/host_noise.py runs for longer): the spread of
fixed work's window medians, by the spread rule's own formula, and the run's measurement the pages state."""

from __future__ import annotations

import importlib.util
import sys

import pandas as pd
import pytest
from support.cli import ROOT

from generator.analysis.run_summaries import run_noise
from generator.machine import host_noise as library
from generator.results.schema import column_names

spec = importlib.util.spec_from_file_location("host_noise", ROOT / "bench" / "host_noise.py")
host_noise = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host_noise)


def test_windows_take_the_median_of_their_loops_and_skip_thin_ones():
    loops = [(0.0, 1.0), (0.1, 2.0), (0.2, 9.0), (0.5, 4.0), (0.6, 4.0), (0.7, 5.0), (1.0, 7.0)]
    assert host_noise.window_medians(loops, 0.5) == [2.0, 4.0]  # the last window holds one loop: left out


def test_the_slowest_stretch_counts_windows_in_a_row_ten_percent_above_the_fastest():
    assert host_noise.longest_slow_stretch([1.0, 1.2, 1.15, 1.05, 1.3, 1.1, 1.0]) == 2
    assert host_noise.longest_slow_stretch([1.0, 1.0, 1.0]) == 0


def test_a_short_run_prints_every_figure_and_judges_by_the_rule(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["host_noise.py", "--seconds", "0.6", "--window", "0.1"])
    with pytest.raises(SystemExit) as done:
        host_noise.main()
    said = capsys.readouterr().out
    if isinstance(done.value.code, str):  # beside busy neighbours a window may hold fewer than three loops
        assert done.value.code.startswith("too few windows: run longer (--seconds)") and said == ""
        return
    assert "fixed work: " in said and "windows of 0.1 s" in said and "perfsite's rule: 5%" in said
    assert "slowest stretch: " in said and "steal time: " in said
    spread = float(said.split("spread 2σ/median ")[1].split("%")[0]) / 100
    assert done.value.code == (1 if spread > 0.05 else 0)


def test_the_run_measures_the_same_fixed_work_into_its_runs_columns():
    """generator.machine.host_noise is what bench/host_noise.py runs, not a copy of it."""
    assert host_noise.fixed_work is library.fixed_work and host_noise.window_medians is library.window_medians
    noise = library.measure_host_noise(quick=True)
    assert (noise.seconds, noise.window_s) == library.QUICK and noise.windows <= 2
    # A window needs three loops: a very busy machine may leave none (then no figures, never wrong ones).
    assert noise.windows == 0 or 0 < noise.fastest_ms <= noise.slowest_ms
    assert set(noise.row()) <= set(column_names("runs"))


def test_the_spread_is_the_spread_rules_formula():
    assert library.spread([1.0]) is None
    assert library.spread([1.0, 1.0, 1.0]) == 0.0
    assert library.spread([0.9, 1.0, 1.1]) == pytest.approx(2 * 0.1 / 1.0)


def test_the_latest_run_that_measured_its_noise_is_the_one_pages_state():
    runs = pd.DataFrame({"run_id": ["a", "b", "c"], "started_at": ["2026-01-01", "2026-01-03", "2026-01-02"],
                         "host_noise_window_s": [0.25, None, 0.25], "host_noise_windows": [8, None, 8],
                         "host_noise_fastest_ms": [8.0, None, 8.1], "host_noise_slowest_ms": [9.0, None, 14.62],
                         "host_noise_spread": [0.05, None, 0.525]})
    noise = run_noise(runs)  # b measured nothing (a spec recorded, a Ray run): c is the latest that did
    assert (noise.run_id, noise.windows, noise.fastest_ms, noise.spread) == ("c", 8, 8.1, 0.525)
    assert noise.apart == pytest.approx(14.62 / 8.1 - 1)
    assert run_noise(runs.drop(columns=[c for c in runs if c.startswith("host_noise")])) is None  # older results


def test_known_loops_print_their_figures_and_a_spread_above_the_rule_exits_1(monkeypatch, capsys):
    """The printout itself, on loops whose figures are known (the real run above may find too few windows)."""
    loops = [(w * 0.1 + i * 0.02, d) for w, d in enumerate([0.010, 0.012, 0.015]) for i in range(3)]
    monkeypatch.setattr(host_noise, "measure", lambda seconds: loops)
    monkeypatch.setattr(sys, "argv", ["host_noise.py", "--seconds", "0.3", "--window", "0.1"])
    with pytest.raises(SystemExit) as done:
        host_noise.main()
    said = capsys.readouterr().out
    assert "fixed work: 9 loops of 12.00 ms median in 3 windows of 0.1 s" in said
    assert "window medians: 10.00 to 15.00 ms (50% apart); spread 2σ/median 41.9% (perfsite's rule: 5%)" in said
    assert "slowest stretch: 2 windows in a row ≥ 10% above the fastest window" in said
    assert done.value.code == 1
