"""`perfsite run SPEC --ray [ADDRESS] [--target NAME]`: the sweep fanned out on a Ray cluster.

The driver (this module) plans the trials as a local run does (generator.runner.orchestrate), then sends one
*configuration group* (one configuration with all its versions, measured interleaved as locally) per Ray task,
for each target (docs/ray.md). A task asks for one unit of the `perfsite_node` resource, which each node offers
once: a node measures one group at a time and nothing else meanwhile, so two measurements never share its cores.
A target is a custom resource `target:NAME` the nodes of that kind offer; a task asks for a sliver of it, so it
routes without limiting anything.

The node measures with the local sweep's code and answers with the files it wrote
(generator.runner.cluster_work); the driver renames each into the store as it arrives, each trial's row last,
so an interrupted run keeps every group that finished. A node that dies mid-group (the worker process or the
whole node) loses only that group: Ray runs the task again (`MAX_RETRIES`), on the same kind of machine.

Ray is imported only here, in functions, so that every other command runs without it installed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import generator
from generator.errors import PerfsiteError, RayMissingError, RunError
from generator.machine.environment import capture_environment
from generator.plan import Configuration, Trial
from generator.results.store import ResultsDir
from generator.runner.cluster_work import GroupJob, GroupResult, ShippedFile, measure_group_on_node
from generator.runner.orchestrate import (
    check_one_spec_per_name,
    estimate_trial_s,
    is_quick,
    keyed_inputs,
    longest_trial_s,
    measure_settings,
    planned_versions,
    start_run,
    stored_keys,
    sweep_trials,
)
from generator.runner.ray_address import ALLOWED, AUTO, check_ray_address, check_ray_head
from generator.runner.sides import PlannedTrial, Progress, RunOptions, RunSummary, SilentProgress
from generator.runner.sweep import check_feeds
from generator.spec import LoadedSpec
from generator.versions import ModelVersion

NODE_RESOURCE = "perfsite_node"
# How often a run waiting for its groups looks whether their targets still have a live node (two looks in a
# row without one cancel the groups: Ray would keep them pending for good).
NODE_CHECK_S = 10.0
TARGET_PREFIX = "target:"
# A task asks for this much of its target: enough to route it, too little to limit how many tasks the target's
# nodes run (NODE_RESOURCE alone does that, one per node).
TARGET_SHARE = 0.001
# Ray runs a task again when its worker process or node dies (not when the task raises): a group on a node that
# crashes, is preempted or runs out of memory is measured again, up to this many times.
MAX_RETRIES = 3
ADDRESS_ENV = "RAY_ADDRESS"
NO_TARGET = None  # any node offering NODE_RESOURCE


@dataclass
class FanOut:
    """A sweep planned for a cluster: its jobs (one per configuration and target), and what is known so far."""

    loaded: LoadedSpec
    results: ResultsDir
    jobs: list[GroupJob]
    files: dict[ShippedFile, Path]
    summary: RunSummary
    results_by_job: dict[int, GroupResult] = field(default_factory=dict)


def run_on_ray(loaded: LoadedSpec, options: RunOptions, progress: Progress | None = None) -> RunSummary:
    """Plan the sweep here, measure its configuration groups on the cluster's nodes, store what they send."""
    progress = progress or SilentProgress()
    ray = None if options.dry_run else import_ray()  # before building versions: a dry run needs no Ray
    # Before building versions too: an address that is no Ray head fails in seconds, not after quantizing.
    address = None if ray is None else reachable_address(options.ray)
    fan = plan_fan_out(loaded, options, progress)
    if ray is None or address is None or not fan.jobs:
        return fan.summary
    connect(ray, address)
    try:
        nodes = check_nodes(ray, {job.target for job in fan.jobs}, address)
        fan.results.ensure_writable()
        _measure(ray, fan, progress, nodes)
    finally:
        ray.shutdown()
    return fan.summary


