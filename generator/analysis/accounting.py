"""How the profiled kernels relate to the measured latency: the one rule every page that shows per-layer or
per-op-type times follows (the profile page, the compare page, the chooser and the one-shot report).

Per-node times are each profiling process's median, less the profiler's own cost inside every kernel call, which
each of those processes measured on a calibration chain (generator.machine.profiler_cost.profiler_cost_us); a node's
figure is the median over the processes (generator.results.profiled). Their sum, the *kernels*, is set against
the *measured* latency (the median of the timed processes, which ran without the profiler): the rest of the
measured latency is the time outside the kernels (executor, allocation, binding, copies). The profiler's cost
between kernels (12 to 16 µs per node on this project's VM) is not in either figure: it is shown as what the
profiled session.run took beside them.

The parts agree with the whole when the kernels' interval reaches down to the measured latency's interval
(`consistent`). When they do not, the profiled inferences ran slower than the measured ones (a neighbour during
the profiled inferences, or a profiler costing more than its calibration showed): shares still describe the
profiled inferences, but every page says so and estimates built on them (speed-ups, roofline positions) are not
settled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PROFILED_TIMES_RULE = (
    "Per-layer and per-op-type times are each profiling process's median, less the profiler's own cost per "
    "kernel call (measured in the same process), then the median over the processes. Their sum, the kernels, "
    "is set against the measured median latency (timed without the profiler); the rest is the time outside the "
    "kernels (executor, allocation, copies)."
)


@dataclass(frozen=True)
class TimeAccounting:
    """The kernels of a profiled inference against the measured median latency, µs per inference.

    `kernel_interval` and `measured_interval` are 95 % intervals over processes (None with one process);
    `profiled_latency_us` is session.run under the profiler (median over the profiling processes), whose
    excess over the measured latency is the profiler's whole cost; `profiler_cost_us` its measured cost per
    kernel call (None: unknown, nothing was subtracted)."""

    kernel_sum_us: float
    kernel_interval: tuple[float, float] | None
    measured_latency_us: float | None
    measured_interval: tuple[float, float] | None
    profiled_latency_us: float | None
    profiler_cost_us: float | None
    kernel_calls: int

    @property
    def outside_us(self) -> float | None:
        """The measured latency not spent in kernels (negative when the kernels exceed it)."""
        return None if self.measured_latency_us is None else self.measured_latency_us - self.kernel_sum_us

    @property
    def profiler_overhead_us(self) -> float | None:
        """What the profiler added to session.run in all (left out of the kernels and of the measured latency)."""
        if self.measured_latency_us is None or self.profiled_latency_us is None:
            return None
        return self.profiled_latency_us - self.measured_latency_us

    @property
    def consistent(self) -> bool:
        """The kernels fit in the measured latency within their intervals (see the module docstring); True when
        nothing was measured to set them against."""
        if self.measured_latency_us is None:
            return True
        kernels_low = self.kernel_interval[0] if self.kernel_interval else self.kernel_sum_us
        measured_high = self.measured_interval[1] if self.measured_interval else self.measured_latency_us
        return kernels_low <= measured_high

    @property
    def disturbed(self) -> bool:
        return not self.consistent

    def share(self, part_us: float | None) -> float | None:
        """A part's share of the measured latency (of the kernels when none was measured)."""
        whole = self.measured_latency_us or self.kernel_sum_us
        return part_us / whole if part_us is not None and whole and whole > 0 else None

    @property
    def why_not(self) -> str | None:
        """Why the parts do not add up to the whole, in words (None when they do)."""
        if self.consistent:
            return None
        return (f"the kernels take {_us(self.kernel_sum_us)} µs{_range(self.kernel_interval)} against "
                f"{_us(self.measured_latency_us)} µs{_range(self.measured_interval)} measured: the profiled "
                "inferences ran slower than the timed ones (a neighbour while they were profiled, or a profiler "
                "costing more than its calibration showed)")


def time_accounting(kernel_sum_us: float | None, kernel_interval: tuple[float, float] | None,
                    measured_latency_ms: float | None, measured_interval_ms: tuple[float, float] | None,
                    profiled_latency_us: float | None, profiler_cost_us: float | None,
                    kernel_calls: int) -> TimeAccounting | None:
    """The accounting of one trial's profiled kernels (see the module docstring), or None without them."""
    if kernel_sum_us is None or not math.isfinite(kernel_sum_us):
        return None
    measured = float(measured_latency_ms) * 1e3 if measured_latency_ms else None
    interval = (measured_interval_ms[0] * 1e3, measured_interval_ms[1] * 1e3) if measured_interval_ms else None
    return TimeAccounting(float(kernel_sum_us), kernel_interval, measured, interval, profiled_latency_us,
                          profiler_cost_us, kernel_calls)


def _us(x: float | None) -> str:
    return "?" if x is None else f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _range(interval: tuple[float, float] | None) -> str:
    return f" ({_us(interval[0])}–{_us(interval[1])})" if interval else ""
