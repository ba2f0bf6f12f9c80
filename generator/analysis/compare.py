"""Compare two versions of one experiment: DataFrames in (an ExperimentResults), a Comparison record out.

Which B: the named one, or the version other than A with the highest throughput within the latency threshold
(the highest throughput overall when there is no threshold or nothing meets it). Which configuration for the
layer-level sections: the named (partial) one, or A's sweet spot, or, when A's sweet spot was not profiled in
both versions, the profiled configuration where A does best. Ratios come with process-level confidence
intervals (generator.analysis.stats), layers are matched by generator.analysis.layer_match, and advice by
the rules of generator.analysis.advice. Deterministic: same results, same record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analysis import stats
from generator.analysis.advice import AdviceInput, advise
from generator.analysis.layer_match import LayerMatch, group_ratio, kernel_op, match_layers
from generator.analysis.records_compare import (
    AgreementRow,
    Comparison,
    ConfigPoint,
    LayerTypeRow,
    RatioCI,
    SweetSpot,
    VersionTiming,
)
from generator.analysis.summaries import AXIS_COLUMNS, TrialSummary, clean, sweet_spot, trial_summary
from generator.errors import ResultsError
from generator.results.store import ExperimentResults

P99_MIN_SAMPLES = 460  # as generator.runner.measure: below it the trials' headline falls back to p95
QUICK_PROFILE_ITERATIONS = 3  # profiled iterations in quick mode (generator.runner.orchestrate)
PRECISIONS = ("FP32", "FP16", "INT8")


@dataclass(frozen=True)
class _Experiment:
    """What every part of a comparison reads: the latest ok trial per version and configuration."""

    exp: ExperimentResults
    versions: tuple[str, ...]
    trials: dict[str, dict[tuple, TrialSummary]]  # version -> configuration key -> trial
    threshold_ms: float | None
    percentile: str
    model_bytes: dict[str, int | None]


def config_key(t: TrialSummary) -> tuple:
    """Identity of a configuration: every axis, `dims` placeholders included."""
    return (*(getattr(t, axis) for axis in AXIS_COLUMNS), t.dims)


def config_dict(t: TrialSummary) -> dict[str, Any]:
    """A trial's configuration as axis -> value, sweep placeholders (`seq_len`) included."""
    return {**{axis: getattr(t, axis) for axis in AXIS_COLUMNS}, **dict(t.dims)}


def _experiment(exp: ExperimentResults) -> _Experiment:
    spec = exp.spec
    known = list(spec.version_order())
    found = sorted(set(exp.trials["version"].astype(str)) - set(known))
    trials: dict[str, dict[tuple, TrialSummary]] = {}
    model_bytes: dict[str, int | None] = {}
    for _, row in exp.trials.iterrows():  # finished order: a re-measured configuration replaces the older
        t = trial_summary(row)
        if t.ok:
            trials.setdefault(t.version, {})[config_key(t)] = t
            model_bytes[t.version] = _int(row.get("model_bytes"))
    versions = tuple(v for v in known + found if v in trials or v in known)
    return _Experiment(exp, versions, trials, spec.latency_threshold_ms, spec.measure.percentile,
                       {v: model_bytes.get(v) for v in versions})


def _int(value: Any) -> int | None:
    value = clean(value)
    return None if value is None else int(value)


def compare_pairs(exp: ExperimentResults) -> list[Comparison]:
    """One Comparison per `compare:` entry of the experiment's spec, in spec order."""
    return [compare_versions(exp, pair.a, pair.b, dict(pair.config) if pair.config else None)
            for pair in exp.spec.compare]


