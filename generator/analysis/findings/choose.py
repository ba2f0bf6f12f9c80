"""The chooser page's findings: B against A at every configuration both versions ran, with the compare pages'
builder. They are part of the report's one FindingSet, settled with every other claim of the experiment: the
chooser states them when a reader picks a pair, and a page of a hundred such claims must not carry five flukes
marked settled either.

Advice is stated for every ordered pair of versions (its rules read B against A: "B is slower"). A verdict is
one claim whichever side is A: it is tested once, for the pair in version order, and the chooser shows the
reverse pair its mirror (verdicts_at), so that the false-discovery rule does not count one claim twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from generator.analysis.compare import compare_versions
from generator.analysis.compare_choice import CompareContext, config_dict
from generator.analysis.findings.compare import compare_findings
from generator.analysis.findings.record import Finding
from generator.analysis.records_compare import Comparison
from generator.analysis.summaries import TrialSummary
from generator.errors import ResultsError

PAGE = "choose"


def prefix(a: str, b: str, config_label: str) -> str:
    return f"{PAGE}/{a}/{b}/{config_label}"


def chooser_versions(ctx: CompareContext) -> tuple[str, ...]:
    """The versions the chooser offers; none with fewer than two choosable trials (no chooser page)."""
    versions = tuple(v for v in ctx.versions if ctx.trials.get(v))
    return versions if sum(len(ctx.trials[v]) for v in versions) >= 2 else ()


def config_comparisons(ctx: CompareContext, a: str, b: str) -> list[tuple[TrialSummary, Comparison]]:
    """B against A at every configuration both ran, in configuration order (A's trial there, the comparison
    without the kernel ratios the page computes itself); computed once per context."""
    key = ("chooser comparisons", a, b)
    if key not in ctx.cache:
        common = sorted((t for k, t in ctx.trials.get(a, {}).items() if k in ctx.trials.get(b, {})),
                        key=lambda t: (t.sort_key(), t.trial_key))
        out = []
        for t in common:
            try:
                out.append((t, compare_versions(ctx.exp, a, b, config_dict(t), ctx=ctx, kernel_ratios=False)))
            except ResultsError:
                continue  # the chooser says there is nothing to compare there
        ctx.cache[key] = out
    return ctx.cache[key]


def chooser_findings(ctx: CompareContext) -> list[Finding]:
    """Every finding the chooser can state, unsettled (findings.settle settles them with the report's)."""
    versions = chooser_versions(ctx)
    order = {v: i for i, v in enumerate(versions)}
    return [f for a in versions for b in versions if a != b
            for t, c in config_comparisons(ctx, a, b)
            for f in compare_findings(ctx, c, page=PAGE, prefix=prefix(a, b, t.config_label),
                                      verdicts=order[a] < order[b])]


MIRROR = {"slower": "faster", "faster": "slower"}


def findings_at(findings: Iterable[Finding], versions: Sequence[str], a: str, b: str,
                config_label: str) -> tuple[Finding, ...]:
    """The chooser's findings for B against A at one configuration: its advice, and the verdicts, tested for the
    pair in version order (`versions`), mirrored when B comes first."""
    items = list(findings)
    stem = prefix(a, b, config_label) + "/"
    own = tuple(f for f in items if f.id.startswith(stem))
    if versions.index(a) < versions.index(b):
        return own
    reverse = prefix(b, a, config_label) + "/"
    mirrored = tuple(replace(f, answer=MIRROR.get(str(f.answer), f.answer)) for f in items
                     if f.id.startswith(reverse) and f.kind == "verdict")
    return mirrored + own
