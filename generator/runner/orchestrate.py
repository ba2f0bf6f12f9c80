"""The sweep: which trials to measure, in which order, each in child processes, written as they finish.

Order: configurations outermost; within a configuration, rounds in which every version runs one measurement
process (A B A B ...), so that drift of a shared machine spreads evenly over the versions instead of favouring
whichever ran first. Rounds are adaptive: at least `measure.repeats`, then more while a trial's headline 95 %
interval is wider than `measure.target` (generator.results.intervals), until each trial has spent
`measure.budget_s` of measuring; a trial stopped by its budget is stored as such. A *paired* run
(``run_paired``) measures the trials of two specs (baseline and candidate) in the same rounds, the two members
of each pair side by side, into two results folders, and keeps going until the *paired* ratio's interval
meets the target. Then, for the output agreement check, one outputs process per trial
that has a reference version in its group (or is one), and one profiled process per trial. A trial is written
(atomically) as soon as its configuration group is done, so an interrupted sweep keeps every finished trial and
a second run measures only what is missing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import shlex
import sys
import tempfile
import time
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
from generator.results import clean
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
QUICK_BUDGET_S = 1.0
# Settings that do not change what one measurement process measures: not part of the trial key, so that
# changing the target or the budget keeps the stored trials.
UNKEYED_SETTINGS = ("timeout_s", "target", "budget_s")


class Progress(Protocol):
    """What the runner reports; the CLI draws it. Library code never prints."""

    def message(self, text: str) -> None: ...
    def start(self, total: int, estimate_s: float) -> None: ...
    def trial_done(self, trial: Trial, status: str) -> None: ...
    def converging(self, label: str, halfwidth: float | None, target: float, spent_s: float,
                   budget_s: float) -> None: ...


class SilentProgress:
    def message(self, text: str) -> None:
        pass

    def start(self, total: int, estimate_s: float) -> None:
        pass

    def trial_done(self, trial: Trial, status: str) -> None:
        pass

    def converging(self, label: str, halfwidth: float | None, target: float, spent_s: float,
                   budget_s: float) -> None:
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
    exhausted: list[str] = field(default_factory=list)  # trials stopped by their budget, unconverged

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
    """Rough duration of one trial: its processes' start-up and timed phases, plus the profiled pass."""
    timed = settings["min_seconds"] + 0.1
    return settings["repeats"] * (startup_s + timed) + startup_s + 0.3


def run_experiment(loaded: LoadedSpec, options: RunOptions, progress: Progress | None = None) -> RunSummary:
    """Plan the sweep, skip stored trials, measure the rest; see the module docstring for the order."""
    progress = progress or SilentProgress()
    side = _prepare_side(loaded, options, progress)
    summary = side.summary
    if options.dry_run or not summary.to_measure:
        return summary
    _start_side(side)
    progress.start(len(summary.to_measure), summary.estimate_s)
    context = _SweepContext(progress)
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
    for side in sides:
        _start_side(side)
    total = sum(len(s.summary.to_measure) for s in sides)
    progress.start(total, sum(s.summary.estimate_s for s in sides))
    context = _SweepContext(progress)
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


def _prepare_side(loaded: LoadedSpec, options: RunOptions, progress: Progress, label: str | None = None) -> _Side:
    """Plan one spec's trials and their keys (nothing measured yet)."""
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
                     measure={k: v for k, v in settings.items() if k not in UNKEYED_SETTINGS},
                     quick=quick, env_fingerprint=env.fingerprint)
        for t in trials
    }
    preexisting = results.stored_ok_keys()
    stored = set() if options.force else preexisting
    planned = [PlannedTrial(t, keys[t], keys[t] in stored) for t in trials]
    estimate_s = estimate_trial_s(settings) * sum(not p.stored for p in planned)
    summary = RunSummary(spec.name, results.path, planned, estimate_s)
    return _Side(loaded, results, env, versions, settings, quick, "", summary, preexisting, label)


def _start_side(side: _Side) -> None:
    side.results.ensure_writable()
    # Roofline and timeline pages need the machine's measured limits; probed once per environment, then cached
    # in the per-user cache `perfsite profile` shares (generator.runner.probe.probe_cache_dir).
    side.env = ensure_limits(side.env, side.quick)
    side.run_id = _start_run(side.results, side.loaded, side.env, side.quick)


