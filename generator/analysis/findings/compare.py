"""A comparison's findings: the latency and throughput verdicts of B against A, by the diff's rule, and each
advice item.

A verdict is *slower* or *faster* when the estimate lies beyond the spec's regression threshold, settled
when its interval excludes 1; *no change* otherwise, settled when its interval lies within the thresholds
(two one-sided tests): "no significant change" is never a settled finding just because the interval is wide.
Advice carries the test of the figure its rule fired on (generator.analysis.advice).
"""

from __future__ import annotations

import math

from generator.analysis.compare_choice import CompareContext
from generator.analysis.findings.figures import LATENCY, THROUGHPUT, compared_q, trial_figures, versus
from generator.analysis.findings.record import Finding
from generator.analysis.records_compare import Advice, Comparison

SLOWER, FASTER, NO_CHANGE = "slower", "faster", "no change"


def page_key(a: str, b: str) -> str:
    return f"compare:{a}:{b}"


def compare_findings(ctx: CompareContext, c: Comparison, page: str | None = None,
                     prefix: str | None = None, verdicts: bool = True) -> list[Finding]:
    """The verdicts (unless `verdicts` is False) and advice of one comparison (`page`, `prefix`: where it is
    stated and its ids' stem)."""
    page = page or page_key(c.a, c.b)
    prefix = prefix or f"compare/{c.a}/{c.b}"
    out = []
    if verdicts and c.a_trial_key and c.b_trial_key:
        out += [verdict(ctx, c, metric, page, prefix) for metric in (LATENCY, THROUGHPUT)]
    out += [advice_finding(a, page, prefix, c) for a in c.advice]
    return [f for f in out if f is not None]


def verdict(ctx: CompareContext, c: Comparison, metric: str, page: str, prefix: str) -> Finding | None:
    ta, tb = (_trial(ctx, c.a, c.a_trial_key), _trial(ctx, c.b, c.b_trial_key))
    if ta is None or tb is None:
        return None
    q = compared_q(ctx, ta, tb)
    fa, fb = trial_figures(ctx, ta, q), trial_figures(ctx, tb, q)
    test = versus(fa, fb, metric)  # log(b / a)
    regression = ctx.exp.spec.regression
    limit = math.log(regression.latency_ratio) if metric == LATENCY else -math.log(regression.throughput_ratio)
    sign = 1.0 if metric == LATENCY else -1.0  # a higher latency or a lower throughput is slower
    blocked = None
    if not (fa.judgeable and fb.judgeable):
        blocked = "a side has too few processes with clean requests to be judged (generator.analysis.sides)"
    if test is None:
        answer, p, weakest = NO_CHANGE, None, "too few processes for an interval"
    elif sign * test.estimate > limit:
        answer = SLOWER
        p = test.p_above(0.0) if sign > 0 else test.p_below(0.0)
        weakest = "its interval still holds no change"
    elif sign * test.estimate < -limit:
        answer = FASTER
        p = test.p_below(0.0) if sign > 0 else test.p_above(0.0)
        weakest = "its interval still holds no change"
    else:
        answer, p = NO_CHANGE, test.p_within(-limit, limit)
        weakest = f"its interval reaches beyond the ± {math.expm1(limit):.0%} the spec counts as a change"
    name = f"{q} latency" if metric == LATENCY else "throughput"
    ratio = math.exp(test.estimate) if test else math.nan
    low_high = test.interval() if test else None
    return Finding(
        f"{prefix}/{metric}", "verdict", page,
        f"at {c.config_label}, {c.b} is {answer if answer != NO_CHANGE else 'no different'} against {c.a} in "
        f"{name} (B / A {ratio:.3g})",
        answer, interval=low_high, p_value=p, weakest=weakest, blocked=blocked,
        figures=(fa.figure(metric), fb.figure(metric)), trials=(tb.trial_key, ta.trial_key),
    )


def advice_finding(a: Advice, page: str, prefix: str, c: Comparison) -> Finding:
    return Finding(
        f"{prefix}/advice/{a.rule_id}", "advice", page, a.text, a.rule_id,
        p_value=a.p_value, fact=a.fact,
        weakest=a.evidence and f"{a.evidence}: not beyond chance", blocked=None,
        trials=tuple(k for k in (c.b_trial_key, c.a_trial_key) if k),
    )


def _trial(ctx: CompareContext, version: str, key: str | None):
    return next((t for t in ctx.trials.get(version, {}).values() if t.trial_key == key), None)
