"""Which versions and which configuration a comparison looks at, and the context every part of it reads.

B, when not named: the version other than A with the highest throughput within the latency threshold (the
highest throughput overall when there is no threshold or nothing meets it). The configuration of the
layer-level sections: the named (partial) one, or A's sweet spot, or, when A has none (no threshold, or nothing
within it) or its sweet spot was not profiled in both versions, the profiled configuration where A does best.
Each choice that needs explaining comes with its reason (each case its own), shown on the page.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from generator.analysis.records_compare import SweetSpot
from generator.analysis.summaries import AXIS_COLUMNS, TrialSummary, optional_int, sweet_spot, trial_summary
from generator.errors import ResultsError
from generator.results.headline import percentile_label
from generator.results.store import ExperimentResults


@dataclass(frozen=True)
class CompareContext:
    """What every part of a comparison reads: the latest ok trial per version and configuration."""

    exp: ExperimentResults
    versions: tuple[str, ...]
    trials: dict[str, dict[tuple, TrialSummary]]  # version -> configuration key -> trial
    threshold_ms: float | None
    percentile: str
    model_bytes: dict[str, int | None]
    # Per-trial statistics computed once for every comparison made with this context
    # (generator.analysis.trial_stats).
    cache: dict = field(default_factory=dict, compare=False, repr=False)


def config_key(t: TrialSummary) -> tuple:
    """Identity of a configuration: every axis, `dims` placeholders included."""
    return (*(getattr(t, axis) for axis in AXIS_COLUMNS), t.dims)


def config_dict(t: TrialSummary) -> dict[str, Any]:
    """A trial's configuration as axis -> value, sweep placeholders (`seq_len`) included."""
    return {**{axis: getattr(t, axis) for axis in AXIS_COLUMNS}, **dict(t.dims)}


def compare_context(exp: ExperimentResults) -> CompareContext:
    spec = exp.spec
    known = list(spec.version_order())
    found = sorted(set(exp.trials["version"].astype(str)) - set(known))
    trials: dict[str, dict[tuple, TrialSummary]] = {}
    model_bytes: dict[str, int | None] = {}
    for _, row in exp.trials.iterrows():  # finished order: a re-measured configuration replaces the older
        t = trial_summary(row)
        if t.ok:
            trials.setdefault(t.version, {})[config_key(t)] = t
            model_bytes[t.version] = optional_int(row.get("model_bytes"))
    versions = tuple(v for v in known + found if v in trials or v in known)
    return CompareContext(exp, versions, trials, spec.latency_threshold_ms, spec.measure.percentile,
                       {v: model_bytes.get(v) for v in versions})


def check_version(ctx: CompareContext, version: str, side: str) -> None:
    if version not in ctx.trials:
        known = ", ".join(v for v in ctx.versions if v in ctx.trials) or "none"
        raise ResultsError(
            f"Version {side} `{version}` has no successful trial in {ctx.exp.path}; versions with results: "
            f"{known}. Name one of them, or run the experiment so that `{version}` is measured."
        )


def default_b(ctx: CompareContext, a: str) -> tuple[str, str]:
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
        return best.version, (f"No configuration of another version has {headline_label(ctx, others)} latency within "
                              f"{ctx.threshold_ms:g} ms; B is {best.version}, the highest throughput overall "
                              f"({best.throughput_ips:.1f} items/s at {best.config_label}).")
    return spot.version, (f"B is {spot.version}: the highest throughput within the {ctx.threshold_ms:g} ms "
                          f"{headline_label(ctx, others)} latency threshold ({spot.throughput_ips:.1f} items/s at "
                          f"{spot.config_label}).")


def headline_label(ctx: CompareContext, trials: list[TrialSummary]) -> str:
    """The headline percentile as the trials report it, saying where p95 stands in for p99."""
    return percentile_label(ctx.percentile, [t.headline_percentile or ctx.percentile for t in trials])


def version_sweet_spot(ctx: CompareContext, version: str) -> SweetSpot:
    """One version's sweet spot, or why it has none."""
    return _spot_record(ctx, version, list(ctx.trials.get(version, {}).values()))


def overall_sweet_spot(ctx: CompareContext) -> SweetSpot:
    """The sweet spot over every version's trials, or why there is none."""
    return _spot_record(ctx, None, [t for v in ctx.versions for t in ctx.trials.get(v, {}).values()])


def _spot_record(ctx: CompareContext, version: str | None, trials: list[TrialSummary]) -> SweetSpot:
    spot = sweet_spot(trials, ctx.threshold_ms)
    if spot is None:
        return SweetSpot(version, None, ctx.threshold_ms, _no_spot_reason(ctx, trials))
    return SweetSpot(spot.version, spot.trial_key, ctx.threshold_ms, None, spot.config_label,
                     spot.latency_headline_ms, spot.throughput_ips)


