"""Confidence intervals for A/B ratios with the measurement *process* as the unit of repetition.

**Ratio intervals** (what verdicts and "significant" marks use) are Student's t intervals on per-process
figures (generator.results.intervals): paired by round when both trials were measured in the same rounds
(versions of one configuration in one run, or a paired baseline/candidate run), Welch's otherwise, widened by
the between-run drift floor when the two were measured in separate runs. They are centred on the ratio of the
per-process figures (their geometric means, or per round), not of the pooled figures shown beside it. Each
process is judged by its *clean* requests (generator.results.clean). Each side's own interval (the bands drawn
on charts, the intervals of the timing tables) is the same kind: the t interval of its per-process figures,
around the figure shown (`own_interval`). The hierarchical bootstrap below gives a side's own interval and the
ratio interval only where a side has a single process (no t interval exists). A trial measured until its
interval looked narrow enough (`ci_sequential`) has the confidence sequence it stopped on as its own interval,
and a paired run that stopped early on its ratio's sequence is judged by it, one that ran to its budget by
Student's t at the final look's level (generator.results.sequential).

Requests measured in one process share that process's fate (its CPU placement, frequency, cache and memory
layout, neighbours on a shared machine), so they are not independent repetitions: on pooled samples a
Mann-Whitney test or a plain bootstrap calls identical configurations "different" (docs/methodology-compare.md,
../shared/NOTES.md). Where a side has one process, its intervals come from a **hierarchical bootstrap**: each
resample draws the processes with replacement, then requests with replacement within each drawn process, and
recomputes the statistic the page shows:

- latency: the percentile of the pooled resampled requests (linear interpolation, like the `trials` table);
- throughput: the median over the drawn processes of each process's throughput, each rescaled by its
  resampled mean latency (so request-level noise enters too).

A and B are resampled independently; the ratio interval is the 2.5 and 97.5 percentiles of the resampled
ratios B* / A*. Everything is deterministic (numpy default_rng with a fixed seed) and vectorized.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from generator.analysis.records_compare import RatioCI
from generator.results import clean as clean_rule
from generator.results import intervals
from generator.results import sequential as sequence
from generator.results.by_trial import trial_rows
from generator.spec.fields import QUANTILES

RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
# Requests drawn per process and resample are capped so that a trial of 10 processes x 10,000 requests costs
# the same as one of 10 x 2,000. Fewer draws give each process's percentile a little more spread than its
# own requests would: the interval errs on the wide side.
MAX_DRAWS_PER_RESAMPLE = 20_000
CHUNK_ELEMENTS = 2_000_000
CLT_MIN_SAMPLES = 30


@dataclass(frozen=True)
class ProcessSamples:
    """One trial's measurements, per measurement process."""

    latencies_ms: tuple[np.ndarray, ...]  # every (clean) request of each process
    throughput_ips: tuple[float, ...]  # each process's items / wall time (same order; clean when known)
    rounds: tuple[int, ...] = ()  # each process's interleaving round (same order), when stored
    # The clean requests of the processes that kept enough of them (process_samples with preemption known and
    # at least one such process); False: every request of every process, which serves a page's figures but
    # must not decide a verdict when preemption was known (generator.diff.noise).
    judged_clean: bool = False
    # Measured until a confidence sequence looked good enough (the trial's ci_sequential): its own interval is
    # that sequence, as the runner's stopping rule saw it (generator.results.sequential).
    sequential: bool = False

    @property
    def processes(self) -> int:
        return len(self.latencies_ms)


@dataclass(frozen=True)
class Bootstrap:
    """A statistic on the observed data (`point`) and its hierarchical bootstrap replicates (`draws`)."""

    point: float
    draws: np.ndarray
    processes: int

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(self.draws, [tail, 1.0 - tail])
        return float(low), float(high)


