"""Every conclusion an experiment's pages state, as one list of findings settled by one rule.

The pages render from it (each claim marked settled or not, with the reason) and the build writes it beside
them as findings.json (docs/findings.md). Builders per page: experiment (best results, sweet spots, the
fastest version per configuration), compare (verdicts, advice), profile (top op types and layers, speed-ups,
roofline positions), and choose (the chooser's verdicts and advice at every configuration). The profiles and
comparisons are computed here once, in the experiment's CompareContext, and the pages take them from there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generator.analysis import summaries as S
from generator.analysis.compare import compare_versions
from generator.analysis.compare_choice import CompareContext
from generator.analysis.findings import compare as compare_findings_module
from generator.analysis.findings.choose import chooser_findings
from generator.analysis.findings.experiment import OVERVIEW, experiment_findings
from generator.analysis.findings.profile import page_key as profile_page
from generator.analysis.findings.profile import profile_findings
from generator.analysis.findings.record import Figure, Finding, FindingSet, settle
from generator.analysis.profile import TrialProfile, op_type_process_times, trial_profile
from generator.analysis.profile_times import ProcessTimes
from generator.analysis.trial_stats import trial_stats, unjudged_side
from generator.errors import ResultsError

__all__ = ["OVERVIEW", "Figure", "Finding", "FindingSet", "ProfileSection", "cached_profile", "compare_prefix",
           "profile_page", "profile_sections", "report_findings", "settle", "uncertain_trials"]


@dataclass(frozen=True)
class ProfileSection:
    """One configuration a version's profile page shows (S.profile_targets, and the sweet spot)."""

    target: S.ProfileTarget
    sweet_spot: bool


def profile_sections(trials: Sequence[S.TrialSummary], version: str, entries: Sequence[Mapping[str, Any]],
                     first_values: Mapping[str, Any], sweet: S.TrialSummary | None) -> list[ProfileSection]:
    """The configurations of `version`'s profile page: its `profile:` entries' trials (by default the one of
    summaries.default_profile_entry), then its sweet spot when not among them."""
    mine = [t for t in trials if t.version == version]
    targets = S.profile_targets(mine, list(entries), dict(first_values))
    if sweet is not None and all(t.trial is None or t.trial.trial_key != sweet.trial_key for t in targets):
        targets.append(S.ProfileTarget((), sweet))
    return [ProfileSection(t, t.trial is not None and sweet is not None and t.trial.trial_key == sweet.trial_key)
            for t in targets]


def cached_profile(ctx: CompareContext, trial: S.TrialSummary) -> TrialProfile:
    """The trial's profile (analysis.profile.trial_profile with the spec's what-ifs and the compared versions'
    op speeds), computed once per context."""
    key = ("trial profile", trial.trial_key)
    if key not in ctx.cache:
        whatif = dict(ctx.exp.spec.whatif)
        ctx.cache[key] = trial_profile(ctx.exp, trial, whatif, _compared_times(ctx, trial))
    return ctx.cache[key]


def _compared_times(ctx: CompareContext, trial: S.TrialSummary) -> dict[str, dict[str, ProcessTimes]]:
    """Time per op type (µs per inference) of each version the spec's `compare` pairs this one with, at the
    same configuration, when that version has a profiled ok trial there (a pair's `config` restricts the
    comparison page, not this estimate)."""
    others: list[str] = []
    for pair in ctx.exp.spec.compare:
        other = pair.b if pair.a == trial.version else pair.a if pair.b == trial.version else None
        if other and other not in others:
            others.append(other)
    out = {}
    for other in others:
        match = next((t for t in ctx.trials.get(other, {}).values() if t.profiled and t.sort_key() == trial.sort_key()),
                     None)
        if match is not None:
            times = op_type_process_times(ctx.exp.nodes, match.trial_key)
            # Process i of one version and process i of the other are a pair only when they ran in the same
            # round; otherwise the factors are the figures' alone (the estimate says it has no interval).
            out[other] = times if profiles_paired(trial, match) else {op: t.point() for op, t in times.items()}
    return out


