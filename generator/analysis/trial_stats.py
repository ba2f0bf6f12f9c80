"""Per-trial statistics that every comparison of the trial reuses, and the ratios of two trials built on them.

A trial's per-process figures, its own intervals (stats.own_interval) and, for a trial of one process, its
bootstraps do not depend on what it is compared with: the compare pages and the chooser
(generator.analysis.chooser, every trial against every other) compute them once per trial and keep them in the
CompareContext's cache. Each bootstrap draws from its own generator (seeded like generator.analysis.stats), so a
trial's intervals are the same whatever it is compared with.

Ratios follow generator.analysis.stats.figures_ratio: t intervals on per-process figures, paired by round when
both trials were measured in the same rounds of one run, Welch's with the between-run drift floor when they
come from two runs; the bootstrap ratio only where a side has a single process.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from generator.analysis import stats
from generator.analysis.records_compare import RatioCI, VersionTiming
from generator.analysis.sides import SideSamples, side_samples
from generator.analysis.summaries import TrialSummary
from generator.results import intervals
from generator.results.by_trial import trial_rows
from generator.results.clean import MIN_JUDGED_PROCESSES
from generator.results.headline import P99_MIN_SAMPLES, STAND_IN, compared_percentile


@dataclass
class TrialStats:
    """One trial's per-process samples and what is derived from them, computed on first use."""

    summary: TrialSummary
    samples: stats.ProcessSamples
    run_id: Any
    # The processes the trial recorded and how many of them cannot decide a verdict (generator.analysis.sides,
    # the rule `perfsite diff` applies); None without a `trials` row.
    side: SideSamples | None = None
    _figures: dict[str, list[float]] = field(default_factory=dict)
    _sides: dict[str, stats.SideFigure | None] = field(default_factory=dict)
    _boots: dict[str, stats.Bootstrap] = field(default_factory=dict)
    _throughput: list[stats.Bootstrap | None] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(x.size for x in self.samples.latencies_ms)

    def figures(self, q_name: str) -> list[float]:
        """Each process's latency at percentile `q_name`."""
        if q_name not in self._figures:
            q = stats.percentile_of(q_name)
            self._figures[q_name] = [float(np.quantile(x, q)) for x in self.samples.latencies_ms]
        return self._figures[q_name]

    @property
    def preemption_known(self) -> bool:  # results schema 2: requests a neighbour preempted are known, left out
        return self.side is not None and self.side.preemption_known

    @property
    def recorded(self) -> int:
        return self.side.processes if self.side is not None else 0

    @property
    def judgeable(self) -> bool:
        return self.side is None or self.side.judgeable

    def latency_side(self, q_name: str) -> stats.SideFigure:
        """The latency shown (pooled percentile) with its own interval, as `perfsite diff` gives a side's."""
        if q_name not in self._sides:
            self._sides[q_name] = stats.side_figure(
                self.figures(q_name), stats.pooled_latency(self.samples.latencies_ms, stats.percentile_of(q_name)),
                lambda: self.boot(q_name), self.samples.processes, self.samples.sequential)
        return self._sides[q_name]

    def throughput_side(self) -> stats.SideFigure | None:
        """The throughput shown (median over the processes) with its own interval; None without one."""
        if "throughput" not in self._sides:
            figures = stats.throughput_figures(self.samples)
            self._sides["throughput"] = stats.side_figure(figures, float(np.median(figures)), self.throughput_boot,
                                                          len(figures), self.samples.sequential) if figures else None
        return self._sides["throughput"]

    def boot(self, q_name: str) -> stats.Bootstrap:
        if q_name not in self._boots:
            rng = np.random.default_rng(stats.SEED)
            self._boots[q_name] = stats.bootstrap_latency(self.samples.latencies_ms, stats.percentile_of(q_name),
                                                          rng)
        return self._boots[q_name]

    def throughput_boot(self) -> stats.Bootstrap | None:
        if not self._throughput:
            self._throughput.append(stats.bootstrap_throughput(self.samples, np.random.default_rng(stats.SEED + 1)))
        return self._throughput[0]


def trial_stats(cache: dict, exp, t: TrialSummary) -> TrialStats:
    """The trial's TrialStats, from `cache` (a CompareContext's) when computed before."""
    key = ("stats", t.trial_key)
    if key not in cache:
        rows = trial_rows(exp.trials, t.trial_key)
        if rows.empty:
            cache[key] = TrialStats(t, stats.process_samples(exp.processes, exp.latencies, t.trial_key), None)
            return cache[key]
        row = rows.iloc[-1]
        # The samples `perfsite diff` judges: usable processes' clean requests, or without starved processes.
        side = side_samples(exp, row)
        cache[key] = TrialStats(t, side.samples, row.get("run_id"), side)
    return cache[key]


