"""Profiled times over the profiling processes: a node's (or a sum of nodes') figure with its interval.

The figure a page shows is the node's `dur_us` (generator.results.profiled: the median over the profiling
processes of each one's median, less the profiler's measured cost per call), or a sum of such figures (an op
type, the kernels of an inference), so that shares of it add up. Its interval is the t interval of the
per-process figures on the log scale (generator.results.intervals.one_side), around the figure shown, as a
trial's own latency interval is (generator.analysis.stats.own_interval). Rankings compare two figures process by
process (the same processes profiled both: generator.results.evidence.paired_test).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from generator.results import intervals
from generator.results.evidence import LogTest, paired_test

# Profiled times this small are below what the profiler's microsecond timestamps resolve: tests on the log
# scale take them at this floor rather than at zero.
FLOOR_US = 0.05


@dataclass(frozen=True)
class ProcessTimes:
    """A profiled time per inference (µs): the figure shown and each profiling process's figure."""

    value: float
    per_process: tuple[float, ...]

    @property
    def processes(self) -> int:
        return sum(math.isfinite(x) for x in self.per_process)

    def interval(self, level: float = intervals.LEVEL) -> tuple[float, float] | None:
        """The figure times exp(± the t half-width of the per-process figures' logs); None with fewer than 2."""
        ci = intervals.one_side(self.floored(), level)
        if ci is None or not math.isfinite(self.value):
            return None
        return self.value * intervals.exp_or_inf(-ci.half), self.value * intervals.exp_or_inf(ci.half)

    def scaled(self, factor: float) -> ProcessTimes:
        return ProcessTimes(self.value * factor, tuple(x * factor for x in self.per_process))

    def point(self) -> ProcessTimes:
        """The figure alone, as one process's (no interval)."""
        return ProcessTimes(self.value, (self.value,))

    def floored(self) -> list[float]:
        return [max(x, FLOOR_US) for x in self.per_process if math.isfinite(x)]

    def versus(self, other: ProcessTimes) -> LogTest | None:
        """log(other / self), process by process (both measured by the same processes)."""
        if len(self.per_process) != len(other.per_process):
            return None
        return paired_test([max(x, FLOOR_US) for x in self.per_process],
                           [max(x, FLOOR_US) for x in other.per_process])


def node_times(value: float, per_process: Sequence[float] | None) -> ProcessTimes:
    """One node's figure (`dur_us`) and its per-process figures (`dur_process_us`)."""
    values = tuple(float(x) for x in (per_process if per_process is not None else ()))
    return ProcessTimes(float(value) if value is not None else math.nan, values or (float(value),))


def summed(parts: Iterable[ProcessTimes]) -> ProcessTimes:
    """The sum of several figures, process by process (a node a process did not run counts 0 there)."""
    items = list(parts)
    if not items:
        return ProcessTimes(0.0, ())
    width = max(len(p.per_process) for p in items)
    total = np.zeros(width)
    for p in items:
        if len(p.per_process) == width:
            total += np.nan_to_num(np.asarray(p.per_process, dtype=np.float64), nan=0.0)
        else:  # a part recorded by fewer processes (older results mixed in): its figure in each
            total += p.value if math.isfinite(p.value) else 0.0
    return ProcessTimes(float(sum(p.value for p in items if math.isfinite(p.value))), tuple(float(x) for x in total))


def ratio_of(part: ProcessTimes, whole: ProcessTimes) -> ProcessTimes:
    """A share (`part` / `whole`), process by process."""
    per = tuple(p / w if w > 0 else math.nan for p, w in zip(part.per_process, whole.per_process, strict=False))
    return ProcessTimes(part.value / whole.value if whole.value > 0 else math.nan, per)
