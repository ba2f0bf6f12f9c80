"""The sweep: which trials to measure, in which order, each in child processes, written as they finish.

Order: configurations outermost; within a configuration, `measure.repeats` rounds in which every version runs
one measurement process (A B A B ...), so that drift of a shared machine spreads evenly over the versions
instead of favouring whichever ran first. Then, for the output agreement check, one outputs process per trial
that has a reference version in its group (or is one), and one profiled process per trial. A trial is written
(atomically) as soon as its configuration group is done, so an interrupted sweep keeps every finished trial and
a second run measures only what is missing.
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

import generator
from generator.errors import RunError
from generator.plan import (
    Configuration,
    Trial,
    filter_trials,
    no_trial_message,
    plan_trials,
    sweep_axes,
    trial_key,
)
from generator.results.store import ResultsDir, TrialFiles
from generator.runner import aggregate, agreement, children
from generator.runner.environment import Environment, capture_environment
from generator.runner.limits_check import recheck_limits
from generator.runner.locks import TrialLock
from generator.runner.probe import ensure_limits
from generator.runner.session import check_providers
from generator.spec import LoadedSpec, spec_to_json
from generator.versions import ModelVersion, prepare_versions

QUICK_ENV = "PERFSITE_QUICK"
# Random input batches drawn (seeds 1..N) besides the trial's own for the output agreement check: top-1
# agreement on one batch of one item says little, and a model run costs far less than a process start.
AGREEMENT_EXTRA_BATCHES = 2


class Progress(Protocol):
    """What the runner reports; the CLI draws it. Library code never prints."""

    def message(self, text: str) -> None: ...
    def start(self, total: int, estimate_s: float) -> None: ...
    def trial_done(self, trial: Trial, status: str) -> None: ...


class SilentProgress:
    def message(self, text: str) -> None:
        pass

    def start(self, total: int, estimate_s: float) -> None:
        pass

    def trial_done(self, trial: Trial, status: str) -> None:
        pass


@dataclass(frozen=True)
class RunOptions:
    results_dir: Path
    force: bool = False
    only: str | None = None
    dry_run: bool = False
    quick: bool = False
    cache_dir: Path | None = None


@dataclass(frozen=True)
class PlannedTrial:
    trial: Trial
    key: str
    stored: bool


@dataclass
class RunSummary:
    experiment: str
    results_dir: Path
    planned: list[PlannedTrial]
    estimate_s: float
    measured: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped_locked: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def to_measure(self) -> list[PlannedTrial]:
        return [p for p in self.planned if not p.stored]


def is_quick(flag: bool) -> bool:
    return flag or os.environ.get(QUICK_ENV, "") not in ("", "0", "false", "no")


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
    }
    if quick:
        s.update(
            warmup=min(m.warmup, 3),
            min_iterations=min(m.min_iterations, 10),
            min_seconds=min(m.min_seconds, 0.05),
            max_seconds=min(m.max_seconds, 2.0),
            repeats=min(m.repeats, 2),
            profile_iterations=min(m.profile_iterations, 3),
        )
    return s


def estimate_trial_s(settings: dict, startup_s: float = 0.7) -> float:
    """Rough duration of one trial: its processes' start-up and timed phases, plus the profiled pass."""
    timed = settings["min_seconds"] + 0.1
    return settings["repeats"] * (startup_s + timed) + startup_s + 0.3


