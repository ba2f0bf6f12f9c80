"""Baseline against candidate: for every (experiment, version, configuration) in both, the latency and
throughput ratios with 95 % intervals (Student's t over per-process figures, `generator.analysis.stats`), a
verdict, the layers that changed, and whether the two were measured on the same environment.

Verdict of one configuration, with thresholds `latency_ratio` L (1.05) and `throughput_ratio` T (0.95):

- **slower** when the latency ratio's interval lies wholly above 1 and its point estimate is above L, or the
  throughput ratio's interval lies wholly below 1 and its point estimate is below T;
- **faster** (otherwise) when the same holds on the fast side: latency interval below 1 and point below 1/L,
  or throughput interval above 1 and point above 1/T;
- **no significant change** otherwise. An interval that excludes 1 with a point inside the thresholds is a
  real but small change: it is reported, and does not fail a build.

On a shared machine the guards of generator.diff.noise apply: each process is judged by its clean
requests (a side with too few usable processes is *not comparable*); trials of one paired run are compared
round by round, separately measured ones with the between-run drift in their interval; and where the
estimate lies beyond a threshold while the interval still holds 1, the configuration is *not comparable*
(the interval cannot decide). A trial whose measuring ran out of budget still gets a verdict.

A paired run measured on confidence sequences (both trials `ci_sequential`) spends its 5 % in two parts
(generator.results.sequential): stopped before its budget, because the sequence settled the verdict, it is
judged by that sequence at 99.5 % per figure; run to its budget (both trials `budget_exhausted`), by Student's
t at 98 % per figure at that one last look. The verdict then holds at 95 % whichever round measuring stopped
at and whichever figure decides. Older paired results keep their t intervals.

The overall verdict is *not comparable* when a pair was measured on environments with different
fingerprints (unless allowed) or when nothing is in both; else *slower* if any configuration is slower, else
*not comparable* if any configuration is, else *faster* if any is faster, else *no significant change*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from generator.analysis.per_machine import machine_names
from generator.analysis.records_compare import RatioCI
from generator.analysis.stats import ProcessSamples, latency_ratio, percentile_of, throughput_ratio
from generator.analysis.summaries import AXIS_COLUMNS
from generator.cells import clean
from generator.diff.layers import LayerDiff, compare_layers, layer_timings, no_profile, profiled_sum_us
from generator.diff.noise import SideSamples, noise_notes, paired, side_samples, undecided_note
from generator.diff.phases import PhaseDiff, phase_diffs
from generator.diff.words import FAILED, FASTER, NO_CHANGE, NOT_COMPARABLE, SLOWER
from generator.machine.environment import FINGERPRINT_FIELDS
from generator.results.headline import compared_percentile, percentile_label, stored_percentile
from generator.results.intervals import BETWEEN_RUN_SD, run_drift
from generator.results.profiled import spread_count
from generator.results.sequential import FINAL_LEVEL, STOP_LEVEL
from generator.results.store import ExperimentResults
from generator.spec.model import Regression

MACHINE = "_machine"  # the column _with_machines adds to each side's trials



@dataclass(frozen=True)
class Thresholds:
    """When a change counts as a regression: candidate / baseline beyond these ratios."""

    latency_ratio: float
    throughput_ratio: float
    source: str  # "spec", "command line" or "spec and command line"


@dataclass(frozen=True)
class EnvDifference:
    """A field of the environment description that differs between the two sides."""

    field: str
    baseline: str
    candidate: str


@dataclass(frozen=True)
class TrialDiff:
    """One (experiment, version, configuration) present on both sides."""

    experiment: str
    version: str
    config_label: str
    config: dict[str, Any]
    baseline_key: str
    candidate_key: str
    percentile: str
    latency_baseline_ms: float
    latency_candidate_ms: float
    latency_ratio: RatioCI
    throughput_baseline_ips: float | None
    throughput_candidate_ips: float | None
    throughput_ratio: RatioCI | None
    verdict: str
    thresholds: Thresholds
    layers: LayerDiff
    env_differences: tuple[EnvDifference, ...] = ()
    notes: tuple[str, ...] = ()
    model_changed: bool = True  # the model files' sha256 differ
    paired: bool = False  # measured in one paired run, compared round by round
    # That paired run stopped early on its ratio's confidence sequence, which judges it; `at_budget`: it ran to
    # its budget, and its last look's t interval judges it (generator.results.sequential).
    sequential: bool = False
    at_budget: bool = False
    # The very same stored measurement on both sides (one trial key, run and finish time): `--force` measures
    # a trial again under its key, so the key alone does not say it.
    same_measurement: bool = False
    quick: bool = False  # either side measured in quick mode (a preview): rough figures
    # Each side's own 95 % interval (stats.own_interval, as the compare pages'): the changes page draws them.
    latency_baseline_ci: tuple[float, float] | None = None
    latency_candidate_ci: tuple[float, float] | None = None
    throughput_baseline_ci: tuple[float, float] | None = None
    throughput_candidate_ci: tuple[float, float] | None = None

    # The machine both trials ran on (generator.analysis.per_machine.machine_names) when the results hold
    # several: each machine is compared with itself, and named. None: one machine.
    machine: str | None = None
    # A generative configuration: its prefill (TTFT) and decode (TPOT) judged apart (generator.diff.phases).
    phases: tuple[PhaseDiff, ...] = ()

    @property
    def name(self) -> str:
        on = f" · on {self.machine}" if self.machine else ""
        return f"{self.experiment} · {self.version} · {self.config_label}{on}"


@dataclass(frozen=True)
class FailedConfig:
    """A configuration one side measured and the other tried and failed (its latest trial, with the reason)."""

    name: str  # "experiment · version · configuration"
    error: str
    trial_key: str


@dataclass(frozen=True)
class DiffResult:
    """The whole diff; `verdict` is the overall one (see the module docstring)."""

    baseline: str
    candidate: str
    verdict: str
    trials: tuple[TrialDiff, ...]
    only_baseline: tuple[str, ...]  # "experiment · version · configuration" measured on one side only
    only_candidate: tuple[str, ...]
    env_differences: tuple[EnvDifference, ...]
    allow_env_mismatch: bool
    notes: tuple[str, ...] = ()
    # Measured (ok) in the baseline, every trial failed in the candidate: a regression no ratio shows. And the
    # other way round, a configuration the candidate mended.
    failed_in_candidate: tuple[FailedConfig, ...] = ()
    failed_in_baseline: tuple[FailedConfig, ...] = ()

    @property
    def verdict_of_the_compared(self) -> str:
        """The overall verdict of the configurations measured on both sides, failures left out: a `failed`
        diff whose compared configurations are not comparable still exits 3 without --fail-on regression."""
        return overall_verdict(self.trials, bool(self.env_differences) and not self.allow_env_mismatch)

    @property
    def regressions(self) -> tuple[TrialDiff, ...]:
        """Slower configurations, largest latency change first."""
        return tuple(sorted((t for t in self.trials if t.verdict == SLOWER), key=lambda t: -_badness(t)))

    @property
    def improvements(self) -> tuple[TrialDiff, ...]:
        return tuple(sorted((t for t in self.trials if t.verdict == FASTER), key=_badness))


def _badness(t: TrialDiff) -> float:
    """How much slower a configuration got (log latency ratio; throughput when latency did not move)."""
    lat = math.log(t.latency_ratio.point) if t.latency_ratio.point > 0 else 0.0
    thr = -math.log(t.throughput_ratio.point) if t.throughput_ratio and t.throughput_ratio.point > 0 else 0.0
    return lat if abs(lat) >= abs(thr) else thr


def thresholds_for(regression: Regression, latency: float | None, throughput: float | None) -> Thresholds:
    """The candidate spec's `regression` thresholds (the validated record: a stored spec edited to a ratio of
    0 or "x" is refused when read, not divided by), each overridden by its command-line value if given."""
    lat = latency if latency is not None else float(regression.latency_ratio)
    thr = throughput if throughput is not None else float(regression.throughput_ratio)
    given = (latency is not None) + (throughput is not None)
    source = "command line" if given == 2 else ("spec and command line" if given else "spec")
    return Thresholds(lat, thr, source)


def figure_verdicts(lat: RatioCI, thr: RatioCI | None, limits: Thresholds) -> dict[str, str]:
    """The verdict each figure alone gives (rules in the module docstring): latency, throughput."""
    return {"latency": _direction(lat, limits.latency_ratio, higher_is_slower=True),
            "throughput": _direction(thr, limits.throughput_ratio, higher_is_slower=False)}


def _direction(ratio: RatioCI | None, limit: float, higher_is_slower: bool) -> str:
    if ratio is None:
        return NO_CHANGE
    above = ratio.low > 1.0 and ratio.point > max(limit, 1.0 / limit)
    below = ratio.high < 1.0 and ratio.point < min(limit, 1.0 / limit)
    if above or below:
        return SLOWER if above == higher_is_slower else FASTER
    return NO_CHANGE


def trial_verdict(lat: RatioCI, thr: RatioCI | None, limits: Thresholds) -> str:
    """slower / faster / no significant change for one configuration from its two ratios."""
    verdicts = set(figure_verdicts(lat, thr, limits).values())
    return SLOWER if SLOWER in verdicts else FASTER if FASTER in verdicts else NO_CHANGE


def judge(lat: RatioCI, thr: RatioCI | None, limits: Thresholds, sides: tuple[SideSamples, SideSamples],
          q: float, paired: bool = False, final: bool = False) -> tuple[str, tuple[str, ...]]:
    """The configuration's verdict after the noise guards (generator.diff.noise), and why it was withheld
    (`paired`: the two trials come from one paired run, so the advice is not to measure paired; `final`: it
    ran to its budget and was judged at that last look)."""
    base, cand = sides
    if not (base.judgeable and cand.judgeable):
        return NOT_COMPARABLE, ()
    verdict = trial_verdict(lat, thr, limits)
    if verdict != NO_CHANGE:
        return verdict, ()
    undecided = [f for f, r, limit in (("latency", lat, limits.latency_ratio),
                                       ("throughput", thr, limits.throughput_ratio))
                 if r is not None and _beyond(r.point, limit) and r.low <= 1.0 <= r.high]
    if undecided:
        sequential = paired and base.samples.sequential and cand.samples.sequential
        how = "final" if sequential and final else "sequence" if sequential else "t"
        return NOT_COMPARABLE, tuple(undecided_note(f, paired, how) for f in undecided)
    return verdict, ()


def _beyond(point: float, limit: float) -> bool:
    """The estimate alone would be a change beyond the threshold (either direction)."""
    return point > max(limit, 1.0 / limit) or point < min(limit, 1.0 / limit)


def overall_verdict(trials: tuple[TrialDiff, ...], env_blocked: bool, failed: bool = False) -> str:
    """`failed` (a configuration of the baseline failed in the candidate) comes first: a crash is news even
    where the machines differ."""
    if failed:
        return FAILED
    if env_blocked or not trials:
        return NOT_COMPARABLE
    verdicts = {t.verdict for t in trials}
    for verdict in (SLOWER, NOT_COMPARABLE, FASTER):
        if verdict in verdicts:
            return verdict
    return NO_CHANGE


def diff_experiments(
    baseline: list[ExperimentResults],
    candidate: list[ExperimentResults],
    labels: tuple[str, str],
    limits: tuple[float | None, float | None] = (None, None),
    allow_env_mismatch: bool = False,
) -> DiffResult:
    """Compare every (experiment, version, configuration) with an ok trial on both sides.

    Where a side holds several ok trials of one configuration (re-runs on other machines, or before and after
    the model changed), the pair is taken from an environment both sides share when there is one, then the
    most recently finished trial on each side."""
    baseline, candidate = _with_machines(baseline, candidate)
    base = {e.name: e for e in baseline}
    trials: list[TrialDiff] = []
    only_base: list[str] = []
    only_cand: list[str] = []
    failed: tuple[list[FailedConfig], list[FailedConfig]] = ([], [])
    for cand_exp in candidate:
        base_exp = base.get(cand_exp.name)
        cand_rows = _ok_by_config(cand_exp)
        base_rows = _ok_by_config(base_exp) if base_exp is not None else {}
        cand_failed = _failed_by_config(cand_exp, cand_rows)
        base_failed = _failed_by_config(base_exp, base_rows) if base_exp is not None else {}
        failed[0].extend(f for key, f in cand_failed.items() if key in base_rows)
        failed[1].extend(f for key, f in base_failed.items() if key in cand_rows)
        only_cand += [_label(cand_exp.name, rows[0]) for key, rows in cand_rows.items() if key not in base_rows
                      and key not in base_failed]
        only_base += [_label(cand_exp.name, rows[0]) for key, rows in base_rows.items() if key not in cand_rows
                      and key not in cand_failed]
        spec_limits = thresholds_for(cand_exp.spec.regression, *limits)
        for key in sorted(cand_rows.keys() & base_rows.keys(), key=str):
            a, b = _pick_pair(base_rows[key], cand_rows[key])
            found = diff_trial(base_exp, a, cand_exp, b, spec_limits)
            trials.append(replace(found, machine=str(b[MACHINE]) or None))
    only_base += _experiments_only_in(baseline, candidate)
    env, result = _unique_differences(trials), tuple(trials)
    verdict = overall_verdict(result, bool(env) and not allow_env_mismatch, bool(failed[0]))
    return DiffResult(labels[0], labels[1], verdict, result, tuple(sorted(only_base)), tuple(sorted(only_cand)),
                      env, allow_env_mismatch, _side_notes(trials),
                      *(tuple(sorted(f, key=lambda c: c.name)) for f in failed))


def _failed_by_config(exp: ExperimentResults, ok: dict[tuple, list[pd.Series]]) -> dict[tuple, FailedConfig]:
    """Configurations whose latest trial failed (a crash, a timeout, out of memory), by the key `_ok_by_config`
    uses; each is taken out of `ok`, whose older trial of it would otherwise stand for a measurement that now
    fails (a store keeps its earlier runs: a reused paired store, a results folder measured again)."""
    out: dict[tuple, FailedConfig] = {}
    tried = exp.trials[exp.trials["status"] == "failed"]
    for _, row in tried.sort_values(["finished_at", "trial_key"], kind="stable").iterrows():
        key = _config_key(row)
        if key not in ok or str(row["finished_at"]) > str(ok[key][-1]["finished_at"]):
            error = " ".join(str(clean(row.get("error")) or "no reason was recorded").split())
            out[key] = FailedConfig(_label(exp.name, row), error, str(row["trial_key"]))
    for key in out:
        ok.pop(key, None)
    return out


def _spread(row: pd.Series) -> float | None:
    """A trial's process-median spread as stored (None in results that lack it)."""
    value = clean(row.get("process_median_spread"))
    return None if value is None else float(value)


