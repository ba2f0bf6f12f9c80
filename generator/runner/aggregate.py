"""Turn what the measurement processes of one trial reported into the rows of the results tables.

Statistics are pooled over every request of every process for the distribution figures (mean, percentiles),
but the *process* is the unit of repetition for everything that says how stable a figure is: throughput and
cores used are medians over processes, and the spread of per-process medians is a noise rule of its own. On
shared machines a process sometimes gets fewer cores than it asked for; that shows here instead of being
averaged in silently.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from generator.numbers import share_above
from generator.plan import Trial
from generator.results import clean, intervals, sequential
from generator.results.headline import stored_percentile
from generator.results.noise import NOISE_CORES_SHARE, NOISE_CV, NOISE_PREEMPTED_SHARE, NOISE_SPREAD
from generator.runner.measure import cores_used_of, latency_stats
from generator.spec.fields import QUANTILES


@dataclass(frozen=True)
class ProcessOutcome:
    """What one measurement process reported (see generator.runner.worker, measure mode).

    The request-level views (all requests, run-delays, the preempted mask, the clean requests) are cached: the
    adaptive stopping rule asks for them after every round, for every process of the trial."""

    process: int
    round: int
    iterations: int
    items: int
    wall_s: float
    cpu_s: float
    load_ms: float
    first_run_ms: float
    peak_rss_mb: float | None
    arena_mb: float | None
    latencies_ms: tuple[np.ndarray, ...] = field(repr=False)  # one array per stream
    # Per stream, each request's run-delay (ms); empty or None entries where the kernel does not tell.
    run_delays_ms: tuple[np.ndarray | None, ...] = field(default=(), repr=False)
    delay_threads: int = 0
    rule_applies: bool = True  # generator.results.clean.applies for the trial's configuration
    concurrency: int = 1
    # A generative trial's process: per request its time to first token, and its decode steps' times
    # ([requests, new_tokens - 1]); None for every other trial.
    ttft_ms: np.ndarray | None = field(default=None, repr=False)
    steps_ms: np.ndarray | None = field(default=None, repr=False)

    @functools.cached_property
    def all_latencies_ms(self) -> np.ndarray:
        return np.concatenate(self.latencies_ms) if self.latencies_ms else np.empty(0)

    @property
    def preemption_known(self) -> bool:
        return bool(self.delay_threads) and self.rule_applies and len(self.run_delays_ms) == len(self.latencies_ms)

    @functools.cached_property
    def all_run_delays_ms(self) -> np.ndarray | None:
        if not self.delay_threads or len(self.run_delays_ms) != len(self.latencies_ms):
            return None
        return np.concatenate(self.run_delays_ms)

    @functools.cached_property
    def preempted(self) -> np.ndarray:
        """Per request (all streams), whether it was preempted (generator.results.clean)."""
        delays = self.all_run_delays_ms if self.preemption_known else None
        return clean.preempted_mask(self.all_latencies_ms, delays)

    @functools.cached_property
    def clean_latencies_ms(self) -> np.ndarray:
        return self.all_latencies_ms[~self.preempted]

    @property
    def usable(self) -> bool:
        return clean.usable(int((~self.preempted).sum()), self.iterations)

    @property
    def clean_throughput_ips(self) -> float:
        """items / (wall − time lost to preemption): each preempted request costs its excess over the clean
        median, spread over the streams in flight."""
        lat, hit = self.all_latencies_ms, self.preempted
        if not hit.any() or self.wall_s <= 0:
            return self.throughput_ips
        ok = lat[~hit]
        if not ok.size:
            return float("nan")
        lost_s = float(np.clip(lat[hit] - np.median(ok), 0, None).sum()) / 1e3 / max(1, self.concurrency)
        return self.items / max(self.wall_s - lost_s, 1e-9)

    @property
    def cores_used(self) -> float:
        return cores_used_of(self.cpu_s, self.wall_s)

    @property
    def throughput_ips(self) -> float:
        return self.items / self.wall_s if self.wall_s > 0 else float("nan")

    def row(self, trial_key: str) -> dict[str, Any]:
        lat = self.all_latencies_ms
        return {
            "trial_key": trial_key,
            "process": self.process,
            "round": self.round,
            "iterations": self.iterations,
            "items": self.items,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "cores_used": self.cores_used,
            "latency_median_ms": float(np.median(lat)) if lat.size else None,
            "latency_mean_ms": float(np.mean(lat)) if lat.size else None,
            "throughput_ips": self.throughput_ips,
            "load_ms": self.load_ms,
            "first_run_ms": self.first_run_ms,
            "peak_rss_mb": self.peak_rss_mb,
            "arena_mb": self.arena_mb,
            "clean_requests": int((~self.preempted).sum()),
            "clean_throughput_ips": self.clean_throughput_ips,
            "delay_threads": self.delay_threads,
            **self.generative_medians(),
        }

    @property
    def clean_ttft_ms(self) -> np.ndarray:
        """A generative process's TTFT of its clean requests (every request when none is clean)."""
        return self.clean_of(self.ttft_ms)

    @functools.cached_property
    def tpot_ms(self) -> np.ndarray:
        """Per request, the mean of its decode steps (empty with one new token: no step)."""
        if self.steps_ms is None or not self.steps_ms.size:
            return np.empty(0)
        return self.steps_ms.mean(axis=1)

    @property
    def clean_steps_ms(self) -> np.ndarray:
        """The decode steps of the clean requests, [requests, steps]."""
        return self.clean_of(self.steps_ms)

    def clean_of(self, per_request: np.ndarray | None) -> np.ndarray:
        """A per-request array's entries of the clean requests (all of them when none is clean)."""
        if per_request is None:
            return np.empty(0)
        return per_request if self.preempted.all() else per_request[~self.preempted]

    def generative_medians(self) -> dict[str, float | None]:
        """The process's median TTFT and TPOT over its clean requests: the per-process figures a comparison's
        intervals are made of; None for other trials."""
        if self.ttft_ms is None:
            return {}
        tpot = self.clean_of(self.tpot_ms) if self.tpot_ms.size else np.empty(0)
        return {"ttft_median_ms": float(np.median(self.clean_ttft_ms)),
                "tpot_median_ms": float(np.median(tpot)) if tpot.size else None}


