"""Measuring one configuration group: adaptive interleaved rounds of measurement processes (paired when a run
has two sides), the profiled passes (which record the outputs the agreement check compares), the output
agreement check, and the write of each trial.

See generator.runner.orchestrate for the order of a whole sweep and generator.results.clean / sequential for the
rules the stopping criterion uses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from generator.errors import RunError
from generator.machine import profiler_cost
from generator.plan import Configuration, Trial
from generator.processes import owned_tempdir
from generator.results import clean
from generator.runner import agreement, children, generative, profiles
from generator.runner.locks import TrialLock
from generator.runner.protocol import WorkerJob
from generator.runner.sides import PlannedTrial, Progress, Side, now
from generator.runner.trial_state import TrialState, trial_files
from generator.spec import LoadedSpec

# The measurement processes of this many first rounds (at most measure.repeats) profile after their timed
# loop: three processes rank a model's layers alike, process by process, and further ones mostly narrow
# absolute figures that a process's speed moves anyway (docs/methodology.md, bench/profile_processes.py).
PROFILE_ROUNDS = 3
# Random input batches drawn (seeds 1..N) besides the trial's own for the output agreement check: top-1
# agreement on one batch of one item says little, and a model run costs far less than a process start.
AGREEMENT_EXTRA_BATCHES = 2


def trial_feeds(loaded: LoadedSpec, model_path: Path, trial: Trial, seed: int = 0) -> dict[str, np.ndarray]:
    """The input arrays of one trial (generator.inputs.make_feeds); an input the model refuses is an error that
    names the version and configuration too, as every trial of that pair would fail alike."""
    from generator.inputs import make_feeds

    if loaded.spec.generate is not None:  # the decode loop makes a generative trial's inputs
        return {}
    try:
        return make_feeds(loaded, model_path, trial.config.binding(), seed=seed)
    except RunError as e:
        raise RunError(f"{e} (version {trial.version}, configuration {trial.config.label})") from e


def check_feeds(loaded: LoadedSpec, model_paths: Mapping[str, Path], trials: Iterable[Trial]) -> None:
    """Build the inputs of every (version, configuration) to measure once, and drop them: a shape, type or file
    the model refuses at a configuration the sweep reaches late (batch 8 of a model fixed at batch 1) fails the
    plan, and `--dry-run`, instead of the run after minutes of measuring the configurations before it."""
    if loaded.spec.generate is not None:
        generative.check_decoders(loaded.path, model_paths, trials)
        return
    seen: set[tuple[str, tuple]] = set()
    for trial in trials:
        key = (trial.version, tuple(sorted(trial.config.binding().items())))
        if key not in seen:
            seen.add(key)
            trial_feeds(loaded, model_paths[trial.version], trial)


@dataclass
class SweepContext:
    progress: Progress
    calibration: Path | None = None  # the profiler-cost calibration chain of the group being measured

    def measure_group(self, config: Configuration, group: list[tuple[Side, PlannedTrial]]) -> None:
        """All versions (of every side) at one configuration: adaptive interleaved rounds, then the profiled
        passes (recording the outputs the agreement check compares), the agreement check, then write."""
        with contextlib.ExitStack() as stack:
            mine = []
            for side in dict.fromkeys(s for s, _ in group):
                keys = [p.key for s, p in group if s is side]
                held = stack.enter_context(TrialLock.many(side.results.lock_folder, keys))
                # A trial another run finished while we waited for it is not measured again (--force included).
                done_meanwhile = side.results.stored_ok_keys() - side.preexisting
                mine += [(s, p) for s, p in group if s is side and p.key in held and p.key not in done_meanwhile]
                side.summary.skipped_locked += [p.key for s, p in group if s is side and p.key not in held]
            if not mine:
                return
            with owned_tempdir("perfsite-run-") as tmp:
                self._measure_in(Path(tmp), mine)

    def _measure_in(self, tmp: Path, group: list[tuple[Side, PlannedTrial]]) -> None:
        states = _paired_order([TrialState(p, now(), side, tag=f"{i}") for i, (side, p) in enumerate(group)])
        for state in states:
            state.feeds = self._feeds(tmp, state)
            if state.side.loaded.spec.generate is not None:
                state.decoder = generative.layout_of(state.side.versions[state.planned.trial.version].path)
        self.calibration = tmp / "calibration.onnx"
        self.calibration.write_bytes(profiler_cost.calibration_model_bytes())
        for side in dict.fromkeys(st.side for st in states):
            mine = [st for st in states if st.side is side]
            compared = _compared(side, {st.planned.trial.version: st for st in mine})
            for state in mine:
                state.record_outputs = state.planned.trial.version in compared
        self._rounds(tmp, states)
        for side in dict.fromkeys(st.side for st in states):
            mine = [st for st in states if st.side is side]
            compared = _compared(side, _ok(mine))
            for state in mine:
                if state.error is None and state.profile is None and state.decoder is None:
                    # no measurement process could profile fully (generative trials are not profiled yet)
                    self._profile(tmp, state, record_outputs=state.planned.trial.version in compared
                                  and state.outputs_while_profiling)
            agreement_rows = self._agreement(tmp, side, mine)
            for state in mine:
                self._write(state, agreement_rows.get(state.planned.key, []))

    def _rounds(self, tmp: Path, states: list[TrialState]) -> None:
        """At least `repeats` rounds; then rounds for the trials whose interval is still wider than the target
        (both members of a pair go on together), each until its budget is spent."""
        rnd = 0
        while True:
            wanted = [st for st in states if st.wants_more(rnd)]
            wanted = [st for st in states if st in wanted or (st.pair is not None and st.pair in wanted)]
            # `repeats` is a minimum whatever the budget (docs/methodology.md): on a slow start-up the first
            # round alone could spend a quick budget and leave a paired trial with one round, no interval.
            runnable = [st for st in wanted if st.error is None
                        and (rnd < st.side.settings["repeats"] or not st.out_of_budget())]
            if not runnable:
                break
            # A B … then … B A: the order reverses every other round, so that a drift within a round (a
            # neighbour ramping up) does not always favour whichever version runs first.
            done: list[TrialState] = []
            ordered = runnable if rnd % 2 == 0 else runnable[::-1]
            for state in ordered:
                if state in done:
                    continue
                together = _together(state, runnable) or _generative_group(state, ordered, done, rnd)
                if together:
                    self._pair_process(tmp, together, rnd)
                else:
                    self._one_process(tmp, state, rnd)
                for measured in together or (state,):
                    done.append(measured)
                    if rnd >= measured.side.settings["repeats"] - 1:
                        self._report_converging(measured)
            rnd += 1
        for state in states:
            state.exhausted = state.error is None and not state.converged()

    def _report_converging(self, state: TrialState) -> None:
        """Which trial is still measuring, how wide its interval is and how much budget it spent."""
        report = getattr(self.progress, "converging", None)  # progress objects written before it lack it
        if report is not None:
            label = state.planned.trial.label + (f" ({state.side.label})" if state.side.label else "")
            report(label, state.halfwidth(), state.side.settings["target"], state.measuring_s,
                   state.side.settings["budget_s"])

    def _feeds(self, tmp: Path, state: TrialState) -> Path | None:
        p, side = state.planned, state.side
        path = tmp / f"{state.tag}-{p.key}.feeds.npz"
        np.savez(path, **trial_feeds(side.loaded, side.versions[p.trial.version].path, p.trial))
        return path

    def _job(self, tmp: Path, state: TrialState, mode: str, tag: str) -> WorkerJob:
        version = state.side.versions[state.planned.trial.version]
        work = tmp / f"{state.tag}-{state.planned.key}-{tag}"
        work.mkdir(exist_ok=True)
        return WorkerJob(mode=mode, model_path=str(version.path), original_model_path=str(version.path),
                         config=state.planned.trial.config.as_dict(), feeds_path=str(state.feeds),
                         measure=state.side.settings, work_dir=str(work),
                         decoder=dataclasses.asdict(state.decoder) if state.decoder is not None else None,
                         engine=state.side.loaded.spec.models[state.planned.trial.version].engine or "onnxruntime")

    def _one_process(self, tmp: Path, state: TrialState, rnd: int, name: str | None = None) -> None:
        job = self._measure_job(tmp, state, rnd, name)
        started = time.monotonic()
        result = children.run_child(job, timeout_s=state.side.settings["timeout_s"])
        self._take(state, job, result, rnd, children.measured_s(started, result))

    def _pair_process(self, tmp: Path, states: tuple[TrialState, ...], rnd: int) -> None:
        """A pair's round in one process that measures both together (generator.runner.interleave); each trial
        is charged half of its measuring time. When that process failed (one model crashed it, ran out of memory
        beside the other, or hung), the round is measured again one process each, so that a failure is the
        trial's whose model fails alone and the other keeps its rounds."""
        jobs = tuple(self._measure_job(tmp, st, rnd) for st in states)
        started = time.monotonic()
        results = children.run_pair(jobs, timeout_s=sum(st.side.settings["timeout_s"] for st in states))
        spent = children.measured_s(started, results[0]) / len(states)
        if any(r.error for r in results):
            for state in states:
                state.measuring_s += spent
                state.apart = True
                self._one_process(tmp, state, rnd, f"m{rnd}s")
            return
        for state, job, result in zip(states, jobs, results, strict=True):
            self._take(state, job, result, rnd, spent)

    def _measure_job(self, tmp: Path, state: TrialState, rnd: int, name: str | None = None) -> WorkerJob:
        job = self._job(tmp, state, "measure", name or f"m{rnd}")
        if rnd < min(state.side.settings["repeats"], PROFILE_ROUNDS) and state.decoder is None:
            job = self._profiling(tmp, state, job)
        return job

    def _take(self, state: TrialState, job: WorkerJob, result: children.ChildResult, rnd: int,
              spent_s: float) -> None:
        """A measurement process's answer: its figures (or the trial's error) and its profile."""
        state.measuring_s += spent_s
        if result.error:
            state.error = result.error
            return
        config = state.planned.trial.config
        applies = clean.applies(config.threads, config.concurrency, state.side.env.logical_cores)
        state.processes.append(children.process_outcome(
            result.output, process=len(state.processes), rnd=rnd, rule_applies=applies,
            concurrency=config.concurrency))
        self._take_profile(state, job, result, rnd)

    def _profiling(self, tmp: Path, state: TrialState, job: WorkerJob) -> WorkerJob:
        """`job` profiling after its timed loop (the first rounds' processes); the first to succeed with
        `profile_full` maps the nodes and records the static analysis, the timeline and the outputs."""
        full = state.profile is None
        job = dataclasses.replace(job, profile_requests=int(state.side.settings["profile_iterations"]),
                                  profile_full=full, calibration_model=str(self.calibration))
        outputs = full and state.record_outputs and state.outputs_error is None and state.outputs_while_profiling
        return self._with_outputs(tmp, state, job) if outputs else job

    def _take_profile(self, state: TrialState, job: WorkerJob, result: children.ChildResult, rnd: int) -> None:
        if result.profile is None:
            if result.profile_error:
                state.profile_errors.append(result.profile_error)
            # The outputs may be what failed it: later processes profile without them, and the outputs get a
            # process of their own after the rounds (_outputs), so that they never cost the trial its profile.
            state.outputs_while_profiling = state.outputs_while_profiling and not job.record_outputs
            return
        state.profiled.append(profiles.ProfiledProcess.from_output(result.profile, rnd))
        if job.profile_full:
            state.profile = result.profile
            if job.record_outputs:
                self._take_outputs(state, result.profile.get("outputs_error"), result.profile)

    def _profile(self, tmp: Path, state: TrialState, record_outputs: bool = False) -> None:
        """The profiled pass; for a trial the agreement check compares, it records the outputs too (a process
        start saved a trial: about half a second on 2 cores, 2026-11-27). Should that pass fail, the outputs may
        be what failed it (more runs in one process, under one timeout): it runs again without them, and the
        outputs get a process of their own (_outputs), so that they never cost the trial its profile."""
        job = self._job(tmp, state, "profile", "profile").single_stream()
        timeout_s = state.side.settings["timeout_s"]
        result = children.run_child(self._with_outputs(tmp, state, job) if record_outputs else job,
                                    timeout_s=timeout_s)
        if result.error and record_outputs:
            result = children.run_child(job, timeout_s=timeout_s)
            record_outputs = False
        if result.error:
            state.profile_error = result.error
            return
        state.profile = result.output
        state.profiled.append(profiles.ProfiledProcess.from_output(result.output))
        if record_outputs:
            self._take_outputs(state, result.output.get("outputs_error"), result.output)

    def _with_outputs(self, tmp: Path, state: TrialState, job: WorkerJob) -> WorkerJob:
        """`job` recording the outputs on the trial's feeds and the extra batches (outputs mode, or a profiled
        pass's record_outputs)."""
        extra = tuple(str(p) for p in self._extra_feeds(tmp, state))
        return dataclasses.replace(job, extra_feeds_paths=extra,
                                   record_outputs=job.mode == "profile" or job.profile_full)

    def _agreement(self, tmp: Path, side: Side, states: list[TrialState]) -> dict[str, list[dict]]:
        """Agreement rows by trial key: each ok trial against its reference versions measured in this group.
        A version whose outputs could not be recorded gets no rows, and its trial stays ok."""
        ok = _ok(states)
        pairs = agreement.agreement_pairs(side.loaded.spec, ok)
        # A generative trial's outputs process also gives its peak memory, the version alone in a process: every
        # version gets one (its measuring processes held the configuration's every version).
        wanted = ok if side.loaded.spec.generate is not None else {v for pair in pairs for v in pair}
        outputs = {v: self._outputs(tmp, ok[v]) for v in wanted}
        if side.loaded.spec.generate is not None and ok:
            self._phase_profiles(tmp, list(ok.values()))
        rows: dict[str, list[dict]] = {}
        for version, reference in pairs:
            mine, theirs = outputs.get(version), outputs.get(reference)
            if mine is not None and theirs is not None:
                key = ok[version].planned.key
                made = agreement.generation_rows(key, version, reference, theirs[0], mine[0]) \
                    if ok[version].decoder is not None else agreement.agreement_rows(key, version, reference, theirs,
                                                                                    mine)
                rows.setdefault(key, []).extend(made)
        return rows

    def _phase_profiles(self, tmp: Path, states: list[TrialState]) -> None:
        """Where each generative version's time goes (`phase_ops`, `phase_nodes`): a configuration's versions
        profiled in one process, pass by pass in turn, as their requests are timed. A failure is said and costs
        the trials nothing else."""
        jobs = tuple(self._job(tmp, st, "phases", "phases") for st in states)
        timeout = sum(st.side.settings["timeout_s"] for st in states)
        results = children.run_pair(jobs, timeout) if len(jobs) > 1 else (children.run_child(jobs[0], timeout),)
        for state, result in zip(states, results, strict=True):
            found = result.output if result.error is None else {}
            state.phase_ops = list(found.get("phase_ops") or [])
            state.phase_nodes = list(found.get("phase_nodes") or [])
            if result.error is not None:
                self.progress.message(f"No prefill and decode profile for {state.planned.trial.label}: "
                                      f"{result.error}")

    def _outputs(self, tmp: Path, state: TrialState) -> list[dict[str, np.ndarray]] | None:
        """The trial's outputs on its feeds and the extra batches, one dict per batch; None when they failed.
        Its profiled pass recorded them; an outputs process of their own when that pass failed."""
        if state.outputs is not None or state.outputs_error is not None:
            return state.outputs
        job = self._with_outputs(tmp, state, self._job(tmp, state, "outputs", "outputs").single_stream())
        result = children.run_child(job, timeout_s=state.side.settings["timeout_s"])
        self._take_outputs(state, result.error, result.output)
        return state.outputs

    def _take_outputs(self, state: TrialState, error: str | None, output: dict) -> None:
        state.outputs_error = error
        state.alone_peak_rss_mb = (output or {}).get("peak_rss_mb")
        if error is None:
            state.outputs, state.outputs_error = _load_outputs(output)
        if state.outputs_error is not None:
            self.progress.message(f"No output agreement for {state.planned.trial.label}: {state.outputs_error}")

    def _extra_feeds(self, tmp: Path, state: TrialState) -> list[Path]:
        p, side = state.planned, state.side
        with np.load(state.feeds, allow_pickle=False) as npz:
            base = {name: npz[name] for name in npz.files}
        paths = []
        for seed in range(1, AGREEMENT_EXTRA_BATCHES + 1):
            feeds = trial_feeds(side.loaded, side.versions[p.trial.version].path, p.trial, seed)
            if agreement.same_arrays(feeds, base):
                break  # fixed values and files: every seed gives the same batch, which would count twice
            paths.append(tmp / f"{state.tag}-{p.key}.feeds{seed}.npz")
            np.savez(paths[-1], **feeds)
        return paths

    def _write(self, state: TrialState, agreement_rows: list[dict] | None = None) -> None:
        p, side = state.planned, state.side
        files = trial_files(state, agreement_rows)
        if files.trial["status"] != "ok":
            side.summary.failed.append((p.trial.label, files.trial["error"]))
        side.results.write_trial(files)
        side.summary.measured.append(p.key)
        if files.trial.get("budget_exhausted"):
            side.summary.exhausted.append(p.trial.label)
        self.progress.trial_done(p.trial, files.trial["status"])


