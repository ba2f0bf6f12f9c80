"""One configuration group measured on a Ray node: what the driver sends (`GroupJob`), what the node answers
(`GroupResult`), and the function the node runs (`measure_group_on_node`).

The node measures with the sweep a local run uses (generator.runner.sweep: interleaved adaptive rounds, the
profiled passes, the agreement check) into a results folder of its own, in a temporary directory, and answers
with the bytes of the files it wrote; the driver renames them into the real store (generator.runner.cluster).
So a trial measured on a cluster has the same files, schema and write order as one measured locally.

What must come from the machine that measures, comes from it: the environment and its fingerprint (and so every
trial key), and the machine's limits (its own probe cache). What must be the driver's, comes from the driver:
the spec, the planned trials, the model files as prepared (shipped as bytes: a node downloads nothing and needs
no shared filesystem), input files, and which keys are already stored.

This module does not import Ray at load time: the driver module holds every Ray call but the node id lookup.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import generator
from generator.errors import RunError
from generator.machine.environment import capture_environment
from generator.machine.probe import ensure_limits
from generator.plan import Configuration, Trial, trial_key
from generator.processes import owned_tempdir
from generator.results.store import TRIAL_TABLES, ResultsDir
from generator.runner.generative import version_engines
from generator.runner.orchestrate import UNKEYED_SETTINGS
from generator.runner.sides import PlannedTrial, RunSummary, Side, SilentProgress
from generator.runner.sweep import SweepContext
from generator.spec import LoadedSpec
from generator.versions import ModelVersion


@dataclass(frozen=True)
class ShippedFile:
    """One file the node needs, sent as bytes: a version's model file (or its external data, `name` relative to
    the model's folder) or an input file of the spec."""

    kind: str  # "model" or "input"
    owner: str  # the version name or the input name
    name: str  # file name: relative to the version's folder for a model, the suffix-keeping name of an input


@dataclass(frozen=True)
class GroupJob:
    """One configuration with all its versions, for one target: everything a node needs besides file bytes."""

    loaded: LoadedSpec
    config: Configuration
    trials: tuple[Trial, ...]
    target: str | None
    versions: Mapping[str, ModelVersion]
    files: tuple[ShippedFile, ...]  # in the order of the byte blobs given with the job
    keyed_inputs: Mapping[str, Any]
    settings: Mapping[str, Any]
    quick: bool
    stored: frozenset[str]  # trial keys the store holds (ok and whole): not measured again
    run_id: str
    perfsite_version: str


@dataclass(frozen=True)
class GroupResult:
    """What a node answers: its identity, and the files it wrote, each trial's side tables before its row."""

    node_id: str | None
    hostname: str | None
    env_id: str
    perfsite_version: str
    files: tuple[tuple[str, bytes], ...]  # (path inside the experiment folder, bytes), in write order
    keys: Mapping[Trial, str]  # every trial of the job, measured or found stored
    measured: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    exhausted: tuple[str, ...]
    messages: tuple[str, ...] = field(default=())


class _Notes(SilentProgress):
    """The sweep's messages on the node, kept for the driver to show (a Ray task has no terminal)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def measure_group_on_node(job: GroupJob, *blobs: bytes) -> GroupResult:
    """Measure the job's trials that are not stored yet, on this node, and answer with the files written."""
    notes = _Notes()
    said = normal_priority()
    if said:
        notes.message(said)
    with owned_tempdir("perfsite-ray-") as folder:
        tmp = Path(folder).resolve()  # the spec's root and folder compare as real paths
        env = ensure_limits(capture_environment(), job.quick, warn=notes.message)
        engines = version_engines(job.loaded)
        keys = {t: _key(job, t, env.fingerprint, engines[t.version]) for t in job.trials}
        todo = [PlannedTrial(t, keys[t], False) for t in job.trials if keys[t] not in job.stored]
        store = ResultsDir(tmp / "store")
        summary = RunSummary(job.loaded.spec.name, store.path, todo, 0.0)
        if todo:
            side = Side(_local_spec(job, tmp, blobs), store, env, _local_versions(job, tmp, blobs), dict(job.settings),
                        job.quick, job.run_id, summary, set(), target=job.target, node_id=_node_id())
            store.write_row("environments", env.env_id, env.row())
            SweepContext(notes).measure_group(job.config, [(side, p) for p in todo])
        return GroupResult(
            node_id=_node_id(), hostname=env.hostname, env_id=env.env_id, perfsite_version=generator.__version__,
            files=_written(store, env.env_id, summary.measured), keys=keys, measured=tuple(summary.measured),
            failed=tuple(summary.failed), exhausted=tuple(summary.exhausted), messages=tuple(notes.lines))


