"""The sweep: which trials to measure, in which order, each in child processes, written as they finish.

Order: configurations outermost; within a configuration, rounds in which every version runs one measurement
process (A B A B ...), so that drift of a shared machine spreads evenly over the versions instead of favouring
whichever ran first. Rounds are adaptive: at least `measure.repeats`, then more while a trial's headline 95 %
interval is wider than `measure.target` (generator.results.intervals), until each trial has spent
`measure.budget_s` of measuring; a trial stopped by its budget is stored as such. A *paired* run
(``run_paired``) measures the trials of two specs (baseline and candidate) in the same rounds, the two members
of each pair side by side, into two results folders, and keeps going until the *paired* ratio's interval
meets the target. Then one profiled process per trial; those of the trials that have a
reference version in their group (or are one) also record the outputs for the output agreement check. A trial is written
(atomically) as soon as its configuration group is done, so an interrupted sweep keeps every finished trial and
a second run measures only what is missing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shlex
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import generator
from generator.errors import RunError
from generator.machine.environment import Environment, capture_environment
from generator.machine.host_noise import HostNoise, measure_host_noise
from generator.machine.probe import ensure_limits
from generator.machine.session import check_providers
from generator.paths import cache_problem, cache_warning, models_cache_dir
from generator.plan import (
    Configuration,
    filter_trials,
    no_trial_message,
    plan_trials,
    spec_axes,
    trial_key,
    unmatched_values,
    values_to_choose,
)
from generator.processes import process_tempdir
from generator.results.store import ResultsDir, shown_spec_sha256
from generator.runner.generative import version_engines
from generator.runner.limits_check import recheck_limits
from generator.runner.sides import (  # noqa: F401  (RunSummary, Progress, SilentProgress: the runner's API)
    PlannedTrial,
    Progress,
    RunOptions,
    RunSummary,
    Side,
    SilentProgress,
    now,
)
from generator.runner.sweep import SweepContext, check_feeds
from generator.runner.whatif_check import whatif_warnings
from generator.spec import LoadedSpec, spec_to_json
from generator.versions import ModelVersion, prepare_versions
from generator.versions.cache import file_sha256

QUICK_ENV = "PERFSITE_QUICK"
QUICK_BUDGET_S = 1.0
# Settings that do not change what one measurement process measures: not part of the trial key, so that
# changing the target or the budget keeps the stored trials.
UNKEYED_SETTINGS = ("timeout_s", "target", "budget_s")


# PERFSITE_QUICK's words, compared case-insensitively: `False` (Python's str of a bool) and `off` once meant
# *quick*, since anything but "", 0, false and no did, and a CI job that turned quick mode off measured in it.
QUICK_OFF = ("", "0", "false", "no", "off")
QUICK_ON = ("1", "true", "yes", "on")


def is_quick(flag: bool) -> bool:
    if flag:
        return True
    value = os.environ.get(QUICK_ENV, "")
    if value.strip().lower() in QUICK_OFF + QUICK_ON:
        return value.strip().lower() in QUICK_ON
    raise RunError(f"{QUICK_ENV}={value!r} says neither on nor off. Allowed: {', '.join(QUICK_ON)} (quick mode, as "
                   f"--quick) or {', '.join(repr(v) for v in QUICK_OFF)} (a full measurement), in any case.")


def planned_versions(loaded: LoadedSpec, options: RunOptions, progress: Progress) -> dict[str, ModelVersion]:
    """The spec's model versions, built (or taken from the cache), with a warning for each `whatif` key that
    names nothing in them: what a local run and a Ray run plan alike."""
    versions = prepare_versions(loaded, models_cache(loaded, options, progress), progress=progress.message)
    models = {name: v.path for name, v in versions.items()}
    for warning in whatif_warnings(loaded.path, loaded.spec.whatif, models):
        progress.message(warning)
    return versions


def measure_settings(loaded: LoadedSpec, quick: bool) -> dict:
    """The spec's measurement settings, shrunk in quick mode (tests, previews; pages mark such results)."""
    m = loaded.spec.measure
    s = {
        "warmup": m.warmup,
        "min_iterations": m.min_iterations,
        "min_seconds": m.min_seconds,
        "max_seconds": m.max_seconds,
        "repeats": m.repeats,
        "profile_iterations": m.profile_iterations,
        "timeout_s": m.timeout_s,
        "target": m.target,
        "budget_s": m.budget_s,
    }
    if quick:
        s.update(
            warmup=min(m.warmup, 3),
            min_iterations=min(m.min_iterations, 10),
            min_seconds=min(m.min_seconds, 0.05),
            max_seconds=min(m.max_seconds, 2.0),
            repeats=min(m.repeats, 2),
            profile_iterations=min(m.profile_iterations, 3),
            # Adaptive measurement stays bounded in quick mode (tests, previews): a few processes at most.
            budget_s=min(m.budget_s, QUICK_BUDGET_S),
        )
    return s


