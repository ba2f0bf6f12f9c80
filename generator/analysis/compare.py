"""Compare two versions of one experiment: DataFrames in (an ExperimentResults), a Comparison record out.

Which B and which configuration are chosen in generator.analysis.compare_choice. Ratios come with
process-level confidence intervals (generator.analysis.stats), layers are matched by
generator.analysis.layer_match, and advice by the rules of generator.analysis.advice. Deterministic: same
results, same record.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from generator.analysis.accounting import TimeAccounting
from generator.analysis.advice import AdviceInput, advise
from generator.analysis.compare_choice import (
    PAIR_CONFIG,
    CompareContext,
    check_version,
    choose_config,
    compare_context,
    config_dict,
    default_b,
    headline_label,
    optional_int,
    overall_sweet_spot,
    version_sweet_spot,
)
from generator.analysis.frozen_records import built
from generator.analysis.layer_match import (
    Executed,
    LayerMatch,
    executed_nodes,
    executed_ops,
    kernel_op,
    match_executed,
    member_time,
    side_ratio,
)
from generator.analysis.profile import time_accounting
from generator.analysis.records_compare import (
    AgreementRow,
    Comparison,
    ConfigPoint,
    LayerTypeRow,
    RatioCI,
    SweetSpot,
    VersionTiming,
)
from generator.analysis.summaries import TrialSummary
from generator.analysis.trial_stats import pair_ratios, quantile_name, timing, trial_stats, unjudged_side
from generator.cells import clean
from generator.errors import ResultsError
from generator.results.by_trial import trial_rows
from generator.results.headline import percentile_label
from generator.results.profiled import spread_count
from generator.results.store import ExperimentResults

PRECISIONS = ("FP32", "FP16", "INT8")
DEFAULT_COSINE_MIN = 0.99  # outputs' agreement below this warns when the spec sets no tolerance


def compare_pairs(exp: ExperimentResults) -> list[Comparison]:
    """One Comparison per `compare:` entry of the experiment's spec, in spec order."""
    return [compare_versions(exp, pair.a, pair.b, dict(pair.config) if pair.config else None)
            for pair in exp.spec.compare]


def compare_versions(exp: ExperimentResults, a: str, b: str | None = None,
                     config: dict[str, Any] | None = None, ctx: CompareContext | None = None,
                     config_where: str = PAIR_CONFIG, kernel_ratios: bool = True) -> Comparison:
    """Version `b` against version `a` (see the module docstring for the defaults). Without `kernel_ratios`
    the kernel rows have no ratio (None) and everything else is the same: for a caller that uses only the
    rows' shapes (the chooser's version pairs), given the full comparison when the context holds it already.

    Raises ResultsError when a version has no successful trial, when no other version exists to compare
    with, or when `config` matches no configuration both versions ran (the message lists those that exist
    and, by `config_where`, how to name one where the user gave `config`).
    """
    ctx = ctx or compare_context(exp)  # one context for many comparisons shares its per-trial statistics
    # The compare pages, the chooser's version pairs and its default choice ask for some comparisons more
    # than once: each is made once per context. A bool and an int of the same value are different
    # configurations (the spec is strict), so the key holds each value's type.
    key = ("comparison", a, b, None if config is None else tuple((k, type(v).__name__, v) for k, v in config.items()))
    if key in ctx.cache:
        return ctx.cache[key]
    if not kernel_ratios:
        key += ("without kernel ratios",)
    if key not in ctx.cache:
        ctx.cache[key] = _compare(ctx, a, b, config, config_where, kernel_ratios)
    return ctx.cache[key]


