"""A profile page's findings, per configuration shown: the top op types and layers by time, in order; each
estimated speed-up; the roofline position of the top layers and the layers listed far below it.

Rankings: the item at rank k is settled when its time is above the next one's and below the previous one's,
each compared process by process (the profiling processes timed every node: generator.results.evidence
.paired_test). Estimates (a speed-up S) are settled when their interval lies within ± ESTIMATE_PRECISION of the
figure shown and the time saved, S − 1, is known to ± SAVING_PRECISION (at least ± SAVING_FLOOR): "1.02×"
known to ± 5 % could be a slowdown. Both need the profiled kernels to agree with the
measured latency (generator.analysis.accounting), and the roofline claims need limits probed until two probes
agreed; where either fails the finding says why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from generator.analysis.accounting import TimeAccounting
from generator.analysis.findings.record import Figure, Finding, worst
from generator.analysis.profile import TrialProfile
from generator.analysis.profile_times import ProcessTimes
from generator.analysis.roofline import FAR_BELOW_EFFICIENCY, LayerResult, Roofline
from generator.analysis.summaries import TrialSummary
from generator.analysis.whatif import WhatIf
from generator.results.evidence import LogTest, one_side_test
from generator.results.intervals import t_quantile

TOP_OP_TYPES = 3
TOP_LAYERS = 5
ESTIMATE_PRECISION = 0.05  # an estimate is settled when known to ± 5 %
SAVING_PRECISION, SAVING_FLOOR = 0.2, 0.005  # ... and its saving to ± 20 % of itself, or ± 0.005×
# A layer whose operations per byte lie within this share of the ridge point is not called compute- or
# memory-bound: settled limits agree within 10 % each (generator.machine.probe_settle.TOLERANCE), so their
# ratio, the ridge, within about 21 %.
RIDGE_MARGIN = 0.25
ORDINALS = ("", "most", "second most", "third most", "fourth most", "fifth most")


def page_key(version: str) -> str:
    return f"profile:{version}"


def profile_findings(trial: TrialSummary, p: TrialProfile, timed_blocked: str | None = None) -> list[Finding]:
    """The findings of one configuration's section of its version's profile page. `timed_blocked`: why the
    trial's timed figures cannot be judged (the measured latency estimates divide by), or None."""
    prefix = f"profile/{trial.version}/{trial.config_label}"
    page = page_key(trial.version)
    blocked = _profile_blocked(trial)
    out: list[Finding] = []
    ops = [(o.op_type, o.times or ProcessTimes(o.dur_us, (o.dur_us,))) for o in p.op_types]
    out += _ranks(f"{prefix}/op-type", "op_type_rank", page, ops, TOP_OP_TYPES, "op type", blocked, trial)
    layers = [(r.node_name, r.times or ProcessTimes(r.dur_us, (r.dur_us,))) for r in p.layers]
    out += _ranks(f"{prefix}/layer", "layer_rank", page, layers, TOP_LAYERS, "layer", blocked, trial)
    estimates_blocked = blocked or timed_blocked or _accounting_blocked(p)
    out += [_speedup(prefix, page, w, estimates_blocked, p.accounting) for w in p.op_whatifs + p.whatifs
            if w.factors]
    if limits_unsettled(p.limits) is None:  # otherwise the page makes no roofline claim at all
        # A layer's side of the ridge is its operations per byte against the limits: no time enters it.
        out += [_roofline(prefix, page, r, p.limits, None) for r in p.layers[:TOP_LAYERS] if r.intensity is not None]
        out += [_far_below(prefix, page, r, estimates_blocked) for r in p.far_below]
    return out


def _profile_blocked(trial: TrialSummary) -> str | None:
    if (trial.profile_processes or 0) < 2:
        return (f"one profiling process: no interval across processes (measure.repeats ≥ 2 profiles in "
                f"{'that many' if trial.profile_processes else 'several'} processes)")
    return None


def _accounting_blocked(p: TrialProfile) -> str | None:
    a = p.accounting
    if a is not None and a.disturbed:
        return f"the parts do not add up to the whole: {a.why_not}"
    return None


def limits_unsettled(limits: Roofline) -> str | None:
    """Why the machine's limits cannot carry a claim (None: they can): never probed, or probes that did not
    agree (Roofline.unsettled_reason)."""
    if limits.unsettled_reason is not None:
        return limits.unsettled_reason
    return None if limits.measured else "the machine's limits were not probed"


def _ranks(prefix: str, kind: str, page: str, items: Sequence[tuple[str, ProcessTimes]], top: int, noun: str,
           blocked: str | None, trial: TrialSummary) -> list[Finding]:
    """Findings for ranks 1..top of `items` (largest first)."""
    if len(items) < 2:
        return []
    total = sum(t.value for _, t in items if math.isfinite(t.value))
    out = []
    for k in range(min(top, len(items))):
        name, times = items[k]
        parts = []
        if k > 0:
            parts.append(_above(items[k - 1], items[k]))
        if k + 1 < len(items):
            parts.append(_above(items[k], items[k + 1]))
        p, weakest = worst(parts)
        share = times.value / total if total > 0 else math.nan
        out.append(Finding(
            f"{prefix}/{k + 1}", kind, page,
            f"at {trial.config_label}, {name} is the {noun} with the {ORDINALS[k + 1]} time "
            f"({share:.0%} of the kernels)",
            name, p_value=p, weakest=weakest, blocked=blocked,
            figures=tuple(_figure(n, t) for n, t in items[max(0, k - 1):k + 2]),
        ))
    return out