def import_ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError as e:
        if e.name != "ray":
            raise
        raise RayMissingError() from e
    return ray


def chosen_targets(loaded: LoadedSpec, target: str | None) -> tuple[str | None, ...]:
    """--target narrows the spec's `targets:` to one (or names one when the spec lists none); neither: any node."""
    listed = loaded.spec.targets
    if target is not None and listed and target not in listed:
        raise RunError(f"--target {target} is not among the targets {loaded.path} lists (`targets: "
                       f"[{', '.join(listed)}]`). Allowed: one of those, or no --target to measure on all of them.")
    if target is not None:
        return (target,)
    return tuple(listed) or (NO_TARGET,)


def plan_fan_out(loaded: LoadedSpec, options: RunOptions, progress: Progress) -> FanOut:
    """The jobs of the sweep, without a cluster: trials as a local run plans them, grouped by configuration, for
    each target; model versions prepared here (they are shipped to the nodes as bytes)."""
    targets = chosen_targets(loaded, options.target)
    quick = is_quick(options.quick)
    settings = measure_settings(loaded, quick)
    results = ResultsDir(options.results_dir)
    check_one_spec_per_name(results, loaded)
    trials = sweep_trials(loaded, options.only)
    versions = planned_versions(loaded, options, progress)
    check_feeds(loaded, {name: v.path for name, v in versions.items()}, trials)
    files = _shipped_files(loaded, versions)
    stored = frozenset() if options.force else frozenset(stored_keys(results, progress))
    jobs = [GroupJob(loaded, config, group, target, versions, tuple(files), keyed_inputs(loaded), settings, quick,
                     stored, "", generator.__version__)
            for target in targets for config, group in _by_configuration(trials)]
    planned = [PlannedTrial(t, "", False) for job in jobs for t in job.trials]
    summary = RunSummary(loaded.spec.name, results.path, planned, estimate_trial_s(settings) * len(planned),
                         longest_s=longest_trial_s(settings) * len(planned))
    return FanOut(loaded, results, jobs, files, summary)


def _by_configuration(trials: Sequence[Trial]) -> list[tuple[Configuration, tuple[Trial, ...]]]:
    groups: dict[Configuration, list[Trial]] = {}
    for t in trials:
        groups.setdefault(t.config, []).append(t)
    return [(config, tuple(group)) for config, group in groups.items()]


def _shipped_files(loaded: LoadedSpec, versions: dict[str, ModelVersion]) -> dict[ShippedFile, Path]:
    """Every file a node needs: each version's model file and external data, and the spec's input files."""
    import onnx

    from generator.versions.checks import external_data_files

    files: dict[ShippedFile, Path] = {}
    for name, version in versions.items():
        files[ShippedFile("model", name, version.path.name)] = version.path
        model = onnx.load(str(version.path), load_external_data=False)
        folder = version.path.parent.resolve()
        for extra in external_data_files(model, version.path, f"models.{name}"):
            files[ShippedFile("model", name, extra.relative_to(folder).as_posix())] = extra
    for i, (name, entry) in enumerate(loaded.spec.inputs.items()):
        if getattr(entry, "file", None) is not None:
            path = loaded.resolve(entry.file, f"inputs.{name}.file", must_exist=True)
            files[ShippedFile("input", name, f"{i}{path.suffix}")] = path
    return files


def reachable_address(address: str | None) -> str:
    """The cluster's address (`auto`: $RAY_ADDRESS, else the cluster this machine belongs to), checked to be a
    Ray head when it names one: Ray's own connection to a port nothing listens on, or where something else
    listens, retries for minutes and prints Ray's log lines meanwhile; this fails within seconds."""
    if address in (None, "", AUTO):
        wanted, given = os.environ.get(ADDRESS_ENV) or AUTO, f"${ADDRESS_ENV}"
    else:
        wanted, given = address, "--ray"
    head = check_ray_address(wanted, given)
    why = check_ray_head(head) if head is not None else None
    if why is not None:
        raise RunError(_cannot_connect(wanted, why))
    return wanted


