"""Candidate against baseline from instruction counts: a ratio and a verdict by a threshold.

Counts of one version repeat to ~0.1 % from one inference to the next (docs/count-mode.md), so no interval is
needed: with threshold T (default 1.01),

- **not comparable** when either version's counts spread (max − min over median) by more than T − 1: the
  work of an inference then depends on more than its inputs (threads, data-dependent control flow), and a
  count cannot stand for it;
- **slower** when candidate / baseline > T; **faster** when it is < 1 / T;
- **no significant change** otherwise.

The words are those of `perfsite diff` (generator.diff.verdict), so that CI reads both the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from generator.counting.count import CountResult, VersionCount
from generator.errors import RunError

SLOWER, FASTER, NO_CHANGE, NOT_COMPARABLE = "slower", "faster", "no significant change", "not comparable"
DEFAULT_THRESHOLD = 1.01


@dataclass(frozen=True)
class CountVerdict:
    baseline: VersionCount
    candidate: VersionCount
    threshold: float  # a ratio above it is slower, below its inverse faster
    ratio: float = field(init=False)  # candidate's instructions per inference over the baseline's
    verdict: str = field(init=False)
    reason: str = field(init=False)  # one sentence: why this verdict

    def __post_init__(self) -> None:
        ratio = self.candidate.instructions / self.baseline.instructions
        object.__setattr__(self, "ratio", ratio)
        verdict, reason = _judge(self.baseline, self.candidate, ratio, self.threshold)
        object.__setattr__(self, "verdict", verdict)
        object.__setattr__(self, "reason", reason)


def compare_counts(result: CountResult, baseline: str, candidate: str,
                   threshold: float = DEFAULT_THRESHOLD) -> CountVerdict:
    """The verdict of ``candidate`` against ``baseline`` (version names in ``result``)."""
    check_threshold(threshold)
    return CountVerdict(result.version(baseline), result.version(candidate), threshold)


def check_threshold(threshold: float) -> None:
    if not 1.0 < threshold < math.inf:  # inf would make every candidate "no significant change"
        raise RunError(f"--threshold {threshold} must be a finite number above 1: the candidate's instructions "
                       "over the baseline's above which it is slower (e.g. 1.01 for 1 %).")


def _judge(baseline: VersionCount, candidate: VersionCount, ratio: float, threshold: float) -> tuple[str, str]:
    margin_pct = 100.0 * (threshold - 1.0)
    noisy = max((baseline, candidate), key=lambda v: v.spread_pct)
    if noisy.spread_pct > margin_pct:
        return NOT_COMPARABLE, (f"the counts of {noisy.name} vary by {noisy.spread_pct:.2f} % between inferences, "
                                f"more than the {margin_pct:.2f} % threshold: its work depends on more than its "
                                "inputs (threads, data-dependent control flow)")
    change = f"{round(100.0 * (ratio - 1.0), 2) + 0.0:+.2f} % instructions per inference"  # + 0.0: no "-0.00"
    if ratio > threshold:
        return SLOWER, f"{change}, beyond the +{margin_pct:.2f} % threshold"
    if ratio < 1.0 / threshold:
        return FASTER, f"{change}, beyond the −{100.0 * (1.0 - 1.0 / threshold):.2f} % threshold"
    return NO_CHANGE, f"{change}, within the ±{margin_pct:.2f} % threshold"