def bootstrap_all(trials: list[TrialStats], percentile: str) -> None:
    """Draw the bootstraps the trials' own intervals need (trials with fewer than two processes: the others'
    are t intervals, stats.own_interval) on all cores: numpy releases the GIL while it partitions and gathers,
    and each bootstrap has its own generator, so the figures do not depend on the order."""
    def draw(s: TrialStats) -> None:
        if s.samples.processes:
            s.latency_side(quantile_name(percentile, s, s)[0])
            s.throughput_side()

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(draw, trials))


def quantile_name(percentile: str, a: TrialStats, b: TrialStats) -> tuple[str, tuple[str, ...]]:
    """The spec's percentile, p95 standing in for p99 when either trial's stored headline reports p95 (fewer
    than P99_MIN_SAMPLES requests, generator.results.headline): the stored decision, not a recount, so the
    ratio is over the figure the trials table shows."""
    if compared_percentile(percentile, (a.summary.headline_percentile, b.summary.headline_percentile)) != percentile:
        return STAND_IN, (f"Fewer than {P99_MIN_SAMPLES} requests: p95 stands in for p99, as in the trials "
                          "table.",)
    return percentile, ()


@dataclass(frozen=True)
class PairRatios:
    """B / A of two trials: latency at the headline percentile, throughput, and the median latency ratio whose
    process-to-process variation layer ratios borrow."""

    latency: RatioCI
    throughput: RatioCI | None
    reference: RatioCI
    paired: bool
    notes: tuple[str, ...] = ()  # why latency and throughput are not judged (fallback_note), when they are not


def pair_ratios(a: TrialStats, b: TrialStats, q_name: str) -> PairRatios:
    """Both trials must have request latencies."""
    # Versions of one configuration measured in one run share its rounds (A B A B …): paired by round. Their
    # ratio's interval is Student's t even where each trial's own is a confidence sequence: their rounds stopped
    # on each trial's own interval, never on this ratio (a `perfsite diff --measure` pair's stopped on theirs).
    same_run = a.run_id == b.run_id
    paired = a.summary.config_label == b.summary.config_label and same_run
    between = 0.0 if same_run else tuple(intervals.run_drift(intervals.BETWEEN_RUN_SD, t.summary.process_median_spread)
                                         for t in (a, b))
    latency = _latency(a, b, q_name, paired, between)
    reference = latency if q_name == "p50" else _latency(a, b, "p50", paired, between)
    throughput = _throughput(a, b, paired, between)
    fell_back = [(role, s) for role, s in (("A", a), ("B", b)) if unjudged_side(s)]
    if not fell_back:
        return PairRatios(latency, throughput, reference, paired)
    why = "; ".join(_why(s, role)[0] for role, s in fell_back)
    notes = tuple(fallback_note(role, s) for role, s in fell_back)
    sources = {_why(s, role)[1] for role, s in fell_back}
    source = sources.pop() if len(sources) == 1 else "figures of the kinds noted below"
    # The reference too: the layer ratios that borrow its spread are not judged either.
    return PairRatios(_unjudged(latency, why, source), _unjudged(throughput, why, source),
                      _unjudged(reference, why, source), paired, notes)


def falls_back(s: TrialStats) -> bool:
    """The trial's figures come from every request, preempted ones included: no process kept enough clean
    requests. `perfsite diff` calls such a side not comparable (generator.diff.noise), and so does a comparison:
    its figures are shown, never judged."""
    return s.preemption_known and bool(s.samples.processes) and not s.samples.judged_clean


def unjudged_side(s: TrialStats) -> bool:
    """A side shown without a verdict (falls_back, too_few_clean, starved_side), as `perfsite diff` would not
    judge it."""
    return falls_back(s) or too_few_clean(s) or starved_side(s)


def starved_side(s: TrialStats) -> bool:
    """Preemption unknown (results schema 1): too many of the trial's processes were starved of CPU for the
    rest to decide (generator.analysis.sides); its figures are every process's. A trial of one process by
    design keeps its flagged interval, as in too_few_clean."""
    return not s.preemption_known and not s.judgeable and bool(s.samples.processes) and s.recorded >= 2