def _no_spot_reason(ctx: CompareContext, trials: list[TrialSummary]) -> str:
    if ctx.threshold_ms is None:
        return "the spec sets no latency threshold (latency_threshold_ms)"
    if not trials:
        return "no successful trial"
    fastest = min(t.latency_headline_ms for t in trials)
    return (f"no configuration has {headline_label(ctx, trials)} latency within {ctx.threshold_ms:g} ms "
            f"(the fastest: {fastest:.3g} ms)")


def _matches(t: TrialSummary, wanted: dict[str, Any]) -> bool:
    # Strict like the spec: true is not 1.
    def same(x: Any, y: Any) -> bool:
        return type(x) is type(y) and x == y if isinstance(x, bool) or isinstance(y, bool) else x == y

    return all(same(t.axis_value(axis), value) for axis, value in wanted.items())


def _profiled_keys(ctx: CompareContext) -> set[str]:
    """The trials with per-node rows, once per context (a thousand-node sweep has hundreds of thousands)."""
    if ("profiled keys",) not in ctx.cache:
        nodes = ctx.exp.nodes
        ctx.cache[("profiled keys",)] = set(map(str, nodes["trial_key"].unique())) if len(nodes) else set()
    return ctx.cache[("profiled keys",)]


# How a message tells the user to name a configuration, by where it came from: a spec's compare pair (its
# `config:` field) or `perfsite compare --config`.
PAIR_CONFIG = "in the pair's `config:`"
OPTION_CONFIG = "with --config KEY=VALUE,..."


def choose_config(ctx: CompareContext, a: str, b: str, wanted: dict[str, Any] | None,
                  where: str = PAIR_CONFIG) -> tuple[tuple | None, str | None]:
    """The configuration of the layer-level sections, and why it was chosen when that needs saying. `where`
    says how the user names a configuration (PAIR_CONFIG, OPTION_CONFIG), for the message when none matches."""
    ta, tb = ctx.trials[a], ctx.trials[b]
    common = sorted((k for k in ta if k in tb), key=lambda k: (ta[k].sort_key(), ta[k].trial_key))
    profiled_keys = _profiled_keys(ctx)
    profiled = [k for k in common if ta[k].trial_key in profiled_keys and tb[k].trial_key in profiled_keys]
    spot = sweet_spot(list(ta.values()), ctx.threshold_ms)
    spot_key = config_key(spot) if spot else None
    if wanted is not None:
        _check_axes(ctx, wanted, list(ta.values()) + list(tb.values()))
        matches = [k for k in common if _matches(ta[k], wanted)]
        if not matches:
            raise ResultsError(_no_config_message(ctx, a, b, wanted, common, where))
        return _best_config(ta, matches, profiled, ctx.threshold_ms), None
    if not common:
        return None, f"{a} and {b} have no successful configuration in common: nothing to compare side by side."
    if spot_key in profiled:
        return spot_key, None
    if profiled:
        chosen = _best_config(ta, profiled, profiled, ctx.threshold_ms)
        # Two different reasons not to use A's sweet spot: it has none (say why), or it was not profiled.
        why = (f"A's sweet spot ({spot.config_label}) has no per-node profile in both versions" if spot
               else f"{a} has no sweet spot: {_no_spot_reason(ctx, list(ta.values()))}")
        return chosen, (f"{why}; the comparison uses {ta[chosen].config_label}, the profiled configuration where "
                        f"{a} does best.")
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


def _check_axes(ctx: CompareContext, wanted: dict[str, Any], trials: list[TrialSummary]) -> None:
    """A configuration naming an axis the trials do not have (`bach=1`) is named as such, not reported as
    matching no configuration."""
    known = dict.fromkeys([*AXIS_COLUMNS, *(name for t in trials for name, _ in t.dims)])
    unknown = [axis for axis in wanted if axis not in known]
    if unknown:
        guess = difflib.get_close_matches(unknown[0], list(known), n=1)
        hint = f" (did you mean `{guess[0]}`?)" if guess else ""
        raise ResultsError(f"The compare configuration names `{unknown[0]}`{hint}, which is not a configuration "
                           f"axis of the trials in {ctx.exp.path}. Allowed: {', '.join(known)}.")


def _no_config_message(ctx: CompareContext, a: str, b: str, wanted: dict[str, Any], common: list[tuple],
                       where: str) -> str:
    shown = ", ".join(f"{k}: {v}" for k, v in wanted.items())
    both = "; ".join(ctx.trials[a][k].config_label for k in common) or "none"
    return (f"The compare configuration {{{shown}}} matches no configuration that both `{a}` and `{b}` ran "
            f"successfully in {ctx.exp.path}. Configurations of both: {both}. Name one of them {where} "
            "(any subset of its axes), or run the experiment with that configuration.")
