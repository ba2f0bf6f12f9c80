"""Every choice of A and B a reader can make on a published site, precomputed: the figures of the "choose A and
B" page (generator.site.chooser_page).

A static site cannot run the analysis, and a full comparison per choice (every version × configuration for A,
the same for B) would cost thousands of pages. The choice is split in three parts whose figures all come from
the same functions as the compare pages:

- **per trial** (`TrialCard`): its timing with the intervals of a compare page's inference-time table,
  and the time and precision of each top-level executed node (µs per inference);
- **per ordered pair of versions** (`VersionPair`): the layer matching of generator.analysis.layer_match at one
  configuration both ran (which executed nodes of A and of B compute the same layers, which ran in one version
  only, the precision-conversion overhead), with the advice and output agreement of the full comparison there.
  A version's executed node names are the same at every configuration (onnxruntime's graph transforms do not
  depend on batch size, threads or concurrency), so one matching serves every configuration; a node that a
  chosen trial lacks is counted as missing, and the page says so;
- **per ordered pair of trials** (`PairFigures`): the latency and throughput ratios with their 95 % intervals,
  the layer-type rows, and the process-to-process spread a layer's interval borrows from the two trials'
  median latency ratio (stats.borrowed_spread).

A kernel row's ratio interval is the one figure the page script computes: a pair of thousand-layer trials has
a thousand of them and the pairs grow as the square of the trials, so precomputing them made the chooser's
data quadratic (1.5 M intervals for 40 trials). The script applies stats.scaled_ratio_ci's closed form to the
row's summed node times and standard errors (layer_match.member_time, from each trial's file) and the pair's
spread; tests/browser/test_chooser_browser.py checks every row against the compare page's figures. Every other
ratio, interval and significance mark is computed here. Deterministic: same results, same records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from generator.analysis.accounting import TimeAccounting
from generator.analysis.compare import (
    OpSide,
    budget_note,
    compare_versions,
    executed_of,
    iterations_of,
    layer_type_rows_of,
    op_side,
    trial_accounting,
    trial_op_side,
)
from generator.analysis.compare_choice import CompareContext, compare_context, config_dict, headline_label
from generator.analysis.findings import FindingSet, settle
from generator.analysis.findings.choose import chooser_findings, chooser_versions, config_comparisons, findings_at
from generator.analysis.frozen_records import built
from generator.analysis.layer_match import Executed
from generator.analysis.records_compare import (
    Advice,
    AgreementRow,
    KernelRow,
    LayerTypeRow,
    RatioCI,
    VersionTiming,
)
from generator.analysis.stats import borrowed_spread
from generator.analysis.summaries import TrialSummary
from generator.analysis.trial_stats import (
    TrialStats,
    bootstrap_all,
    pair_ratios,
    quantile_name,
    timing,
    trial_stats,
    unjudged_side,
)
from generator.errors import ResultsError


@dataclass(frozen=True)
class TrialCard:
    """One trial as the chooser offers it."""

    trial_key: str
    version: str
    config_label: str
    config: dict[str, Any]
    timing: VersionTiming | None  # None without stored request latencies
    # executed top-level node -> (µs per inference, precision, µs of standard deviation over the iterations)
    nodes: dict[str, tuple[float, str | None, float]]
    total_us: float  # every top-level executed node's time
    op_types: tuple[LayerTypeRow, ...]  # time per standard op, as the A side of a layer-type table
    budget_note: str | None  # set when the trial ran out of its measuring budget
    accounting: TimeAccounting | None = None  # the profiled time against the measured median (None: unknown)
    iterations: int = 1  # profiled iterations (compare.iterations_of): a layer's standard error divides by them


@dataclass(frozen=True)
class RowShape:
    """One row of the kernel table of a version pair, without times: which executed nodes it sums."""

    layer: str
    op_type: str
    kind: str  # "layer" or "overhead"
    only_in: str | None  # "a" / "b" when the layer ran in one version only
    note: str | None
    executed_a: tuple[str, ...]
    executed_b: tuple[str, ...]
    weights: tuple[str, ...]
    ops_a: tuple[str, ...] = ()  # the executed kernels' own op types (generator.site.formatting.op_name)
    ops_b: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigFindings:
    """B against A at one configuration both versions ran: the advice and the output agreement there, and the
    findings the comparison states there (its verdicts and advice; the report's, settled with all its others)."""

    config_label: str
    advice: tuple[Advice, ...]
    agreement: tuple[AgreementRow, ...]
    findings: FindingSet


@dataclass(frozen=True)
class VersionPair:
    """B against A: the layer matching (one serves every configuration), and at each configuration both
    versions ran, the advice, output agreement and findings of that configuration (`at`)."""

    a: str
    b: str
    config_label: str | None  # where the matching was computed
    rows: tuple[RowShape, ...]
    advice: tuple[Advice, ...]
    agreement: tuple[AgreementRow, ...]
    reason: str | None = None  # why there is no matching (no configuration both versions profiled)
    at: tuple[ConfigFindings, ...] = ()


@dataclass(frozen=True)
class PairFigures:
    """The statistics of trial B against trial A."""

    a_key: str
    b_key: str
    latency: RatioCI | None
    throughput: RatioCI | None
    spread: float | None  # stats.borrowed_spread of the reference ratio; None: no layer ratio can be given
    layer_types: tuple[LayerTypeRow, ...]
    paired: bool  # measured in the same rounds of one run
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChooserData:
    """Everything the chooser page of one experiment shows."""

    versions: tuple[str, ...]
    trials: tuple[TrialCard, ...]
    pairs: tuple[VersionPair, ...]
    default: tuple[str, str] | None  # the trial keys shown first: the spec's first compare pair, else A's best
    percentile: str

    def pair(self, a: str, b: str) -> VersionPair | None:
        return next((p for p in self.pairs if p.a == a and p.b == b), None)


def chooser_data(exp, ctx: CompareContext | None = None,
                 findings: FindingSet | None = None) -> tuple[ChooserData, CompareContext] | None:
    """The chooser's per-trial and per-version-pair parts, and the context whose cache pair_figures reuses
    (`ctx`, the experiment's, when its other pages made comparisons with it already); None with fewer than two
    ok trials. `findings`: the report's (generator.analysis.findings.report_findings), which hold the chooser's;
    without them, the chooser's own are settled among themselves."""
    ctx = ctx or compare_context(exp)
    findings = findings if findings is not None else settle(chooser_findings(ctx))
    ok = choosable(ctx)
    if len(ok) < 2:
        return None
    bootstrap_all([trial_stats(ctx.cache, exp, t) for t in ok], ctx.percentile)
    cards = tuple(_card(ctx, t) for t in ok)
    versions = tuple(v for v in ctx.versions if v in ctx.trials)
    pairs = tuple(_version_pair(ctx, a, b, findings) for a in versions for b in versions if a != b)
    return ChooserData(versions, cards, pairs, _default(ctx, versions), headline_label(ctx, ok)), ctx


def pair_figures(ctx: CompareContext, data: ChooserData) -> Iterator[tuple[str, list[PairFigures]]]:
    """For each trial as A, in the data's order: its figures against every other trial as B.

    What depends on one trial only (its statistics, its layer-type groups) is computed once per trial, not once
    per pair: the pairs grow as the square of the trials."""
    summaries = {t.trial_key: t for v in ctx.trials.values() for t in v.values()}
    sides = {c.trial_key: _side(ctx, summaries[c.trial_key]) for c in data.trials}
    for a in data.trials:
        yield a.trial_key, [_figures(ctx, sides[a.trial_key], sides[b.trial_key])
                            for b in data.trials if b.trial_key != a.trial_key]


def choosable(ctx: CompareContext) -> list[TrialSummary]:
    """The trials a reader can choose: the newest ok trial of each version and configuration."""
    return [t for v in ctx.versions for t in sorted(ctx.trials.get(v, {}).values(), key=_order)]


def _order(t: TrialSummary) -> tuple:
    return (t.sort_key(), t.trial_key)


def _card(ctx: CompareContext, t: TrialSummary) -> TrialCard:
    s = trial_stats(ctx.cache, ctx.exp, t)
    q_name, _ = quantile_name(ctx.percentile, s, s)
    executed = executed_of(ctx, t.trial_key)
    return TrialCard(t.trial_key, t.version, t.config_label, config_dict(t),
                     timing(s, q_name) if s.samples.processes else None,
                     {e.name: (e.dur_us, e.precision, e.dur_std_us) for e in executed},
                     sum(e.dur_us for e in executed), layer_type_rows_of(trial_op_side(ctx, t), _NO_NODES, None),
                     budget_note(t) if t.budget_exhausted and not unjudged_side(s) else None,
                     trial_accounting(ctx, t), iterations_of(t))


# A card's layer types are the A side of a table without B (B's times 0, no ratio).
_NO_NODES = op_side((), 1)


def _version_pair(ctx: CompareContext, a: str, b: str, findings: FindingSet) -> VersionPair:
    try:
        c = compare_versions(ctx.exp, a, b, ctx=ctx, kernel_ratios=False)  # only the rows' shapes are shown
    except ResultsError as e:
        return VersionPair(a, b, None, (), (), (), str(e))
    rows = tuple(_shape(k) for k in c.kernels)
    reason = None if rows else " ".join(c.notes) or "no configuration both versions profiled"
    return VersionPair(a, b, c.config_label, rows, c.advice, c.agreement, reason,
                       _at_each_config(ctx, a, b, findings))


def _at_each_config(ctx: CompareContext, a: str, b: str, findings: FindingSet) -> tuple[ConfigFindings, ...]:
    """The comparison of A and B at every configuration both ran (the compare pages' analysis, without the
    kernel ratios the page computes itself), in configuration order, with the report's findings there: a
    chosen pair's advice is about the configuration chosen, not about one picked for the version pair."""
    out = []
    versions = chooser_versions(ctx)
    for t, c in config_comparisons(ctx, a, b):
        found = FindingSet(findings_at(findings.findings, versions, a, b, t.config_label), findings.q)
        out.append(ConfigFindings(t.config_label, c.advice, c.agreement, found))
    return tuple(out)


def _shape(k: KernelRow) -> RowShape:
    # Made by built(): a row per layer of each ordered version pair (24,000 for vit-search-23's 20).
    return built(RowShape, {"layer": k.layer, "op_type": k.op_type, "kind": k.kind, "only_in": k.only_in,
                            "note": k.note, "executed_a": k.executed_a, "executed_b": k.executed_b,
                            "weights": k.weights, "ops_a": k.ops_a, "ops_b": k.ops_b})


def _default(ctx: CompareContext, versions: tuple[str, ...]) -> tuple[str, str] | None:
    """The trial keys shown first: the spec's first compare pair at its compared configuration, else the first
    two versions at the configuration a comparison of them picks."""
    pairs = list(ctx.exp.spec.compare)
    if len(versions) < 2:
        return None  # one version's configurations: the page starts at its first two
    try:  # only the compared trials are used: the comparison without kernel ratios (that of a version pair)
        if pairs:
            p = pairs[0]
            c = compare_versions(ctx.exp, p.a, p.b, dict(p.config) if p.config else None, ctx=ctx,
                                 kernel_ratios=False)
        else:
            c = compare_versions(ctx.exp, versions[0], versions[1], ctx=ctx, kernel_ratios=False)
    except ResultsError:
        return None
    return (c.a_trial_key, c.b_trial_key) if c.a_trial_key and c.b_trial_key else None


@dataclass(frozen=True)
class Side:
    """One trial as a side of its pairs: statistics, top-level executed nodes, layer-type groups."""

    stats: TrialStats
    executed: tuple[Executed, ...]
    op_side: OpSide


def _side(ctx: CompareContext, t: TrialSummary) -> Side:
    return Side(trial_stats(ctx.cache, ctx.exp, t), executed_of(ctx, t.trial_key), trial_op_side(ctx, t))


def _figures(ctx: CompareContext, a: Side, b: Side) -> PairFigures:
    sa, sb = a.stats, b.stats
    keys = (sa.summary.trial_key, sb.summary.trial_key)
    if not sa.samples.processes or not sb.samples.processes:
        return PairFigures(*keys, None, None, None, (), False,
                           ("No request latencies are stored for these trials: no ratio can be given.",))
    q_name, notes = quantile_name(ctx.percentile, sa, sb)
    r = pair_ratios(sa, sb, q_name)
    types = layer_type_rows_of(a.op_side, b.op_side, r.reference) if a.executed and b.executed else ()
    spread = None if r.reference.unjudged else borrowed_spread(r.reference)  # unjudged: no layer verdicts
    return PairFigures(*keys, r.latency, r.throughput, spread, types, r.paired,
                       notes + r.notes)
