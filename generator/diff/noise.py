"""What a shared machine does to a diff, and the two guards against it.

1. **Starved processes are left out.** A measurement process that got clearly less CPU than it could use lost
   that time to a neighbour: its tail latency and throughput say nothing about the model. A process is
   starved when its cores used fall below `NOISE_CORES_SHARE` (0.8) × the cores the configuration can keep
   busy (the runner's own noise rule), or below `STARVED_SHARE` (0.95) × the most any process of the same
   trial got (a process that lost a tenth of its CPU lost as much throughput, twice the default threshold).
   A side cannot be judged with fewer than `MIN_PROCESSES` (3) usable processes (with two, the interval
   understates process-to-process variation), nor when most of its processes were starved: the neighbour was
   busy through the whole run, and the processes it left alone probably shared a core with it.

2. **A verdict must beat the run's own noise.** The bootstrap treats processes as independent repetitions,
   but a neighbour that shares the CPU core (a busy hyper-thread sibling) slows every process of a run alike
   for seconds without any sign in CPU time; the processes then agree with each other and the interval is
   narrow around a shifted value. What such noise does shows as the spread of the per-process figures within
   a run: (largest − smallest) / smallest of the per-process latencies at the headline percentile, or of the
   per-process throughputs, whichever is wider (both describe the same run's noise). A change that is not larger than
   the wider of the two sides' spreads is not called slower or faster: the configuration is *not
   comparable* (too noisy to tell), not "no change".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from generator.analysis.records_compare import RatioCI
from generator.analysis.stats import ProcessSamples, process_samples
from generator.analysis.summaries import clean
from generator.results.store import ExperimentResults
from generator.runner.aggregate import NOISE_CORES_SHARE

STARVED_SHARE = 0.95
MIN_PROCESSES = 3


@dataclass(frozen=True)
class SideSamples:
    """One side's usable measurement processes and what was left out."""

    samples: ProcessSamples
    processes: int  # processes the trial recorded
    starved: int  # of which left out (all kept, for the figures only, when too few would remain)

    @property
    def judgeable(self) -> bool:
        return self.processes - self.starved >= MIN_PROCESSES and 2 * self.starved <= self.processes

    def spread(self, q: float) -> float:
        """(max − min) / min of the per-process latencies at quantile `q` or of the per-process throughputs,
        the wider; 0 with one process."""
        latency = _spread([float(np.quantile(lat, q)) for lat in self.samples.latencies_ms if len(lat)])
        return max(latency, _spread([t for t in self.samples.throughput_ips if math.isfinite(t)]))


def _spread(values: list[float]) -> float:
    positive = [v for v in values if v > 0]
    return (max(positive) - min(positive)) / min(positive) if len(positive) > 1 else 0.0


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
    """The trial's per-process samples without its starved processes (all of them when too few remain)."""
    key = row["trial_key"]
    procs = exp.processes[exp.processes["trial_key"] == key]
    starved = starved_processes(procs, clean(row.get("cores_expected")))
    if not starved or len(procs) - len(starved) < MIN_PROCESSES or 2 * len(starved) > len(procs):
        return SideSamples(process_samples(exp.processes, exp.latencies, key), len(procs), len(starved))
    lat = exp.latencies[(exp.latencies["trial_key"] == key) & ~exp.latencies["process"].isin(starved)]
    return SideSamples(process_samples(procs, lat, key), len(procs), len(starved))


def beats_noise(ratio: RatioCI | None, spread: float) -> bool:
    """Whether a ratio's change is larger than the run-to-run noise the spread shows (rule 2)."""
    if ratio is None or not ratio.point > 0:
        return False
    return abs(math.log(ratio.point)) > math.log1p(spread)


def noise_notes(base: SideSamples, cand: SideSamples) -> tuple[str, ...]:
    """Plain-text notes on left-out processes and unjudgeable sides."""
    out = []
    for side, s in (("baseline", base), ("candidate", cand)):
        if not s.judgeable:
            out.append(f"only {s.processes - s.starved} of {s.processes} measurement processes of the {side} got "
                       f"the CPU they asked for (a verdict needs {MIN_PROCESSES} or more, and most of them): not "
                       "compared; measure again on a quieter machine or with more repeats")
        elif s.starved:
            out.append(f"{s.starved} of {s.processes} measurement processes of the {side} were starved of CPU "
                       "and left out")
    return tuple(out)


def within_noise_note(spread: float) -> str:
    return (f"the change is within the spread of one run's measurement processes ({spread:.0%}): too noisy "
            "to call; measure again on a quieter machine")