def compare_versions(exp: ExperimentResults, a: str, b: str | None = None,
                     config: dict[str, Any] | None = None) -> Comparison:
    """Version `b` against version `a` (see the module docstring for the defaults).

    Raises ResultsError when a version has no successful trial, when no other version exists to compare
    with, or when `config` matches no configuration both versions ran (the message lists those that exist).
    """
    ctx = _experiment(exp)
    _check_version(ctx, a, "A")
    b_was_default = b is None
    b, b_reason = _default_b(ctx, a) if b is None else (b, None)
    _check_version(ctx, b, "B")
    if a == b:
        raise ResultsError(f"A and B are both `{a}`: compare a version with another one.")
    spots = tuple(_sweet_spot(ctx, v) for v in ctx.versions)
    chosen, config_reason = _choose_config(ctx, a, b, config)
    ta, tb = (ctx.trials[a][chosen], ctx.trials[b][chosen]) if chosen is not None else (None, None)
    points = _points(ctx, spots, ta, tb)
    timing = _timings(ctx, ta, tb)
    match, layer_notes = _layers(ctx, ta, tb, timing.reference)
    comparison = Comparison(
        a=a, b=b, config_label=ta.config_label if ta else None, config=config_dict(ta) if ta else None,
        a_trial_key=ta.trial_key if ta else None, b_trial_key=tb.trial_key if tb else None,
        b_was_default=b_was_default, points=points, sweet_spots=spots,
        latency_ratio=timing.latency, throughput_ratio=timing.throughput, timings=timing.timings,
        layer_types=_layer_types(match, timing.reference, ctx, ta, tb) if match else (),
        kernels=match.kernels if match else (), overhead=match.overhead if match else None,
        coverage=match.coverage if match else None, pareto=tuple(p for p in points if p.on_pareto),
        model_bytes=dict(ctx.model_bytes), precision_share=_precision_shares(ctx, chosen),
        precision_transitions=_precision_transitions(ctx, chosen), advice=(),
        other_configs=_other_labels(ctx, a, b, chosen), agreement=_agreement(ctx, a, b, ta, tb),
        overall_sweet_spot=_overall_sweet_spot(ctx), threshold_ms=ctx.threshold_ms, percentile=ctx.percentile,
        b_reason=b_reason, config_reason=config_reason, notes=timing.notes + layer_notes,
        versions=ctx.versions, other_config_items=_other_items(ctx, a, b, chosen),
    )
    provider = ta.provider if ta else None
    return _with_advice(comparison, AdviceInput(comparison, match, provider))


def _with_advice(c: Comparison, data: AdviceInput) -> Comparison:
    from dataclasses import replace

    return replace(c, advice=advise(data))


def _check_version(ctx: _Experiment, version: str, side: str) -> None:
    if version not in ctx.trials:
        known = ", ".join(v for v in ctx.versions if v in ctx.trials) or "none"
        raise ResultsError(
            f"Version {side} `{version}` has no successful trial in {ctx.exp.path}; versions with results: "
            f"{known}. Name one of them, or run the experiment so that `{version}` is measured."
        )


def _default_b(ctx: _Experiment, a: str) -> tuple[str, str]:
    others = [t for v in ctx.versions if v != a for t in ctx.trials.get(v, {}).values()]
    if not others:
        raise ResultsError(
            f"Nothing to compare `{a}` with in {ctx.exp.path}: no other version has a successful trial. Add a "
            "version to the spec's `models` and run it, or name B explicitly."
        )
    best = min(others, key=lambda t: (-t.throughput_ips, t.latency_headline_ms, t.trial_key))
    if ctx.threshold_ms is None:
        return best.version, (f"B is {best.version}, the version with the highest throughput ({best.throughput_ips:.1f}"
                              f" items/s at {best.config_label}); the spec sets no latency threshold.")
    spot = sweet_spot(others, ctx.threshold_ms)
    if spot is None:
        return best.version, (f"No configuration of another version has {ctx.percentile} latency within "
                              f"{ctx.threshold_ms:g} ms; B is {best.version}, the highest throughput overall "
                              f"({best.throughput_ips:.1f} items/s at {best.config_label}).")
    return spot.version, (f"B is {spot.version}: the highest throughput within the {ctx.threshold_ms:g} ms "
                          f"{ctx.percentile} latency threshold ({spot.throughput_ips:.1f} items/s at "
                          f"{spot.config_label}).")


def _sweet_spot(ctx: _Experiment, version: str) -> SweetSpot:
    trials = list(ctx.trials.get(version, {}).values())
    spot = sweet_spot(trials, ctx.threshold_ms)
    if spot is not None:
        return SweetSpot(version, spot.trial_key, ctx.threshold_ms, None, spot.config_label,
                         spot.latency_headline_ms, spot.throughput_ips)
    return SweetSpot(version, None, ctx.threshold_ms, _no_spot_reason(ctx, trials))


def _no_spot_reason(ctx: _Experiment, trials: list[TrialSummary]) -> str:
    if ctx.threshold_ms is None:
        return "the spec sets no latency threshold (latency_threshold_ms)"
    if not trials:
        return "no successful trial"
    fastest = min(t.latency_headline_ms for t in trials)
    return (f"no configuration has {ctx.percentile} latency within {ctx.threshold_ms:g} ms "
            f"(the fastest: {fastest:.3g} ms)")