def _above(upper: tuple[str, ProcessTimes], lower: tuple[str, ProcessTimes]) -> tuple[float | None, str]:
    test = upper[1].versus(lower[1])  # log(lower / upper): below 0 when upper takes longer
    words = f"{upper[0]} and {lower[0]} are within each other's intervals"
    return (test.p_below(0.0) if test else None), words


def _speedup(prefix: str, page: str, w: WhatIf, blocked: str | None, accounting: TimeAccounting | None) -> Finding:
    key = {"op_type": f"op-type/{w.label}", "spec": "whatif", "measured": f"at/{w.label}"}[w.kind]
    test = speedup_test(w, accounting)
    half = speedup_tolerance(w.speedup)
    if blocked is None and not w.factors_paired:
        blocked = (f"{w.label}'s profiling processes do not pair with this version's (profiled in another run or "
                   "other rounds): its op speeds are figures without an interval, so the estimate's would be too "
                   "narrow")
    band = test.interval() if test else None
    what = {"op_type": f"{w.label} {w.factors[0].factor:g}× faster", "spec": "the spec's whatif factors",
            "measured": f"{w.label}'s op speeds"}[w.kind]
    return Finding(
        f"{prefix}/speedup/{key}", "speedup", page, f"with {what}, the inference would be {w.speedup:.3g}× faster",
        round(w.speedup, 4), unit="×", interval=band,
        p_value=test.p_within(math.log(w.speedup - half), math.log(w.speedup + half)) if test else None,
        weakest=(f"its interval is wider than {w.speedup - half:.3g}–{w.speedup + half:.3g}×" if test
                 else "one profiling process"),
        blocked=blocked, figures=(Figure("speed-up", w.speedup, *(band or (None, None))),),
    )


def speedup_tolerance(speedup: float) -> float:
    """How far either side of `speedup` its interval may reach for the estimate to be settled: ± 5 % of it,
    or less where the saving is small (± 20 % of S − 1, at least 0.005)."""
    return min(ESTIMATE_PRECISION * speedup, max(SAVING_PRECISION * abs(speedup - 1.0), SAVING_FLOOR))


def speedup_test(w: WhatIf, accounting: TimeAccounting | None) -> LogTest | None:
    """The speed-up on the log scale with its uncertainty: the spread of the processes' estimates (each from its
    own nodes' shares and factors) and that of the kernels' share of the measured latency, which every process's
    estimate shares (d log S / d log f = S − 1, with f that share), combined in quadrature."""
    times = w.speedup_times
    own = one_side_test(times.floored())
    if own is None:
        return None
    half = own.interval()
    spread = (math.log(half[1]) - math.log(half[0])) / 2
    shared = abs(w.speedup - 1) * _fraction_halfwidth(accounting)
    total = math.hypot(spread, shared)
    return LogTest(math.log(w.speedup), total / _t_quantile(own.df), own.df, own.n)


def _fraction_halfwidth(a: TimeAccounting | None) -> float:
    """Half-width on the log scale of the kernels' share of the measured latency (at most 1, as Amdahl takes
    it), from the kernels' and the measured latency's intervals; 0 without them."""
    if a is None or a.measured_latency_us is None or not a.kernel_interval or not a.measured_interval:
        return 0.0
    k, m = a.kernel_sum_us, a.measured_latency_us
    (k_low, k_high), (m_low, m_high) = a.kernel_interval, a.measured_interval
    f = k / max(m, k)
    low, high = k_low / max(m_high, k_low), k_high / max(m_low, k_high)
    return max(math.log(f) - math.log(low), math.log(high) - math.log(f)) if low > 0 else math.inf


def _t_quantile(df: float) -> float:
    return t_quantile(max(df, 1.0))


def _roofline(prefix: str, page: str, r: LayerResult, limits: Roofline, blocked: str | None) -> Finding:
    peak = limits.peak(r.integer)
    ridge = peak / limits.bandwidth_gbs if peak and limits.bandwidth_gbs else None
    answer = ("compute-bound" if r.intensity >= ridge else "memory-bound") if ridge is not None else "unknown"
    near = ridge is not None and abs(math.log(r.intensity / ridge)) < math.log1p(RIDGE_MARGIN)
    why = blocked or (f"its {r.intensity:.3g} operations per byte are within {RIDGE_MARGIN:.0%} of the ridge point "
                      f"({ridge:.3g})" if near else None)
    return Finding(
        f"{prefix}/roofline/{r.node_name}", "roofline", page,
        f"{r.node_name} is {answer} ({r.intensity:.3g} operations per byte; ridge point "
        f"{ridge:.3g})" if ridge else f"{r.node_name}'s side of the ridge point is unknown",
        answer, fact=ridge is not None, blocked=why,
        weakest=None if ridge is not None else "no ridge point: limits missing",
    )


def _far_below(prefix: str, page: str, r: LayerResult, blocked: str | None) -> Finding:
    """A layer listed far below its roofline: its efficiency is under FAR_BELOW_EFFICIENCY in every profiling
    process's time, beyond chance."""
    per = [r.efficiency * r.dur_us / x for x in (r.times.per_process if r.times else ()) if x > 0] \
        if r.efficiency else []
    test = one_side_test(per)
    return Finding(
        f"{prefix}/far-below/{r.node_name}", "far_below", page,
        f"{r.node_name} runs at {r.efficiency:.0%} of its attainable rate, far below its roofline",
        "far below", p_value=test.p_below(math.log(FAR_BELOW_EFFICIENCY)) if test else None,
        weakest=f"its efficiency's interval reaches {FAR_BELOW_EFFICIENCY:.0%}", blocked=blocked,
    )


def _figure(name: str, t: ProcessTimes) -> Figure:
    band = t.interval()
    return Figure(f"{name}, µs per inference", t.value, *(band or (None, None)))