def run_experiment(loaded: LoadedSpec, options: RunOptions, progress: Progress | None = None) -> RunSummary:
    """Plan the sweep, skip stored trials, measure the rest; see the module docstring for the order."""
    progress = progress or SilentProgress()
    spec = loaded.spec
    quick = is_quick(options.quick)
    settings = measure_settings(loaded, quick)
    results = ResultsDir(options.results_dir)
    env = capture_environment()
    axes = list(sweep_axes(spec.sweep))
    planned_all = plan_trials(spec)
    trials = filter_trials(planned_all, options.only, axes)
    if not trials:
        raise RunError(no_trial_message(planned_all, options.only, axes, str(loaded.path)))
    # Before building versions: a provider this onnxruntime lacks would fail every trial that asks for it.
    check_providers({t.config.provider for t in trials}, f"{loaded.path}: sweep.provider")
    cache_dir = options.cache_dir or loaded.root / ".perfsite" / "models"
    versions = prepare_versions(loaded, cache_dir, progress=progress.message)
    inputs = {k: v.model_dump(mode="json") for k, v in spec.inputs.items()}
    keys = {
        t: trial_key(t, model_sha256=versions[t.version].sha256, inputs=inputs,
                     measure={k: v for k, v in settings.items() if k != "timeout_s"},
                     quick=quick, env_fingerprint=env.fingerprint)
        for t in trials
    }
    preexisting = results.stored_ok_keys()
    stored = set() if options.force else preexisting
    planned = [PlannedTrial(t, keys[t], keys[t] in stored) for t in trials]
    estimate_s = estimate_trial_s(settings) * sum(not p.stored for p in planned)
    summary = RunSummary(spec.name, results.path, planned, estimate_s)
    if options.dry_run or not summary.to_measure:
        return summary
    results.ensure_writable()
    # Roofline and timeline pages need the machine's measured limits; probed once per environment, then cached
    # in the per-user cache `perfsite profile` shares (generator.runner.probe.probe_cache_dir).
    env = ensure_limits(env, quick)
    run_id = _start_run(results, loaded, env, quick)
    progress.start(len(summary.to_measure), summary.estimate_s)
    context = _SweepContext(loaded, results, env, versions, settings, quick, run_id, progress, summary, preexisting)
    try:
        for config, group in _groups(summary.to_measure):
            context.measure_group(config, group)
    except KeyboardInterrupt:
        summary.interrupted = True
    if not summary.interrupted:
        # After the profiled passes: a layer faster than the cached limits means the probe measured too low, so
        # probe once more (generator.runner.limits_check).
        recheck_limits(results, summary.measured, env, quick, progress.message)
    return summary


def _groups(planned: Sequence[PlannedTrial]) -> list[tuple[Configuration, list[PlannedTrial]]]:
    groups: dict[Configuration, list[PlannedTrial]] = {}
    for p in planned:
        groups.setdefault(p.trial.config, []).append(p)
    return list(groups.items())


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _start_run(results: ResultsDir, loaded: LoadedSpec, env: Environment, quick: bool) -> str:
    from generator.runner.gitinfo import git_state

    run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    commit, dirty = git_state(loaded.root)
    # Stored in spec order (versions as written), under the sha256 of the canonical form.
    results.write_spec(loaded.sha256, spec_to_json(loaded.spec))
    results.write_row("environments", env.env_id, env.row())
    results.write_row("runs", run_id, {
        "run_id": run_id, "experiment": loaded.spec.name, "spec_sha256": loaded.sha256, "env_id": env.env_id,
        "started_at": _now(), "git_commit": commit, "git_dirty": dirty,
        "perfsite_version": generator.__version__, "quick": quick,
        "command": shlex.join(["perfsite", *sys.argv[1:]]),
    })
    return run_id


