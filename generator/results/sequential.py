"""The sequential rule: intervals that stay valid although measuring stopped when they looked good enough.

Adaptive measurement looks at an interval after every round and stops once it is narrow enough (a trial), once
it settles the diff's verdict (a paired run), or when the budget is spent. A fixed-sample interval read at a
round chosen that way covers less than it says: Student's t at 95 %, stopped once within ± the target, covered
90 to 94 % of simulated trials, and paired A/A runs that stopped early on a 99.9 % t interval, else were judged
at 95 % at the budget, came out slower or faster in 6.5 % of runs at three times the noise of a busy machine's
recording (tests/test_calibration.py). A *confidence sequence* holds at every
round at once, so it holds at whichever round measuring stopped, for whatever reason, however many rounds were
looked at: the runner and the diff need nothing but the number of figures.

The one used is the mixture t confidence sequence (Lai 1976; Wang & Ramdas, "Anytime-valid t-tests and
confidence sequences for Gaussian means with unknown variance", 2023). For n log figures (per process, or per
round of a pair) with mean x̄ and standard deviation s, the t test's Bayes factor against mean μ, with a
N(0, g) prior on the standardized effect and the scale-invariant prior on the spread,

    BF_n(μ) = (1 + n g)^(-1/2) · [(1 + T²/ν) / (1 + T²/(ν (1 + n g)))]^(n/2),   T = (x̄ − μ)·√n / s,  ν = n − 1,

is a nonnegative martingale under μ, so by Ville's inequality it ever reaches 1/α with probability at most α.
The μ it has not rejected form the interval at n: x̄ ± multiplier(n)·s/√n, unbounded while n figures cannot
reject anything at that level (n = 2, or 3 at 97.5 %).

Why not alpha spending over every look: the number of looks comes from a time budget (unknown in advance,
different for every model and neighbour), and a spending function needs the looks planned. The paired verdict
spends in two parts only (STOP_LEVEL, FINAL_LEVEL): the sequence at every look before the budget, and one
fixed-level t test at the look where the budget ended, which needs nothing planned. The price of validity at
any stopping time: the interval is about 1.8 × as wide as the t interval at the same n (4.2 against 2.26
standard errors at 10 figures), so reaching a target takes 1.5 to 3 times the processes.
"""

from __future__ import annotations

import functools
import math

# The prior variance of the standardized effect: where the sequence is tightest. 10 keeps it finite from 3
# figures at 95 % (13.2 standard errors; 4 gives none there, where trials of large models stop) and within 5 %
# of the tightest choice from 10 to 40 figures, where trials and pairs mostly stop.
MIXTURE_G = 10.0
# A paired run's 5 % error, spent in two parts (alpha spending by the union bound): 1 % on its looks before
# the budget, which stop it as soon as a confidence sequence settles the verdict, and 4 % on one look at the
# budget, Student's t at a fixed level. Each part is split between the two figures the diff reads (latency
# and throughput: either can decide). An A/A pair is then called slower or faster in at most 1 % + 4 % of
# runs, whatever round it stopped at. The whole 5 % on the sequence (97.5 % per figure) found a 4 % slower
# model beside no neighbour in 2 of 7 runs at a 1.03 threshold on this project's VM: at the 45 s budget its
# interval was 1.6 times as wide as the t interval there (bench/truth.py, 2026-12-07).
STOP_LEVEL = 0.995  # each figure's sequence at the looks before the budget
FINAL_LEVEL = 0.98  # each figure's t interval at the budget


@functools.lru_cache(maxsize=4096)
def multiplier(n: int, level: float) -> float:
    """Half-width of the confidence sequence at `n` figures, in standard errors (s/√n); infinite while the
    sequence is unbounded, NaN below 2 figures. Solves BF_n(μ) < 1/α (module docstring) for T² / ν: with
    r = ((1 + n g) / α²)^(1/n), T² / ν < (r − 1) / (1 − r / (1 + n g)), bounded only when r < 1 + n g."""
    if n < 2:
        return math.nan
    alpha, spread = 1.0 - level, 1.0 + n * MIXTURE_G
    r = math.exp((math.log(spread) - 2.0 * math.log(alpha)) / n)
    if r >= spread:
        return math.inf
    return math.sqrt((n - 1) * (r - 1.0) / (1.0 - r / spread))


def p_value(t_stat: float, n: int) -> float:
    """The anytime-valid p-value of the mean at a bound: 1 / BF_n at the bound's t statistic `t_stat` (module
    docstring), at most 1. The level-(1 − α) sequence excludes the bound exactly when this is at most α, as
    Student's two-sided p-value and its interval agree; 1 below 2 figures."""
    if n < 2 or math.isnan(t_stat):
        return 1.0
    nu, spread = n - 1, 1.0 + n * MIXTURE_G
    if math.isinf(t_stat):  # the Bayes factor's limit, (1 + n g)^((n − 1) / 2): finite, so never 0
        return min(1.0, spread ** (-(n - 1) / 2))
    t2 = t_stat * t_stat
    log_bf = -0.5 * math.log(spread) + 0.5 * n * (math.log1p(t2 / nu) - math.log1p(t2 / (nu * spread)))
    return min(1.0, math.exp(-log_bf))