def connect(ray: Any, address: str) -> None:
    """Join the cluster at `address` as its driver; never start one (a sweep on a throwaway one-machine cluster
    is a local run with extra steps)."""
    try:
        # Driver logs off: the nodes' messages come back in each answer and go through the progress output.
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as e:
        raise RunError(_cannot_connect(address, _first_line(e))) from e


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else type(error).__name__


def _cannot_connect(address: str, why: str) -> str:
    client = (" A ray:// address goes through Ray Client, which needs `pip install 'ray[client]'`."
              if address.startswith("ray://") else "")
    where = f"this machine's cluster (${ADDRESS_ENV} is not set)" if address == AUTO else address
    return f"Cannot connect to the Ray cluster at {where}: {why}.{client} {ALLOWED}"


def check_nodes(ray: Any, targets: set[str | None], address: str) -> dict[str | None, int]:
    """How many live nodes can measure each target; none is an error naming what the cluster offers."""
    alive, measuring = _measuring_nodes(ray)
    offered = sorted(_offered(measuring))
    counts = {t: sum(1 for r in measuring if t is None or TARGET_PREFIX + t in r) for t in targets}
    for target, n in sorted(counts.items(), key=lambda item: str(item[0])):
        if n == 0:
            raise RunError(_no_node_message(target, address, offered, alive))
    return counts


def _measuring_nodes(ray: Any) -> tuple[int, list[dict[str, float]]]:
    """How many nodes are alive, and the resources of those perfsite may measure on."""
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    return len(nodes), [r for r in nodes if r.get(NODE_RESOURCE, 0) >= 1]


def _offered(measuring: list[dict[str, float]]) -> set[str]:
    return {k[len(TARGET_PREFIX):] for r in measuring for k in r if k.startswith(TARGET_PREFIX)}


def _no_node_message(target: str | None, address: str, offered: list[str], alive: int) -> str:
    start = f"ray start --address HEAD:PORT --resources '{{\"{NODE_RESOURCE}\": 1"
    if target is None:
        return (f"No node of the Ray cluster at {address} ({alive} alive) offers the `{NODE_RESOURCE}` resource "
                f"that marks a machine perfsite may measure on. Start each measuring node with `{start}}}'` "
                "(docs/ray.md).")
    return (f"No node of the Ray cluster at {address} offers target {target} (resource `{TARGET_PREFIX}{target}` "
            f"beside `{NODE_RESOURCE}`). Targets offered: {', '.join(offered) or 'none'}. Start the machines of "
            f"that kind with `{start}, \"{TARGET_PREFIX}{target}\": 1}}'`, or choose another --target.")


def _measure(ray: Any, fan: FanOut, progress: Progress, nodes: dict[str | None, int]) -> None:
    run_id = start_run(fan.results, fan.loaded, capture_environment(), fan.jobs[0].quick)
    refs = {f: ray.put(path.read_bytes()) for f, path in fan.files.items()}
    task = ray.remote(measure_group_on_node)
    pending = {}
    for i, job in enumerate(fan.jobs):
        job = fan.jobs[i] = replace(job, run_id=run_id)  # the run row exists once the cluster answered
        options = task.options(num_cpus=0, max_retries=MAX_RETRIES, resources=_resources(job.target))
        pending[options.remote(job, *[refs[f] for f in job.files])] = i
    parallel = max(1, min(sum(nodes.values()), len(fan.jobs)))
    progress.start(len(fan.summary.planned), fan.summary.estimate_s / parallel, upper_bound=True)
    gone: set[str | None] = set()  # targets no live node offered at the last look
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=NODE_CHECK_S)
            if done:
                _collect(ray, fan, pending.pop(done[0]), done[0], progress)
                continue
            gone = _drop_orphans(ray, fan, pending, gone, progress)
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        fan.summary.interrupted = True
    fan.summary.planned = _planned(fan)