def _compare(ctx: CompareContext, a: str, b: str | None, config: dict[str, Any] | None,
             config_where: str, kernel_ratios: bool = True) -> Comparison:
    check_version(ctx, a, "A")
    b_was_default = b is None
    b, b_reason = default_b(ctx, a) if b is None else (b, None)
    check_version(ctx, b, "B")
    if a == b:
        raise ResultsError(f"A and B are both `{a}`: compare a version with another one.")
    spots = tuple(version_sweet_spot(ctx, v) for v in ctx.versions)
    chosen, config_reason = choose_config(ctx, a, b, config, config_where)
    ta, tb = (ctx.trials[a][chosen], ctx.trials[b][chosen]) if chosen is not None else (None, None)
    points = _points(ctx, spots, ta, tb)
    timing = _timings(ctx, ta, tb)
    match, layer_notes = _layers(ctx, ta, tb, timing.reference, kernel_ratios)
    comparison = Comparison(
        a=a, b=b, config_label=ta.config_label if ta else None, config=config_dict(ta) if ta else None,
        a_trial_key=ta.trial_key if ta else None, b_trial_key=tb.trial_key if tb else None,
        quick=tuple(f"{t.version} at {t.config_label}" for t in (ta, tb) if t is not None and t.quick),
        b_was_default=b_was_default, points=points, sweet_spots=spots,
        latency_ratio=timing.latency, throughput_ratio=timing.throughput, timings=timing.timings,
        layer_types=layer_type_rows_of(trial_op_side(ctx, ta), trial_op_side(ctx, tb), timing.reference)
        if match else (),
        kernels=match.kernels if match else (), overhead=match.overhead if match else None,
        coverage=match.coverage if match else None, pareto=tuple(p for p in points if p.on_pareto),
        model_bytes=dict(ctx.model_bytes), precision_share=_precision_shares(ctx, chosen),
        precision_transitions=_precision_transitions(ctx, chosen), advice=(),
        other_configs=_other_labels(ctx, a, b, chosen), agreement=_agreement(ctx, a, b, ta, tb),
        tolerance_set=ctx.exp.spec.tolerance is not None,
        overall_sweet_spot=overall_sweet_spot(ctx), threshold_ms=ctx.threshold_ms,
        percentile=headline_label(ctx, every_trial(ctx)),
        timing_percentile=percentile_label(ctx.percentile, [t.percentile for t in timing.timings or ()]),
        b_reason=b_reason, config_reason=config_reason, notes=timing.notes + layer_notes,
        versions=ctx.versions, other_config_items=_other_items(ctx, a, b, chosen),
        accounting=(trial_accounting(ctx, ta), trial_accounting(ctx, tb)) if ta and tb else (None, None),
    )
    provider = ta.provider if ta else None
    return _with_advice(comparison, AdviceInput(comparison, match, provider))


def trial_accounting(ctx: CompareContext, t: TrialSummary) -> TimeAccounting | None:
    """The trial's time accounting (analysis.profile.time_accounting), once per context: every comparison and
    chooser card of the trial shows it."""
    key = ("accounting", t.trial_key)
    if key not in ctx.cache:
        ctx.cache[key] = time_accounting(ctx.exp, t)
    return ctx.cache[key]


def every_trial(ctx: CompareContext) -> list[TrialSummary]:
    return [t for v in ctx.versions for t in ctx.trials.get(v, {}).values()]


def _with_advice(c: Comparison, data: AdviceInput) -> Comparison:
    return replace(c, advice=advise(data))


def _pareto_keys(points: list[TrialSummary]) -> set[str]:
    """Trials no other trial beats on both latency (lower) and throughput (higher)."""
    frontier, best = set(), -math.inf
    for t in sorted(points, key=lambda t: (t.latency_headline_ms, -t.throughput_ips, t.trial_key)):
        if t.throughput_ips > best:
            frontier.add(t.trial_key)
            best = t.throughput_ips
    return frontier


def _points(ctx: CompareContext, spots: tuple[SweetSpot, ...], ta: TrialSummary | None,
            tb: TrialSummary | None) -> tuple[ConfigPoint, ...]:
    every = every_trial(ctx)
    pareto = _pareto_keys(every)
    spot_keys = {s.trial_key for s in spots if s.trial_key}
    roles = {t.trial_key: role for t, role in ((ta, "a"), (tb, "b")) if t is not None}
    points = []
    for version in ctx.versions:
        line = sorted(ctx.trials.get(version, {}).values(), key=lambda t: (t.sort_key(), t.trial_key))
        points += [ConfigPoint(
            version=version, trial_key=t.trial_key, config_label=t.config_label, config=config_dict(t),
            latency_ms=t.latency_headline_ms, throughput_ips=t.throughput_ips, uncertain=t.uncertain is not None,
            is_sweet_spot=t.trial_key in spot_keys, role=roles.get(t.trial_key), on_pareto=t.trial_key in pareto,
            order=i, model_bytes=ctx.model_bytes.get(version),
        ) for i, t in enumerate(line)]
    return tuple(points)


@dataclass(frozen=True)
class _Timing:
    latency: RatioCI | None = None
    throughput: RatioCI | None = None
    timings: tuple[VersionTiming, VersionTiming] | None = None
    reference: RatioCI | None = None  # median latency ratio: the process variation layer ratios borrow
    notes: tuple[str, ...] = ()


