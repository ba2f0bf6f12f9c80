"""The 95 % intervals every stage agrees on, with the measurement *process* as the unit of repetition.

Each process yields one figure (its clean requests' latency at the headline percentile, or its clean
throughput); figures are compared on the log scale, where a ratio is a difference:

- **one side** (a trial's own interval): Student's t interval of the mean log figure;
- **paired** (two versions measured in the same rounds, A B A B …): Student's t interval of the per-round log
  ratios, so that what a neighbour did to a round hits both members and cancels;
- **unpaired** (two separately measured runs): Welch's t interval of the difference of mean logs, widened per
  side for the drift *between* two time windows that no within-run resampling can see: ``BETWEEN_RUN_SD``, or
  half the run's process-median spread when larger (``run_drift``).

Student's t is exact for normal log figures at every number of processes (the bootstrap percentile interval
used before covered only 87 % of A/A pairs at 3 processes); tests/test_calibration.py checks ≥ 93 % from 2 to
20 processes on figures drawn from distributions fitted to real stored processes.

With `sequential`, one side and paired intervals are confidence sequences instead (generator.results.sequential):
the runner's stopping rule and ``ci_halfwidth`` are, and what a trial or a pair measured until its interval
looked good enough is judged with them by every reader after it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from generator.results import sequential as sequence

LEVEL = 0.95
# Drift of one configuration's figure between two runs on a shared machine, as a relative standard deviation
# per run. A/A pairs measured in two windows beside a neighbour differed by ~5 % and more (issue 12). Five
# runs of the suite's A/A test beside a spinning neighbour (2026-11-27, tests/data/drift-aa-spin holds two of
# them) gave p90s 4.6 % apart (relative standard deviation over the runs) although each run's own processes
# agreed (process-median spreads 0.4 % to 5.8 %): the whole machine was 9 % slower in one window than in
# another, and the 3 % floor used before called that pair "slower". 5 % per run is that figure, rounded up: a
# 10 % drift is inside the interval of two separately measured runs. Changes that small are what paired runs
# (`perfsite diff --measure`, the CI recipe) are for: they cancel the drift instead of bounding it.
BETWEEN_RUN_SD = 0.05
# The drift between runs of an interval: one relative standard deviation for both sides, or one per side
# (run_drift of each run).
Drift = float | tuple[float, float]


@dataclass(frozen=True)
class LogInterval:
    """A ratio (or a figure) on the log scale: centre ± half, from `n` figures (or rounds)."""

    centre: float
    half: float
    n: int

    @property
    def point(self) -> float:
        return exp_or_inf(self.centre)

    @property
    def low(self) -> float:
        return exp_or_inf(self.centre - self.half)

    @property
    def high(self) -> float:
        return exp_or_inf(self.centre + self.half)

    @property
    def relative_halfwidth(self) -> float:
        return math.expm1(self.half) if self.half < 709.0 else math.inf


def exp_or_inf(x: float) -> float:
    """exp, infinite instead of an OverflowError: a subnormal latency in a damaged file (5e-324 ms against
    1 ms) put a ratio's logarithm at 744, past what a float holds; the pages then show "inf"."""
    return math.exp(x) if x < 709.0 else math.inf


@functools.lru_cache(maxsize=1024)
def t_quantile(df: float, level: float = LEVEL) -> float:
    # scipy.special's inverse of Student's t (the function stats.t.ppf calls) on first use: importing it takes a
    # fifth of a second, scipy.stats a whole second more (it parses every distribution's docstring), in every
    # process that builds a page or a diff. Measurement processes never pay either.
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + level / 2.0))


def positive_logs(values: Sequence[float]) -> np.ndarray:
    a = np.asarray([v for v in values if v is not None and math.isfinite(v) and v > 0], dtype=np.float64)
    return np.log(a)


def one_side(values: Sequence[float], level: float = LEVEL, sequential: bool = False) -> LogInterval | None:
    """t interval of the geometric mean of per-process figures (the confidence sequence with `sequential`);
    None with fewer than 2 figures."""
    return _mean_interval(positive_logs(values), level, sequential)