def _live_targets(ray: Any) -> set[str | None]:
    """The targets some live measuring node offers (None: any measuring node)."""
    return {None, *_offered(_measuring_nodes(ray)[1])}


def _drop_orphans(ray: Any, fan: FanOut, pending: dict, gone: set[str | None], progress: Progress) -> set:
    """Groups waiting for a target that no live node has offered at two looks in a row (its only node left the
    cluster): Ray would keep them pending for good, the run waiting with them. They are cancelled and their
    trials reported failed, never stored; the others go on. Returns the targets missing at this look."""
    live = _live_targets(ray)
    missing = {fan.jobs[i].target for i in pending.values()} - live
    for ref, i in list(pending.items()):
        job = fan.jobs[i]
        if job.target in missing and job.target in gone:
            ray.cancel(ref, force=True)
            del pending[ref]
            where = f"{job.config.label} on {job.target or 'any node'}"
            reason = (f"no live node of the cluster offers target {job.target or '(any)'} any more (its node left "
                      "the cluster while the run waited for it)")
            fan.summary.failed += [(f"{t.label} ({where})", reason) for t in job.trials]
            fan.summary.unstored_failures += len(job.trials)
            for t in job.trials:
                progress.trial_done(t, "failed")
    return missing


def _resources(target: str | None) -> dict[str, float]:
    return {NODE_RESOURCE: 1, **({TARGET_PREFIX + target: TARGET_SHARE} if target else {})}


def _collect(ray: Any, fan: FanOut, index: int, ref: Any, progress: Progress) -> None:
    """Store one group's files as they came (each trial's row last) and report its trials."""
    job = fan.jobs[index]
    where = f"{job.config.label} on {job.target or 'any node'}"
    try:
        result: GroupResult = ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        if isinstance(getattr(e, "cause", None), PerfsiteError):
            raise e.cause from None  # the user's input, as a local run reports it
        raise
    except ray.exceptions.RayError as e:  # the worker or node died more often than MAX_RETRIES
        reason = f"the Ray task measuring it failed {MAX_RETRIES + 1} times: {str(e).strip().splitlines()[0]}"
        fan.summary.failed += [(f"{t.label} ({where})", reason) for t in job.trials]
        fan.summary.unstored_failures += len(job.trials)
        for t in job.trials:
            progress.trial_done(t, "failed")
        return
    for name, data in result.files:
        fan.results.write_file(name, data)
    fan.results_by_job[index] = result
    _report(fan, job, result, where, progress)


def _report(fan: FanOut, job: GroupJob, result: GroupResult, where: str, progress: Progress) -> None:
    summary = fan.summary
    node = (result.node_id or "?")[:12]
    host = result.hostname or "unknown host"
    if result.measured or result.failed:
        progress.message(f"{where}: measured on node {node} ({host})")
    else:
        progress.message(f"{where}: nothing to measure, node {node} ({host}) found its trials stored")
    if result.perfsite_version != job.perfsite_version:
        progress.message(f"Warning: node {node} runs perfsite {result.perfsite_version}, this machine "
                         f"{job.perfsite_version}; install the same version on every node.")
    for line in result.messages:
        progress.message(f"{where}: {line}")
    summary.measured += list(result.measured)
    summary.failed += list(result.failed)
    summary.exhausted += list(result.exhausted)
    failed = {label for label, _ in result.failed}
    for t in job.trials:
        stored = result.keys[t] not in result.measured
        progress.trial_done(t, "stored" if stored else "failed" if t.label in failed else "ok")


def _planned(fan: FanOut) -> list[PlannedTrial]:
    """The trials with the keys their nodes gave them; a group no node answered keeps an empty key."""
    planned = []
    for i, job in enumerate(fan.jobs):
        result = fan.results_by_job.get(i)
        for t in job.trials:
            key = result.keys[t] if result else ""
            planned.append(PlannedTrial(t, key, bool(result) and key not in result.measured))
    return planned