def estimate_trial_s(settings: dict, startup_s: float = 0.7) -> float:
    """Rough duration of one trial: its processes' start-up and timed phases, and the profiling of the first
    rounds' processes (their profiled inferences and profiler calibration: about one more process start)."""
    timed = settings["min_seconds"] + 0.1
    return settings["repeats"] * (startup_s + timed) + profiling_s(startup_s)


def profiling_s(startup_s: float = 0.7) -> float:
    """What a trial's profiling adds, outside its measuring budget (a small model's; a large one takes longer)."""
    return startup_s + 0.3


def longest_trial_s(settings: dict, startup_s: float = 0.7) -> float:
    """One trial that measures until its budget is spent (adaptive rounds on a noisy machine), and its profiling,
    which the budget leaves out: what a dry run gives as the upper end of its estimate."""
    return max(estimate_trial_s(settings, startup_s), settings["budget_s"] + profiling_s(startup_s))


def run_experiment(loaded: LoadedSpec, options: RunOptions, progress: Progress | None = None,
                   check_targets: bool = True) -> RunSummary:
    """Plan the sweep, skip stored trials, measure the rest; see the module docstring for the order.
    `check_targets` False: measured here whatever the spec's `targets:` say, as a paired run measures (the
    specs a paired diff measures on one side only)."""
    progress = progress or SilentProgress()
    if check_targets:
        check_local(loaded, options)
    side = _prepare_side(loaded, options, progress)
    summary = side.summary
    if options.dry_run:
        return summary
    if not summary.to_measure:
        _record_spec(side)
        return summary
    _start_side(side, progress, measure_host_noise(side.quick, summary.estimate_s))
    progress.start(len(summary.to_measure), summary.estimate_s)
    context = SweepContext(progress)
    try:
        for config, group in _groups([(side, p) for p in summary.to_measure]):
            context.measure_group(config, group)
    except KeyboardInterrupt:
        summary.interrupted = True
    _recheck_limits(side, progress)
    return summary


def run_paired(baseline: LoadedSpec, candidate: LoadedSpec, options: tuple[RunOptions, RunOptions],
               progress: Progress | None = None) -> tuple[RunSummary, RunSummary]:
    """Measure baseline and candidate in one run: every (version, configuration) of the candidate that the
    baseline also has is measured in the same rounds as its baseline twin, processes alternating (baseline,
    candidate, …), both stored with one `pair_id`; the rest of each side is measured in the same rounds,
    unpaired. Stored trials are measured again (pairing needs both members from this run)."""
    progress = progress or SilentProgress()
    sides = [_prepare_side(loaded, dataclasses.replace(opt, force=True), progress, label)
             for loaded, opt, label in zip((baseline, candidate), options, ("baseline", "candidate"), strict=True)]
    if options[1].dry_run:
        return sides[0].summary, sides[1].summary
    # Once: both sides run on this machine now.
    noise = measure_host_noise(all(side.quick for side in sides), sum(s.summary.estimate_s for s in sides))
    for side in sides:
        _start_side(side, progress, noise)
    total = sum(len(s.summary.to_measure) for s in sides)
    progress.start(total, sum(s.summary.estimate_s for s in sides))
    context = SweepContext(progress)
    planned = [(side, p) for side in sides for p in side.summary.to_measure]
    try:
        for config, group in _groups(planned):
            context.measure_group(config, group)
    except KeyboardInterrupt:
        for side in sides:
            side.summary.interrupted = True
    for side in sides:
        _recheck_limits(side, progress)
    return sides[0].summary, sides[1].summary