def _experiments_only_in(baseline: list[ExperimentResults], candidate: list[ExperimentResults]) -> list[str]:
    names = {e.name for e in candidate}
    return [_label(e.name, rows[0]) for e in baseline if e.name not in names for rows in _ok_by_config(e).values()]


def diff_trial(base_exp: ExperimentResults, a: pd.Series, cand_exp: ExperimentResults, b: pd.Series,
               limits: Thresholds) -> TrialDiff:
    """Ratios, verdict and layer changes of one configuration: `a` from the baseline, `b` from the candidate."""
    percentile = str(clean(b.get("percentile")) or cand_exp.spec.measure.percentile)
    q_name = _reported_percentile(percentile, a, b)
    side_a, side_b = side_samples(base_exp, a), side_samples(cand_exp, b)
    samples_a, samples_b = side_a.samples, side_b.samples
    q = percentile_of(q_name)
    pair = paired(a, b)
    # A pair that stopped on its ratio's confidence sequence is judged by that sequence (both figures); one
    # that ran to its budget, at that last look (module docstring).
    seq = pair and samples_a.sequential and samples_b.sequential
    final = seq and at_budget(a) and at_budget(b)
    between = 0.0 if pair else (run_drift(BETWEEN_RUN_SD, _spread(a)), run_drift(BETWEEN_RUN_SD, _spread(b)))
    # Each side's figure and own interval (stats.SideFigure), as the compare pages give them.
    lat, lat_a, lat_b = latency_ratio(samples_a, samples_b, q, paired=pair, between_run_sd=between, sequential=seq,
                                      final=final)
    thr, thr_a, thr_b = throughput_ratio(samples_a, samples_b, paired=pair, between_run_sd=between, sequential=seq,
                                         final=final)
    verdict, why = judge(lat, thr, limits, (side_a, side_b), q, pair, final)
    regression = cand_exp.spec.regression
    phases = phase_diffs(base_exp, a, cand_exp, b, {"ttft": regression.ttft_ratio, "tpot": regression.tpot_ratio},
                         pair, between, sequential=seq and not final)
    verdict = _with_phases(verdict, phases)
    config = {axis: clean(b[axis]) for axis in AXIS_COLUMNS} | {"dims": str(b["dims"])}
    return TrialDiff(
        experiment=cand_exp.name, version=str(b["version"]), config_label=str(b["config_label"]), config=config,
        baseline_key=str(a["trial_key"]), candidate_key=str(b["trial_key"]),
        percentile=percentile_label(percentile, (q_name,)),
        latency_baseline_ms=lat_a.point, latency_candidate_ms=lat_b.point, latency_ratio=lat,
        throughput_baseline_ips=thr_a.point if thr_a else None,
        throughput_candidate_ips=thr_b.point if thr_b else None, throughput_ratio=thr,
        verdict=verdict,
        thresholds=limits, layers=_layers((base_exp, a, samples_a), (cand_exp, b, samples_b), lat),
        env_differences=env_differences(base_exp, a, cand_exp, b),
        notes=_trial_notes(a, b) + noise_notes(side_a, side_b) + why + tuple(p.note for p in phases if p.note),
        paired=pair, sequential=seq and not final, at_budget=final,
        same_measurement=all(str(a.get(c)) == str(b.get(c)) for c in ("trial_key", "run_id", "finished_at")),
        quick=bool(clean(a.get("quick"))) or bool(clean(b.get("quick"))),
        model_changed=str(a["model_sha256"]) != str(b["model_sha256"]),
        latency_baseline_ci=lat_a.interval(), latency_candidate_ci=lat_b.interval(),
        throughput_baseline_ci=thr_a.interval() if thr_a else None,
        throughput_candidate_ci=thr_b.interval() if thr_b else None, phases=phases,
    )


