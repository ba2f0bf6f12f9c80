"""Where a profiled inference's time went, and how it relates to the measured latency: the one rule every
page that shows per-layer or per-op-type times follows (the profile page, the compare page, the one-shot
`perfsite profile` report and its terminal summary).

Per-layer times come from a separate profiled pass. onnxruntime's profiler costs about 17 µs per node, and the
profiled pass is one more process on a possibly busy machine, so its kernels can add up to more than the
latency the timed processes measured without the profiler (kernels totalling 539 µs for a measured median of
281 µs). The times are shown **as profiled**, never rescaled: a uniform scale would move the profiler's fixed
per-node cost from the many small nodes onto the large ones, and their rates would rise above the machine's
peak. Instead the difference between the profiled ``session.run`` and the measured median is shown as its own
line, *profiler overhead* (negative when the profiled pass ran faster), so that the parts plus the lines below
them add up to the measured latency, and every page says so in PROFILED_TIMES_RULE's words.
"""

from __future__ import annotations

from dataclasses import dataclass

PROFILED_TIMES_RULE = (
    "Per-layer and per-op-type times are as profiled: onnxruntime's profiler adds a fixed cost to every node, "
    "so they can add up to more than the measured latency. The difference between the profiled session.run "
    "and the measured median latency is shown as its own line, *profiler overhead*, so that kernels, time "
    "outside them and that line add up to the measured latency."
)


# Above this share of the measured latency, the profiler overhead line says the profiled pass is not the
# measured inference: the figures tour saw 185 % (3,163 µs on 1,713 µs) feed shares and what-ifs unflagged.
DISTURBED_OVERHEAD = 0.5


@dataclass(frozen=True)
class TimeAccounting:
    """One profiled inference's time split, per inference, in µs, against the measured median latency.

    `profiled_latency_us` (session.run as Python sees it) = `model_run_us` (onnxruntime's model_run event)
    + `outside_model_run_us` (binding, input/output copies); `model_run_us` = `kernel_sum_us` (top-level
    kernels) + `between_kernels_us` (executor, allocation, thread hand-offs). Either part is clamped at zero
    when timer granularity makes the inner figure exceed the outer. `measured_latency_us` is the timed
    processes' median (None when unknown); `profiler_overhead_us` = profiled − measured.
    """

    profiled_latency_us: float
    model_run_us: float
    kernel_sum_us: float
    outside_model_run_us: float
    between_kernels_us: float
    measured_latency_us: float | None = None

    @property
    def unattributed_us(self) -> float:
        return self.outside_model_run_us + self.between_kernels_us

    @property
    def profiler_overhead_us(self) -> float | None:
        if self.measured_latency_us is None:
            return None
        return self.profiled_latency_us - self.measured_latency_us

    @property
    def disturbed(self) -> bool:
        """The profiled session.run and the measured latency differ by more than DISTURBED_OVERHEAD of the
        measured one: the per-node profiler cost dominates a small model's inference, or a neighbour hit the
        short profiled pass (or the timed processes); shares, rates and what-ifs then come from an inference
        unlike the measured one."""
        overhead = self.profiler_overhead_us
        return overhead is not None and bool(self.measured_latency_us) and (
            abs(overhead) > DISTURBED_OVERHEAD * self.measured_latency_us)

    @property
    def kernels_exceed_measured(self) -> bool:
        """The kernels alone add up to more than the measured latency (the case a page must explain)."""
        return self.measured_latency_us is not None and self.kernel_sum_us > self.measured_latency_us

    def share(self, part_us: float | None) -> float | None:
        """A part's share of the measured latency (of the profiled session.run when none was measured)."""
        whole = self.measured_latency_us if self.measured_latency_us else self.profiled_latency_us
        return part_us / whole if part_us is not None and whole and whole > 0 else None


def time_accounting(profiled_latency_us: float | None, model_run_us: float | None, kernel_sum_us: float | None,
                    measured_latency_ms: float | None) -> TimeAccounting | None:
    """The accounting of one profiled inference against the measured median latency (see the module
    docstring), or None without the three profiled figures (results from before they were recorded, a failed
    profiled pass)."""
    if profiled_latency_us is None or model_run_us is None or kernel_sum_us is None:
        return None
    latency, model_run, kernels = float(profiled_latency_us), float(model_run_us), float(kernel_sum_us)
    outside, between = max(latency - model_run, 0.0), max(model_run - kernels, 0.0)
    measured = float(measured_latency_ms) * 1e3 if measured_latency_ms else None
    return TimeAccounting(latency, model_run, kernels, outside, between, measured)
