"""What a page concludes, as data: one Finding per claim, with its evidence and whether the data settles it.

A finding is *settled* when its test passes the report's false-discovery rule (generator.results.evidence:
Benjamini–Hochberg at FDR_Q over every tested claim of the experiment) and nothing blocks it (too few
processes, a disturbed profile, limits that are not known); every other finding is shown as unsettled, with
the reason. The `id` names the question, not the answer, so that two runs of one spec can be compared claim
by claim (docs/findings.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from generator.numbers import rounded
from generator.results.evidence import FDR_Q, fdr_settled

FINDINGS_VERSION = 2  # of findings.json's layout (docs/findings.md); 2: evidence.fact


@dataclass(frozen=True)
class Figure:
    """One measured figure a finding rests on, with its 95 % interval."""

    what: str  # "fp32 b8 t1 c2, items/s"
    value: float | None
    low: float | None = None
    high: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "value": _num(self.value), "low": _num(self.low), "high": _num(self.high)}


@dataclass(frozen=True)
class Finding:
    """One claim of a page. `p_value` is its test's (None: untested, never settled); `blocked` a reason it
    cannot be settled whatever the test says; `weakest` what the p-value came from, in words. A `fact` states
    something no timing enters (a node's provider, a layer's operations per byte against settled limits): it is
    settled unless blocked, and takes no share of the false-discovery rule's tests."""

    id: str
    kind: str
    # The page stating it: a page key here ("overview", "profile:fp32", "compare:0", "choose"), its file
    # relative to the experiment's folder in findings.json ("index.md", "profile-fp32.md": pages.findings_json).
    page: str
    statement: str  # the claim in words, as the page makes it
    answer: str | float | None
    unit: str | None = None  # of a numeric answer
    interval: tuple[float, float] | None = None  # of a numeric answer (95 %)
    p_value: float | None = None
    weakest: str | None = None
    blocked: str | None = None
    figures: tuple[Figure, ...] = ()
    trials: tuple[str, ...] = ()  # the trial keys it rests on (the first: the one it is about)
    settled: bool = False
    needed: float | None = None  # the largest p-value the false-discovery rule settled in this report
    reason: str | None = None  # why unsettled, in words (None when settled)
    fact: bool = False

    def as_dict(self) -> dict[str, Any]:
        answer = _num(self.answer) if isinstance(self.answer, float) else self.answer
        return {
            "id": self.id, "kind": self.kind, "page": self.page, "statement": self.statement, "answer": answer,
            "unit": self.unit, "settled": self.settled, "reason": self.reason,
            "evidence": {
                "interval": [_num(x) for x in self.interval] if self.interval else None,
                "fact": self.fact, "p_value": _num(self.p_value, 3), "needed": _num(self.needed, 3),
                "weakest": self.weakest,
                "blocked": self.blocked, "figures": [f.as_dict() for f in self.figures],
                "trials": list(self.trials),
            },
        }


@dataclass(frozen=True)
class FindingSet:
    """Every finding of one experiment, settled by one false-discovery rule."""

    findings: tuple[Finding, ...]
    q: float = FDR_Q
    _index: dict[str, Finding] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update((f.id, f) for f in self.findings)

    def get(self, finding_id: str) -> Finding | None:
        return self._index.get(finding_id)

    def on(self, page: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.page == page)

    @property
    def settled(self) -> int:
        return sum(f.settled for f in self.findings)

    def as_dict(self, experiment: str) -> dict[str, Any]:
        return {"findings_version": FINDINGS_VERSION, "experiment": experiment, "false_discovery_rate": self.q,
                "count": len(self.findings), "settled": self.settled,
                "findings": [f.as_dict() for f in self.findings]}


def settle(findings: Iterable[Finding], q: float = FDR_Q) -> FindingSet:
    """Apply the false-discovery rule over the tested, unblocked findings (ids must be unique: a repeated id is a
    bug in a builder)."""
    items = list(findings)
    ids = [f.id for f in items]
    if len(set(ids)) != len(ids):
        raise ValueError(f"finding ids repeat: {sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    tested = [None if f.blocked or f.fact else f.p_value for f in items]
    passed, needed = fdr_settled(tested, q)
    count = len([p for p in tested if p is not None])
    return FindingSet(tuple(_settled(f, ok or (f.fact and not f.blocked), needed, count)
                            for f, ok in zip(items, passed, strict=True)), q)


def _settled(f: Finding, ok: bool, needed: float, tested: int) -> Finding:
    if ok:
        return replace(f, settled=True, needed=needed, reason=None)
    return replace(f, settled=False, needed=needed, reason=_reason(f, needed, tested))


def _reason(f: Finding, needed: float, tested: int) -> str:
    if f.blocked:
        return f.blocked
    if f.p_value is None:
        return f.weakest or "no interval: too few processes to test it"
    if f.p_value > 0.05:
        return f.weakest or "within each other's intervals"
    return (f"{f.weakest or 'the test'}: p = {f.p_value:.2g}, clear at 95 % alone but not after the correction "
            f"for the {tested} findings of this report (needed p ≤ {needed:.2g})")


def worst(parts: Sequence[tuple[float | None, str]]) -> tuple[float | None, str | None]:
    """The claim's p-value when it needs every part (the largest), and that part's words; None when a part has
    no test."""
    if not parts:
        return None, None
    if any(p is None for p, _ in parts):
        return None, next(w for p, w in parts if p is None)
    return max(parts, key=lambda part: part[0])


def _num(x: Any, digits: int = 4) -> Any:
    if x is None or isinstance(x, bool) or not isinstance(x, int | float):
        return x
    return None if not math.isfinite(float(x)) else rounded(float(x), digits)