def _prepare_side(loaded: LoadedSpec, options: RunOptions, progress: Progress, label: str | None = None) -> Side:
    """Plan one spec's trials and their keys (nothing measured yet)."""
    spec = loaded.spec
    quick = is_quick(options.quick)
    settings = measure_settings(loaded, quick)
    results = ResultsDir(options.results_dir)
    check_root_is_no_experiment(results, loaded)
    check_one_spec_per_name(results, loaded)
    env = capture_environment()
    trials = sweep_trials(loaded, options.only)
    # Before building versions: a provider this onnxruntime lacks would fail every trial that asks for it.
    check_providers({t.config.provider for t in trials}, f"{loaded.path}: sweep.provider")
    versions = planned_versions(loaded, options, progress)
    inputs = keyed_inputs(loaded)
    engines = version_engines(loaded)
    keys = {
        t: trial_key(t, model_sha256=versions[t.version].sha256, inputs=inputs,
                     measure={k: v for k, v in settings.items() if k not in UNKEYED_SETTINGS},
                     quick=quick, env_fingerprint=env.fingerprint, engine=engines[t.version])
        for t in trials
    }
    preexisting = stored_keys(results, progress)
    stored = set() if options.force else preexisting
    planned = [PlannedTrial(t, keys[t], keys[t] in stored) for t in trials]
    check_feeds(loaded, {name: v.path for name, v in versions.items()}, [p.trial for p in planned if not p.stored])
    to_measure = sum(not p.stored for p in planned)
    summary = RunSummary(spec.name, results.path, planned, estimate_trial_s(settings) * to_measure,
                         longest_s=longest_trial_s(settings) * to_measure)
    return Side(loaded, results, env, versions, settings, quick, "", summary, preexisting, label,
                 options.decide_latency_ratio)


def models_cache(loaded: LoadedSpec, options: RunOptions, progress: Progress) -> Path:
    """The folder derived models are built into: --cache-dir, $PERFSITE_CACHE_DIR/models or the project's
    .perfsite/models; when it cannot be written, a warning and a folder of this process's own (models are then
    built again by the next run)."""
    folder = options.cache_dir or models_cache_dir(loaded.root)
    problem = cache_problem(folder)
    if problem is None:
        return folder
    progress.message(cache_warning(folder, problem, "derived models are built"))
    return process_tempdir("perfsite-models-")


def sweep_trials(loaded: LoadedSpec, only: str | None) -> list:
    """The spec's trials, filtered by --only; none left is an error that says what the filter could match."""
    axes = list(spec_axes(loaded.spec))
    planned_all = plan_trials(loaded.spec)
    trials = filter_trials(planned_all, only, axes)
    if not trials:
        raise RunError(no_trial_message(planned_all, only, axes, str(loaded.path)))
    unmatched = unmatched_values(planned_all, only, axes)
    if unmatched:
        raise RunError(f"--only {only!r}: no planned trial of {loaded.path} has {', '.join(unmatched)}; the "
                       f"other values would run without it. {values_to_choose(planned_all, only, axes)}")
    return trials


def stored_keys(results: ResultsDir, progress: Progress) -> set[str]:
    """The trials the store holds, ok and whole; what is wrong with the folder is reported as a warning."""
    preexisting = results.stored_ok_keys()
    if preexisting or results.stored_trial_keys():
        for problem in results.check().problems:
            progress.message(f"Warning: {problem}")
    return preexisting