def _with_phases(verdict: str, phases: tuple[PhaseDiff, ...]) -> str:
    """A configuration whose prefill or decode got slower beyond its threshold is slower, whatever its
    end-to-end figures say (a slower prefill hides in a long generation's latency); one whose phase cannot be
    decided is not comparable unless something got slower; faster likewise after those."""
    found = {p.verdict for p in phases} | {verdict}
    for word in (SLOWER, NOT_COMPARABLE, FASTER):
        if word in found:
            return word
    return verdict


def at_budget(row: pd.Series) -> bool:
    """The trial's measuring ran to its budget (`budget_exhausted`): a pair's one last look."""
    return bool(clean(row.get("budget_exhausted")))


def _reported_percentile(percentile: str, a: pd.Series, b: pd.Series) -> str:
    """The percentile both sides are compared at (generator.results.headline.compared_percentile)."""
    return compared_percentile(percentile, (stored_percentile(percentile, clean(r.get("latency_p99_ms")))
                                            for r in (a, b)))


Side = tuple[ExperimentResults, pd.Series, ProcessSamples]


def _layers(base: Side, cand: Side, reference: RatioCI) -> LayerDiff:
    timings = [layer_timings(exp.nodes, row["trial_key"], _profile_iterations(row),
                             _calibration(exp, row, samples)) for exp, row, samples in (base, cand)]
    if pd.notna(cand[1].get("new_tokens")) and pd.notna(base[1].get("new_tokens")):
        return no_profile(0.0, 0.0, "Generative trials are not profiled per layer yet: their prefill and decode are "
                                    "compared above, not their layers.")
    if not timings[0] or not timings[1]:
        side = "baseline" if not timings[0] else "candidate"
        return no_profile(0.0, 0.0, f"The {side} has no profiled pass at this configuration: no layer comparison.")
    return compare_layers(timings[0], timings[1], reference)