def paired(base: Sequence[float], cand: Sequence[float], level: float = LEVEL,
           sequential: bool = False) -> LogInterval | None:
    """t interval of the mean per-round log ratio cand / base (the confidence sequence with `sequential`;
    equal-length sequences, one entry per round; rounds with a missing figure on either side are left out);
    None with fewer than 2 complete rounds."""
    d = [math.log(c / b) for b, c in zip(base, cand, strict=True)
         if b is not None and c is not None and math.isfinite(b) and math.isfinite(c) and b > 0 and c > 0]
    return _mean_interval(np.asarray(d, dtype=np.float64), level, sequential)


def _mean_interval(x: np.ndarray, level: float, sequential: bool) -> LogInterval | None:
    """The mean of `x` ± its interval's half-width: Student's t, or the confidence sequence's (which may be
    unbounded: an infinite half)."""
    if x.size < 2:
        return None
    factor = sequence.multiplier(int(x.size), level) if sequential else t_quantile(x.size - 1, level)
    sd = float(x.std(ddof=1))
    # Identical figures leave no doubt whatever the multiplier (an unbounded one times 0 would be NaN).
    return LogInterval(float(x.mean()), factor * sd / math.sqrt(x.size) if sd > 0 else 0.0, int(x.size))


def run_drift(floor: float, process_median_spread: float | None) -> float:
    """How far one run's figure may sit from another window's on the same machine, as a relative standard
    deviation: the documented floor, or, when larger, half the run's process-median spread (the noise rule's
    2σ/median: its σ). A run whose processes disagreed saw the machine's speed change while it measured; the
    next window can differ from it as much, however many processes averaged it. Seen in the suite's A/A test
    on a host that slowed by a fifth during the day: one run's process medians spread 19 %, its p90 14 % above
    four later runs', and the 3 % floor alone called three of its pairs "faster"."""
    spread = process_median_spread if process_median_spread is not None and math.isfinite(process_median_spread) \
        else 0.0
    return max(floor, spread / 2)


def unpaired(base: Sequence[float], cand: Sequence[float], between_run_sd: Drift = 0.0,
             level: float = LEVEL) -> LogInterval | None:
    """Welch's t interval of mean log cand − mean log base, each side's variance of the mean widened by its
    drift between runs (`between_run_sd`: one relative SD for both sides, or (base, candidate), run_drift);
    None unless both sides have 2 or more figures."""
    (mean_a, va, size_a), (mean_b, vb, size_b) = log_side(tuple(base)), log_side(tuple(cand))
    if size_a < 2 or size_b < 2:
        return None
    drift_a, drift_b = between_run_sd if isinstance(between_run_sd, tuple) else (between_run_sd,) * 2
    se2 = va + vb + math.log1p(drift_a) ** 2 + math.log1p(drift_b) ** 2
    # Welch–Satterthwaite degrees of freedom of the means alone: the drift term (the floor, or a run's own
    # spread) bounds how far two windows can differ; it enters the variance, not the degrees of freedom.
    denom = va ** 2 / (size_a - 1) + vb ** 2 / (size_b - 1)
    df = (va + vb) ** 2 / denom if denom > 0 else float(size_a + size_b - 2)
    return LogInterval(float(mean_b - mean_a), t_quantile(max(df, 1.0), level) * math.sqrt(se2), min(size_a, size_b))


@functools.lru_cache(maxsize=4096)
def log_side(values: tuple[float | None, ...]) -> tuple[np.float64, np.float64, int]:
    """One side of `unpaired`: the mean log figure, its variance of the mean and the count of usable figures.
    Once per trial's figures: the chooser pairs every trial with every other."""
    x = positive_logs(values)
    if x.size < 2:
        return np.float64(math.nan), np.float64(math.nan), int(x.size)
    return x.mean(), x.var(ddof=1) / x.size, int(x.size)
