"""The experiment page's findings: each version's best throughput, best latency and sweet spot, and the
fastest version at each configuration.

A "best" configuration is settled when it is ahead of every other configuration of the version (each
comparison unpaired, with the drift between time windows: generator.analysis.findings.figures); the sweet spot
when, besides, its latency's interval is under the threshold, and every rival is either ahead of it by less
than its interval allows or clearly over the threshold. The fastest version at a configuration is judged by
the diff's rule: its latency ratio to the runner-up excludes 1, with the estimate beyond the spec's
`regression.latency_ratio`.
"""

from __future__ import annotations

import math

from generator.analysis.compare_choice import CompareContext, config_key
from generator.analysis.findings.figures import LATENCY, THROUGHPUT, TrialFigures, trial_figures, versus
from generator.analysis.findings.record import Finding, worst
from generator.analysis.summaries import TrialSummary, sweet_spot
from generator.numbers import num

OVERVIEW = "overview"


def experiment_findings(ctx: CompareContext, trials: list[TrialSummary]) -> list[Finding]:
    """Every finding of the experiment page, in page order, over the ok `trials` it shows."""
    out: list[Finding] = []
    ok = [t for t in trials if t.ok]
    for version in dict.fromkeys(t.version for t in ok):
        mine = sorted((t for t in ok if t.version == version), key=lambda t: (t.sort_key(), t.trial_key))
        if len({config_key(t) for t in mine}) >= 2:  # one configuration is its own best: no claim to repeat
            out.append(_best(ctx, version, mine, THROUGHPUT))
            out.append(_best(ctx, version, mine, LATENCY))
        if ctx.threshold_ms is not None:
            out.append(sweet_spot_finding(ctx, version, mine))
    return out + fastest_versions(ctx)


def _best(ctx: CompareContext, version: str, trials: list[TrialSummary], metric: str) -> Finding:
    if metric == THROUGHPUT:
        best = min(trials, key=lambda t: (-t.throughput_ips, t.latency_headline_ms, t.trial_key))
        what, kind = "highest throughput", "best_throughput"
    else:
        best = min(trials, key=lambda t: (t.latency_headline_ms, -t.throughput_ips, t.trial_key))
        what, kind = "lowest latency", "best_latency"
    w = trial_figures(ctx, best)
    rivals = [trial_figures(ctx, t) for t in trials if t.trial_key != best.trial_key]
    parts = [_ahead(w, x, metric) for x in rivals]
    p, weakest = worst(parts)
    return Finding(
        id=f"{OVERVIEW}/{kind.replace('_', '-')}/{version}", kind=kind, page=OVERVIEW,
        statement=f"{version} reaches its {what} at {best.config_label} ({_figure_text(w, metric)})",
        answer=best.config_label, p_value=p, weakest=weakest, blocked=_unjudged(w),
        figures=(w.figure(metric), *(x.figure(metric) for x in _closest(w, rivals, metric))),
        trials=(best.trial_key, *(x.trial.trial_key for x in rivals)),
    )


def sweet_spot_finding(ctx: CompareContext, version: str, trials: list[TrialSummary]) -> Finding:
    """The version's highest throughput with its headline latency at or under the threshold."""
    limit = float(ctx.threshold_ms)
    fid = f"{OVERVIEW}/sweet-spot/{version}/{limit:g}ms"
    spot = sweet_spot(trials, limit)
    figures = {t.trial_key: trial_figures(ctx, t) for t in trials}
    if spot is None:
        parts = [_over(f, limit) for f in figures.values()]
        p, weakest = worst(parts)
        return Finding(fid, "sweet_spot", OVERVIEW, f"no configuration of {version} is within {limit:g} ms",
                       "none", p_value=p, weakest=weakest, trials=tuple(figures))
    w = figures[spot.trial_key]
    parts = [_under(w, limit)]
    rivals = [f for k, f in figures.items() if k != spot.trial_key]
    parts += [_either(_ahead(w, x, THROUGHPUT), _over(x, limit)) for x in rivals]
    p, weakest = worst(parts)
    return Finding(
        fid, "sweet_spot", OVERVIEW,
        f"{version}'s sweet spot within {limit:g} ms is {spot.config_label} ({_figure_text(w, THROUGHPUT)} at "
        f"{num(spot.latency_headline_ms)} ms {w.q_name})",
        spot.config_label, p_value=p, weakest=weakest, blocked=_unjudged(w),
        figures=(w.figure(LATENCY), w.figure(THROUGHPUT),
                 *(x.figure(THROUGHPUT) for x in _closest(w, rivals, THROUGHPUT))),
        trials=(spot.trial_key, *(x.trial.trial_key for x in rivals)),
    )


