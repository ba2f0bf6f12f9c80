"""One compared pair of a generative report, as its compare page states it: each phase's verdicts summed up in a
sentence (prefill and decode apart), and the two versions' figures side by side at each configuration.

Computed here, from the settled verdicts of generator.analysis.generative, so that the page only prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from generator.analysis.generative import (
    PHASES,
    GenerationAgreement,
    GenerativePair,
    GenerativeReport,
    GenerativeRow,
    PhaseVerdict,
)

VERDICT_ORDER = ("slower", "faster", "no change", "unsettled")


@dataclass(frozen=True)
class PhaseSummary:
    """One phase of a pair over its configurations: how many of each verdict, and the B/A range of each settled
    verdict (its configurations' ratios), as one sentence."""

    phase: str  # ttft or tpot
    counts: tuple[tuple[str, int], ...]  # verdict -> configurations, in VERDICT_ORDER, zero counts left out
    sentence: str


@dataclass(frozen=True)
class SideBySide:
    """A configuration the pair was compared at: A's and B's trial figures (None: not measured there)."""

    config_label: str
    a: GenerativeRow | None
    b: GenerativeRow | None
    ttft: PhaseVerdict | None
    tpot: PhaseVerdict | None


@dataclass(frozen=True)
class PairView:
    pair: GenerativePair
    summaries: tuple[PhaseSummary, ...]
    rows: tuple[SideBySide, ...]
    agreement: tuple[GenerationAgreement, ...]  # B's generations against A's


def phase_summary(pair: GenerativePair, phase: str) -> PhaseSummary | None:
    """The phase's verdicts over the pair's configurations (None: the phase was never judged, one new token)."""
    verdicts = [v for c in pair.comparisons for v in c.phases if v.phase == phase]
    if not verdicts:
        return None
    n = len(verdicts)
    counts = tuple((name, k) for name in VERDICT_ORDER if (k := sum(v.verdict == name for v in verdicts)))
    parts = []
    for name, k in counts:
        ratios = [v.ratio for v in verdicts if v.verdict == name and math.isfinite(v.ratio)]
        shown = _range(ratios) if name != "unsettled" and ratios else ""
        where = f"{name} at {k} of {n} configuration{'s' if n != 1 else ''}"
        parts.append(where + (f" (B/A {shown})" if shown else ""))
    return PhaseSummary(phase, counts, f"{PHASES[phase][0].upper()}{PHASES[phase][1:]}: {'; '.join(parts)}.")


def _range(ratios: list[float]) -> str:
    low, high = min(ratios), max(ratios)
    return f"{low:.3g}" if f"{low:.3g}" == f"{high:.3g}" else f"{low:.3g}–{high:.3g}"


def pair_view(report: GenerativeReport, pair: GenerativePair) -> PairView:
    by_key = {r.trial_key: r for r in report.rows}
    rows = []
    for c in pair.comparisons:
        phases = {v.phase: v for v in c.phases}
        rows.append(SideBySide(c.config_label, by_key.get(c.trial_keys[0]), by_key.get(c.trial_keys[1]),
                               phases.get("ttft"), phases.get("tpot")))
    summaries = tuple(s for phase in PHASES if (s := phase_summary(pair, phase)) is not None)
    agreement = tuple(a for a in report.agreement if a.version == pair.b and a.reference == pair.a)
    return PairView(pair, summaries, tuple(rows), agreement)