def _timings(ctx: CompareContext, ta: TrialSummary | None, tb: TrialSummary | None) -> _Timing:
    if ta is None or tb is None:
        return _Timing()
    sa, sb = (trial_stats(ctx.cache, ctx.exp, t) for t in (ta, tb))
    if not sa.samples.processes or not sb.samples.processes:
        note = "No request latencies are stored for these trials: the figures are shown without intervals."
        return _Timing(timings=(_bare_timing(ta, ctx.percentile), _bare_timing(tb, ctx.percentile)), notes=(note,))
    q_name, notes = quantile_name(ctx.percentile, sa, sb)
    r = pair_ratios(sa, sb, q_name)
    # A side shown without a verdict (too few clean processes) is not "judged" with any interval.
    notes += r.notes + tuple(budget_note(s.summary) for s in (sa, sb)
                             if s.summary.budget_exhausted and not unjudged_side(s))
    return _Timing(r.latency, r.throughput, (timing(sa, q_name), timing(sb, q_name)), r.reference, notes)


def budget_note(t: TrialSummary) -> str:
    reached = f"± {t.ci_halfwidth:.1%}" if t.ci_halfwidth is not None else "no interval"
    target = f"± {t.target:.1%}" if t.target is not None else "its target"
    return (f"{t.version} at {t.config_label} ran out of its measuring budget: its headline interval reached "
            f"{reached}, not {target}. Its ratios are judged with that wider interval.")


def _bare_timing(t: TrialSummary, percentile: str) -> VersionTiming:
    return VersionTiming(t.version, t.latency_headline_ms, None, None, t.throughput_ips, None, None,
                         t.processes or 0, t.trial_key, t.headline_percentile or percentile,
                         "no stored request latencies")


def iterations_of(t: TrialSummary) -> int:
    """What a trial's node spreads (`dur_process_std_us`) are over: generator.results.profiled.spread_count."""
    return spread_count(t.profile_processes, t.profile_iterations)


def _layers(ctx: CompareContext, ta: TrialSummary | None, tb: TrialSummary | None,
            reference: RatioCI | None, kernel_ratios: bool = True) -> tuple[LayerMatch | None, tuple[str, ...]]:
    if ta is None or tb is None:
        return None, ()
    nodes = ctx.exp.nodes
    missing = [t.version for t in (ta, tb) if trial_rows(nodes, t.trial_key).empty]
    if missing:
        return None, (f"No per-node profile of {' and '.join(missing)} at {ta.config_label}: the layer-level "
                      "sections are empty. Add this configuration to the spec's `profile:` list and run again.",)
    return match_executed(executed_of(ctx, ta.trial_key), executed_of(ctx, tb.trial_key), reference,
                          iterations_of(ta), iterations_of(tb), kernel_ratios), ()


def executed_of(ctx: CompareContext, trial_key: str) -> tuple[Executed, ...]:
    """The trial's top-level executed nodes (as side "a": match_executed gives each its side), read once per
    context: a trial takes part in many comparisons (the chooser's version pairs, its cards, the compare
    pages), as A in some and as B in others."""
    key = ("executed", trial_key)
    if key not in ctx.cache:
        ctx.cache[key] = tuple(executed_nodes("a", trial_rows(ctx.exp.nodes, trial_key)))
    return ctx.cache[key]


def trial_op_side(ctx: CompareContext, t: TrialSummary) -> OpSide:
    """The trial's op_side (of its executed_of, with its profiled iterations), computed once per context: the
    side of every layer-type table the trial takes part in (compare pages, version pairs, chooser cards)."""
    key = ("op side", t.trial_key)
    if key not in ctx.cache:
        ctx.cache[key] = op_side(executed_of(ctx, t.trial_key), iterations_of(t))
    return ctx.cache[key]


@dataclass(frozen=True)
class OpSide:
    """One trial's top-level executed nodes by standard op: a side of a layer-type table, computed once per
    trial (the chooser pairs each trial with every other)."""

    total_us: float
    times: dict[str, tuple[float, float]]  # op -> (time, relative standard error): layer_match.member_time
    counts: dict[str, dict[str, int]]  # op -> nodes per precision
    nodes: dict[str, int]
    ops: dict[str, tuple[str, ...]]  # op -> the kernels' own op types