def profiles_paired(a: S.TrialSummary, b: S.TrialSummary) -> bool:
    """Whether two trials' profiling processes pair up in order: the same run, and the same rounds (where the
    rounds were not recorded, the same number of processes)."""
    if a.run_id is None or a.run_id != b.run_id or (a.profile_processes or 0) < 2:
        return False
    if a.profile_rounds is not None and b.profile_rounds is not None:
        return a.profile_rounds == b.profile_rounds and min(a.profile_rounds) >= 0
    return a.profile_processes == b.profile_processes


def _timed_blocked(ctx: CompareContext, t: S.TrialSummary) -> str | None:
    """Why the trial's timed figures cannot carry an estimate (the diff's rule on its processes), or None."""
    if unjudged_side(trial_stats(ctx.cache, ctx.exp, t)):
        return (f"{t.version} at {t.config_label} has too few processes with clean requests for its measured "
                "latency to be judged (generator.analysis.sides)")
    return None


def compare_prefix(pair: Any) -> str:
    """The ids' stem of a spec `compare:` pair's findings (its configuration too, when it names one)."""
    config = "/" + ",".join(f"{k}={v}" for k, v in sorted(dict(pair.config).items())) if pair.config else ""
    return f"compare/{pair.a}/{pair.b}{config}"


def report_findings(ctx: CompareContext, trials: Sequence[S.TrialSummary], versions: Sequence[str],
                    entries: Sequence[Mapping[str, Any]], first_values: Mapping[str, Any],
                    sweet_spots: Mapping[str, S.TrialSummary | None], chooser: bool = True) -> FindingSet:
    """Every finding of the experiment's pages (overview, compare pages, profile pages, the chooser when the
    site has one), settled together."""
    items: list[Finding] = experiment_findings(ctx, list(trials))
    for i, pair in enumerate(ctx.exp.spec.compare):
        try:
            c = compare_versions(ctx.exp, pair.a, pair.b, dict(pair.config) if pair.config else None, ctx=ctx)
        except ResultsError:
            continue  # its page says why it cannot be compared: it states no finding
        items += compare_findings_module.compare_findings(ctx, c, page=f"compare:{i}", prefix=compare_prefix(pair))
    for version in versions:
        for section in profile_sections(trials, version, entries, first_values, sweet_spots.get(version)):
            t = section.target.trial
            if t is not None and t.ok and t.profiled:
                items += profile_findings(t, cached_profile(ctx, t), _timed_blocked(ctx, t))
    return settle(_unique(items + (chooser_findings(ctx) if chooser else [])))


def _unique(items: list[Finding]) -> list[Finding]:
    """One finding per id: two compare pairs of one spec may state the same claim (a pair listed twice)."""
    seen: dict[str, Finding] = {}
    for f in items:
        seen.setdefault(f.id, f)
    return list(seen.values())


def _halfwidth(halfwidths: Mapping[str, float | None], key: str) -> float | None:
    h = halfwidths.get(key)
    return None if h is None or math.isnan(h) else h


def _unknown_wide(h: float | None) -> float:
    return math.inf if h is None else h


def uncertain_trials(findings: FindingSet, halfwidths: Mapping[str, float | None]) -> dict[str, str]:
    """Trials too uncertain to settle anything, with why: every finding that compares one is unsettled, and in
    each of them its interval is the widest of the trials compared (`halfwidths`: relative half-width of each
    one's headline interval; infinite: a confidence sequence not yet bounded; None: none recorded, never
    flagged). The one flag a trial gets: it replaced the noise rules' flag, which fired on most trials of a
    shared machine and told none apart."""
    involved: dict[str, list[Finding]] = {}
    for f in findings.findings:
        for key in f.trials:
            involved.setdefault(key, []).append(f)
    out = {}
    for key, items in involved.items():
        mine = _halfwidth(halfwidths, key)
        if mine is None or any(f.settled for f in items):  # no interval recorded (older results): no flag
            continue
        # Another trial without a recorded interval may be wider: then this one is not known to be the widest.
        widest = all(mine >= max(_unknown_wide(_halfwidth(halfwidths, k)) for k in f.trials) for f in items)
        if widest:
            width = f"± {mine:.0%}" if math.isfinite(mine) else "unbounded"
            out[key] = (f"its interval ({width}) is the widest of every comparison it takes part in, and none of "
                        f"those {len(items)} finding{'s' if len(items) != 1 else ''} is settled")
    return out