def _recheck_limits(side: _Side, progress: Progress) -> None:
    """After the profiled passes: a layer faster than the cached limits means the probe measured too low, so
    probe once more (generator.runner.limits_check)."""
    if not side.summary.interrupted:
        side.env = recheck_limits(side.results, side.summary.measured, side.env, side.quick, progress.message)


@dataclass(eq=False)  # identity: sides are keys of dicts
class _Side:
    """One spec's part of a sweep: where its trials go and what they are measured with."""

    loaded: LoadedSpec
    results: ResultsDir
    env: Environment
    versions: dict[str, ModelVersion]
    settings: dict
    quick: bool
    run_id: str
    summary: RunSummary
    preexisting: set[str]
    label: str | None = None  # baseline or candidate in a paired run


def _groups(planned: Sequence[tuple[_Side, PlannedTrial]]) -> list[tuple[Configuration, list]]:
    groups: dict[Configuration, list[tuple[_Side, PlannedTrial]]] = {}
    for side, p in planned:
        groups.setdefault(p.trial.config, []).append((side, p))
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
    progress: Progress

    def measure_group(self, config: Configuration, group: list[tuple[_Side, PlannedTrial]]) -> None:
        """All versions (of every side) at one configuration: adaptive interleaved rounds, then the agreement
        check and the profiled passes, then write."""
        with contextlib.ExitStack() as stack:
            mine = []
            for side in dict.fromkeys(s for s, _ in group):
                keys = [p.key for s, p in group if s is side]
                held = stack.enter_context(TrialLock.many(side.results.path, keys))
                # A trial another run finished while we waited for it is not measured again (--force included).
                done_meanwhile = side.results.stored_ok_keys() - side.preexisting
                mine += [(s, p) for s, p in group if s is side and p.key in held and p.key not in done_meanwhile]
                side.summary.skipped_locked += [p.key for s, p in group if s is side and p.key not in held]
            if not mine:
                return
            with tempfile.TemporaryDirectory(prefix="perfsite-") as tmp:
                self._measure_in(Path(tmp), mine)

    def _measure_in(self, tmp: Path, group: list[tuple[_Side, PlannedTrial]]) -> None:
        states = _paired_order([_TrialState(p, _now(), side, tag=f"{i}") for i, (side, p) in enumerate(group)])
        for state in states:
            state.feeds = self._feeds(tmp, state)
        self._rounds(tmp, states)
        for side in dict.fromkeys(st.side for st in states):
            mine = [st for st in states if st.side is side]
            agreement_rows = self._agreement(tmp, side, mine)
            for state in mine:
                if state.error is None:
                    self._profile(tmp, state)
                self._write(state, agreement_rows.get(state.planned.key, []))

    def _rounds(self, tmp: Path, states: list[_TrialState]) -> None:
        """At least `repeats` rounds; then rounds for the trials whose interval is still wider than the target
        (both members of a pair go on together), each until its budget is spent."""
        rnd = 0
        while True:
            wanted = [st for st in states if st.wants_more(rnd)]
            wanted = [st for st in states if st in wanted or (st.pair is not None and st.pair in wanted)]
            runnable = [st for st in wanted if st.error is None and not st.out_of_budget()]
            if not runnable:
                break
            # A B … then … B A: the order reverses every other round, so that a drift within a round (a
            # neighbour ramping up) does not always favour whichever version runs first.
            for state in runnable if rnd % 2 == 0 else runnable[::-1]:
                self._one_process(tmp, state, rnd)
                if rnd >= state.side.settings["repeats"] - 1:
                    self._report_converging(state)
            rnd += 1
        for state in states:
            state.exhausted = state.error is None and not state.converged()

    def _report_converging(self, state: _TrialState) -> None:
        """Which trial is still measuring, how wide its interval is and how much budget it spent."""
        report = getattr(self.progress, "converging", None)  # progress objects written before it lack it
        if report is not None:
            label = state.planned.trial.label + (f" ({state.side.label})" if state.side.label else "")
            report(label, state.halfwidth(), state.side.settings["target"], state.measuring_s,
                   state.side.settings["budget_s"])

    def _feeds(self, tmp: Path, state: _TrialState) -> Path | None:
        from generator.inputs import make_feeds

        p, side = state.planned, state.side
        path = tmp / f"{state.tag}-{p.key}.feeds.npz"
        try:
            feeds = make_feeds(side.loaded, side.versions[p.trial.version].path, p.trial.config.binding(), seed=0)
        except RunError as e:
            # The same inputs fail for every trial of this version: report it once, clearly, and stop.
            raise RunError(f"{e} (version {p.trial.version}, configuration {p.trial.config.label})") from e
        np.savez(path, **feeds)
        return path

    def _job(self, tmp: Path, state: _TrialState, mode: str, tag: str) -> dict:
        version = state.side.versions[state.planned.trial.version]
        work = tmp / f"{state.tag}-{state.planned.key}-{tag}"
        work.mkdir(exist_ok=True)
        return {
            "mode": mode,
            "model_path": str(version.path),
            "original_model_path": str(version.path),
            "config": state.planned.trial.config.as_dict(),
            "feeds_path": str(state.feeds),
            "measure": state.side.settings,
            "work_dir": str(work),
        }

    def _one_process(self, tmp: Path, state: _TrialState, rnd: int) -> None:
        job = self._job(tmp, state, "measure", f"m{rnd}")
        started = time.perf_counter()
        result = children.run_child(job, timeout_s=state.side.settings["timeout_s"])
        state.measuring_s += time.perf_counter() - started
        if result.error:
            state.error = result.error
            return
        config = state.planned.trial.config
        applies = clean.applies(config.threads, config.concurrency, state.side.env.logical_cores)
        state.processes.append(children.process_outcome(
            result.output, process=len(state.processes), rnd=rnd, rule_applies=applies,
            concurrency=config.concurrency))

    def _profile(self, tmp: Path, state: _TrialState) -> None:
        job = self._job(tmp, state, "profile", "profile")
        job["config"] = {**job["config"], "concurrency": 1}
        result = children.run_child(job, timeout_s=state.side.settings["timeout_s"])
        if result.error:
            state.profile_error = result.error
        else:
            state.profile = result.output

    def _agreement(self, tmp: Path, side: _Side, states: list[_TrialState]) -> dict[str, list[dict]]:
        """Agreement rows by trial key: each ok trial against its reference versions measured in this group.
        A version whose outputs could not be recorded gets no rows, and its trial stays ok."""
        ok = {s.planned.trial.version: s for s in states if s.error is None and s.processes}
        pairs = agreement.agreement_pairs(side.loaded.spec, ok)
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
        result = children.run_child(job, timeout_s=state.side.settings["timeout_s"])
        state.outputs_error = result.error
        if result.error is None:
            state.outputs, state.outputs_error = _load_outputs(result.output)
        if state.outputs_error is not None:
            self.progress.message(f"No output agreement for {state.planned.trial.label}: {state.outputs_error}")
        return state.outputs

    def _extra_feeds(self, tmp: Path, state: _TrialState) -> list[Path]:
        from generator.inputs import make_feeds

        p, side = state.planned, state.side
        with np.load(state.feeds, allow_pickle=False) as npz:
            base = {name: npz[name] for name in npz.files}
        paths = []
        for seed in range(1, AGREEMENT_EXTRA_BATCHES + 1):
            feeds = make_feeds(side.loaded, side.versions[p.trial.version].path, p.trial.config.binding(), seed=seed)
            if agreement.same_arrays(feeds, base):
                break  # fixed values and files: every seed gives the same batch, which would count twice
            paths.append(tmp / f"{state.tag}-{p.key}.feeds{seed}.npz")
            np.savez(paths[-1], **feeds)
        return paths

    def _write(self, state: _TrialState, agreement_rows: list[dict] | None = None) -> None:
        p, side = state.planned, state.side
        version = side.versions[p.trial.version]
        row = {
            "experiment": side.loaded.spec.name, "trial_key": p.key, "run_id": side.run_id,
            "env_id": side.env.env_id, "spec_sha256": side.loaded.sha256, "version": p.trial.version,
            "model_sha256": version.sha256, "model_bytes": version.size_bytes,
            "version_source": version.source, "version_notes": "; ".join(version.notes) or None,
            **aggregate.config_columns(p.trial), "quick": side.quick,
            "percentile": side.loaded.spec.measure.percentile, "started_at": state.started_at,
            "finished_at": _now(), **state.adaptive_columns(),
        }
        nodes: list = []
        layers: list = []
        timeline: list = []
        if state.error is None and state.processes:
            expected = aggregate.cores_expected(p.trial, side.env.logical_cores)
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
            side.summary.failed.append((p.trial.label, row["error"]))
        side.results.write_trial(TrialFiles(
            trial=row,
            processes=[o.row(p.key) for o in state.processes],
            latencies=aggregate.latency_table(p.key, state.processes),
            nodes=nodes,
            layers=layers,
            agreement=list(agreement_rows or []) if row["status"] == "ok" else [],
            timeline=timeline,
        ))
        side.summary.measured.append(p.key)
        if row.get("budget_exhausted"):
            side.summary.exhausted.append(p.trial.label)
        self.progress.trial_done(p.trial, row["status"])