def normal_priority() -> str | None:
    """Measure at normal priority: Ray starts its workers at niceness 15 (its `worker_niceness` setting), and the
    measuring processes inherit it, so any neighbour at normal priority on the node took the CPU from them, mid-
    request (a busy node's figures were the neighbour's). The niceness goes back to 0 for this thread, whose
    children are the probe and the measuring processes; lowering it needs the right to (root, CAP_SYS_NICE).
    Without it, a warning for the run says how to start the node instead. None when nothing needs saying."""
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    if niceness <= 0:
        return None
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
        return None
    except OSError:
        return (f"Warning: this node measures at niceness {niceness} (Ray's worker_niceness), and perfsite may not "
                "lower it: any process at normal priority on the node takes the CPU from the measurement. Start "
                "the node with RAY_worker_niceness=0 in the environment of `ray start` (docs/ray.md).")


def _key(job: GroupJob, trial: Trial, env_fingerprint: str, engine: str | None) -> str:
    version = job.versions[trial.version]
    return trial_key(trial, model_sha256=version.sha256, inputs=job.keyed_inputs,
                     measure={k: v for k, v in job.settings.items() if k not in UNKEYED_SETTINGS},
                     quick=job.quick, env_fingerprint=env_fingerprint, target=job.target,
                     engine=engine)


def _node_id() -> str | None:
    import ray  # on a node, inside a Ray task: Ray is there

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None


def _save(tmp: Path, folder: str, name: str, data: bytes) -> Path:
    """Write a shipped file under tmp/folder; `name` comes from the driver and must stay inside."""
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise RunError(f"The driver shipped the file name {name!r}, which leaves the node's work folder.")
    path = tmp / folder / Path(*rel.parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _local_versions(job: GroupJob, tmp: Path, blobs: tuple[bytes, ...]) -> dict[str, ModelVersion]:
    """The job's versions with their files written on this node (the model first, its external data beside)."""
    paths: dict[str, Path] = {}
    for shipped, data in zip(job.files, blobs, strict=True):
        if shipped.kind == "model":
            path = _save(tmp, f"models/{job.versions[shipped.owner].sha256}", shipped.name, data)
            paths.setdefault(shipped.owner, path)
    return {name: dataclasses.replace(v, path=paths[name]) for name, v in job.versions.items() if name in paths}


def _local_spec(job: GroupJob, tmp: Path, blobs: tuple[bytes, ...]) -> LoadedSpec:
    """The job's spec as if it sat in tmp: input files written there and named by the spec relative to it. The
    sha256 stays the driver's (the spec measured is the same one; only where its files live changed)."""
    spec = job.loaded.spec
    inputs = dict(spec.inputs)
    for shipped, data in zip(job.files, blobs, strict=True):
        if shipped.kind == "input":
            _save(tmp, "inputs", shipped.name, data)
            inputs[shipped.owner] = inputs[shipped.owner].model_copy(update={"file": f"inputs/{shipped.name}"})
    return dataclasses.replace(job.loaded, spec=spec.model_copy(update={"inputs": inputs}),
                               path=tmp / "spec.yaml", root=tmp, allow_outside=False)


def _written(store: ResultsDir, env_id: str, measured: list[str]) -> tuple[tuple[str, bytes], ...]:
    """The files the sweep wrote, in the order the driver must rename them: the environment, then per trial its
    side tables and, last, its `trials` row (the commit point)."""
    names = [f"environments/{env_id}.parquet"] if measured else []
    for key in measured:
        names += [f"{table}/{key}.parquet" for table in (*TRIAL_TABLES, "trials")]
    return tuple((name, (store.path / name).read_bytes()) for name in names if (store.path / name).is_file())
