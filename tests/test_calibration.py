"""The 95 % intervals cover 1 in at least 93 % of A/A pairs, for every number of processes from 2 to 20.

A seeded simulation (deterministic): per-process log figures are drawn from distributions fitted to the real
per-process figures in tests/data/process_figures.json (a paired A/A run on a busy machine): a Student-t
location-scale fit of their spread, heavy tails included, and for paired runs a per-round component shared by
both members, fitted from how much of the spread pairing removed. 2,000 pairs per process count, through the
very functions the diff and the compare pages call (generator.results.intervals).

Adaptive measurement looks after every round: the confidence sequences it stops on and is judged by, and the
one t look at the budget (generator.results.sequential), keep their error rates at whichever round it
stopped, through the runner's stopping rule (generator.runner.aggregate.stops) and the diff's figures and
verdict.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.cli import ROOT

from generator.analysis.stats import figures_ratio
from generator.diff.verdict import FASTER, SLOWER, Thresholds, trial_verdict
from generator.results import intervals, sequential
from generator.runner import aggregate

FIGURES = json.loads((ROOT / "tests" / "data" / "process_figures.json").read_text())
PAIRS = 2000
COUNTS = range(2, 21)
MIN_COVERAGE = 0.93


def fitted() -> tuple[float, float, float]:
    """(t degrees of freedom, scale of one process's log figure, share of its variance common to a round)."""
    from scipy import stats  # on use: a second's import in every pytest worker that collects this module

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


# A paired run as `perfsite diff --measure` runs it with the default measure settings: the recording's 35 rounds
# took its 45 s budget; looks from the third round on (repeats), target ± 2 %, the default thresholds.
BUDGET_ROUNDS, REPEATS, TARGET = 35, 3, 0.02


def fitted_ratios() -> tuple[float, np.ndarray]:
    """(t degrees of freedom, covariance) of the recording's per-round log ratios of its two figures (p90
    latency, throughput): they move together (correlation −0.85), and either can decide a verdict."""
    d = np.array([np.log(np.asarray(FIGURES["candidate"][f]) / np.asarray(FIGURES["baseline"][f]))
                  for f in ("p90_ms", "throughput_ips")]).T
    d -= d.mean(axis=0)
    from scipy import stats

    df = stats.t.fit((d / d.std(axis=0, ddof=1)).ravel())[0]
    return float(max(df, 2.5)), np.cov(d.T)


def paired_runs(rng: np.random.Generator, runs: int, noise: float, slowdown: float,
                limits: Thresholds) -> tuple[dict[str, int], float]:
    """`runs` simulated paired runs through the runner's stopping rule and the diff's verdict: per-round log
    ratios from a bivariate Student t with the recording's covariance times `noise`² (a round's disturbance
    hits both figures), the candidate `slowdown` slower (latency up, throughput down by as much). After every
    round from REPEATS on, the runner's look (aggregate.stops on the paired sequence, at the threshold); at the
    round it stopped (or the budget), the diff's two figures (stats.figures_ratio) and its verdict. Returns the
    verdict counts and the mean rounds measured."""
    df, cov = fitted_ratios()
    normal = rng.multivariate_normal(np.zeros(2), cov, size=(runs, BUDGET_ROUNDS))
    spread = np.sqrt(df / rng.chisquare(df, size=(runs, BUDGET_ROUNDS, 1)) * (df - 2) / df)
    ratios = np.exp(noise * normal * spread + np.log1p(slowdown) * np.array([1.0, -1.0]))
    verdicts: dict[str, int] = {}
    rounds = 0
    for lat, thr in ratios.transpose(0, 2, 1):
        k = next((k for k in range(REPEATS, BUDGET_ROUNDS) if aggregate.stops(
            intervals.paired(ONES[:k], lat[:k], sequential.STOP_LEVEL, sequential=True), TARGET,
            limits.latency_ratio)), BUDGET_ROUNDS)
        judged = tuple(range(k))
        figures = [figures_ratio((list(ONES[:k]), list(f[:k])), (judged, judged), True, 0.0, (k, k), sequential=True,
                                 final=k == BUDGET_ROUNDS) for f in (lat, thr)]
        verdict = trial_verdict(*figures, limits)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        rounds += k
    return verdicts, rounds / runs


ONES = np.ones(BUDGET_ROUNDS)


@pytest.mark.parametrize("noise", [1.0, 3.0], ids=["recorded-noise", "thrice-the-noise"])
def test_a_paired_aa_run_that_looks_after_every_round_is_rarely_called_slower_or_faster(noise):
    """An A/A pair is looked at after every round and stops once its interval settles the verdict, else at the
    budget; the diff then reads two figures, either of which can decide. The 5 % is spent in two parts
    (generator.results.sequential): the looks before the budget on confidence sequences at 99.5 % per figure,
    the one look at the budget on Student's t at 98 % per figure, so at most 1 % + 4 % of such runs could end
    slower or faster whatever the noise; measured on 1,500 runs: 0.07 % at the recording's noise, 1.5 % at
    twice it, 2.6 % at thrice, where nearly every A/A run reaches the budget. Two earlier rules: a 99.9 % t
    interval for early stops and the diff's 95 % t at the end called 3.8 % slower or faster at twice the noise
    and 6.5 % at thrice; the whole 5 % on the sequence (97.5 % per figure) 0.5 %, at the price of power."""
    verdicts, _ = paired_runs(np.random.default_rng(21), 800, noise, 0.0, Thresholds(1.05, 0.95, "spec"))
    wrong = verdicts.get(SLOWER, 0) + verdicts.get(FASTER, 0)
    assert wrong / 800 <= 0.045, verdicts


def test_a_paired_run_still_finds_a_real_slowdown_within_the_budget():
    """Power: +10 % at the default 1.05 at the recording's noise (a busy machine) found slower in at least 95 %
    of runs (measured on 1,000: 99.8 % in 14 rounds on average), at twice that noise in at least 85 % (91.9 %;
    the sequence alone at 97.5 %, the rule before, 75 %, its interval at the budget 1.6 times as wide as this
    last look's), and +5 % at `--latency-ratio 1.03` at 0.4 × the noise (a quiet machine) in at least 95 %
    (100 % in 11 rounds)."""
    rng = np.random.default_rng(22)
    for noise, slowdown, limits, found in ((1.0, 0.10, Thresholds(1.05, 0.95, "spec"), 0.95),
                                           (2.0, 0.10, Thresholds(1.05, 0.95, "spec"), 0.85),
                                           (0.4, 0.05, Thresholds(1.03, 0.95, "command line"), 0.95)):
        verdicts, rounds = paired_runs(rng, 400, noise, slowdown, limits)
        assert verdicts.get(SLOWER, 0) / 400 >= found and rounds < BUDGET_ROUNDS, (slowdown, verdicts, rounds)


def test_a_trials_interval_keeps_its_coverage_although_measuring_stopped_once_it_was_narrow_enough():
    """A trial measures until its headline's interval is within ± the target (aggregate.stops) or its budget is
    spent, then stores that interval (ci_halfwidth, the band on the pages). Stopping when the interval happens
    to look narrow picks processes that happen to agree: Student's t at 95 %, read at that round, covered 91 to
    94 % of simulated trials whose processes spread one to three targets (90 % with normal figures). The
    confidence sequence (intervals.one_side with `sequential`) covers the trial's true figure in at least 95 %
    at every spread (measured 98.9 to 99.6 % on 3,000 trials), per-process figures drawn from the heavy-tailed
    fit of the recording, 3 to 40 processes. It costs processes: 5.8 instead of 3.7 at half a target's spread,
    13 instead of 5.8 at one target's."""
    df, _, _ = fitted()
    rng = np.random.default_rng(23)
    for spread in (0.5, 1.0, 2.0):  # one process's standard deviation, in targets
        figures = np.exp(rng.standard_t(df, size=(500, 40)) * np.sqrt((df - 2) / df) * spread * TARGET)
        covered = 0
        for trial in figures:
            ci = next((ci for k in range(REPEATS, 40) if aggregate.stops(
                ci := intervals.one_side(trial[:k], sequential=True), TARGET)), None)
            ci = ci or intervals.one_side(trial, sequential=True)
            covered += ci.low <= 1.0 <= ci.high
        assert covered / 500 >= 0.95, (spread, covered)


def test_the_confidence_sequence_ends_where_the_bayes_factor_reaches_one_over_alpha():
    """generator.results.sequential's closed form against its definition: at x̄ ± multiplier·s/√n the mixture
    Bayes factor is exactly 1/α; it is unbounded at 2 figures and at 3 for 97.5 %, finite from 3 at 95 %, and
    always wider than Student's t at the same level (the price of looking after every round)."""
    from scipy import stats

    g = sequential.MIXTURE_G

    def bayes_factor(t2: float, n: int) -> float:
        nu = n - 1
        return (1 + n * g) ** -0.5 * ((1 + t2 / nu) / (1 + t2 / (nu * (1 + n * g)))) ** (n / 2)

    for level in (0.95, sequential.STOP_LEVEL):
        for n in (4, 5, 10, 35, 200):
            m = sequential.multiplier(n, level)
            assert bayes_factor(m * m, n) == pytest.approx(1 / (1 - level), rel=1e-9)
            assert m > stats.t.ppf(0.5 + level / 2, n - 1)
    assert sequential.multiplier(2, 0.95) == sequential.multiplier(3, 0.975) == float("inf")
    assert 13 < sequential.multiplier(3, 0.95) < 14
    unbounded = intervals.paired([1.0, 1.0], [1.1, 1.3], sequential=True)
    assert unbounded.low == 0.0 and unbounded.high == float("inf") and unbounded.point == pytest.approx(1.196, 1e-3)
    assert intervals.one_side([2.0, 2.0, 2.0], sequential=True).half == 0.0  # no doubt: not inf × 0
    from generator.analysis.stats import own_interval  # a page shows an unbounded band as missing, not 0 to inf

    assert all(np.isnan(own_interval([2.0, 2.2], 2.1, sequential=True)))
    assert own_interval([2.0, 2.2], 2.1) == pytest.approx((1.146, 3.848), rel=1e-3)  # older results: t


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
