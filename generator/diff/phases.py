"""A generative configuration's two phases in `perfsite diff`: time to first token (prefill) and time per output
token (decode), each with its own ratio, interval and threshold (`regression: {ttft_ratio, tpot_ratio}`).

A quantized decoder can make prefill slower and decode faster; the end-to-end latency and tokens/s ratios the
diff judges for every configuration hide that, so a generative configuration is also judged phase by phase. The
figures are the processes' medians over their clean requests (processes.ttft_median_ms, tpot_median_ms): paired
round by round when one paired run measured both sides (its confidence sequence when the run stopped on one), else
Welch's interval widened by each run's drift, as the latency ratio is (generator.analysis.stats).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

import pandas as pd

from generator.analysis.generative import per_round
from generator.analysis.records_compare import RatioCI
from generator.diff.noise import undecided_note
from generator.diff.words import FASTER, NO_CHANGE, NOT_COMPARABLE, SLOWER
from generator.results import evidence
from generator.results.sequential import STOP_LEVEL
from generator.results.store import ExperimentResults

PHASE_COLUMNS = {"ttft": "ttft_median_ms", "tpot": "tpot_median_ms"}
PHASE_NAMES = {"ttft": "time to first token", "tpot": "time per output token"}


@dataclass(frozen=True)
class PhaseDiff:
    phase: str  # ttft or tpot
    baseline_ms: float
    candidate_ms: float
    ratio: RatioCI
    threshold: float
    verdict: str  # slower, faster, no significant change or not comparable (generator.diff.words)
    note: str | None = None  # why not comparable


def _judged(ratio: RatioCI, threshold: float, name: str, paired_run: bool, how: str) -> tuple[str, str | None]:
    """The diff's rule for one figure (docs/ci.md): a change past the threshold whose interval excludes 1; not
    comparable when the estimate lies past the threshold while its interval still holds 1, or without one."""
    if ratio.unjudged is not None:
        return NOT_COMPARABLE, f"{name}: {ratio.unjudged}"
    if ratio.low > 1.0 and ratio.point > threshold:
        return SLOWER, None
    if ratio.high < 1.0 and ratio.point < 1.0 / threshold:
        return FASTER, None
    if ratio.point > threshold or ratio.point < 1.0 / threshold:
        return NOT_COMPARABLE, f"{name}: {undecided_note(name, paired_run, how)}"
    return NO_CHANGE, None


def phase_diffs(base_exp: ExperimentResults, a: pd.Series, cand_exp: ExperimentResults, b: pd.Series,
                thresholds: dict[str, float], paired_run: bool, between: float | tuple[float, float],
                sequential: bool = False) -> tuple[PhaseDiff, ...]:
    """The phases both trials measured (none for a trial that is not generative; no TPOT with one new token);
    `sequential`: a paired run that stopped on its confidence sequence, which then gives the intervals."""
    found = []
    for phase, column in PHASE_COLUMNS.items():
        mine, theirs = (per_round(exp.processes, row["trial_key"], column)
                        for exp, row in ((base_exp, a), (cand_exp, b)))
        if len(mine) < 1 or len(theirs) < 1:
            continue
        if paired_run:
            rounds = sorted(set(mine) & set(theirs))
            test = evidence.paired_test([mine[r] for r in rounds], [theirs[r] for r in rounds])
        else:
            test = evidence.unpaired_test(list(mine.values()), list(theirs.values()), between)
        base_ms, cand_ms = statistics.median(mine.values()), statistics.median(theirs.values())
        if test is None:
            ratio = RatioCI(cand_ms / base_ms, math.nan, math.nan, False, processes_a=len(mine),
                            processes_b=len(theirs), unjudged="fewer than two processes on a side gave the figure")
        else:
            # A pair that stopped on its confidence sequence is judged at the level its looks were made at.
            low, high = replace(test, sequential=True).interval(STOP_LEVEL) if sequential else test.interval()
            ratio = RatioCI(math.exp(test.estimate), low, high, low > 1 or high < 1, processes_a=len(mine),
                            processes_b=len(theirs))
        verdict, note = _judged(ratio, thresholds[phase], PHASE_NAMES[phase], paired_run,
                                "sequence" if sequential else "t")
        found.append(PhaseDiff(phase, base_ms, cand_ms, ratio, thresholds[phase], verdict, note))
    return tuple(found)