def _calibration(exp: ExperimentResults, row: pd.Series, samples: ProcessSamples) -> float:
    """Timed median request latency / sum of profiled node medians (see generator.diff.layers)."""
    profiled_us = profiled_sum_us(exp.nodes, row["trial_key"])
    requests = [lat for lat in samples.latencies_ms if len(lat)]
    if profiled_us <= 0 or not requests:
        return 1.0
    return float(np.median(np.concatenate(requests))) * 1000.0 / profiled_us


def _profile_iterations(row: pd.Series) -> int:
    """What a trial's node spreads are over (generator.results.profiled.spread_count)."""
    return spread_count(row.get("profile_processes"), row.get("profile_iterations"))


def _with_machines(*sides: list[ExperimentResults]) -> list[list[ExperimentResults]]:
    """Each experiment with its trials' machines in a MACHINE column (a configuration is one per machine), blank
    where both sides hold one machine only: the labels then name none."""
    named = [[(e, machine_names(e.trials, e.environments)) for e in side] for side in sides]
    several = len({m for side in named for _, names in side for m in names}) > 1
    return [[replace(e, trials=e.trials.assign(**{MACHINE: names if several else ""})) for e, names in side]
            for side in named]


def _config_key(row: pd.Series) -> tuple:
    return (str(row[MACHINE]), str(row["version"]), *(str(clean(row[a])) for a in AXIS_COLUMNS), str(row["dims"]))