@dataclass
class _SweepContext:
    loaded: LoadedSpec
    results: ResultsDir
    env: Environment
    versions: dict[str, ModelVersion]
    settings: dict
    quick: bool
    run_id: str
    progress: Progress
    summary: RunSummary
    preexisting: set[str]

    def measure_group(self, config: Configuration, group: list[PlannedTrial]) -> None:
        """All versions at one configuration: interleaved rounds, then the profiled passes, then write."""
        with TrialLock.many(self.results.path, [p.key for p in group]) as held:
            # A trial another run finished while we waited for it is not measured again (--force included).
            done_meanwhile = self.results.stored_ok_keys() - self.preexisting
            mine = [p for p in group if p.key in held and p.key not in done_meanwhile]
            self.summary.skipped_locked += [p.key for p in group if p.key not in held]
            if not mine:
                return
            with tempfile.TemporaryDirectory(prefix="perfsite-") as tmp:
                self._measure_in(Path(tmp), mine)

    def _measure_in(self, tmp: Path, group: list[PlannedTrial]) -> None:
        states = {p.key: _TrialState(p, _now()) for p in group}
        for p in group:
            states[p.key].feeds = self._feeds(tmp, p)
        for rnd in range(self.settings["repeats"]):
            for p in group:
                state = states[p.key]
                if state.error is None:
                    self._one_process(tmp, state, rnd)
        agreement_rows = self._agreement(tmp, [states[p.key] for p in group])
        for p in group:
            state = states[p.key]
            if state.error is None:
                self._profile(tmp, state)
            self._write(state, agreement_rows.get(p.key, []))

    def _feeds(self, tmp: Path, p: PlannedTrial) -> Path | None:
        from generator.inputs import make_feeds

        path = tmp / f"{p.key}.feeds.npz"
        try:
            feeds = make_feeds(self.loaded, self.versions[p.trial.version].path, p.trial.config.binding(), seed=0)
        except RunError as e:
            # The same inputs fail for every trial of this version: report it once, clearly, and stop.
            raise RunError(f"{e} (version {p.trial.version}, configuration {p.trial.config.label})") from e
        np.savez(path, **feeds)
        return path

    def _job(self, tmp: Path, state: _TrialState, mode: str, tag: str) -> dict:
        version = self.versions[state.planned.trial.version]
        work = tmp / f"{state.planned.key}-{tag}"
        work.mkdir(exist_ok=True)
        return {
            "mode": mode,
            "model_path": str(version.path),
            "original_model_path": str(version.path),
            "config": state.planned.trial.config.as_dict(),
            "feeds_path": str(state.feeds),
            "measure": self.settings,
            "work_dir": str(work),
        }

    def _one_process(self, tmp: Path, state: _TrialState, rnd: int) -> None:
        job = self._job(tmp, state, "measure", f"m{rnd}")
        result = children.run_child(job, timeout_s=self.settings["timeout_s"])
        if result.error:
            state.error = result.error
            return
        state.processes.append(children.process_outcome(result.output, process=len(state.processes), rnd=rnd))

    def _profile(self, tmp: Path, state: _TrialState) -> None:
        job = self._job(tmp, state, "profile", "profile")
        job["config"] = {**job["config"], "concurrency": 1}
        result = children.run_child(job, timeout_s=self.settings["timeout_s"])
        if result.error:
            state.profile_error = result.error
        else:
            state.profile = result.output

    def _agreement(self, tmp: Path, states: list[_TrialState]) -> dict[str, list[dict]]:
        """Agreement rows by trial key: each ok trial against its reference versions measured in this group.
        A version whose outputs could not be recorded gets no rows, and its trial stays ok."""
        ok = {s.planned.trial.version: s for s in states if s.error is None and s.processes}
        pairs = agreement.agreement_pairs(self.loaded.spec, ok)
        outputs = {v: self._outputs(tmp, ok[v]) for pair in pairs for v in pair}
        rows: dict[str, list[dict]] = {}
        for version, reference in pairs:
            mine, theirs = outputs.get(version), outputs.get(reference)
            if mine is not None and theirs is not None:
                key = ok[version].planned.key
                rows.setdefault(key, []).extend(agreement.agreement_rows(key, version, reference, theirs, mine))
        return rows

    def _outputs(self, tmp: Path, state: _TrialState) -> list[dict[str, np.ndarray]] | None:
        """The trial's outputs on its feeds and the extra batches, one dict per batch; None when they failed."""
        if state.outputs is not None or state.outputs_error is not None:
            return state.outputs
        job = self._job(tmp, state, "outputs", "outputs")
        job["config"] = {**job["config"], "concurrency": 1}
        job["extra_feeds_paths"] = [str(p) for p in self._extra_feeds(tmp, state)]
        result = children.run_child(job, timeout_s=self.settings["timeout_s"])
        state.outputs_error = result.error
        if result.error is None:
            state.outputs, state.outputs_error = _load_outputs(result.output)
        if state.outputs_error is not None:
            self.progress.message(f"No output agreement for {state.planned.trial.label}: {state.outputs_error}")
        return state.outputs

    def _extra_feeds(self, tmp: Path, state: _TrialState) -> list[Path]:
        from generator.inputs import make_feeds

        p = state.planned
        with np.load(state.feeds, allow_pickle=False) as npz:
            base = {name: npz[name] for name in npz.files}
        paths = []
        for seed in range(1, AGREEMENT_EXTRA_BATCHES + 1):
            feeds = make_feeds(self.loaded, self.versions[p.trial.version].path, p.trial.config.binding(), seed=seed)
            if agreement.same_arrays(feeds, base):
                break  # fixed values and files: every seed gives the same batch, which would count twice
            paths.append(tmp / f"{p.key}.feeds{seed}.npz")
            np.savez(paths[-1], **feeds)
        return paths

    def _write(self, state: _TrialState, agreement_rows: list[dict] | None = None) -> None:
        p = state.planned
        version = self.versions[p.trial.version]
        row = {
            "experiment": self.loaded.spec.name, "trial_key": p.key, "run_id": self.run_id,
            "env_id": self.env.env_id, "spec_sha256": self.loaded.sha256, "version": p.trial.version,
            "model_sha256": version.sha256, "model_bytes": version.size_bytes,
            "version_source": version.source, "version_notes": "; ".join(version.notes) or None,
            **aggregate.config_columns(p.trial), "quick": self.quick,
            "percentile": self.loaded.spec.measure.percentile, "started_at": state.started_at,
            "finished_at": _now(),
        }
        nodes: list = []
        layers: list = []
        timeline: list = []
        if state.error is None and state.processes:
            expected = aggregate.cores_expected(p.trial, self.env.logical_cores)
            row.update(aggregate.measurement_columns(state.processes, expected, row["percentile"]))
            row.update(status="ok", **_profile_columns(state))
            # The Python API has no allocator statistics; the profiled pass reads the arena from its profile.
            if row.get("arena_mb") is None:
                row["arena_mb"] = (state.profile or {}).get("arena_mb")
            nodes = aggregate.node_rows(p.key, (state.profile or {}).get("nodes", []))
            layers = [{**layer, "trial_key": p.key} for layer in (state.profile or {}).get("layers", [])]
            timeline = [{**call, "trial_key": p.key} for call in (state.profile or {}).get("timeline", [])]
        else:
            row.update(status="failed", error=state.error or "no measurement process finished")
            self.summary.failed.append((p.trial.label, row["error"]))
        self.results.write_trial(TrialFiles(
            trial=row,
            processes=[o.row(p.key) for o in state.processes],
            latencies=aggregate.latency_table(p.key, state.processes),
            nodes=nodes,
            layers=layers,
            agreement=list(agreement_rows or []) if row["status"] == "ok" else [],
            timeline=timeline,
        ))
        self.summary.measured.append(p.key)
        self.progress.trial_done(p.trial, row["status"])