def process_samples(processes: pd.DataFrame, latencies: pd.DataFrame, trial_key: str,
                    preemption_known: bool = False, sequential: bool = False) -> ProcessSamples:
    """The trial's requests grouped by process (processes without requests are left out), with each
    process's throughput from the `processes` table (NaN when it was not recorded).

    With `preemption_known` (the trial's column), each process keeps only its clean requests and its clean
    throughput, and processes with too few clean requests are left out (all kept if none has enough)."""
    lat = trial_rows(latencies, trial_key)
    groups = {int(p): g for p, g in lat.groupby("process", sort=True)}
    rows = trial_rows(processes, trial_key)
    by_process = {int(r["process"]): r for _, r in rows.iterrows()}
    requests = {p: _clean_requests(g, preemption_known) for p, g in groups.items()}
    order = [p for p in sorted(groups) if requests[p][0].size]
    usable = [p for p in order if clean_rule.usable(requests[p][1].size, requests[p][0].size)]
    judged_clean = preemption_known and bool(usable)
    order = usable if judged_clean else order
    values = tuple(requests[p][1] if judged_clean else requests[p][0] for p in order)
    column = "clean_throughput_ips" if judged_clean else "throughput_ips"
    throughput = tuple(_float(_get(by_process.get(p), column, "throughput_ips")) for p in order)
    return ProcessSamples(values, throughput, tuple(_round(by_process.get(p)) for p in order), judged_clean,
                          sequential)


def _round(row) -> int:
    value = _float(row.get("round")) if row is not None else math.nan
    return int(value) if math.isfinite(value) else -1


def _clean_requests(group: pd.DataFrame, known: bool) -> tuple[np.ndarray, np.ndarray]:
    """(all requests, clean requests) of one process."""
    lat = group["latency_ms"].to_numpy(dtype=np.float64)
    if not known or "run_delay_ms" not in group:
        return lat, lat
    delay = group["run_delay_ms"].to_numpy(dtype=np.float64)
    return lat, lat[~clean_rule.preempted_mask(lat, delay)]


def _get(row, column: str, fallback: str):
    if row is None:
        return math.nan
    value = row.get(column)
    return row.get(fallback) if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _float(value) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def percentile_of(q_name: str) -> float:
    """`p90` -> 0.9."""
    return QUANTILES[q_name]