def _ok_by_config(exp: ExperimentResults) -> dict[tuple, list[pd.Series]]:
    """Ok trials with a latency, grouped by (version, configuration), oldest first. A trial that lacks its
    latencies or processes file (a partial commit or copy; the build and run name it), or whose latencies file
    holds no request, has no requests to compare: it is left out, as an unfinished trial would be."""
    out: dict[tuple, list[pd.Series]] = {}
    lacking = {key for key, missing in exp.incomplete.items()
               if any(m.startswith(("latencies/", "processes/")) for m in missing)}
    ok = exp.trials[(exp.trials["status"] == "ok") & exp.trials["latency_headline_ms"].notna()
                    & ~exp.trials["trial_key"].isin(lacking)
                    & exp.trials["trial_key"].isin(set(exp.latencies["trial_key"]))]
    for _, row in ok.sort_values(["finished_at", "trial_key"], kind="stable").iterrows():
        out.setdefault(_config_key(row), []).append(row)
    return out


def _pick_pair(base_rows: list[pd.Series], cand_rows: list[pd.Series]) -> tuple[pd.Series, pd.Series]:
    """The candidate's newest trial, and the baseline's newest of the same environment where it has one (like
    with like), else its newest. The candidate's newest, not one of an environment both sides share: a store
    in git keeps the old environment's trials beside the new one's, and preferring the shared one compared an
    old trial with itself and hid what the new software measured."""
    cand = cand_rows[-1]
    same_env = [r for r in base_rows if r["env_id"] == cand["env_id"]]
    return (same_env or base_rows)[-1], cand