def _profile_columns(state: _TrialState) -> dict:
    prof = state.profile or {}
    return {
        "profiled": state.profile is not None,
        "profile_error": state.profile_error,
        "model_run_us": prof.get("model_run_us"),
        "kernel_sum_us": prof.get("kernel_sum_us"),
        "profiled_latency_us": prof.get("profiled_latency_us"),
    }


@dataclass
class _TrialState:
    planned: PlannedTrial
    started_at: str
    feeds: Path | None = None
    processes: list[aggregate.ProcessOutcome] = field(default_factory=list)
    error: str | None = None
    profile: dict | None = None
    profile_error: str | None = None
    outputs: list[dict[str, np.ndarray]] | None = None
    outputs_error: str | None = None


def _load_outputs(output: dict) -> tuple[list[dict[str, np.ndarray]] | None, str | None]:
    """The outputs worker's .npz files as one {output name: array} dict per input batch, or the error."""
    names = output.get("output_names", [])
    try:
        batches = []
        for path in output.get("outputs_files", []):
            with np.load(path, allow_pickle=False) as npz:
                batches.append({name: npz[f"arr_{i}"] for i, name in enumerate(names)})
        return batches, None
    except (OSError, ValueError, KeyError) as e:
        return None, f"the recorded outputs are unreadable ({e})"