def fastest_versions(ctx: CompareContext) -> list[Finding]:
    """Per configuration two versions or more ran: the version with the lowest headline latency, among each
    version's newest ok trial there (the context's, as every comparison takes them)."""
    by_config: dict[tuple, list[TrialSummary]] = {}
    for version in ctx.versions:
        for key, t in ctx.trials.get(version, {}).items():
            by_config.setdefault(key, []).append(t)
    groups = sorted((g for g in by_config.values() if len(g) >= 2), key=lambda g: (g[0].sort_key(), g[0].trial_key))
    return [_fastest(ctx, group) for group in groups]


def _fastest(ctx: CompareContext, trials: list[TrialSummary]) -> Finding:
    ranked = sorted(trials, key=lambda t: (t.latency_headline_ms, -t.throughput_ips, t.trial_key))
    best, label = ranked[0], ranked[0].config_label
    w = trial_figures(ctx, best)
    rivals = [trial_figures(ctx, t) for t in ranked[1:]]
    margin = math.log(ctx.exp.spec.regression.latency_ratio)
    parts, blocked = [], _unjudged(w)
    for x in rivals:
        test = versus(w, x, LATENCY)  # log(x / w): above 0 when the winner is faster
        parts.append((test.p_above(0.0) if test else None,
                      f"{x.trial.version}'s latency is within {best.version}'s interval" if test else
                      f"{x.trial.version} has too few processes to compare"))
        if test and test.estimate < margin and blocked is None:
            blocked = (f"{best.version} is ahead of {x.trial.version} by {math.expm1(test.estimate):.1%}, under the "
                       f"{math.expm1(margin):.0%} the spec counts as a difference (regression.latency_ratio)")
    p, weakest = worst(parts)
    return Finding(
        f"{OVERVIEW}/fastest/{label}", "fastest_version", OVERVIEW,
        f"at {label}, {best.version} has the lowest {w.q_name} latency ({num(best.latency_headline_ms)} ms)",
        best.version, p_value=p, weakest=weakest, blocked=blocked,
        figures=(w.figure(LATENCY), *(x.figure(LATENCY) for x in rivals)),
        trials=(best.trial_key, *(x.trial.trial_key for x in rivals)),
    )


def _ahead(w: TrialFigures, x: TrialFigures, metric: str) -> tuple[float | None, str]:
    """W is better than X on `metric` (higher throughput, lower latency)."""
    test = versus(x, w, metric)  # log(w / x)
    words = f"{x.trial.config_label}'s {_name(metric)} is within {w.trial.config_label}'s interval"
    if test is None:
        return None, f"{x.trial.config_label} has too few processes to compare"
    return (test.p_above(0.0) if metric == THROUGHPUT else test.p_below(0.0)), words


def _under(w: TrialFigures, limit: float) -> tuple[float | None, str]:
    test = w.test()
    words = f"{w.trial.config_label}'s {w.q_name} interval reaches above {limit:g} ms"
    return (test.p_below(math.log(limit)) if test else None), words


def _over(x: TrialFigures, limit: float) -> tuple[float | None, str]:
    test = x.test()
    words = f"{x.trial.config_label}'s {x.q_name} interval reaches down to {limit:g} ms"
    return (test.p_above(math.log(limit)) if test else None), words


def _either(a: tuple[float | None, str], b: tuple[float | None, str]) -> tuple[float | None, str]:
    """Either claim suffices (a rival is behind, or over the threshold): Bonferroni over the two."""
    known = [p for p, _ in (a, b) if p is not None]
    if not known:
        return None, a[1]
    p = min(1.0, 2 * min(known))
    return p, (a if a[0] is not None and (b[0] is None or a[0] <= b[0]) else b)[1]


def _closest(w: TrialFigures, rivals: list[TrialFigures], metric: str, count: int = 2) -> list[TrialFigures]:
    """The rivals nearest the winner's figure: the ones a page names as evidence."""
    point = w.shown(metric) or 0.0
    return sorted(rivals, key=lambda x: (abs(math.log(max(x.shown(metric) or 1e-12, 1e-12) / max(point, 1e-12))),
                                         x.trial.trial_key))[:count]


def _unjudged(w: TrialFigures) -> str | None:
    if w.judgeable:
        return None
    return (f"{w.trial.version} at {w.trial.config_label} has too few processes with clean requests to be judged "
            "(generator.analysis.sides)")


def _figure_text(w: TrialFigures, metric: str) -> str:
    return f"{num(w.shown(metric))} {'items/s' if metric == THROUGHPUT else 'ms ' + w.q_name}"


def _name(metric: str) -> str:
    return "throughput" if metric == THROUGHPUT else "latency"

