"""What a shared machine does to a diff, and the guards against it.

1. **Each process is judged by its clean requests.** Where run-delay was recorded per request (results schema
   2, `preemption_known`), requests a neighbour preempted are left out and a process keeps its say as long as
   enough of its requests stayed clean (generator.results.clean); a side needs `MIN_PROCESSES` (2) such
   processes, or it is *not comparable*. Older results (schema 1) have no run-delay: there, whole processes
   are left out as *starved* when their cores used fall below `NOISE_CORES_SHARE` (0.8) × the cores the
   configuration can keep busy, or below `STARVED_SHARE` (0.95) × the most any process of the same trial got.

2. **Drift between runs is in the interval.** Two trials measured in the same rounds of one paired run
   (`pair_id`) are compared round by round, so whatever a neighbour did to a round hits both and cancels.
   Two separately measured trials get Welch's interval widened by each run's drift (the floor
   generator.results.intervals.BETWEEN_RUN_SD, or half the run's process-median spread when larger,
   intervals.run_drift): a change inside the drift two time windows can show is never called slower or faster.

3. **An interval that cannot decide is said so.** When the estimate lies beyond a threshold but the interval
   still holds 1 (too wide to confirm or rule out the change), the configuration is *not comparable*: never a
   silent "no change".
"""

from __future__ import annotations

import pandas as pd

from generator.analysis.sides import (  # noqa: F401  (the rule lives there, shared with the compare pages)
    MIN_PROCESSES,
    STARVED_SHARE,
    SideSamples,
    preemption_known,
    side_samples,
    starved_processes,
)
from generator.cells import clean
from generator.results.sequential import FINAL_LEVEL, STOP_LEVEL


def paired(a: pd.Series, b: pd.Series) -> bool:
    """Both trials come from one paired run (rule 2)."""
    pa, pb = clean(a.get("pair_id")), clean(b.get("pair_id"))
    return pa is not None and pa == pb


def noise_notes(base: SideSamples, cand: SideSamples) -> tuple[str, ...]:
    """Plain-text notes on left-out processes and unjudgeable sides."""
    out = []
    for side, s in (("baseline", base), ("candidate", cand)):
        what = "kept enough clean (not preempted) requests" if s.preemption_known else "got the CPU they asked for"
        if not s.judgeable:
            out.append(f"only {s.processes - s.starved} of {s.processes} measurement processes of the {side} "
                       f"{what} (a verdict needs {MIN_PROCESSES} or more): not compared; measure again with a "
                       "larger measure.budget_s, or on a quieter machine")
        elif s.starved and s.preemption_known:
            out.append(f"{s.starved} of {s.processes} measurement processes of the {side} kept too few clean "
                       "(not preempted) requests and were left out")
        elif s.starved:
            out.append(f"{s.starved} of {s.processes} measurement processes of the {side} were starved of CPU "
                       "and left out")
    return tuple(out)


def undecided_note(figure: str, paired: bool = False, how: str = "t") -> str:
    """Why a figure is not judged, and what to do: measuring paired is the advice only to trials that were not.
    `how`: "sequence" (the pair was judged by the confidence sequence it stopped on), "final" (by the t
    interval of its last look, at its budget; generator.results.sequential), "t" (a 95 % t interval)."""
    advice = (PAIRED_ADVICE if paired else
              "measure paired (`perfsite diff --measure`) or with a larger measure.budget_s")
    interval = {"sequence": f"{STOP_LEVEL:.1%} confidence sequence",
                "final": f"{FINAL_LEVEL:.0%} interval at its budget"}.get(how, "95 % interval")
    return (f"the {figure} estimate lies beyond the threshold but its {interval} still holds no change: the "
            f"interval cannot decide; {advice}")


PAIRED_ADVICE = ("they were measured paired already: measure again with a larger measure.budget_s or more "
                 "measure.repeats, or on a quieter machine")
