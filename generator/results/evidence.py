"""Tests behind the pages' findings: how strongly per-process figures support a claim, as a p-value, with the
same Student's t machinery as the intervals (generator.results.intervals), and the false-discovery rule that
decides which of a report's claims are settled.

Every test is on the log scale (a ratio is a difference) with the measurement process as the unit:

- ``one_side_test``: the geometric mean of one trial's per-process figures (against a bound: "its p90 is under
  the 20 ms threshold");
- ``paired_test``: per-round (or per-process) log ratios of two figures measured side by side (two versions in
  the same rounds; two layers in the same profiled processes);
- ``unpaired_test``: Welch's difference of mean logs, each side widened by the drift between two time windows
  (intervals.BETWEEN_RUN_SD, or half the run's process spread), for figures measured minutes apart.

A claim that needs several things at once (a sweet spot: under the threshold *and* ahead of every rival) takes
the largest of its tests' p-values (the intersection-union test: no correction is needed inside one claim).
Across a report's claims, ``fdr_settled`` applies Benjamini and Hochberg's rule at FDR_Q: a page of a hundred
claims does not carry five flukes marked settled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from generator.results import sequential as sequence
from generator.results.intervals import LEVEL, Drift, log_side, positive_logs, t_quantile

FDR_Q = 0.05  # expected share of settled findings that are flukes, at most


@dataclass(frozen=True)
class LogTest:
    """An estimate on the log scale with its standard error and degrees of freedom (a t statistic's parts).

    Its p-values are those of the matching *two-sided* interval (twice the one-sided tail, at most 1): a claim's
    direction is the one the data showed (the faster version, the larger layer), and a one-sided test in the
    direction the data chose would settle twice as many flukes as its level says. So p ≤ 0.05 exactly when the
    95 % interval separates, which is what pages call settled before the report-wide correction.

    `sequential`: the figures are those of a trial measured until its confidence sequence looked narrow enough
    (trials.ci_sequential). A t test read at a round chosen that way claims more than it holds, so its p-value
    and interval are the sequence's (generator.results.sequential), which hold at any stopping round."""

    estimate: float
    se: float
    df: float
    n: int
    sequential: bool = False

    def p_above(self, bound: float = 0.0) -> float:
        """p-value of "the true value is above `bound`" (log scale): small when it clearly is."""
        return self._p(self.estimate - bound)

    def p_below(self, bound: float = 0.0) -> float:
        return self._p(bound - self.estimate)

    def _p(self, margin: float) -> float:
        if self.se <= 0:
            return 0.0 if margin > 0 else 1.0
        if self.sequential:
            return sequence.p_value(margin / self.se, self.n) if margin > 0 else 1.0
        return min(1.0, 2.0 * _t_sf(margin / self.se, self.df))

    def p_within(self, low: float, high: float) -> float:
        """Two one-sided tests: the true value lies inside (low, high) (the 95 % interval lies within them)."""
        return max(self.p_above(low), self.p_below(high))

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        """The t interval on the ratio scale (exp of the log bounds)."""
        factor = sequence.multiplier(self.n, level) if self.sequential else t_quantile(max(self.df, 1.0), level)
        half = factor * self.se if self.se > 0 else 0.0
        return _exp(self.estimate - half), _exp(self.estimate + half)


def one_side_test(values: Sequence[float], sequential: bool = False) -> LogTest | None:
    """The geometric mean of per-process figures (`sequential`: LogTest); None with fewer than 2."""
    x = positive_logs(values)
    if x.size < 2:
        return None
    return LogTest(float(x.mean()), float(x.std(ddof=1)) / math.sqrt(x.size), float(x.size - 1), int(x.size),
                   sequential)


def paired_test(base: Sequence[float], cand: Sequence[float]) -> LogTest | None:
    """Mean per-round log ratio cand / base over the rounds with both figures; None with fewer than 2."""
    d = [math.log(c / b) for b, c in zip(base, cand, strict=True)
         if b is not None and c is not None and math.isfinite(b) and math.isfinite(c) and b > 0 and c > 0]
    if len(d) < 2:
        return None
    x = np.asarray(d)
    return LogTest(float(x.mean()), float(x.std(ddof=1)) / math.sqrt(x.size), float(x.size - 1), int(x.size))


def unpaired_test(base: Sequence[float], cand: Sequence[float], drift: Drift = 0.0) -> LogTest | None:
    """Welch's mean log cand − mean log base, with the drift term of intervals.unpaired; None unless both
    sides have 2 or more figures."""
    (mean_a, va, size_a), (mean_b, vb, size_b) = log_side(tuple(base)), log_side(tuple(cand))
    if size_a < 2 or size_b < 2:
        return None
    drift_a, drift_b = drift if isinstance(drift, tuple) else (drift, drift)
    se2 = va + vb + math.log1p(drift_a) ** 2 + math.log1p(drift_b) ** 2
    denom = va ** 2 / (size_a - 1) + vb ** 2 / (size_b - 1)
    df = (va + vb) ** 2 / denom if denom > 0 else float(size_a + size_b - 2)
    return LogTest(float(mean_b - mean_a), math.sqrt(se2), max(df, 1.0), min(size_a, size_b))


def p_from_interval(point: float, low: float, high: float, level: float = LEVEL) -> float | None:
    """Two-sided p-value of "the ratio is 1" recovered from a ratio's interval, taken as normal on the log
    scale (for a figure that only its interval records); None when the interval is not usable."""
    if not (point > 0 and low > 0 and high > low):
        return None
    se = (math.log(high) - math.log(low)) / (2 * NormalDist().inv_cdf(0.5 + level / 2))
    return 2 * NormalDist().cdf(-abs(math.log(point)) / se)  # the lower tail: 1 - cdf(z) rounds to 0


def fdr_settled(p_values: Sequence[float | None], q: float = FDR_Q) -> tuple[list[bool], float]:
    """Benjamini–Hochberg: which claims are settled (None: a claim with no test, never settled), and the
    p-value a claim needed at most (q × passed / tested; q / tested when none passed). Valid for independent or
    positively dependent tests, as the claims of one report are (they share processes)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None and math.isfinite(p))
    m = len(tested)
    passed = max((rank for rank, (p, _) in enumerate(tested, start=1) if p <= q * rank / m), default=0)
    settled = [False] * len(p_values)
    for _, i in tested[:passed]:
        settled[i] = True
    return settled, q * max(passed, 1) / m if m else q


def _t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom."""
    from scipy.special import stdtr

    return float(1.0 - stdtr(df, t)) if t < 0 else float(stdtr(df, -t))


def _exp(x: float) -> float:
    return math.exp(x) if x < 709.0 else math.inf