def op_side(executed: Sequence[Executed], iterations: int) -> OpSide:
    by_op: dict[str, list[Executed]] = {}
    for e in executed:
        by_op.setdefault(kernel_op(e.op_type), []).append(e)
    return OpSide(sum(e.dur_us for e in executed), {op: member_time(m, iterations) for op, m in by_op.items()},
                  {op: _counts(m) for op, m in by_op.items()}, {op: len(m) for op, m in by_op.items()},
                  {op: executed_ops(m) for op, m in by_op.items()})


def layer_type_rows_of(a: OpSide, b: OpSide, reference: RatioCI | None) -> tuple[LayerTypeRow, ...]:
    """Time per standard op (`QLinearConv` and `FusedConv` count as Conv) in A and B, largest first: every
    top-level executed node of each version counts (shares are of its whole kernel time)."""
    total_a, total_b = a.total_us, b.total_us
    rows = []
    for op in dict.fromkeys([*a.times, *b.times]):
        time_a = a.times[op][0] if op in a.times else 0  # an int 0, as sum() of no node gives
        time_b = b.times[op][0] if op in b.times else 0
        rows.append(built(LayerTypeRow, {  # a chooser makes one per layer type of every pair of its trials
            "op_type": op, "time_a_us": time_a, "time_b_us": time_b, "delta_us": time_b - time_a,
            "ratio": side_ratio(a.times[op], b.times[op], reference) if op in a.times and op in b.times else None,
            "share_a": time_a / total_a if total_a > 0 else 0.0, "share_b": time_b / total_b if total_b > 0 else 0.0,
            "precision_counts_a": a.counts.get(op, {}), "precision_counts_b": b.counts.get(op, {}),
            "nodes_a": a.nodes.get(op, 0), "nodes_b": b.nodes.get(op, 0), "ops_a": a.ops.get(op, ()),
            "ops_b": b.ops.get(op, ()),
        }))
    return tuple(sorted(rows, key=lambda r: (-max(r.time_a_us, r.time_b_us), r.op_type)))


def _counts(executed: list) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in executed:
        key = e.precision or "other"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _top_level(ctx: CompareContext, version: str, chosen: tuple | None) -> pd.DataFrame | None:
    t = ctx.trials.get(version, {}).get(chosen) if chosen is not None else None
    if t is None:
        return None
    nodes = ctx.exp.nodes
    rows = trial_rows(nodes, t.trial_key)
    rows = rows[rows["parent"].isna()]
    return rows.sort_values("exec_order") if len(rows) else None


def _precision_shares(ctx: CompareContext, chosen: tuple | None) -> dict[str, dict[str, float]]:
    """Per version profiled at the compared configuration: share of kernel time by runtime precision."""
    return {version: figures[0] for version in ctx.versions
            if (figures := _precision_figures(ctx, version, chosen)) is not None}


def _precision_transitions(ctx: CompareContext, chosen: tuple | None) -> dict[str, int]:
    """Per version: changes of precision between consecutive FP32/FP16/INT8 kernels in execution order
    (conversions and `other` kernels in between are skipped: they are the transition itself)."""
    return {version: figures[1] for version in ctx.versions
            if (figures := _precision_figures(ctx, version, chosen)) is not None}


def _precision_figures(ctx: CompareContext, version: str, chosen: tuple | None) -> tuple[dict[str, float], int] | None:
    """The version's precision shares and transitions at a configuration, once per trial and context (every
    comparison of an experiment gives them for every version)."""
    t = ctx.trials.get(version, {}).get(chosen) if chosen is not None else None
    key = ("precision figures", t.trial_key if t is not None else None)
    if t is None:
        return None
    if key not in ctx.cache:
        rows = _top_level(ctx, version, chosen)
        if rows is None:
            ctx.cache[key] = None
        else:
            time = rows.groupby(rows["runtime_precision"].fillna("other").astype(str))["dur_us"].sum()
            total = float(time.sum())
            shares = {str(p): float(v) / total for p, v in sorted(time.items())} if total > 0 else {}
            sequence = [p for p in rows["runtime_precision"] if p in PRECISIONS]
            ctx.cache[key] = (shares, sum(1 for x, y in zip(sequence, sequence[1:], strict=False) if x != y))
    return ctx.cache[key]


def _common_others(ctx: CompareContext, a: str, b: str, chosen: tuple | None) -> list[TrialSummary]:
    ta, tb = ctx.trials[a], ctx.trials[b]
    return sorted((ta[k] for k in ta if k in tb and k != chosen), key=lambda t: (t.sort_key(), t.trial_key))