def latency_table(trial_key: str, processes: Sequence[ProcessOutcome]) -> pa.Table:
    """Every timed request as Arrow columns (built from arrays: a trial can hold 100k requests)."""
    cols: dict[str, list[np.ndarray]] = {"process": [], "stream": [], "iteration": [], "latency_ms": [],
                                         "run_delay_ms": []}
    for p in processes:
        known = p.all_run_delays_ms is not None
        for s, lat in enumerate(p.latencies_ms):
            n = len(lat)
            cols["process"].append(np.full(n, p.process, dtype=np.int64))
            cols["stream"].append(np.full(n, s, dtype=np.int64))
            cols["iteration"].append(np.arange(n, dtype=np.int64))
            cols["latency_ms"].append(np.asarray(lat, dtype=np.float64))
            delay = p.run_delays_ms[s] if known else None
            cols["run_delay_ms"].append(np.full(n, np.nan) if delay is None else np.asarray(delay, np.float64))
    arrays = {k: np.concatenate(v) if v else np.empty(0) for k, v in cols.items()}
    n = len(arrays["latency_ms"])
    delay = pa.array(arrays.pop("run_delay_ms"), pa.float64(), from_pandas=True)  # NaN -> null: unknown
    table = pa.table({"trial_key": pa.array([trial_key] * n, pa.string()), **arrays, "run_delay_ms": delay})
    if processes and all(p.ttft_ms is not None for p in processes):  # a generative trial (one stream a process)
        table = table.append_column("ttft_ms", pa.array(np.concatenate([p.ttft_ms for p in processes]), pa.float64()))
        tpot = [p.tpot_ms if p.tpot_ms.size else np.full(p.iterations, np.nan) for p in processes]
        table = table.append_column("tpot_ms", pa.array(np.concatenate(tpot), pa.float64(), from_pandas=True))
    return table


def noise_reasons(cv: float, spread: float, cores_used: float, cores_expected: float,
                  preemption: PreemptionSummary | None = None, oversubscribed: bool = False) -> list[str]:
    """The noise rules that fire, on the trial's clean requests; each is explained on the methodology page.

    An oversubscribed configuration (threads × concurrency > logical cores) keeps its own requests waiting for
    each other: their latencies vary by design, whatever the machine does, so the cv rule says nothing about
    noise there (re-running on a quieter machine would not lower it); the pages show that cv as the
    configuration's, and the spread rule still judges whether the figures repeat.

    With preemption known, CPU a neighbour took shows per request and those requests are left out, so the
    whole-process cores-used rule is replaced by two rules on what is left: too few usable processes, or most
    requests preempted (the clean ones may then be the short requests a busy scheduler happened to spare)."""
    reasons = []
    if cv >= NOISE_CV and not oversubscribed:
        reasons.append(f"cv {cv:.0%} ≥ {NOISE_CV:.0%}")
    if spread > NOISE_SPREAD:
        reasons.append(f"process medians spread {share_above(spread, NOISE_SPREAD)} > {NOISE_SPREAD:.0%}")
    if preemption is None:
        if cores_used < NOISE_CORES_SHARE * cores_expected:
            reasons.append(f"cores used {cores_used:.2f} < {NOISE_CORES_SHARE} × {cores_expected:g}")
        return reasons
    if preemption.usable < min(2, preemption.processes):
        reasons.append(f"{preemption.usable} of {preemption.processes} processes kept enough clean requests")
    if preemption.share > NOISE_PREEMPTED_SHARE:
        reasons.append(f"{share_above(preemption.share, NOISE_PREEMPTED_SHARE)} of requests preempted > "
                       f"{NOISE_PREEMPTED_SHARE:.0%}")
    return reasons