def _overall_sweet_spot(ctx: _Experiment) -> SweetSpot:
    trials = [t for v in ctx.versions for t in ctx.trials.get(v, {}).values()]
    spot = sweet_spot(trials, ctx.threshold_ms)
    if spot is None:
        return SweetSpot(None, None, ctx.threshold_ms, _no_spot_reason(ctx, trials))
    return SweetSpot(spot.version, spot.trial_key, ctx.threshold_ms, None, spot.config_label,
                     spot.latency_headline_ms, spot.throughput_ips)


def _matches(t: TrialSummary, wanted: dict[str, Any]) -> bool:
    # Strict like the spec: true is not 1.
    def same(x: Any, y: Any) -> bool:
        return type(x) is type(y) and x == y if isinstance(x, bool) or isinstance(y, bool) else x == y

    return all(same(t.axis_value(axis), value) for axis, value in wanted.items())


def _profiled_keys(ctx: _Experiment) -> set[str]:
    nodes = ctx.exp.nodes
    return set(nodes["trial_key"].astype(str)) if len(nodes) else set()


def _choose_config(ctx: _Experiment, a: str, b: str, wanted: dict[str, Any] | None) -> tuple[tuple | None, str | None]:
    """The configuration of the layer-level sections, and why it was chosen when that needs saying."""
    ta, tb = ctx.trials[a], ctx.trials[b]
    common = sorted((k for k in ta if k in tb), key=lambda k: (ta[k].sort_key(), ta[k].trial_key))
    profiled_keys = _profiled_keys(ctx)
    profiled = [k for k in common if ta[k].trial_key in profiled_keys and tb[k].trial_key in profiled_keys]
    spot = sweet_spot(list(ta.values()), ctx.threshold_ms)
    spot_key = config_key(spot) if spot else None
    if wanted is not None:
        matches = [k for k in common if _matches(ta[k], wanted)]
        if not matches:
            raise ResultsError(_no_config_message(ctx, a, b, wanted, common))
        return _best_config(ta, matches, profiled, ctx.threshold_ms), None
    if not common:
        return None, f"{a} and {b} have no successful configuration in common: nothing to compare side by side."
    if spot_key in profiled:
        return spot_key, None
    spot_text = f"A's sweet spot ({spot.config_label})" if spot else f"{a} has no sweet spot; its best configuration"
    if profiled:
        chosen = _best_config(ta, profiled, profiled, ctx.threshold_ms)
        return chosen, (f"{spot_text} has no per-node profile in both versions; the comparison uses "
                        f"{ta[chosen].config_label}, the profiled configuration where {a} does best.")
    chosen = spot_key if spot_key in common else _best_config(ta, common, [], ctx.threshold_ms)
    return chosen, (f"No configuration was profiled in both versions: the comparison uses "
                    f"{ta[chosen].config_label} without layer-level sections.")


def _best_config(trials: dict[tuple, TrialSummary], keys: list[tuple], profiled: list[tuple],
                 threshold_ms: float | None) -> tuple:
    """Among `keys`: profiled ones first, then A's sweet spot among them, else A's highest throughput."""
    pool = [k for k in keys if k in profiled] or keys
    spot = sweet_spot([trials[k] for k in pool], threshold_ms)
    best = spot or min((trials[k] for k in pool), key=lambda t: (-t.throughput_ips, t.latency_headline_ms,
                                                                    t.trial_key))
    return config_key(best)


def _no_config_message(ctx: _Experiment, a: str, b: str, wanted: dict[str, Any], common: list[tuple]) -> str:
    shown = ", ".join(f"{k}: {v}" for k, v in wanted.items())
    both = "; ".join(ctx.trials[a][k].config_label for k in common) or "none"
    return (f"The compare configuration {{{shown}}} matches no configuration that both `{a}` and `{b}` ran "
            f"successfully in {ctx.exp.path}. Configurations of both: {both}. Name one of them in the pair's "
            "`config:` (any subset of its axes), or run the experiment with that configuration.")


def _pareto_keys(points: list[TrialSummary]) -> set[str]:
    """Trials no other trial beats on both latency (lower) and throughput (higher)."""
    frontier, best = set(), -math.inf
    for t in sorted(points, key=lambda t: (t.latency_headline_ms, -t.throughput_ips, t.trial_key)):
        if t.throughput_ips > best:
            frontier.add(t.trial_key)
            best = t.throughput_ips
    return frontier