def check_local(loaded: LoadedSpec, options: RunOptions) -> None:
    """Targets are kinds of machine of a Ray cluster: a local run measures this machine only, and storing its
    trials under a target's name would file them with another machine's."""
    if options.target or loaded.spec.targets:
        what = (f"--target {options.target}" if options.target
                else f"`targets: [{', '.join(loaded.spec.targets)}]` in {loaded.path}")
        raise RunError(f"{what} asks for trials measured on kinds of machine of a Ray cluster, and this run is "
                       "local (no --ray): it measures this machine only. Run it with `--ray [ADDRESS]` (docs/ray.md), "
                       "or remove `targets:` (and --target) to measure here.")


def check_root_is_no_experiment(results: ResultsDir, loaded: LoadedSpec) -> None:
    """Refuse a results root that is one experiment's folder: `--results results/tiny` (the folder `build`,
    `compare` and `diff` accept as one experiment) made `run` measure everything again into results/tiny/<name>,
    an experiment nested in another's folder that no build, query or run at either folder finds. Local folders
    only: on object storage the check would cost a listing of the parent at every run."""
    if not isinstance(results.path, Path):
        return
    root = results.path.parent
    if not ResultsDir(root).stored_trial_keys():
        return
    raise RunError(
        f"The results root {root} is the results folder of the experiment `{root.name}` (it holds trials/*.parquet), "
        f"not a folder of experiments: `perfsite run` writes each spec into ROOT/<spec name>/, so {loaded.path} "
        f"would be measured into {results.path}, an experiment inside another's folder that `perfsite build`, "
        f"`perfsite query` and later runs never find. Nothing was measured. Allowed for --results: the folder that "
        f"holds the experiments' folders, here --results {root.parent} (the default is <project>/results).")


def check_one_spec_per_name(results: ResultsDir, loaded: LoadedSpec) -> None:
    """Refuse to measure into a results folder another spec of the same name wrote: the site would show one
    experiment mixing two unrelated models, with one spec's description and a "best" picked across both.

    The other spec counts only while it exists, still has this name, says something else and measures none of
    this spec's model files: a spec moved, copied, edited or checked out twice (sharing its models) stays the
    same experiment."""
    other = other_spec_named_alike(results, loaded)
    if other is not None:
        raise RunError(same_name_message(loaded.path, other, loaded.spec.name, results.path))


def other_spec_named_alike(results: ResultsDir, loaded: LoadedSpec) -> Path | None:
    """The spec of another experiment with this spec's name that wrote into `results` (check_one_spec_per_name
    says when one counts), or None."""
    from generator.spec import load_spec

    runs = results.read_table("runs") if results.has_table("runs") else None
    if runs is None or "spec_path" not in runs:
        return None
    for other in sorted(set(runs["spec_path"].dropna()) - {str(loaded.path)}):
        try:
            theirs = load_spec(Path(other), allow_outside=True)
        except Exception:  # gone, moved or broken: not a second experiment of this name any more
            continue
        same_name = theirs.spec.name == loaded.spec.name
        if same_name and theirs.sha256 != loaded.sha256 and not theirs.same_experiment(loaded):
            return Path(other)
    return None


def same_name_message(mine: Path, theirs: Path, name: str, folder: Path | None) -> str:
    where = f"one results folder {folder}" if folder else "one results folder"
    return (f"The specs {mine} and {theirs} both have `name: {name}` and would write into {where}: a site would "
            "show one experiment mixing two unrelated models. Allowed: one spec per name in a results folder; "
            "rename one of them (`name:`) or give it its own --results DIR.")


