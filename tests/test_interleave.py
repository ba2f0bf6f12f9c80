"""Two versions measured together (generator.runner.interleave): in one process, their requests in alternating
blocks, so that a host that changes the vCPU's speed every few hundred milliseconds moves both alike."""

from __future__ import annotations

import types

import numpy as np
import pytest

from generator.runner import interleave


class _Host:
    """A fake clock on a host that slows the vCPU to 1/1.6 of its speed 0.8 s into the measurement, as this
    project's VM did between rounds (its baseline's median moved between 1.6 and 3.2 ms, 2026-12-07); a request
    takes its base time times the slowdown at its start. Measured one after the other, A before the change and B
    after it, B would look 1.76 times as slow as A."""

    def __init__(self) -> None:
        self.ns = 0

    def speed(self) -> float:
        return 1.6 if self.ns >= 800_000_000 else 1.0

    def run(self, base_us: float):
        def run(_outputs, _feeds):
            self.ns += int(base_us * 1000 * self.speed())
        return run

    def module(self):
        return types.SimpleNamespace(perf_counter_ns=lambda: self.ns, perf_counter=lambda: self.ns / 1e9,
                                     process_time=lambda: self.ns / 1e9)


def test_two_versions_measured_together_keep_their_ratio_while_the_host_changes_speed(monkeypatch):
    host = _Host()
    monkeypatch.setattr(interleave, "time", host.module())
    a, b = interleave.timed_pair_loop((host.run(1000.0), host.run(1100.0)), ({}, {}), warmup=2, min_iterations=50,
                                      min_seconds=1.0, max_seconds=5.0, batch=4)
    lat_a, lat_b = a.all_latencies_ms(), b.all_latencies_ms()
    # Blocks of about 20 ms (BLOCK_S) of each version's own requests (20 of A's, 18 of B's, each block after one
    # untimed request to switch): the two get the same time, so A has about 1.1 times B's requests.
    assert 1.05 < len(lat_a) / len(lat_b) < 1.15 and len(lat_b) >= 450
    # Each side saw both speeds alike, so the ratio of their medians (and p90s) is the true one, 1.1.
    assert set(np.round(lat_a, 3)) == {1.0, 1.6} and set(np.round(lat_b, 3)) == {1.1, 1.76}
    for q in (0.5, 0.9):
        assert np.quantile(lat_b, q) / np.quantile(lat_a, q) == pytest.approx(1.1, rel=0.01)
    # Each side's time and throughput are its own blocks': items over the time its requests took.
    assert a.items == 4 * len(lat_a) and a.wall_s == pytest.approx(lat_a.sum() / 1e3, rel=1e-6)
    assert b.throughput_ips == pytest.approx(b.items / (lat_b.sum() / 1e3), rel=1e-6)
    # Each version had its min_seconds of timed requests and not much more (a block of 20 ms beyond at most).
    assert 1.0 <= a.wall_s < 1.05 and 1.0 <= b.wall_s < 1.05


def test_a_version_four_times_as_slow_gets_its_own_minimum_time_and_the_maximum_caps_both(monkeypatch):
    host = _Host()
    monkeypatch.setattr(interleave, "time", host.module())
    a, b = interleave.timed_pair_loop((host.run(500.0), host.run(2000.0)), ({}, {}), warmup=1, min_iterations=10,
                                      min_seconds=0.5, max_seconds=5.0, batch=1)
    assert 0.5 <= a.wall_s < 0.55 and 0.5 <= b.wall_s < 0.55  # equal time, not equal counts
    assert 3.5 < len(a.all_latencies_ms()) / len(b.all_latencies_ms()) < 4.5
    capped = interleave.timed_pair_loop((host.run(500.0), host.run(2000.0)), ({}, {}), warmup=1,
                                        min_iterations=10**9, min_seconds=0.5, max_seconds=0.3, batch=1)
    # It stops once one version has had max_seconds (checked after each pair of blocks): neither runs on.
    walls = sorted(side.wall_s for side in capped)
    assert 0.3 <= walls[1] < 0.35 and walls[0] > 0.25, walls