def _label(experiment: str, row: pd.Series) -> str:
    on = f" · on {row[MACHINE]}" if row.get(MACHINE) else ""
    return f"{experiment} · {row['version']} · {row['config_label']}{on}"


def env_differences(base_exp: ExperimentResults, a: pd.Series, cand_exp: ExperimentResults,
                    b: pd.Series) -> tuple[EnvDifference, ...]:
    """The fingerprinted fields that differ between the environments of two trials (empty: same machine)."""
    env_a, env_b = _env_row(base_exp, a["env_id"]), _env_row(cand_exp, b["env_id"])
    if env_a.get("fingerprint") == env_b.get("fingerprint") and env_a.get("fingerprint"):
        return ()
    out = [EnvDifference(f, _text(env_a.get(f)), _text(env_b.get(f))) for f in FINGERPRINT_FIELDS
           if _text(env_a.get(f)) != _text(env_b.get(f))]
    return tuple(out) or (EnvDifference("fingerprint", str(a["env_id"]), str(b["env_id"])),)


def _env_row(exp: ExperimentResults, env_id: str) -> dict[str, Any]:
    rows = exp.environments[exp.environments["env_id"] == env_id]
    return {} if rows.empty else dict(rows.iloc[0].items())


def _text(value: Any) -> str:
    """A cell as text; list cells (isa, providers) joined."""
    if isinstance(value, str):
        return value
    if hasattr(value, "__iter__"):
        return ", ".join(str(v) for v in value)
    value = clean(value)
    return "unknown" if value is None else str(value)


