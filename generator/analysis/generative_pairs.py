"""One compared pair of a generative report, as its compare page states it: each phase's verdicts summed up in a
sentence (prefill and decode apart), and the two versions' figures side by side at each configuration.

Computed here, from the settled verdicts of generator.analysis.generative, so that the page only prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from generator.analysis.generative import (
    PHASES,
    GenerationAgreement,
    GenerativePair,
    GenerativeReport,
    GenerativeRow,
    PhaseVerdict,
    generative_pair,
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
class PhaseOps:
    """One phase of A's and B's profiled passes at a configuration (the `phase_ops` table): each op type's time
    in ms, the most of either first, with B - A; the rest summed in `other` (None where a version has none of
    that type)."""

    phase: str  # prefill or decode
    context_tokens: int
    passes: int
    # The phase's kernel time: the sum of its op types' (its nodes' medians), what the table's rows add up to. The
    # median over passes of each pass's sum (phase_us_p50) is not shown: when most passes of a tiny model were
    # disturbed beside busy neighbours it read 3.59 ms against the nodes' 0.611 ms.
    a_ms: float
    b_ms: float
    ops: tuple[tuple[str, float | None, float | None, float], ...]  # op type, A, B, B - A
    other: tuple[float, float, float] | None = None  # A's, B's and B - A in the op types left out


@dataclass(frozen=True)
class SideBySide:
    """A configuration the pair was compared at: A's and B's trial figures (None: not measured there)."""

    config_label: str
    a: GenerativeRow | None
    b: GenerativeRow | None
    ttft: PhaseVerdict | None
    tpot: PhaseVerdict | None
    phases: tuple[PhaseOps, ...] = ()  # where the time goes, when both versions were profiled


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


SHOWN_OPS = 8  # op types a phase's table lists; the rest are one row


def pair_view(report: GenerativeReport, pair: GenerativePair, phase_ops: pd.DataFrame | None = None) -> PairView:
    by_key = {r.trial_key: r for r in report.rows}
    rows = []
    for c in pair.comparisons:
        phases = {v.phase: v for v in c.phases}
        rows.append(SideBySide(c.config_label, by_key.get(c.trial_keys[0]), by_key.get(c.trial_keys[1]),
                               phases.get("ttft"), phases.get("tpot"), _phase_ops(phase_ops, *c.trial_keys)))
    summaries = tuple(s for phase in PHASES if (s := phase_summary(pair, phase)) is not None)
    agreement = tuple(a for a in report.agreement if a.version == pair.b and a.reference == pair.a)
    return PairView(pair, summaries, tuple(rows), agreement)


def _phase_ops(table: pd.DataFrame | None, a_key: str, b_key: str) -> tuple[PhaseOps, ...]:
    """A's and B's profiled phases at one configuration, op type by op type (none unless both were profiled)."""
    if table is None or table.empty:
        return ()
    a, b = table[table["trial_key"] == a_key], table[table["trial_key"] == b_key]
    out = []
    for phase in ("prefill", "decode"):
        mine, theirs = a[a["phase"] == phase], b[b["phase"] == phase]
        if mine.empty or theirs.empty:
            continue
        a_ops, b_ops = dict(zip(mine["op_type"], mine["us_p50"], strict=True)), dict(zip(theirs["op_type"],
                                                                                          theirs["us_p50"],
                                                                                          strict=True))
        ranked = sorted(set(a_ops) | set(b_ops), key=lambda op: (-max(a_ops.get(op, 0.0), b_ops.get(op, 0.0)), op))
        shown, rest = ranked[:SHOWN_OPS], ranked[SHOWN_OPS:]
        ops = tuple((op, _ms(a_ops.get(op)), _ms(b_ops.get(op)),
                     (b_ops.get(op, 0.0) - a_ops.get(op, 0.0)) / 1e3) for op in shown)
        left = [sum(ops_.get(op, 0.0) for op in rest) / 1e3 for ops_ in (a_ops, b_ops)]
        out.append(PhaseOps(phase, int(theirs["context_tokens"].iloc[0]), int(theirs["passes"].iloc[0]),
                            float(mine["us_p50"].sum()) / 1e3, float(theirs["us_p50"].sum()) / 1e3,
                            ops, (left[0], left[1], left[1] - left[0]) if rest else None))
    return tuple(out)


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1e3


def choices(report: GenerativeReport, processes: pd.DataFrame, regression) -> dict:
    """The choose-A-and-B page's figures of a generative experiment: every ordered pair of its versions judged in
    prefill and decode apart at each configuration both ran, each verdict settled as the pages' are
    (generator.analysis.generative.generative_pair), with each phase's sentence. Computed here, so that the
    browser only shows them."""
    versions = list(dict.fromkeys(r.version for r in report.rows))
    pairs = {}
    for a in versions:
        for b in versions:
            if a == b:
                continue
            pair = generative_pair(report, processes, regression, a, b)
            pairs[f"{a}\n{b}"] = {
                "summaries": [s.sentence for phase in PHASES if (s := phase_summary(pair, phase)) is not None],
                # Figures as the analysis gives them (an unbounded interval's bound infinite): the page formats them.
                "rows": [{"config": c.config_label, "phase": v.phase, "a_ms": v.a_ms, "b_ms": v.b_ms,
                          "ratio": v.ratio, "low": v.low, "high": v.high, "verdict": v.verdict, "reason": v.reason}
                         for c in pair.comparisons for v in c.phases]}
    return {"versions": versions, "pairs": pairs}