def keyed_inputs(loaded: LoadedSpec) -> dict[str, Any]:
    """The spec's inputs as they enter a trial's key: an input read from a file by its *contents* (sha256),
    not only its path, so that a file changed in place (sequence length 8 -> 4096) is measured again."""
    keyed = {}
    for name, entry in loaded.spec.inputs.items():
        data = entry.model_dump(mode="json")
        if getattr(entry, "file", None) is not None:
            path = loaded.resolve(entry.file, f"inputs.{name}.file")
            data["file_sha256"] = file_sha256(path) if os.path.isfile(path) else None
        keyed[name] = data
    return keyed


def _start_side(side: Side, progress: Progress, noise: HostNoise) -> None:
    """Before measuring: the machine's limits, and the run's row with the machine's own noise (measured once
    per run by the caller, before the sides start, on one thread: generator.machine.host_noise)."""
    side.results.ensure_writable()
    # Roofline and timeline pages need the machine's measured limits; probed once per environment, then cached
    # in the per-user cache `perfsite profile` shares (generator.machine.probe.probe_cache_dir).
    side.env = ensure_limits(side.env, side.quick, warn=progress.message, announce=progress.message)
    side.run_id = start_run(side.results, side.loaded, side.env, side.quick, noise=noise)


def _record_spec(side: Side) -> None:
    """A run with every trial stored still records the spec it read, when it is not the one stored with those
    trials: a spec edited where no trial key changes (description, latency threshold, compare pairs, what-if
    factors) measures nothing, and the next build must show it (generator.results.store.shown_spec_sha256). The
    run's row names the environment of the stored trials it matched (their keys hold its fingerprint); no
    environment row is written, as the machine was not probed."""
    trials = side.results.read_table("trials").sort_values(["finished_at", "trial_key"], kind="stable")
    runs = side.results.read_table("runs").sort_values("started_at", kind="stable")
    if not trials.empty and shown_spec_sha256(trials, runs) == side.loaded.sha256:
        # The pages follow this very spec already: nothing new to record, unless its specs/S.json was deleted by
        # hand, which `build` refuses, advising this very run (a no-op when the file is there).
        side.results.write_spec(side.loaded.sha256, spec_to_json(side.loaded.spec))
        return
    side.results.ensure_writable()
    start_run(side.results, side.loaded, side.env, side.quick, environment=False)


def _recheck_limits(side: Side, progress: Progress) -> None:
    """After the profiled passes: a layer faster than the cached limits means the probe measured too low, so
    probe once more (generator.runner.limits_check)."""
    if not side.summary.interrupted:
        side.env = recheck_limits(side.results, side.summary.measured, side.env, side.quick, progress.message)


def _groups(planned: Sequence[tuple[Side, PlannedTrial]]) -> list[tuple[Configuration, list]]:
    groups: dict[Configuration, list[tuple[Side, PlannedTrial]]] = {}
    for side, p in planned:
        groups.setdefault(p.trial.config, []).append((side, p))
    return list(groups.items())


def start_run(results: ResultsDir, loaded: LoadedSpec, env: Environment, quick: bool,
              environment: bool = True, noise: HostNoise | None = None) -> str:
    from generator.runner.gitinfo import git_state

    run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    commit, dirty = git_state(loaded.root)
    # Stored in spec order (versions as written), under the sha256 of the canonical form.
    results.write_spec(loaded.sha256, spec_to_json(loaded.spec))
    if environment:
        results.write_row("environments", env.env_id, env.row())
    results.write_row("runs", run_id, {
        "run_id": run_id, "experiment": loaded.spec.name, "spec_sha256": loaded.sha256, "env_id": env.env_id,
        # To the microsecond: two runs in one second (a spec edited where no trial key changes, run again at
        # once) sorted by their random run_id, and the pages could follow the older run's spec.
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"), "git_commit": commit,
        "git_dirty": dirty,
        "perfsite_version": generator.__version__, "quick": quick,
        "command": shlex.join(["perfsite", *sys.argv[1:]]),
        "spec_path": str(loaded.path), **(noise.row() if noise is not None else {}),
    })
    return run_id