def _unique_differences(trials: list[TrialDiff]) -> tuple[EnvDifference, ...]:
    seen: dict[tuple[str, str, str], EnvDifference] = {}
    for t in trials:
        for d in t.env_differences:
            seen.setdefault((d.field, d.baseline, d.candidate), d)
    return tuple(seen.values())


def _trial_notes(a: pd.Series, b: pd.Series) -> tuple[str, ...]:
    notes = []
    if bool(clean(a.get("quick"))) != bool(clean(b.get("quick"))):
        notes.append("one side was measured in quick mode, the other not")
    for side, row in (("baseline", a), ("candidate", b)):
        if bool(clean(row.get("noisy"))):
            notes.append(f"{side} trial is noisy ({clean(row.get('noise_reasons')) or 'a noise rule fired'})")
        if bool(clean(row.get("budget_exhausted"))):
            width = clean(row.get("ci_halfwidth"))
            reached = f"± {width:.1%}" if width is not None else "no interval"
            notes.append(f"{side} trial ran out of its measuring budget ({reached}, target ± "
                         f"{clean(row.get('target')) or 0:.1%})")
    return tuple(notes)


def _side_notes(trials: list[TrialDiff]) -> tuple[str, ...]:
    flagged = sorted({t.latency_ratio.note for t in trials if t.latency_ratio.note})
    return (_same_trial_note(trials) + _quick_note(trials) + _sequential_note(trials)
            + tuple(f"Some intervals deserve less trust: {note}." for note in flagged))


def _sequential_note(trials: list[TrialDiff]) -> tuple[str, ...]:
    """How a paired run that stopped as soon as its interval settled the verdict is judged: looking after every
    round would make a 95 % interval call identical models slower or faster far more often than 5 %."""
    early, last = sum(t.sequential for t in trials), sum(t.at_budget for t in trials)
    out = []
    if early:
        out.append(f"For {_how_many(early, len(trials))}, the paired run looked at its interval after every round "
                   f"and stopped as soon as it settled the verdict: each figure's interval is a {STOP_LEVEL:.1%} "
                   "confidence sequence, valid at whichever round measuring stopped (docs/methodology.md, Looking "
                   "after every round).")
    if last:
        out.append(f"For {_how_many(last, len(trials))}, the paired run looked after every round without "
                   f"settling the verdict and ran to its budget: it is judged at that last look, each figure by "
                   f"a {FINAL_LEVEL:.0%} Student's t interval. A verdict from the early looks or this last one is "
                   "wrong in at most 1 % + 4 % of such runs.")
    return tuple(out)


def _quick_note(trials: list[TrialDiff]) -> tuple[str, ...]:
    quick = sum(t.quick for t in trials)
    if not quick:
        return ()
    return (f"For {_how_many(quick, len(trials))}, a side was measured in quick mode (`--quick` or PERFSITE_QUICK, "
            "a preview): warm-up and measurement were shrunk, so the figures are rough; measure without it before "
            "drawing conclusions.",)


def _same_trial_note(trials: list[TrialDiff]) -> tuple[str, ...]:
    """Both sides hold the very same stored measurement: nothing was measured for the candidate, as
    when `perfsite diff git:main results` runs without a `perfsite run` before it. "No change" would be true of
    the numbers and say nothing about the candidate."""
    same = sum(t.same_measurement for t in trials)
    if not same:
        return ()
    return (f"For {_how_many(same, len(trials))}, the baseline and the candidate are the same stored measurement "
            "(one trial, run and finish time): nothing was measured again for the candidate, so these show no "
            "change by construction. Measure the candidate first (`perfsite run`), or compare with `perfsite diff "
            "--measure`.",)


def _how_many(count: int, total: int) -> str:
    return "every configuration" if count == total else f"{count} of {total} configurations"