@dataclass(frozen=True)
class PreemptionSummary:
    processes: int
    usable: int
    share: float  # of all requests, preempted


def measurement_columns(
    processes: Sequence[ProcessOutcome], cores_expected: float, percentile: str
) -> dict[str, Any]:
    """Trial-level latency, throughput and noise figures from the clean requests of its usable processes
    (every process, with every request, when none is usable or preemption is unknown)."""
    known = all(p.preemption_known for p in processes)
    usable = [p for p in processes if p.usable] if known else list(processes)
    judged = usable or list(processes)
    lat = np.concatenate([p.clean_latencies_ms if usable else p.all_latencies_ms for p in judged])
    stats = latency_stats(lat)
    per_process = [p.clean_latencies_ms if usable else p.all_latencies_ms for p in judged]
    spread = process_spread([float(np.median(x)) for x in per_process])
    told = [p.cores_used for p in processes if math.isfinite(p.cores_used)]
    cores = float(np.median(told)) if told else float("nan")  # NaN: no process ran long enough to tell
    total = sum(p.iterations for p in processes)
    share = float(sum(int(p.preempted.sum()) for p in processes) / total) if known and total else None
    summary = PreemptionSummary(len(processes), len(usable), share or 0.0) if known else None
    oversubscribed = not all(p.rule_applies for p in processes)
    reasons = noise_reasons(stats["cv"], spread, cores, cores_expected, summary, oversubscribed)
    rss = [p.peak_rss_mb for p in processes if p.peak_rss_mb is not None]
    arena = [p.arena_mb for p in processes if p.arena_mb is not None]
    return {
        **{f"latency_{k}_ms": stats[k] for k in ("mean", "p50", "p90", "p95", "p99", "std", "min", "max")},
        "latency_headline_ms": stats[stored_percentile(percentile, stats["p99"])],
        "cv": stats["cv"],
        # With no usable process the figures are every request's (as the latencies above): a process whose every
        # request was preempted has no clean throughput at all, and a NaN headline would leave an ok trial out.
        "throughput_ips": float(np.median([p.clean_throughput_ips if usable else p.throughput_ips for p in judged])),
        "iterations": int(total),
        "duration_s": float(sum(p.wall_s for p in processes)),
        "processes": len(processes),
        "process_median_spread": spread,
        "cores_used": cores if math.isfinite(cores) else None,
        "cores_expected": cores_expected,
        "noisy": bool(reasons),
        "noise_reasons": "; ".join(reasons) or None,
        "load_ms": _cold_median([p.load_ms for p in processes]),
        "first_run_ms": _cold_median([p.first_run_ms for p in processes]),
        "peak_rss_mb": max(rss) if rss else None,
        "arena_mb": max(arena) if arena else None,
        "preemption_known": known,
        "preempted_share": share,
        "usable_processes": len(usable) if known else None,
        "ci_halfwidth": headline_halfwidth(processes, percentile),
        # The interval above, the stopping rule and every reader's interval of this trial are confidence
        # sequences (generator.results.sequential); results without this column were judged by t intervals.
        "ci_sequential": True,
    }


def process_spread(medians: Sequence[float]) -> float:
    """Twice the standard deviation of the per-process medians over their median (0 for one process).

    Not (max − min) / median: the range grows with the number of processes (1.7 σ for 3, 4.3 σ for 37), and
    adaptive measurement runs many more processes where a machine is noisy; 2 σ is about the range of three
    processes, so the 5 % rule reads as before at the default minimum."""
    a = np.asarray(medians, dtype=np.float64)
    if a.size < 2:
        return 0.0
    return float(2.0 * a.std(ddof=1) / np.median(a))


def process_headline_ms(p: ProcessOutcome, percentile: str) -> float:
    """One process's figure for the stopping rule and the paired statistics: its clean requests' latency at
    the headline percentile (all requests when it kept too few clean ones)."""
    lat = p.clean_latencies_ms if p.usable else p.all_latencies_ms
    return float(np.quantile(lat, QUANTILES[percentile])) if lat.size else float("nan")


