"""Which measurement processes of a trial may decide a verdict: the rule `perfsite diff` (generator.diff.noise,
whose docstring gives its reasons) and the compare pages and chooser (generator.analysis.trial_stats) share.

A trial with preemption known (results schema 2) keeps the processes with enough clean requests
(generator.results.clean); one without keeps the processes that got the CPU they could use (not *starved*).
A side needs MIN_PROCESSES of them for a verdict, and, by the starved rule, no more than half left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from generator.analysis.stats import ProcessSamples, process_samples
from generator.cells import clean
from generator.results.by_trial import trial_rows
from generator.results.clean import MIN_JUDGED_PROCESSES
from generator.results.noise import NOISE_CORES_SHARE
from generator.results.store import ExperimentResults

STARVED_SHARE = 0.95
MIN_PROCESSES = MIN_JUDGED_PROCESSES


@dataclass(frozen=True)
class SideSamples:
    """One side's usable measurement processes and what was left out."""

    samples: ProcessSamples
    processes: int  # processes the trial recorded
    starved: int  # of which left out (all kept, for the figures only, when too few would remain)
    preemption_known: bool = False  # judged by clean requests (rule 1) rather than whole processes

    @property
    def judgeable(self) -> bool:
        if self.preemption_known:
            return self.processes - self.starved >= MIN_PROCESSES
        return self.processes - self.starved >= MIN_PROCESSES and 2 * self.starved <= self.processes


def starved_processes(processes: pd.DataFrame, cores_expected: float | None) -> set[int]:
    """Processes (of one trial) that got clearly less CPU than they could use (module docstring, rule 1)."""
    cores = processes["cores_used"].astype(float)
    if cores.isna().all():
        return set()
    floor = STARVED_SHARE * float(cores.max())
    if cores_expected:
        floor = max(floor, NOISE_CORES_SHARE * float(cores_expected))
    return {int(p) for p in processes.loc[cores < floor, "process"]}


def side_samples(exp: ExperimentResults, row: pd.Series) -> SideSamples:
    """The trial's per-process samples: its usable processes' clean requests where preemption is known, else
    without its starved processes (all of them when too few remain)."""
    key, seq = row["trial_key"], sequential(row)
    procs = trial_rows(exp.processes, key)  # indexed: the compare pages and the chooser ask for every trial
    if preemption_known(row):
        samples = process_samples(exp.processes, exp.latencies, key, True, seq)
        # No process kept enough clean requests: the samples fell back to every request, preempted ones
        # included, which must not decide; every process counts as left out, so the side is not judgeable.
        usable = samples.processes if samples.judged_clean else 0
        return SideSamples(samples, len(procs), len(procs) - usable, True)
    starved = starved_processes(procs, clean(row.get("cores_expected")))
    if not starved or len(procs) - len(starved) < MIN_PROCESSES or 2 * len(starved) > len(procs):
        return SideSamples(process_samples(exp.processes, exp.latencies, key, sequential=seq), len(procs),
                           len(starved))
    lat = trial_rows(exp.latencies, key)
    lat = lat[~lat["process"].isin(starved)]
    return SideSamples(process_samples(procs, lat, key, sequential=seq), len(procs), len(starved))


def preemption_known(row: pd.Series) -> bool:
    return bool(clean(row.get("preemption_known")))


def sequential(row: pd.Series) -> bool:
    """The trial was measured until a confidence sequence looked good enough (ci_sequential; null in older
    results): its intervals are judged by that sequence (generator.results.sequential)."""
    return bool(clean(row.get("ci_sequential")))
