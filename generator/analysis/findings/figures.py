"""A trial's timed figures as findings test them: per process (the unit of repetition), with their rounds.

The processes are those a verdict may be judged on (generator.analysis.sides, through trial_stats): each
usable process's clean requests. Two trials measured in the same rounds of one run (versions of one
configuration) are compared round by round; any other two were measured minutes apart and are compared
unpaired, each side widened by the drift between time windows (generator.results.intervals.run_drift), because
a vCPU's speed changes between half-seconds on the machines users have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from generator.analysis import stats
from generator.analysis.compare_choice import CompareContext
from generator.analysis.findings.record import Figure
from generator.analysis.summaries import TrialSummary
from generator.analysis.trial_stats import TrialStats, quantile_name, trial_stats, unjudged_side
from generator.results import intervals
from generator.results.evidence import LogTest, one_side_test, paired_test, unpaired_test

LATENCY, THROUGHPUT = "latency", "throughput"


@dataclass(frozen=True)
class TrialFigures:
    """One trial's per-process latency (at the compared percentile) and throughput, by round."""

    trial: TrialSummary
    stats: TrialStats
    latency: dict[int, float]  # round (or process position when rounds are unknown) -> figure
    throughput: dict[int, float]
    q_name: str

    def values(self, metric: str) -> list[float]:
        return list((self.latency if metric == LATENCY else self.throughput).values())

    @property
    def judgeable(self) -> bool:
        return not unjudged_side(self.stats) and len(self.latency) >= 2

    @property
    def drift(self) -> float:
        return intervals.run_drift(intervals.BETWEEN_RUN_SD, self.trial.process_median_spread)

    def shown(self, metric: str) -> float | None:
        return self.trial.latency_headline_ms if metric == LATENCY else self.trial.throughput_ips

    def figure(self, metric: str, label: str | None = None) -> Figure:
        """The figure shown with its own 95 % interval (stats.own_interval: the confidence sequence where the
        trial stopped on one)."""
        point = self.shown(metric)
        band = (stats.own_interval(self.values(metric), point, sequential=self.trial.ci_sequential)
                if point is not None else None)
        unit = f"{self.q_name} ms" if metric == LATENCY else "items/s"
        what = label or f"{self.trial.version} {self.trial.config_label}, {unit}"
        return Figure(what, point, *(band or (None, None)))

    def test(self) -> LogTest | None:
        """Its latency's geometric mean over processes (against a threshold): on the confidence sequence when
        measuring stopped on one, since the trial's own claims are read where its stopping rule looked.
        Comparisons of two trials (versus) stay on t: neither side's stopping rule looked at their ratio."""
        return one_side_test(self.values(LATENCY), sequential=self.trial.ci_sequential)


def trial_figures(ctx: CompareContext, t: TrialSummary, q_name: str | None = None) -> TrialFigures:
    """The trial's figures at `q_name` (its own headline percentile when None), cached in the context."""
    s = trial_stats(ctx.cache, ctx.exp, t)
    q = q_name or quantile_name(ctx.percentile, s, s)[0]
    key = ("finding figures", t.trial_key, q)
    if key not in ctx.cache:
        samples = s.samples
        # Round -1 marks a process outside the run's rounds: each gets its own negative key, which versus never
        # pairs (as stats._paired_interval leaves round -1 out).
        rounds = [r if r >= 0 else -1 - i for i, r in enumerate(samples.rounds or range(samples.processes))]
        lat = dict(zip(rounds, s.figures(q), strict=False))
        thr = {r: x for r, x, lat_ in zip(rounds, samples.throughput_ips, samples.latencies_ms, strict=False)
               if math.isfinite(x) and lat_.size}
        ctx.cache[key] = TrialFigures(t, s, lat, thr, q)
    return ctx.cache[key]


def versus(a: TrialFigures, b: TrialFigures, metric: str) -> LogTest | None:
    """log(b / a) of `metric`: round by round when both were measured in the same rounds of one run (the same
    configuration), else unpaired with each side's drift."""
    fa, fb = (a.latency, b.latency) if metric == LATENCY else (a.throughput, b.throughput)
    same_rounds = a.stats.run_id == b.stats.run_id and a.trial.config_label == b.trial.config_label
    common = sorted(r for r in set(fa) & set(fb) if r >= 0)
    if same_rounds and len(common) >= 2:
        return paired_test([fa[r] for r in common], [fb[r] for r in common])
    return unpaired_test(list(fa.values()), list(fb.values()), (a.drift, b.drift))


def compared_q(ctx: CompareContext, a: TrialSummary, b: TrialSummary) -> str:
    """The percentile two trials are compared at (p95 where either stands in for p99)."""
    return quantile_name(ctx.percentile, trial_stats(ctx.cache, ctx.exp, a), trial_stats(ctx.cache, ctx.exp, b))[0]