def paired_interval(base: Sequence[ProcessOutcome], cand: Sequence[ProcessOutcome], percentile: str,
                    usable_only: bool = True) -> intervals.LogInterval | None:
    """The paired headline-latency ratio cand / base over the rounds both measured, with its confidence sequence
    at the level of the looks before the budget (sequential.STOP_LEVEL), the interval the diff judges a pair
    that stopped early with. By default
    over the rounds whose processes on both sides kept enough clean requests, the rounds the diff judges
    (generator.diff.noise): preempted processes' figures once stopped runs early on a busy runner, and the diff
    then found too few usable processes, with the budget unspent."""
    by_round = [{p.round: process_headline_ms(p, percentile) for p in side if p.usable or not usable_only}
                for side in (base, cand)]
    rounds = sorted(set(by_round[0]) & set(by_round[1]))
    return intervals.paired([by_round[0][r] for r in rounds], [by_round[1][r] for r in rounds],
                            sequential.STOP_LEVEL, sequential=True)


def paired_phase_interval(base: Sequence[ProcessOutcome], cand: Sequence[ProcessOutcome],
                          column: str) -> intervals.LogInterval | None:
    """A generative pair's ratio of one phase (`column`: ttft_median_ms or tpot_median_ms, the processes'
    medians) over the rounds both measured, as paired_interval is of the headline: the interval the diff judges
    the phase by when the pair stops early (generator.diff.phases)."""
    by_round = [{p.round: p.generative_medians().get(column) for p in side if p.usable} for side in (base, cand)]
    rounds = sorted(r for r in set(by_round[0]) & set(by_round[1])
                    if by_round[0][r] is not None and by_round[1][r] is not None)
    return intervals.paired([by_round[0][r] for r in rounds], [by_round[1][r] for r in rounds],
                            sequential.STOP_LEVEL, sequential=True)


def decides(ci: intervals.LogInterval, latency_ratio: float) -> bool:
    """Whether a ratio interval already settles the diff's verdict at this threshold (generator.diff.verdict):
    beyond the threshold with 1 excluded (slower or faster), or wholly inside (1/threshold, threshold)."""
    point = float(np.exp(ci.centre))
    slower = ci.low > 1.0 and point > latency_ratio
    faster = ci.high < 1.0 and point < 1.0 / latency_ratio
    return slower or faster or (ci.low > 1.0 / latency_ratio and ci.high < latency_ratio)


def stops(ci: intervals.LogInterval | None, target: float, latency_ratio: float | None = None) -> bool:
    """The adaptive rounds' stopping rule, on the confidence sequence of what was measured so far (a trial's
    own, headline_interval; a pair's, paired_interval): within ± `target`, or, for a pair whose run knows the
    diff's threshold, settling the verdict (more rounds would not change it). Every look is at the sequence,
    so the interval stays valid at whichever round this stopped (generator.results.sequential)."""
    if ci is None:
        return False
    return (latency_ratio is not None and decides(ci, latency_ratio)) or ci.relative_halfwidth <= target


def headline_interval(processes: Sequence[ProcessOutcome], percentile: str) -> intervals.LogInterval | None:
    """The headline latency's 95 % confidence sequence over the usable processes (all when none is usable)."""
    usable = [p for p in processes if p.usable] or list(processes)
    return intervals.one_side([process_headline_ms(p, percentile) for p in usable], sequential=True)


def headline_halfwidth(processes: Sequence[ProcessOutcome], percentile: str) -> float | None:
    """Relative half-width of headline_interval; None while there is none, or it is unbounded."""
    return relative_halfwidth(headline_interval(processes, percentile))


def relative_halfwidth(ci: intervals.LogInterval | None) -> float | None:
    """A confidence sequence's relative half-width; None without one, or while it is unbounded (a 2-figure
    one), as `ci_halfwidth` stores "no interval"."""
    width = ci.relative_halfwidth if ci is not None else math.inf
    return width if math.isfinite(width) else None


def cores_expected(trial: Trial, logical_cores: int | None) -> float:
    """How many cores the configuration can keep busy: threads × concurrency, capped by the machine."""
    wanted = trial.config.threads * trial.config.concurrency
    return float(min(wanted, logical_cores or wanted))


def config_columns(trial: Trial) -> dict[str, Any]:
    c = trial.config
    return {
        "batch": c.batch,
        "threads": c.threads,
        "concurrency": c.concurrency,
        "optimization_level": c.optimization_level,
        "provider": c.provider,
        "spinning": c.spinning,
        "inter_op_threads": c.inter_op_threads,
        "dims": json.dumps(dict(c.dims), sort_keys=True),
        "config_label": c.label,
    }


def _cold_median(figures: Sequence[float]) -> float:
    """The median cold-start figure over the processes that had one (a paired run's process that loaded the
    other version first has none: NaN), NaN when none had."""
    known = [x for x in figures if math.isfinite(x)]
    return float(np.median(known)) if known else math.nan