def _paired_order(states: list[TrialState]) -> list[TrialState]:
    """Link each candidate trial to the baseline trial of the same version (one group: one configuration), and
    order the group so that the two members of a pair run next to each other in every round."""
    baseline = {st.planned.trial.version: st for st in states if st.side.label == "baseline"}
    for st in states:
        twin = baseline.get(st.planned.trial.version) if st.side.label == "candidate" else None
        if twin is not None and twin.pair is None:
            pair_id = uuid.uuid4().hex[:16]
            st.pair, twin.pair = twin, st
            st.pair_id = twin.pair_id = pair_id
    ordered: list[TrialState] = []
    for st in states:
        if st not in ordered:
            ordered += [st] if st.pair is None or st.pair in ordered else [st, st.pair]
    return ordered


def _together(state: TrialState, runnable: list[TrialState]) -> tuple[TrialState, TrialState] | None:
    """The two trials of a pair to measure in one process this round (generator.runner.interleave: two processes
    one after the other saw host speeds seconds apart), in their round's order (the baseline first in even
    rounds, the candidate in odd ones, by their order in `runnable`), or None: not a pair, its partner done
    measuring, several requests in flight (the two sessions' streams would contend), or a process that measured
    them together failed before."""
    partner = state.pair
    if partner is None or partner not in runnable or state.apart or partner.apart:
        return None
    if state.planned.trial.config.concurrency != 1 or partner.planned.trial.config.concurrency != 1:
        return None
    return (state, partner)


def _generative_group(state: TrialState, runnable: list[TrialState], done: list[TrialState],
                      rnd: int) -> tuple[TrialState, ...] | None:
    """A generative trial's round with its configuration's other versions (of its side, not a paired run's
    twins), in one process that generates with each in turn (generator.runner.generative): their TTFT and TPOT
    ratios are then made of requests moments apart. The order turns by one version a round, so that each is
    loaded first (its cold start measured) in its turn. None for a trial that is not generative, or alone."""
    if state.decoder is None or state.pair is not None or state.apart:
        return None
    group = tuple(st for st in runnable if st.side is state.side and st.decoder is not None and st.pair is None
                  and not st.apart and st not in done)
    turn = rnd % len(group) if group else 0
    return group[turn:] + group[:turn] if len(group) >= 2 else None


def _ok(states: list[TrialState]) -> dict[str, TrialState]:
    """The trials measured (no error, a process at least) by version: those the agreement check compares."""
    return {s.planned.trial.version: s for s in states if s.error is None and s.processes}


def _compared(side: Side, trials: Mapping[str, object]) -> set[str]:
    """The versions whose outputs the agreement check compares, of those given."""
    return {v for pair in agreement.agreement_pairs(side.loaded.spec, trials) for v in pair}


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