def bootstrap_latency(samples: Sequence[np.ndarray], q: float, rng: np.random.Generator,
                      resamples: int = RESAMPLES) -> Bootstrap:
    """Hierarchical bootstrap of the pooled `q`-quantile of request latency.

    Each drawn process contributes the same number of requests (the mean count per process, capped so that
    a resample holds at most MAX_DRAWS_PER_RESAMPLE requests): processes of one trial run for the same time
    and differ little in count. Raises ValueError without any request.
    """
    arrays = [np.asarray(a, dtype=np.float64) for a in samples if len(a)]
    if not arrays:
        raise ValueError("bootstrap_latency needs at least one process with requests")
    flat = np.concatenate(arrays)
    # Resamples hold each request's rank, not its value: gathering and partially sorting 32-bit ranks is twice
    # as fast, and the value at a rank is the same order statistic (values are finite: checked at load).
    order = np.argsort(flat, kind="stable")
    rank_type = np.int16 if flat.size <= np.iinfo(np.int16).max else np.int32  # narrower sorts faster still
    ranks = np.empty(flat.size, dtype=rank_type)
    ranks[order] = np.arange(flat.size, dtype=rank_type)
    by_rank = flat[order]
    sizes = np.array([a.size for a in arrays])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    sizes32, offsets32 = sizes.astype(np.float32), offsets.astype(np.int32)
    last32 = (offsets + sizes - 1).astype(np.int32)
    n_proc = len(arrays)
    per_process = max(1, min(int(round(sizes.mean())), MAX_DRAWS_PER_RESAMPLE // n_proc))
    draws = np.empty(resamples)
    chunk = max(1, CHUNK_ELEMENTS // (n_proc * per_process))
    for start in range(0, resamples, chunk):
        r = min(chunk, resamples - start)
        picked = rng.integers(0, n_proc, size=(r, n_proc))
        # In place and in 32 bits: this loop is the cost of the whole comparison.
        u = rng.random((r, n_proc, per_process), dtype=np.float32)
        u *= sizes32[picked][:, :, None]
        index = u.astype(np.int32)
        index += offsets32[picked][:, :, None]
        np.minimum(index, last32[picked][:, :, None], out=index)  # float32 rounding can reach the size itself
        draws[start:start + r] = _quantile_rows(np.take(ranks, index.reshape(r, -1)), by_rank, q)
    return Bootstrap(float(np.quantile(flat, q)), draws, n_proc)


def _quantile_rows(ranks: np.ndarray, by_rank: np.ndarray, q: float) -> np.ndarray:
    """Per row of ranks, numpy's default (linear) quantile of the values `by_rank[ranks]`, by partial sorting
    (the values are in rank order, so the order statistics of the ranks are those of the values)."""
    h = (ranks.shape[1] - 1) * q
    lo = int(math.floor(h))
    hi = min(lo + 1, ranks.shape[1] - 1)
    # One kth element: numpy's partition with two kth values is ten times slower than with one.
    part = np.partition(ranks, lo, axis=1)
    low = by_rank[part[:, lo]]
    if hi == lo:
        return low
    return low + (h - lo) * (by_rank[part[:, hi:].min(axis=1)] - low)


def bootstrap_throughput(samples: ProcessSamples, rng: np.random.Generator,
                         resamples: int = RESAMPLES) -> Bootstrap | None:
    """Hierarchical bootstrap of the median over processes of per-process throughput.

    Within a drawn process, its throughput is rescaled by (its mean latency / the mean of its resampled
    requests): throughput moves inversely with request time. None when no process recorded a throughput.
    """
    keep = [i for i, t in enumerate(samples.throughput_ips) if math.isfinite(t) and samples.latencies_ms[i].size]
    if not keep:
        return None
    thr = np.array([samples.throughput_ips[i] for i in keep])
    n_proc = len(keep)
    means = np.empty((resamples, n_proc))
    for j, i in enumerate(keep):
        lat = samples.latencies_ms[i]
        means[:, j] = _resampled_means(lat, rng, resamples) / lat.mean()
    picked = rng.integers(0, n_proc, size=(resamples, n_proc))
    scaled = thr[picked] / np.take_along_axis(means, picked, axis=1)
    return Bootstrap(float(np.median(thr)), np.median(scaled, axis=1), n_proc)


def _resampled_means(values: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of `values`."""
    if values.size >= CLT_MIN_SAMPLES:
        # The bootstrap distribution of a mean of this many draws is normal to within a fraction of a
        # percent; drawing it directly saves resampling every request.
        sd = values.std() / math.sqrt(values.size)
        return values.mean() + sd * rng.standard_normal(resamples)
    n = values.size
    out = np.empty(resamples)
    chunk = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, resamples, chunk):
        r = min(chunk, resamples - start)
        out[start:start + r] = values[rng.integers(0, values.size, size=(r, n))].mean(axis=1)
    return out


def ratio_ci(a: Bootstrap, b: Bootstrap, level: float = LEVEL) -> RatioCI:
    """B / A with the percentile interval of the resampled ratios; flagged when either side has fewer than
    three processes (with one, the interval holds request-to-request variation only)."""
    ratios = b.draws / a.draws
    tail = (1.0 - level) / 2.0
    low, high = (float(v) for v in np.quantile(ratios, [tail, 1.0 - tail]))
    point = b.point / a.point if a.point else math.nan
    return RatioCI(point=point, low=low, high=high, significant=bool(low > 1.0 or high < 1.0),
                   note=small_sample_note(a.processes, b.processes), processes_a=a.processes,
                   processes_b=b.processes)


def own_interval(figures: Sequence[float], point: float, level: float = LEVEL,
                 sequential: bool = False) -> tuple[float, float] | None:
    """A side's own 95 % interval (a trial's band on the charts and tables): the figure shown, `point` (its
    pooled percentile, or its median throughput), times exp(± the half-width of the t interval of its
    per-process log figures), intervals.one_side, the interval the runner's stopping rule uses and the one
    the ratios are built from; the confidence sequence for a trial measured `sequential`ly (NaN bounds, shown
    as missing, while its figures cannot bound it). None with fewer than two usable figures: the hierarchical
    bootstrap then."""
    ci = intervals.one_side(figures, level, sequential)
    if ci is None or not math.isfinite(point):
        return None
    if math.isinf(ci.half):
        return math.nan, math.nan
    return point * intervals.exp_or_inf(-ci.half), point * intervals.exp_or_inf(ci.half)


def small_sample_note(processes_a: int, processes_b: int) -> str | None:
    """Why an interval deserves less trust than usual, or None."""
    fewest = min(processes_a, processes_b)
    if fewest <= 1:
        return ("one measurement process: the interval reflects request-to-request variation only, not "
                "process-to-process; measure with more repeats to trust it")
    if fewest == 2:  # Student's t on two figures: one degree of freedom, an honest but very wide interval
        return "two measurement processes: the interval is wide; measure with more repeats to narrow it"
    return None


@dataclass(frozen=True)
class SideFigure:
    """One side of a ratio as shown: its figure (pooled percentile, median throughput over the processes) with
    its own 95 % interval (own_interval; the bootstrap's where it has fewer than two figures)."""

    point: float
    low: float
    high: float
    processes: int

    def interval(self) -> tuple[float, float]:
        return self.low, self.high


def latency_ratio(a: ProcessSamples, b: ProcessSamples, q: float, seed: int = SEED,
                  resamples: int = RESAMPLES, paired: bool = False, between_run_sd: intervals.Drift = 0.0,
                  sequential: bool = False, final: bool = False) -> tuple[RatioCI, SideFigure, SideFigure]:
    """Latency ratio B / A at quantile `q` with its calibrated interval (figures_ratio; `sequential`: a pair
    measured until that ratio's sequence settled, `final`: or until its budget), and both sides' figures.
    Bootstraps (A drawn first, then B, from one generator) are drawn only where a side has one process: the
    ratio's interval and that side's own then come from them. Raises ValueError for a side without requests."""
    boots = _drawn_once(lambda rng: tuple(bootstrap_latency(s.latencies_ms, q, rng, resamples) for s in (a, b)), seed)
    figures = tuple([float(np.quantile(x, q)) for x in s.latencies_ms] for s in (a, b))
    sides = tuple(side_figure(f, pooled_latency(s.latencies_ms, q), lambda i=i: boots()[i], s.processes,
                              s.sequential) for i, (s, f) in enumerate(zip((a, b), figures, strict=True)))
    ci = figures_ratio(figures, (a.rounds, b.rounds), paired, between_run_sd, (a.processes, b.processes),
                       sequential, final)
    return (ci if ci is not None else ratio_ci(*boots())), *sides


def throughput_ratio(a: ProcessSamples, b: ProcessSamples, seed: int = SEED, resamples: int = RESAMPLES,
                     paired: bool = False, between_run_sd: intervals.Drift = 0.0, sequential: bool = False,
                     final: bool = False) -> tuple[RatioCI | None, SideFigure | None, SideFigure | None]:
    """Throughput ratio B / A, as latency_ratio; None parts when a side has no recorded throughput."""
    boots = _drawn_once(lambda rng: tuple(bootstrap_throughput(s, rng, resamples) for s in (a, b)), seed + 1)
    kept = [throughput_figures(s) for s in (a, b)]
    side_a, side_b = (side_figure(k, float(np.median(k)), lambda i=i: boots()[i], len(k), s.sequential) if k
                      else None for i, (s, k) in enumerate(zip((a, b), kept, strict=True)))
    if side_a is None or side_b is None:
        return None, side_a, side_b
    ci = figures_ratio((list(a.throughput_ips), list(b.throughput_ips)), (a.rounds, b.rounds), paired,
                       between_run_sd, (len(kept[0]), len(kept[1])), sequential, final)
    return (ci if ci is not None else ratio_ci(*boots())), side_a, side_b


def _drawn_once(draw: Callable[[np.random.Generator], tuple], seed: int) -> Callable[[], tuple]:
    """Both sides' bootstraps from one generator seeded `seed`, drawn on first use only."""
    return functools.cache(lambda: draw(np.random.default_rng(seed)))


def throughput_figures(samples: ProcessSamples) -> list[float]:
    """Each process's throughput where it recorded one (and requests): what bootstrap_throughput draws from."""
    return [t for t, x in zip(samples.throughput_ips, samples.latencies_ms, strict=True) if math.isfinite(t) and x.size]


def pooled_latency(samples: Sequence[np.ndarray], q: float) -> float:
    """The latency a side shows: quantile `q` of every request of every process, pooled."""
    arrays = [a for a in samples if len(a)]
    if not arrays:
        raise ValueError("a ratio needs at least one process with requests on each side")
    return float(np.quantile(np.concatenate(arrays), q))


def side_figure(figures: Sequence[float], point: float, boot: Callable[[], Bootstrap | None],
                processes: int, sequential: bool = False) -> SideFigure:
    """`point` with its own interval: own_interval of the per-process `figures` (a confidence sequence for a
    trial measured `sequential`ly), else the bootstrap's (drawn only then)."""
    band = own_interval(figures, point, sequential=sequential) or boot().interval()
    return SideFigure(point, *band, processes)


def figures_ratio(figures: tuple[list[float], list[float]], rounds: tuple[tuple[int, ...], tuple[int, ...]],
                  paired: bool, between_run_sd: intervals.Drift, processes: tuple[int, int],
                  sequential: bool = False, final: bool = False) -> RatioCI | None:
    """B / A as the geometric mean of the per-process figures' ratio (per round when `paired` and two or more
    rounds have both, else of each side's geometric mean), with its t interval (Welch's with `between_run_sd`
    when unpaired). The ratio of per-process figures, not of the pooled ones: pooling mixes the processes'
    disagreement into the tail (a p90 over processes that disagree by 25 % rises with the disagreement itself).
    None where no t interval exists (a side with fewer than two figures): callers then take the bootstrap ratio
    (ratio_ci), drawing bootstraps only when needed. `sequential` (a paired run measured until the ratio's
    confidence sequence settled): the paired interval is that sequence, at the level of its looks before the
    budget (generator.results.sequential.STOP_LEVEL), the one its stopping rule looked at; with `final` (it
    stopped at its budget instead), Student's t at the final look's level (sequential.FINAL_LEVEL)."""
    ci = _paired_interval(figures, rounds, sequential, final) if paired else None
    if ci is None:
        ci = intervals.unpaired(figures[0], figures[1], between_run_sd)
    if ci is None:
        return None
    low, high = ci.low, ci.high
    return RatioCI(point=ci.point, low=low, high=high, significant=bool(low > 1.0 or high < 1.0),
                   note=small_sample_note(*processes), processes_a=processes[0], processes_b=processes[1])


def _paired_interval(figures: tuple[list[float], list[float]], rounds: tuple[tuple[int, ...], tuple[int, ...]],
                     sequential: bool = False, final: bool = False) -> intervals.LogInterval | None:
    by_round = [dict(zip(r, f, strict=False)) for r, f in zip(rounds, figures, strict=True)]
    common = sorted(set(by_round[0]) & set(by_round[1]) - {-1})
    if len(common) < 2:
        return None
    base, cand = [by_round[0][r] for r in common], [by_round[1][r] for r in common]
    if sequential and final:  # the one look at the budget: Student's t at its share of the error
        return intervals.paired(base, cand, sequence.FINAL_LEVEL)
    return intervals.paired(base, cand, sequence.STOP_LEVEL if sequential else LEVEL, sequential)


MAX_LOG_SPREAD = 700.0  # math.exp overflows a float past 709


def scaled_ratio_ci(time_a: float, time_b: float, reference: RatioCI | None, rel_se_a: float = 0.0,
                    rel_se_b: float = 0.0, level: float = LEVEL) -> RatioCI | None:
    """A ratio of two profiled times (a layer or a layer type) with an approximate interval.

    The whole model's process-to-process variation is borrowed from `reference` (the median latency ratio of
    the same two trials): its half-width on the log scale is combined in quadrature with the relative
    standard errors of the two profiled times (each layer's spread over its profiling processes,
    layer_match.member_time). None when either time is zero.
    """
    if time_a <= 0 or time_b <= 0:
        return None
    z = z_value(level)
    sigma = math.sqrt(borrowed_spread(reference, level) ** 2 + rel_se_a ** 2 + rel_se_b ** 2)
    point = time_b / time_a
    # A layer whose profiled time spread hundreds of times its mean (rel_se 440, a node near zero with one
    # disturbed process) overflowed exp() and `perfsite diff` ended in a traceback: past e^700 the interval is
    # as good as unbounded, and it stays far from settling anything.
    spread = min(z * sigma, MAX_LOG_SPREAD)
    low, high = point * math.exp(-spread), point * math.exp(spread)
    note = reference.note if reference is not None else "no timed measurement to borrow process variation from"
    ci = RatioCI(point=point, low=low, high=high, significant=bool(low > 1.0 or high < 1.0), note=note,
                 processes_a=reference.processes_a if reference else 0,
                 processes_b=reference.processes_b if reference else 0)
    if reference is not None and reference.unjudged:  # a side shown without a verdict: no layer verdicts either
        return replace(ci, significant=False, unjudged=reference.unjudged, unjudged_from="the profiled pass")
    return ci


def borrowed_spread(reference: RatioCI | None, level: float = LEVEL) -> float:
    """The process-to-process spread scaled_ratio_ci borrows from `reference`: its interval's half-width on the
    log scale, in standard deviations; 0 without a usable reference. The chooser's page script combines it
    with its own rows' standard errors, so it gets the number from here rather than computing it again."""
    if reference is not None and reference.low > 0 and reference.high > 0:  # NaN bounds: no spread either
        return (math.log(reference.high) - math.log(reference.low)) / (2 * z_value(level))
    return 0.0


@functools.lru_cache(maxsize=8)  # asked for once per layer ratio: hundreds of thousands of times per site
def z_value(level: float = LEVEL) -> float:
    """The standard normal quantile of a two-sided interval at `level` (1.96 at 95 %)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2.0)