def _points(ctx: _Experiment, spots: tuple[SweetSpot, ...], ta: TrialSummary | None,
            tb: TrialSummary | None) -> tuple[ConfigPoint, ...]:
    every = [t for v in ctx.versions for t in ctx.trials.get(v, {}).values()]
    pareto = _pareto_keys(every)
    spot_keys = {s.trial_key for s in spots if s.trial_key}
    roles = {t.trial_key: role for t, role in ((ta, "a"), (tb, "b")) if t is not None}
    points = []
    for version in ctx.versions:
        line = sorted(ctx.trials.get(version, {}).values(), key=lambda t: (t.sort_key(), t.trial_key))
        points += [ConfigPoint(
            version=version, trial_key=t.trial_key, config_label=t.config_label, config=config_dict(t),
            latency_ms=t.latency_headline_ms, throughput_ips=t.throughput_ips, noisy=t.noisy,
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


def _timings(ctx: _Experiment, ta: TrialSummary | None, tb: TrialSummary | None) -> _Timing:
    if ta is None or tb is None:
        return _Timing()
    exp = ctx.exp
    sa = stats.process_samples(exp.processes, exp.latencies, ta.trial_key)
    sb = stats.process_samples(exp.processes, exp.latencies, tb.trial_key)
    if not sa.processes or not sb.processes:
        note = "No request latencies are stored for these trials: the figures are shown without intervals."
        return _Timing(timings=(_bare_timing(ta, ctx.percentile), _bare_timing(tb, ctx.percentile)), notes=(note,))
    q_name, notes = ctx.percentile, ()
    if q_name == "p99" and min(sum(x.size for x in s.latencies_ms) for s in (sa, sb)) < P99_MIN_SAMPLES:
        q_name, notes = "p95", (f"Fewer than {P99_MIN_SAMPLES} requests: p95 stands in for p99, as in the "
                                "trials table.",)
    lat, boot_a, boot_b = stats.latency_ratio(sa, sb, stats.percentile_of(q_name))
    thr, thr_a, thr_b = stats.throughput_ratio(sa, sb)
    reference = lat if q_name == "p50" else stats.latency_ratio(sa, sb, 0.5)[0]
    timings = (_timing(ta, sa, boot_a, thr_a, q_name), _timing(tb, sb, boot_b, thr_b, q_name))
    return _Timing(lat, thr, timings, reference, notes)


def _timing(t: TrialSummary, samples: stats.ProcessSamples, lat: stats.Bootstrap, thr: stats.Bootstrap | None,
            q_name: str) -> VersionTiming:
    lat_low, lat_high = lat.interval()
    thr_low, thr_high = thr.interval() if thr else (None, None)
    return VersionTiming(
        version=t.version, latency_ms=lat.point, latency_ci_low=lat_low, latency_ci_high=lat_high,
        throughput_ips=thr.point if thr else t.throughput_ips, throughput_ci_low=thr_low,
        throughput_ci_high=thr_high, processes=samples.processes, trial_key=t.trial_key, percentile=q_name,
        note=stats.small_sample_note(samples.processes, samples.processes),
    )


def _bare_timing(t: TrialSummary, percentile: str) -> VersionTiming:
    return VersionTiming(t.version, t.latency_headline_ms, None, None, t.throughput_ips, None, None,
                         t.processes or 0, t.trial_key, percentile, "no stored request latencies")


def _iterations(ctx: _Experiment, t: TrialSummary) -> int:
    wanted = int(ctx.exp.spec.measure.profile_iterations)
    return min(wanted, QUICK_PROFILE_ITERATIONS) if t.quick else wanted


def _layers(ctx: _Experiment, ta: TrialSummary | None, tb: TrialSummary | None,
            reference: RatioCI | None) -> tuple[LayerMatch | None, tuple[str, ...]]:
    if ta is None or tb is None:
        return None, ()
    nodes = ctx.exp.nodes
    na, nb = nodes[nodes["trial_key"] == ta.trial_key], nodes[nodes["trial_key"] == tb.trial_key]
    missing = [t.version for t, n in ((ta, na), (tb, nb)) if n.empty]
    if missing:
        return None, (f"No per-node profile of {' and '.join(missing)} at {ta.config_label}: the layer-level "
                      "sections are empty. Add this configuration to the spec's `profile:` list and run again.",)
    return match_layers(na, nb, reference, _iterations(ctx, ta), _iterations(ctx, tb)), ()


def _layer_types(match: LayerMatch, reference: RatioCI | None, ctx: _Experiment, ta: TrialSummary,
                 tb: TrialSummary) -> tuple[LayerTypeRow, ...]:
    """Time per standard op (`QLinearConv` and `FusedConv` count as Conv) in A and B, largest first."""
    by_op: dict[str, tuple[list, list]] = {}
    for side, executed in ((0, match.executed_a), (1, match.executed_b)):
        for e in executed:
            by_op.setdefault(kernel_op(e.op_type), ([], []))[side].append(e)
    total_a, total_b = match.coverage.total_a_us, match.coverage.total_b_us
    ia, ib = _iterations(ctx, ta), _iterations(ctx, tb)
    rows = []
    for op, (ma, mb) in by_op.items():
        time_a, time_b = sum(e.dur_us for e in ma), sum(e.dur_us for e in mb)
        rows.append(LayerTypeRow(
            op_type=op, time_a_us=time_a, time_b_us=time_b, delta_us=time_b - time_a,
            ratio=group_ratio(ma, mb, reference, ia, ib) if ma and mb else None,
            share_a=time_a / total_a if total_a > 0 else 0.0, share_b=time_b / total_b if total_b > 0 else 0.0,
            precision_counts_a=_counts(ma), precision_counts_b=_counts(mb), nodes_a=len(ma), nodes_b=len(mb),
        ))
    return tuple(sorted(rows, key=lambda r: (-max(r.time_a_us, r.time_b_us), r.op_type)))


def _counts(executed: list) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in executed:
        key = e.precision or "other"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _top_level(ctx: _Experiment, version: str, chosen: tuple | None) -> pd.DataFrame | None:
    t = ctx.trials.get(version, {}).get(chosen) if chosen is not None else None
    if t is None:
        return None
    nodes = ctx.exp.nodes
    rows = nodes[(nodes["trial_key"] == t.trial_key) & nodes["parent"].isna()]
    return rows.sort_values("exec_order") if len(rows) else None


def _precision_shares(ctx: _Experiment, chosen: tuple | None) -> dict[str, dict[str, float]]:
    """Per version profiled at the compared configuration: share of kernel time by runtime precision."""
    shares = {}
    for version in ctx.versions:
        rows = _top_level(ctx, version, chosen)
        if rows is None:
            continue
        time = rows.groupby(rows["runtime_precision"].fillna("other").astype(str))["dur_mean_us"].sum()
        total = float(time.sum())
        shares[version] = {str(p): float(v) / total for p, v in sorted(time.items())} if total > 0 else {}
    return shares


def _precision_transitions(ctx: _Experiment, chosen: tuple | None) -> dict[str, int]:
    """Per version: changes of precision between consecutive FP32/FP16/INT8 kernels in execution order
    (conversions and `other` kernels in between are skipped: they are the transition itself)."""
    out = {}
    for version in ctx.versions:
        rows = _top_level(ctx, version, chosen)
        if rows is None:
            continue
        sequence = [p for p in rows["runtime_precision"] if p in PRECISIONS]
        out[version] = sum(1 for x, y in zip(sequence, sequence[1:], strict=False) if x != y)
    return out


def _common_others(ctx: _Experiment, a: str, b: str, chosen: tuple | None) -> list[TrialSummary]:
    ta, tb = ctx.trials[a], ctx.trials[b]
    return sorted((ta[k] for k in ta if k in tb and k != chosen), key=lambda t: (t.sort_key(), t.trial_key))


def _other_labels(ctx: _Experiment, a: str, b: str, chosen: tuple | None) -> tuple[str, ...]:
    return tuple(t.config_label for t in _common_others(ctx, a, b, chosen))


def _other_items(ctx: _Experiment, a: str, b: str, chosen: tuple | None) -> tuple[dict[str, Any], ...]:
    return tuple(config_dict(t) for t in _common_others(ctx, a, b, chosen))


def _agreement(ctx: _Experiment, a: str, b: str, ta: TrialSummary | None,
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
    tolerance = ctx.exp.spec.tolerance
    return tuple(_agreement_row(r, tolerance) for _, r in rows.iterrows())


def _agreement_row(r: pd.Series, tolerance: Any) -> AgreementRow:
    def num(column: str) -> float | None:
        value = clean(r.get(column))
        return None if value is None else float(value)

    return AgreementRow(
        version=str(r["version"]), reference_version=str(r["reference_version"]), output=str(r["output"]),
        max_abs=num("max_abs"), max_rel=num("max_rel"), cosine=num("cosine"), top1_agreement=num("top1_agreement"),
        mean_abs=num("mean_abs"), samples=_int(r.get("samples")), trial_key=str(r["trial_key"]),
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