def _other_labels(ctx: CompareContext, a: str, b: str, chosen: tuple | None) -> tuple[str, ...]:
    return tuple(t.config_label for t in _common_others(ctx, a, b, chosen))


def _other_items(ctx: CompareContext, a: str, b: str, chosen: tuple | None) -> tuple[dict[str, Any], ...]:
    return tuple(config_dict(t) for t in _common_others(ctx, a, b, chosen))


def _agreement(ctx: CompareContext, a: str, b: str, ta: TrialSummary | None,
               tb: TrialSummary | None) -> tuple[AgreementRow, ...]:
    """Output agreement of the compared trials (B's, and A's when it has a reference), else B's latest."""
    table = ctx.exp.agreement
    if table is None or not len(table):
        return ()
    keys = {t.trial_key for t in (ta, tb) if t is not None}
    rows = table[table["trial_key"].isin(keys)]
    if not len(rows):
        rows = table[table["version"].astype(str) == b]
    rows = rows.drop_duplicates(["version", "reference_version", "output"], keep="last")
    rows = rows.sort_values(["version", "reference_version", "output"], key=lambda s: s.astype(str))
    tolerance = effective_tolerance(ctx.exp.spec)
    return tuple(_agreement_row(r, tolerance) for _, r in rows.iterrows())


def outputs_beyond_tolerance(exp: ExperimentResults) -> tuple[AgreementRow, ...]:
    """Every version's newest agreement rows outside the tolerance (the spec's or the default), for the
    experiment page's warning."""
    table = exp.agreement
    if table is None or not len(table):
        return ()
    rows = table.drop_duplicates(["version", "reference_version", "output"], keep="last")
    rows = rows.sort_values(["version", "reference_version", "output"], key=lambda s: s.astype(str))
    tolerance = effective_tolerance(exp.spec)
    return tuple(r for r in (_agreement_row(row, tolerance) for _, row in rows.iterrows())
                 if r.within_tolerance is False)


def agreement_by_trial(exp: ExperimentResults) -> dict[str, tuple[AgreementRow, ...]]:
    """Each trial's agreement rows (its outputs against its reference version's), judged by the tolerance."""
    table = exp.agreement
    if table is None or not len(table):
        return {}
    tolerance = effective_tolerance(exp.spec)
    found: dict[str, list[AgreementRow]] = {}
    for _, row in table.sort_values(["trial_key", "output"], key=lambda s: s.astype(str)).iterrows():
        found.setdefault(str(row["trial_key"]), []).append(_agreement_row(row, tolerance))
    return {key: tuple(rows) for key, rows in found.items()}


def effective_tolerance(spec: Any) -> Any:
    """The spec's `tolerance:`, or perfsite's default (cosine ≥ DEFAULT_COSINE_MIN on every output) when it sets
    none: a static INT8 model calibrated on random data reached cosine 0.19, and the speed of a broken model is
    not a result, so a comparison never stays silent about outputs that changed that much."""
    from generator.spec.model import Tolerance

    return spec.tolerance if spec.tolerance is not None else Tolerance(cosine_min=DEFAULT_COSINE_MIN)


def _agreement_row(r: pd.Series, tolerance: Any) -> AgreementRow:
    def num(column: str) -> float | None:
        value = clean(r.get(column))
        return None if value is None else float(value)

    return AgreementRow(
        version=str(r["version"]), reference_version=str(r["reference_version"]), output=str(r["output"]),
        max_abs=num("max_abs"), max_rel=num("max_rel"), cosine=num("cosine"), top1_agreement=num("top1_agreement"),
        mean_abs=num("mean_abs"), samples=optional_int(r.get("samples")), trial_key=str(r["trial_key"]),
        within_tolerance=_within(tolerance, num("max_abs"), num("cosine")),
    )


def _within(tolerance: Any, max_abs: float | None, cosine: float | None) -> bool | None:
    """True/False against the spec's tolerance; None without a tolerance or without the figure it needs."""
    if tolerance is None:
        return None
    checks = []
    if tolerance.max_abs is not None:
        checks.append(None if max_abs is None else max_abs <= tolerance.max_abs)
    if tolerance.cosine_min is not None:
        checks.append(None if cosine is None else cosine >= tolerance.cosine_min)
    if any(c is False for c in checks):
        return False
    return None if any(c is None for c in checks) else True
