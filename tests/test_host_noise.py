"""bench/host_noise.py: the spread of fixed work's window medians, by the spread rule's own formula."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from support.cli import ROOT

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
    assert "fixed work: " in said and "windows of 0.1 s" in said and "perfsite's rule: 5%" in said
    assert "slowest stretch: " in said and "steal time: " in said
    spread = float(said.split("spread 2σ/median ")[1].split("%")[0]) / 100
    assert done.value.code == (1 if spread > 0.05 else 0)
