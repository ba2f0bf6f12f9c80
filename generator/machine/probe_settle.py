"""When do a probe's attempts give limits one can believe? When two undisturbed attempts agree.

A neighbour only ever slows a run down, so each figure of an attempt is a floor under the machine's true
limit, and the highest floor seen is the best estimate. It is *settled* when a second undisturbed attempt comes
within TOLERANCE of it: for each limit (FP32 peak, INT8 peak when measured, bandwidth), the best and the
second best figure of the undisturbed attempts agree. The limits are then those best figures. Requiring the
*best* to be confirmed, rather than any two attempts to agree, keeps a pair that agrees at a low level (two
attempts in one busy second) from settling below a figure another undisturbed attempt reached: that would
put layers above their ceiling on the pages again.

Disturbed attempts (generator.machine.probe_runs) neither settle nor unsettle anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from generator.machine.probe_runs import ProbeAttempt

# The best figures of two undisturbed attempts within this share of each other agree. On the 2-vCPU development
# VM, eight undisturbed back-to-back full attempts of a quiet minute spread 0.7 % (FP32), 2 % (INT8) and 6 %
# (bandwidth, 39.1 to 41.5 GB/s, one outlier at 29.8), their two best figures within 1 %; but the probe of an
# otherwise idle `make demo` later that day saw FP32 peaks of 182 and 196 GFLOP/s and bandwidths of 25.2 and
# 27.9 GB/s in its undisturbed attempts (7 and 10 % apart: the host moves the vCPU's speed between seconds), and
# at 5 % no demo site showed a roofline. 10 % keeps a ridge point (peak ÷ bandwidth) within about 20 %, the
# margin the roofline findings leave around it (generator.analysis.findings.profile.RIDGE_MARGIN).
TOLERANCE = 0.10
# (name on the pages, ProbeAttempt field, unit)
LIMITS = (("FP32 peak", "peak_gflops_fp32", "GFLOP/s"), ("INT8 peak", "peak_gops_int8", "GOP/s"),
          ("bandwidth", "bandwidth_gbs", "GB/s"))


@dataclass(frozen=True)
class Settlement:
    """The limits a sequence of attempts gives, and whether they are settled (the module docstring)."""

    peak_gflops_fp32: float
    peak_gops_int8: float | None
    bandwidth_gbs: float
    settled: bool
    reason: str  # why they are not settled, in words; "" when settled
    attempts: int
    undisturbed: int


def settle(attempts: Sequence[ProbeAttempt], tolerance: float = TOLERANCE) -> Settlement:
    """Each limit the best figure of the undisturbed attempts (of every attempt when none was undisturbed),
    settled when every limit's second best undisturbed figure is within `tolerance` of its best. A limit no
    attempt measured (INT8 where onnxruntime cannot run it) is None and needs no agreement."""
    calm = [a for a in attempts if not a.disturbed]
    pool = calm or list(attempts)
    best = {field: max((v for a in pool if (v := getattr(a, field)) is not None), default=None)
            for _, field, _ in LIMITS}
    reason = _unsettled_reason(attempts, calm, tolerance)
    assert best["peak_gflops_fp32"] is not None and best["bandwidth_gbs"] is not None
    return Settlement(peak_gflops_fp32=best["peak_gflops_fp32"], peak_gops_int8=best["peak_gops_int8"],
                      bandwidth_gbs=best["bandwidth_gbs"], settled=not reason, reason=reason,
                      attempts=len(attempts), undisturbed=len(calm))


def _unsettled_reason(attempts: Sequence[ProbeAttempt], calm: list[ProbeAttempt], tolerance: float) -> str:
    n = len(attempts)
    if len(calm) < 2:
        seen = list(dict.fromkeys(d for a in attempts for d in a.disturbances))
        which = "none" if not calm else "only one"
        return f"{which} of {n} probe{'s' if n != 1 else ''} ran undisturbed ({'; '.join(seen[:3])})"
    apart = []
    for name, field, unit in LIMITS:
        top = sorted((v for a in calm if (v := getattr(a, field)) is not None), reverse=True)
        if len(top) >= 2 and top[1] < top[0] * (1 - tolerance):
            apart.append(f"{name} {top[1]:.3g} against {top[0]:.3g} {unit}")
    if not apart:
        return ""
    return (f"the undisturbed probes disagreed by more than {100 * tolerance:.0f} %: {', '.join(apart)} "
            f"({len(calm)} undisturbed of {n})")


def can_still_settle(attempts: Sequence[ProbeAttempt], left: int) -> bool:
    """Whether `left` more attempts could still give two undisturbed ones."""
    return sum(not a.disturbed for a in attempts) + left >= 2