def _paired_order(states: list[_TrialState]) -> list[_TrialState]:
    """Link each candidate trial to the baseline trial of the same version (one group: one configuration), and
    order the group so that the two members of a pair run next to each other in every round."""
    baseline = {st.planned.trial.version: st for st in states if st.side.label == "baseline"}
    for st in states:
        twin = baseline.get(st.planned.trial.version) if st.side.label == "candidate" else None
        if twin is not None and twin.pair is None:
            pair_id = uuid.uuid4().hex[:16]
            st.pair, twin.pair = twin, st
            st.pair_id = twin.pair_id = pair_id
    ordered: list[_TrialState] = []
    for st in states:
        if st not in ordered:
            ordered += [st] if st.pair is None or st.pair in ordered else [st, st.pair]
    return ordered


def _profile_columns(state: _TrialState) -> dict:
    prof = state.profile or {}
    return {
        "profiled": state.profile is not None,
        "profile_error": state.profile_error,
        "model_run_us": prof.get("model_run_us"),
        "kernel_sum_us": prof.get("kernel_sum_us"),
        "profiled_latency_us": prof.get("profiled_latency_us"),
    }


@dataclass(eq=False)
class _TrialState:
    planned: PlannedTrial
    started_at: str
    side: _Side
    tag: str = ""  # unique within the group: the same trial key can be on both sides of a paired run
    feeds: Path | None = None
    processes: list[aggregate.ProcessOutcome] = field(default_factory=list)
    error: str | None = None
    profile: dict | None = None
    profile_error: str | None = None
    outputs: list[dict[str, np.ndarray]] | None = None
    outputs_error: str | None = None
    pair: _TrialState | None = None
    pair_id: str | None = None
    measuring_s: float = 0.0
    exhausted: bool = False

    @property
    def percentile(self) -> str:
        return self.side.loaded.spec.measure.percentile

    def halfwidth(self) -> float | None:
        """The interval that decides when to stop: the paired ratio's for a pair, else the trial's own."""
        if self.pair is not None:
            return aggregate.paired_halfwidth(self.pair.processes, self.processes, self.percentile)
        return aggregate.headline_halfwidth(self.processes, self.percentile)

    def converged(self) -> bool:
        width = self.halfwidth()
        return width is not None and width <= self.side.settings["target"]

    def wants_more(self, rnd: int) -> bool:
        return self.error is None and (rnd < self.side.settings["repeats"] or not self.converged())

    def out_of_budget(self) -> bool:
        """Spent its budget; the two members of a pair stop together, so that every round has both."""
        spent = self.measuring_s >= self.side.settings["budget_s"]
        return spent or (self.pair is not None and self.pair.measuring_s >= self.pair.side.settings["budget_s"])

    def adaptive_columns(self) -> dict:
        return {
            "target": self.side.settings["target"], "budget_s": self.side.settings["budget_s"],
            "measuring_s": self.measuring_s, "budget_exhausted": self.exhausted,
            "pair_id": self.pair_id, "pair_side": self.side.label if self.pair_id else None,
        }


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
