"""The 95 % intervals cover 1 in at least 93 % of A/A pairs, for every number of processes from 2 to 20.

A seeded simulation (deterministic): per-process log figures are drawn from distributions fitted to the real
per-process figures in tests/data/process_figures.json (a paired A/A run on a busy machine): a Student-t
location-scale fit of their spread, heavy tails included, and for paired runs a per-round component shared by
both members, fitted from how much of the spread pairing removed. 2,000 pairs per process count, through the
very functions the diff and the compare pages call (generator.results.intervals).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from support.cli import ROOT

from generator.results import intervals

FIGURES = json.loads((ROOT / "tests" / "data" / "process_figures.json").read_text())
PAIRS = 2000
COUNTS = range(2, 21)
MIN_COVERAGE = 0.93


def fitted() -> tuple[float, float, float]:
    """(t degrees of freedom, scale of one process's log figure, share of its variance common to a round)."""
    base = np.log(FIGURES["baseline"]["p90_ms"])
    cand = np.log(FIGURES["candidate"]["p90_ms"])
    df, _, scale = stats.t.fit(np.concatenate([base - base.mean(), cand - cand.mean()]))
    b = dict(zip(FIGURES["baseline"]["rounds"], base, strict=True))
    c = dict(zip(FIGURES["candidate"]["rounds"], cand, strict=True))
    d = np.array([c[r] - b[r] for r in sorted(set(b) & set(c))])
    total = float(np.var(np.concatenate([base, cand]), ddof=1))
    common = max(0.0, 1.0 - float(np.var(d, ddof=1)) / (2 * total))
    return float(max(df, 2.5)), float(scale), common


def draws(rng: np.random.Generator, n: int, df: float, scale: float, common: float,
          paired: bool) -> tuple[np.ndarray, ...]:
    """PAIRS A/A pairs of n processes a side. Paired: both members of a round share a per-round part. Unpaired
    (two runs in two time windows): each run has its own processes and a drift of the documented size
    (intervals.BETWEEN_RUN_SD) shared by all its processes."""
    if paired:
        shared = rng.standard_t(df, size=(PAIRS, n)) * scale * np.sqrt(common)
        own = scale * np.sqrt(1.0 - common)
        return (np.exp(shared + rng.standard_t(df, size=(PAIRS, n)) * own),
                np.exp(shared + rng.standard_t(df, size=(PAIRS, n)) * own))
    drift = np.log1p(intervals.BETWEEN_RUN_SD)
    return tuple(np.exp(rng.standard_t(df, size=(PAIRS, n)) * scale + rng.normal(0, drift, size=(PAIRS, 1)))
                 for _ in range(2))


def coverage(a: np.ndarray, b: np.ndarray, paired: bool) -> float:
    hits = 0
    for x, y in zip(a, b, strict=True):
        ci = intervals.paired(x, y) if paired else intervals.unpaired(x, y, intervals.BETWEEN_RUN_SD)
        hits += ci.low <= 1.0 <= ci.high
    return hits / len(a)


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
def test_ratio_intervals_cover_one_in_aa_pairs(paired):
    df, scale, common = fitted()
    assert 0.005 < scale < 0.5 and 0.0 <= common < 1.0
    rng = np.random.default_rng(12)
    low = {}
    for n in COUNTS:
        a, b = draws(rng, n, df, scale, common, paired)
        low[n] = coverage(a, b, paired)
    bad = {n: f"{c:.1%}" for n, c in low.items() if c < MIN_COVERAGE}
    assert not bad, f"coverage below {MIN_COVERAGE:.0%} at these process counts: {bad}"
    # Calibrated, not merely wide: typically near 95 % (the bootstrap it replaced covered 87 % at 3 processes).
    # Unpaired intervals at 2 or 3 processes are conservative (Welch's few degrees of freedom also widen the
    # known drift term).
    assert float(np.median(list(low.values()))) < 0.975, low


def test_stopping_early_when_the_interval_settles_the_verdict_keeps_identical_models_unflagged():
    """A paired run looks at its interval after every round and stops once it settles the verdict (generator.
    runner.aggregate.decides, at EARLY_STOP_LEVEL from EARLY_STOP_ROUNDS on), else at the budget (35 rounds
    here); identical models must still almost never come out slower or faster at the diff's 95 %."""
    from generator.runner.aggregate import EARLY_STOP_LEVEL, EARLY_STOP_ROUNDS, decides

    df, scale, common = fitted()
    rng = np.random.default_rng(5)
    rounds, runs, threshold = 35, 1000, 1.05
    a, b = draws(rng, rounds, df, scale, common, paired=True)
    wrong = 0
    for x, y in zip(a[:runs], b[:runs], strict=True):
        n = rounds
        for k in range(EARLY_STOP_ROUNDS, rounds + 1):
            early = intervals.paired(x[:k], y[:k], EARLY_STOP_LEVEL)
            if decides(early, threshold):
                n = k
                break
        final = intervals.paired(x[:n], y[:n])
        point = float(np.exp(final.centre))
        wrong += (final.low > 1 and point > threshold) or (final.high < 1 and point < 1 / threshold)
    assert wrong / runs <= 0.02, f"{wrong} of {runs} A/A runs called slower or faster"


def test_a_ratio_beyond_what_a_float_holds_is_infinite_not_an_overflow():
    """A subnormal latency in a damaged file (5e-324 ms against 1 ms) put a ratio's logarithm at 744:
    math.exp raised OverflowError on the compare pages and in diff."""
    import math

    from generator.results.intervals import LogInterval, unpaired

    ci = unpaired([5e-324, 1e-323], [1.0, 1.1], 0.03)
    assert ci is not None and ci.centre > 709
    assert math.isinf(ci.point) and math.isinf(ci.high) and ci.relative_halfwidth >= 0
    assert LogInterval(0.01, 0.02, 5).relative_halfwidth == math.expm1(0.02)


def test_either_figure_of_a_short_paired_aa_run_rarely_gives_a_verdict():
    """A configuration's verdict comes from either of two figures, each judged at 95 % (generator.diff.verdict),
    so an A/A pair could fail nearly twice as often as one figure would. On the real recording, subsets of 3 to
    10 of its rounds (a short paired run, as quick mode and CI budgets give) through the diff's own functions:
    an interval of either figure excludes 1 in about 5 % of them at 3 rounds (the two figures move together,
    and t intervals over heavy-tailed rounds are conservative), and the verdict, which also needs the point
    beyond the default thresholds, is wrong in at most 2.5 % (measured 1.0 to 1.8 %)."""
    from generator.analysis.stats import figures_ratio
    from generator.diff.verdict import NO_CHANGE, Thresholds, figure_verdicts

    sides = [dict(zip(FIGURES[s]["rounds"], zip(FIGURES[s]["p90_ms"], FIGURES[s]["throughput_ips"],
                                                strict=True), strict=True)) for s in ("baseline", "candidate")]
    rounds = sorted(sides[0].keys() & sides[1].keys())
    limits = Thresholds(1.05, 0.95, "spec")
    rng = np.random.default_rng(1)
    for k in (3, 5, 10):
        excluded = verdicts = 0
        for _ in range(1000):
            chosen = tuple(sorted(rng.choice(rounds, k, replace=False).tolist()))
            lat, thr = (figures_ratio(tuple([sides[s][r][f] for r in chosen] for s in (0, 1)), (chosen, chosen),
                                      True, 0.0, (k, k)) for f in (0, 1))
            excluded += lat.significant or thr.significant
            verdicts += set(figure_verdicts(lat, thr, limits).values()) != {NO_CHANGE}
        assert excluded <= 60 and verdicts <= 25, (k, excluded, verdicts)


def test_a_trials_own_interval_covers_the_population_figure_far_better_than_the_bootstrap_did():
    """A trial's own interval (the compare pages' timing table, the chooser, the bands on the charts, each side
    of `perfsite diff`) is stats.own_interval: the pooled p90 the page shows, times exp(± the t half-width of
    the per-process log p90s). Simulated trials of 2 to 20 processes of 200 requests, process effects from the
    heavy-tailed fit above and lognormal requests as wide as the recording's p90/p50: it covers the p90 of
    the whole population of processes in at least 93 % of them at 2, 88 % at 3 and 84 % beyond (measured 85 to
    95 %, 91 % at the default 3
    processes; the pooled figure varies a little more than the mean of the per-process figures, so its
    coverage settles near 86 % from 6 processes on, while the interval stays that of the stopping rule). The
    hierarchical bootstrap it replaced covered 45 % at 2 processes, 61 % at 3, 70 % at 5 and 81 % at 10
    (measured 2026-11-27 with this simulation)."""
    from scipy.stats import norm

    from generator.analysis.stats import own_interval

    df, scale, _ = fitted()
    p90, p50 = (np.array(FIGURES["baseline"][f"{q}_ms"]) for q in ("p90", "p50"))
    sigma = float(np.median(np.log(p90 / p50))) / norm.ppf(0.9)
    rng = np.random.default_rng(3)
    effects = rng.standard_t(df, 200_000) * scale
    truth = brentq_p90(lambda x: float(norm.cdf((np.log(x) - effects) / sigma).mean()))
    low = {}
    for n in (2, 3, 5, 10, 20):
        requests = np.exp(rng.standard_t(df, (1000, n, 1)) * scale + sigma * rng.standard_normal((1000, n, 200)))
        figures = np.quantile(requests, 0.9, axis=2)
        pooled = np.quantile(requests.reshape(1000, -1), 0.9, axis=1)
        bands = [own_interval(f, p) for f, p in zip(figures, pooled, strict=True)]
        low[n] = sum(lo <= truth <= hi for lo, hi in bands) / len(bands)
    floors = {2: 0.93, 3: 0.88}  # measured 94.6 % and 90.7 %; about 86 % from 6 processes on
    bad = {n: f"{c:.1%}" for n, c in low.items() if c < floors.get(n, 0.84)}
    assert not bad, f"coverage below its floor at these process counts: {bad}"


def brentq_p90(cdf) -> float:
    """Where a continuous, increasing `cdf` reaches 0.9."""
    from scipy.optimize import brentq

    return float(brentq(lambda x: cdf(x) - 0.9, 0.1, 10.0, xtol=1e-9))
