"""Every choice of A and B a reader can make on a published site, precomputed: the figures of the "choose A and
B" page (generator.site.chooser_page).

A static site cannot run the analysis, and a full comparison per choice (every version × configuration for A,
the same for B) would cost thousands of pages. The choice is split in three parts whose figures all come from
the same functions as the compare pages:

- **per trial** (`TrialCard`): its timing with the bootstrap intervals of a compare page's inference-time table,
  and the time and precision of each top-level executed node (µs per inference);
- **per ordered pair of versions** (`VersionPair`): the layer matching of generator.analysis.layer_match at one
  configuration both ran (which executed nodes of A and of B compute the same layers, which ran in one version
  only, the precision-conversion overhead), with the advice and output agreement of the full comparison there.
  A version's executed node names are the same at every configuration (onnxruntime's graph transforms do not
  depend on batch size, threads or concurrency), so one matching serves every configuration; a node that a
  chosen trial lacks is counted as missing, and the page says so;
- **per ordered pair of trials** (`PairFigures`): the latency and throughput ratios with their 95 % intervals,
  each matched layer's ratio interval, and the layer-type rows.

Every ratio, interval and significance mark is computed here; the browser only sums the stored node times of
a row and picks which precomputed figures to show. Deterministic: same results, same records.
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
    iterations_of,
    layer_type_rows,
    layer_type_rows_of,
    op_side,
)
from generator.analysis.compare_choice import CompareContext, compare_context, config_dict
from generator.analysis.layer_match import Executed, executed_nodes, member_time, side_ratio
from generator.analysis.profile import time_accounting
from generator.analysis.records_compare import (
    Advice,
    AgreementRow,
    KernelRow,
    LayerTypeRow,
    RatioCI,
    VersionTiming,
)
from generator.analysis.summaries import TrialSummary
from generator.analysis.trial_stats import (
    TrialStats,
    bootstrap_all,
    pair_ratios,
    quantile_name,
    timing,
    trial_stats,
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
    nodes: dict[str, tuple[float, str | None]]  # executed top-level node -> (µs per inference, precision)
    total_us: float  # every top-level executed node's time
    op_types: tuple[LayerTypeRow, ...]  # time per standard op, as the A side of a layer-type table
    budget_note: str | None  # set when the trial ran out of its measuring budget
    accounting: TimeAccounting | None = None  # the profiled time against the measured median (None: unknown)


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
class VersionPair:
    """B against A, whatever the configurations: the layer matching, advice and output agreement."""

    a: str
    b: str
    config_label: str | None  # where the matching, the advice and the agreement were computed
    rows: tuple[RowShape, ...]
    advice: tuple[Advice, ...]
    agreement: tuple[AgreementRow, ...]
    reason: str | None = None  # why there is no matching (no configuration both versions profiled)


@dataclass(frozen=True)
class PairFigures:
    """The statistics of trial B against trial A."""

    a_key: str
    b_key: str
    latency: RatioCI | None
    throughput: RatioCI | None
    rows: tuple[RatioCI | None, ...]  # per row of the version pair's RowShapes, None where no ratio exists
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


def chooser_data(exp) -> tuple[ChooserData, CompareContext] | None:
    """The chooser's per-trial and per-version-pair parts, and the context whose cache pair_figures reuses;
    None with fewer than two ok trials."""
    ctx = compare_context(exp)
    ok = choosable(ctx)
    if len(ok) < 2:
        return None
    bootstrap_all([trial_stats(ctx.cache, exp, t) for t in ok], ctx.percentile)
    cards = tuple(_card(ctx, t) for t in ok)
    versions = tuple(v for v in ctx.versions if v in ctx.trials)
    pairs = tuple(_version_pair(ctx, a, b) for a in versions for b in versions if a != b)
    return ChooserData(versions, cards, pairs, _default(ctx, versions), ctx.percentile), ctx


def pair_figures(ctx: CompareContext, data: ChooserData) -> Iterator[tuple[str, list[PairFigures]]]:
    """For each trial as A, in the data's order: its figures against every other trial as B.

    What depends on one trial only (its statistics, its layer-type groups, each kernel row's summed time) is
    computed once per trial, not once per pair: the pairs grow as the square of the trials."""
    summaries = {t.trial_key: t for v in ctx.trials.values() for t in v.values()}
    sides = {c.trial_key: _side(ctx, summaries[c.trial_key]) for c in data.trials}
    row_times: dict[tuple[str, str, str], tuple[tuple[float, float] | None, ...]] = {}
    for a in data.trials:
        out = []
        for b in data.trials:
            if b.trial_key == a.trial_key:
                continue
            pair = data.pair(a.version, b.version)
            rows = pair.rows if pair else ()
            times = tuple(_row_times(row_times, sides[t.trial_key], t.trial_key, a.version, b.version, rows, side)
                          for t, side in ((a, "a"), (b, "b")))
            out.append(_figures(ctx, sides[a.trial_key], sides[b.trial_key], rows, times))
        yield a.trial_key, out


def choosable(ctx: CompareContext) -> list[TrialSummary]:
    """The trials a reader can choose: the newest ok trial of each version and configuration."""
    return [t for v in ctx.versions for t in sorted(ctx.trials.get(v, {}).values(), key=_order)]


def _order(t: TrialSummary) -> tuple:
    return (t.sort_key(), t.trial_key)


def _executed(ctx: CompareContext, trial_key: str) -> tuple[Executed, ...]:
    """The trial's top-level executed nodes (side "a": the chooser never matches them again), cached."""
    key = ("executed", trial_key)
    if key not in ctx.cache:
        nodes = ctx.exp.nodes
        ctx.cache[key] = tuple(executed_nodes("a", nodes[nodes["trial_key"] == trial_key]))
    return ctx.cache[key]


def _card(ctx: CompareContext, t: TrialSummary) -> TrialCard:
    s = trial_stats(ctx.cache, ctx.exp, t)
    q_name, _ = quantile_name(ctx.percentile, s, s)
    executed = _executed(ctx, t.trial_key)
    return TrialCard(t.trial_key, t.version, t.config_label, config_dict(t),
                     timing(s, q_name) if s.samples.processes else None,
                     {e.name: (e.dur_us, e.precision) for e in executed}, sum(e.dur_us for e in executed),
                     layer_type_rows(executed, (), None, 1, 1), budget_note(t) if t.budget_exhausted else None,
                     time_accounting(t))


def _version_pair(ctx: CompareContext, a: str, b: str) -> VersionPair:
    try:
        c = compare_versions(ctx.exp, a, b, ctx=ctx)
    except ResultsError as e:
        return VersionPair(a, b, None, (), (), (), str(e))
    rows = tuple(_shape(k) for k in c.kernels)
    reason = None if rows else " ".join(c.notes) or "no configuration both versions profiled"
    return VersionPair(a, b, c.config_label, rows, c.advice, c.agreement, reason)


def _shape(k: KernelRow) -> RowShape:
    return RowShape(k.layer, k.op_type, k.kind, k.only_in, k.note, k.executed_a, k.executed_b, k.weights,
                    k.ops_a, k.ops_b)


def _default(ctx: CompareContext, versions: tuple[str, ...]) -> tuple[str, str] | None:
    """The trial keys shown first: the spec's first compare pair at its compared configuration, else the first
    two versions at the configuration a comparison of them picks."""
    pairs = list(ctx.exp.spec.compare)
    if len(versions) < 2:
        return None  # one version's configurations: the page starts at its first two
    try:
        if pairs:
            p = pairs[0]
            c = compare_versions(ctx.exp, p.a, p.b, dict(p.config) if p.config else None, ctx=ctx)
        else:
            c = compare_versions(ctx.exp, versions[0], versions[1], ctx=ctx)
    except ResultsError:
        return None
    return (c.a_trial_key, c.b_trial_key) if c.a_trial_key and c.b_trial_key else None


@dataclass(frozen=True)
class Side:
    """One trial as a side of its pairs: statistics, top-level executed nodes (by name), layer-type groups."""

    stats: TrialStats
    executed: tuple[Executed, ...]
    iterations: int  # profiled iterations
    by_name: dict[str, Executed]
    op_side: OpSide


def _side(ctx: CompareContext, t: TrialSummary) -> Side:
    executed, iterations = _executed(ctx, t.trial_key), iterations_of(t)
    return Side(trial_stats(ctx.cache, ctx.exp, t), executed, iterations, {e.name: e for e in executed},
                op_side(executed, iterations))


def _row_times(cache: dict, side: Side, key: str, version_a: str, version_b: str, rows: tuple[RowShape, ...],
               which: str) -> tuple[tuple[float, float] | None, ...]:
    """Each kernel row's summed time (layer_match.member_time) on one side, None where the row has no ratio;
    cached per trial, version pair and side."""
    cache_key = (key, f"{version_a}\0{version_b}", which)
    if cache_key not in cache:
        cache[cache_key] = tuple(_row_time(row, side, which) for row in rows)
    return cache[cache_key]


def _row_time(row: RowShape, side: Side, which: str) -> tuple[float, float] | None:
    if row.kind != "layer" or row.only_in is not None:
        return None
    names = row.executed_a if which == "a" else row.executed_b
    members = [side.by_name[n] for n in names if n in side.by_name]
    return member_time(members, side.iterations) if members else None


def _figures(ctx: CompareContext, a: Side, b: Side, rows: tuple[RowShape, ...],
             times: tuple[tuple[tuple[float, float] | None, ...], ...]) -> PairFigures:
    sa, sb = a.stats, b.stats
    keys = (sa.summary.trial_key, sb.summary.trial_key)
    if not sa.samples.processes or not sb.samples.processes:
        return PairFigures(*keys, None, None, (None,) * len(rows), (), False,
                           ("No request latencies are stored for these trials: no ratio can be given.",))
    q_name, notes = quantile_name(ctx.percentile, sa, sb)
    r = pair_ratios(sa, sb, q_name)
    ratios = tuple(side_ratio(ta, tb, r.reference) if ta is not None and tb is not None else None
                   for ta, tb in zip(*times, strict=True))
    types = layer_type_rows_of(a.op_side, b.op_side, r.reference) if a.executed and b.executed else ()
    return PairFigures(*keys, r.latency, r.throughput, ratios, types, r.paired, notes)