def too_few_clean(s: TrialStats) -> bool:
    """Some but fewer than MIN_JUDGED_PROCESSES of the trial's processes kept enough clean requests (the trial
    recorded more): its figures are their clean requests, and `perfsite diff` calls such a side not comparable
    (a verdict needs two), so a comparison shows it without a verdict too. A trial measured with one process by
    design (`repeats: 1`) keeps its flagged one-process interval (docs/methodology-compare.md)."""
    return (s.preemption_known and s.samples.judged_clean
            and s.samples.processes < MIN_JUDGED_PROCESSES <= s.recorded)


FALLBACK_TIMING_NOTE = ("from every request, preempted ones included: no measurement process kept enough clean "
                        "(not preempted) requests; not judged")


def _why(s: TrialStats, role: str) -> tuple[str, str, str]:
    """A side shown without a verdict (unjudged_side), in `perfsite diff`'s words: why, what its figures come
    from (a ratio's words, the page's note) and its timing note."""
    n, verdict = s.recorded, f"a verdict needs {MIN_JUDGED_PROCESSES} or more"
    if falls_back(s):
        n = s.samples.processes
        return (f"only 0 of {n} measurement process{'es' if n != 1 else ''} of {role} kept enough clean "
                "(not preempted) requests", "every request, preempted ones included", FALLBACK_TIMING_NOTE)
    if too_few_clean(s):
        kept = s.samples.processes
        return (f"only {kept} of {n} measurement processes of {role} kept enough clean (not preempted) requests "
                f"({verdict})", f"the clean requests of {'that process' if kept == 1 else 'those'} alone",
                f"from the clean requests of the {kept} of {n} measurement processes that kept enough of them: "
                f"not judged ({verdict})")
    kept = n - s.side.starved
    return (f"only {kept} of {n} measurement processes of {role} got the CPU they asked for ({verdict}, and no "
            "more than half left out)", "every process, starved ones included",
            f"from every process, starved ones included: only {kept} of {n} got the CPU they asked for; not "
            "judged")


def fallback_note(role: str, s: TrialStats) -> str:
    """The page's note on a side shown without a verdict (unjudged_side), in the words of `perfsite diff`."""
    t = s.summary
    why, source, _ = _why(s, f"{role} ({t.version} at {t.config_label})")
    verb = "fall back to" if falls_back(s) else "come from"
    return (f"{why[0].upper()}{why[1:]}: its figures {verb} {source}, and are shown without a verdict (not "
            "compared). Measure again with a larger measure.budget_s, or on a quieter machine.")


def _unjudged(ratio: RatioCI | None, why: str, source: str) -> RatioCI | None:
    return None if ratio is None else replace(ratio, significant=False, unjudged=why, unjudged_from=source)


def _rounds(a: TrialStats, b: TrialStats) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return a.samples.rounds, b.samples.rounds


def _latency(a: TrialStats, b: TrialStats, q_name: str, paired: bool, between: intervals.Drift) -> RatioCI:
    ci = stats.figures_ratio((a.figures(q_name), b.figures(q_name)), _rounds(a, b), paired, between,
                             (a.samples.processes, b.samples.processes))
    return ci if ci is not None else stats.ratio_ci(a.boot(q_name), b.boot(q_name))


def _throughput(a: TrialStats, b: TrialStats, paired: bool, between: intervals.Drift) -> RatioCI | None:
    fa, fb = list(a.samples.throughput_ips), list(b.samples.throughput_ips)
    if not any(math.isfinite(x) for x in fa) or not any(math.isfinite(x) for x in fb):
        return None
    finite = (sum(math.isfinite(x) for x in fa), sum(math.isfinite(x) for x in fb))
    ci = stats.figures_ratio((fa, fb), _rounds(a, b), paired, between, finite)
    if ci is not None:
        return ci
    ra, rb = a.throughput_boot(), b.throughput_boot()
    return stats.ratio_ci(ra, rb) if ra is not None and rb is not None else None


def timing(s: TrialStats, q_name: str) -> VersionTiming:
    """The trial's latency and throughput with their own intervals (a compare page's timing table)."""
    lat, thr = s.latency_side(q_name), s.throughput_side()
    t = s.summary
    return VersionTiming(
        version=t.version, latency_ms=lat.point, latency_ci_low=lat.low, latency_ci_high=lat.high,
        throughput_ips=thr.point if thr else t.throughput_ips, throughput_ci_low=thr.low if thr else None,
        throughput_ci_high=thr.high if thr else None, processes=s.samples.processes, trial_key=t.trial_key,
        percentile=q_name,
        note=_why(s, "")[2] if unjudged_side(s) else stats.small_sample_note(s.samples.processes,
                                                                             s.samples.processes),
    )
