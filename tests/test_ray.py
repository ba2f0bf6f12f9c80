"""`perfsite run --ray`: a real Ray cluster on loopback, started with `ray start` as docs/ray.md tells users.

One head (no measuring resource: the driver's machine) and two measuring nodes, one per target, started once for
this module; only their processes are stopped at the end (each `ray start` runs in a process group of its own,
never `ray stop`, which would stop every Ray on the machine). The nodes share this machine's cores: the tests
check routing, keys, schema and what survives a killed worker, never timing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.cli import Started, in_forks, perfsite, start_perfsite, write_spec

from generator.models.builder import model_bytes, write_if_changed
from generator.models.chain import build_chain
from generator.results.schema import TABLES
from generator.results.store import ResultsDir
from generator.runner.ray_address import RayAddress, check_ray_head

ray = pytest.importorskip("ray")  # the ray extra is in `test`; a bare install runs everything but this module

RAY_CLI = Path(sys.executable).with_name("ray")
TARGETS = ("a", "b")
SPEC = """\
    name: tiny
    models:
      m: {{path: chain.onnx}}
    inputs:
      input: {{shape: [batch, 8], dtype: float32}}
    sweep: {{batch: {batches}}}
    measure: {{warmup: 1, min_iterations: 2, min_seconds: 0.0, repeats: 1, profile_iterations: 1, target: 0.5,
              budget_s: 0.01}}
    {extra}
    """


@dataclass
class Cluster:
    address: str
    groups: list[int]  # the process group of each `ray start` (its daemons stay in it)
    env: dict[str, str]
    lookup: subprocess.Popen  # asks Ray for its nodes' resources, in the background (a driver takes seconds)

    @functools.cached_property
    def nodes(self) -> dict[str, str]:
        """target -> node id, from Ray's own view of the nodes (not from perfsite)."""
        out, err = self.lookup.communicate(timeout=60)
        nodes = json.loads(out.strip().splitlines()[-1]) if out.strip() else pytest.fail(err)
        return {k.split(":", 1)[1]: node for node, keys in nodes.items() for k in keys if k.startswith("target:")}


def _free_ports(n: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


PORT_OPTIONS = ("--node-manager-port", "--object-manager-port", "--metrics-export-port", "--runtime-env-agent-port",
                "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port")
WORKER_PORTS = 12  # worker processes of a node (each listens on one)


def _ray_start(args: list[str], ports: list[int], env: dict, log: Path) -> subprocess.Popen:
    """`ray start` in a process group of its own. Every port is named and distinct (`ports` come from one
    `_free_ports` call): nodes starting at once on one machine otherwise race for the same free port. No log
    monitor (a Python process per node, seconds of CPU in a run): it sends the workers' output to drivers, and
    perfsite's driver asks for none (it joins with log_to_driver=False)."""
    named = [f"{name}={port}" for name, port in zip(PORT_OPTIONS, ports, strict=False)]
    workers = ",".join(map(str, ports[len(PORT_OPTIONS):]))
    cmd = [str(RAY_CLI), "start", "--node-ip-address", "127.0.0.1",
           "--object-store-memory", "100000000", "--disable-usage-stats", "--include-log-monitor=false", *named,
           f"--worker-port-list={workers}", *args]
    return subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for_gcs(head: subprocess.Popen, gcs: int, log: Path) -> None:
    """Until the head's GCS answers as a Ray head does (the driver's own check): the measuring nodes join
    through it. Their `ray start` (seconds of importing Ray) then overlaps the rest of the head's start-up."""
    deadline = time.monotonic() + 60
    while check_ray_head(RayAddress("127.0.0.1", gcs, client=False)) is not None:
        assert head.poll() in (None, 0) and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.05)


def _node_lookup(address: str, env: dict) -> subprocess.Popen:
    code = (f"import json, ray; ray.init(address={address!r}, logging_level='ERROR'); print(json.dumps("
            "{n['NodeID']: sorted(n['Resources']) for n in ray.nodes() if n['Alive']}))")
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _stop(groups: list[int]) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)  # our nodes only; Ray's daemons ignore SIGTERM for a while


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, _probe_cache) -> Cluster:
    root = tmp_path_factory.mktemp("ray")
    temp_dir = Path("/tmp") / f"perfsite-ray-{os.getpid()}"  # Ray's socket paths must stay short
    # Ray runs its worker processes (and so the measuring processes they start) at niceness 15 by default
    # (its `worker_niceness` setting, which each raylet reads from the environment): beside busy neighbours,
    # such as make test's other worker, they waited for the CPU most of the time (this module took 50 to 165 s
    # at a load of 5 to 7 on 2 cores, 43 to 45 s at niceness 0, 2026-11-27). The tests do not check timing; at
    # niceness 0 the nodes measure as a local run does.
    env = {**os.environ, "PERFSITE_CACHE_DIR": str(_probe_cache), "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_worker_niceness": "0"}
    env.pop("RAY_ADDRESS", None)
    per_node = len(PORT_OPTIONS) + WORKER_PORTS
    gcs, dashboard, *ports = _free_ports(2 + 3 * per_node)
    node_ports = [ports[i * per_node:(i + 1) * per_node] for i in range(3)]
    address = f"127.0.0.1:{gcs}"
    started = []
    try:
        # No CPU for tasks on the head: its raylet would otherwise start an idle worker process for the first
        # driver, seconds of a core while the nodes start. No autoscaler monitor either (`--no-monitor`, a
        # hidden option of `ray start`): a Python process that imports Ray and polls the GCS, for a cluster
        # whose nodes never change.
        head = _ray_start(["--head", f"--port={gcs}", f"--temp-dir={temp_dir / 'head'}", "--include-dashboard=false",
                           f"--dashboard-port={dashboard}", "--num-cpus=0", "--no-monitor"], node_ports[0], env,
                          root / "head.log")
        started.append(head.pid)
        _wait_for_gcs(head, gcs, root / "head.log")
        # A temporary folder per node: nodes starting at once in one folder race for the same socket names.
        workers = [_ray_start([f"--address={address}", f"--temp-dir={temp_dir / t}", "--num-cpus=1", "--resources",
                               json.dumps({"perfsite_node": 1, f"target:{t}": 1})], node_ports[i + 1], env,
                              root / f"{t}.log")
                   for i, t in enumerate(TARGETS)]
        started += [w.pid for w in workers]
        assert head.wait(timeout=60) == 0, (root / "head.log").read_text()[-2000:]
        for t, w in zip(TARGETS, workers, strict=True):
            assert w.wait(timeout=60) == 0, (root / f"{t}.log").read_text()[-2000:]
        yield Cluster(address, started, env, _node_lookup(address, env))
    finally:
        _stop(started)
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ray-project")
    write_if_changed(root / "chain.onnx", model_bytes(build_chain(4)))
    write_spec(root, SPEC.format(batches="[1, 2]", extra=""))
    write_spec(root, SPEC.format(batches="[1]", extra="targets: [a, b]"), "targets.yaml")
    return root


def _run(project: Path, cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    return perfsite("run", *args, "--quick", cwd=project, env={**cluster.env, "PERFSITE_QUICK": "1"}, timeout=180)


def _start(project: Path, cluster: Cluster, *args: str) -> Started:
    """The run in a forked child of this (warm) process, left running: a fresh interpreter spent seconds importing."""
    return start_perfsite("run", *args, "--quick", cwd=project, env={**cluster.env, "PERFSITE_QUICK": "1"})


@dataclass
class Runs:
    local: subprocess.CompletedProcess  # spec.yaml measured here, into local/
    fanned: subprocess.CompletedProcess  # spec.yaml on the cluster, into fanned/
    routed: subprocess.CompletedProcess  # targets.yaml on the cluster, into targets/
    refused: subprocess.CompletedProcess  # spec.yaml with --target gpu, which no node offers, into wrong/


@pytest.fixture(scope="module")
def runs(project, request, _probe_cache) -> Runs:
    """The module's runs, all at once (the checks are about routing, keys and schema, never timing): each node
    takes one group at a time whichever run sent it (its one `perfsite_node`), so the two cluster runs queue on
    the nodes while each driver's own seconds (starting, joining the cluster) overlap. The local run needs no
    cluster: it starts first and measures while the nodes start (seconds of waiting for `ray start`), and the
    fork that starts it imports perfsite into this process for the cluster runs' forks. The killed-worker test
    starts from `fanned/`."""
    local = start_perfsite("run", "spec.yaml", "--results", "local", "--quick", cwd=project,
                           env={"PERFSITE_CACHE_DIR": str(_probe_cache), "PERFSITE_QUICK": "1"})
    try:
        cluster = request.getfixturevalue("cluster")  # (requested here, not as an argument: started after the fork)
    except BaseException:  # the cluster did not start: stop the local run and its measuring children too
        os.killpg(local.pid, signal.SIGKILL)
        local.wait(timeout=30)
        raise

    def run(*args: str):
        return lambda: _run(project, cluster, *args)

    on_ray = ("--ray", cluster.address)
    on_cluster = in_forks([run("spec.yaml", "--results", "fanned", *on_ray),
                           run("targets.yaml", "--results", "targets", *on_ray),
                           run("spec.yaml", "--results", "wrong", *on_ray, "--target", "gpu")], at_once=3)
    return Runs(local.wait(timeout=180), *on_cluster)


def _trials(folder: Path):
    return ResultsDir(folder).read_table("trials").set_index("trial_key")


def test_ray_run_stores_what_a_local_run_stores(project, runs, cluster):
    """One configuration per node; the files, their Parquet schemas and the trial keys equal a local run's."""
    local, fanned = runs.local, runs.fanned
    assert local.returncode == 0, local.stderr
    assert fanned.returncode == 0, fanned.stderr
    assert "Traceback" not in fanned.stderr and "tiny: 2 measured, 0 already stored" in fanned.stdout
    assert "b1 t1 c1 on any node: measured on node" in fanned.stderr
    a, b = project / "local" / "tiny", project / "fanned" / "tiny"
    for table in TABLES:
        mine = sorted(p.name for p in (a / table).glob("*.parquet"))
        theirs = sorted(p.name for p in (b / table).glob("*.parquet"))
        if table in ("runs", "environments"):  # one run each; the same machine, so the same environment
            assert len(mine) == len(theirs) == 1, table
        else:
            assert mine == theirs, table
        for x, y in zip(sorted((a / table).glob("*.parquet")), sorted((b / table).glob("*.parquet")), strict=True):
            assert pq.read_schema(x) == pq.read_schema(y), (table, x.name)
    local_trials, fanned_trials = _trials(a), _trials(b)
    assert set(fanned_trials["status"]) == {"ok"} and fanned_trials["profiled"].all()
    assert fanned_trials["node_id"].isin(cluster.nodes.values()).all()
    assert local_trials["node_id"].isna().all() and fanned_trials["target_name"].isna().all()


def test_targets_route_to_their_nodes(project, runs, cluster):
    """`targets: [a, b]`: each trial on a node offering its target, with its own key; a target no node offers
    is refused before anything is sent."""
    run, wrong = runs.routed, runs.refused
    assert run.returncode == 0, run.stderr
    trials = _trials(project / "targets" / "tiny")
    assert sorted(trials["target_name"]) == ["a", "b"] and len(set(trials.index)) == 2
    for _, row in trials.iterrows():
        assert row["node_id"] == cluster.nodes[row["target_name"]]
    first = wrong.stderr.strip().splitlines()[0]
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert first.startswith(f"error: No node of the Ray cluster at {cluster.address} offers target gpu"), first
    assert "Targets offered: a, b" in wrong.stderr


def _measuring_worker(groups: list[int]) -> int | None:
    """The Ray worker process running a perfsite group on one of our nodes (its raylet, its parent, is in one
    of our process groups), if there is one now."""
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith(b"ray::measure_group_on_node"):
                parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if os.getpgid(int(proc.name)) in groups or os.getpgid(parent) in groups:
                    return int(proc.name)
    return None


def test_killed_worker_loses_nothing_stored(project, runs, cluster):
    """The worker measuring a new configuration is killed mid-group: the run still ends with it measured (Ray
    ran the task again), and the trials stored before are untouched."""
    assert runs.fanned.returncode == 0
    shutil.copytree(project / "fanned", project / "kill", dirs_exist_ok=False)
    # Every stored file but the environment's row, which each run rewrites (its capture time, its limits).
    before = {p: p.read_bytes() for p in (project / "kill").rglob("*.parquet") if p.parent.name != "environments"}
    write_spec(project, SPEC.format(batches="[1, 2, 3]", extra=""), "three.yaml")
    run = _start(project, cluster, "three.yaml", "--results", "kill", "--ray", cluster.address)
    deadline, victim = time.monotonic() + 60, None
    while victim is None and time.monotonic() < deadline and run.poll() is None:
        victim = _measuring_worker(cluster.groups)
        time.sleep(0.02)
    assert victim is not None, "no Ray worker was seen measuring"
    killed = dt.datetime.now(dt.UTC)
    os.kill(victim, signal.SIGKILL)
    done = run.wait(timeout=120)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    assert "1 measured, 2 already stored" in out, out + err
    # The driver cannot know which trials a node will find stored (their keys come from the node).
    assert "tiny: up to 3 trials to measure" in err and "(each measuring node skips the trials it finds stored)" in err
    assert "b1 t1 c1 on any node: nothing to measure, node " in err and "found its trials stored" in err, err
    assert all(p.read_bytes() == data for p, data in before.items())
    trials = _trials(project / "kill" / "tiny")
    new = trials[trials["batch"] == 3].iloc[0]
    # Measured again after the kill (Ray ran the task again); or, on a loaded machine, whole before it: the
    # worker had written the trial and was killed on its way back, which leaves nothing to measure again.
    second = dt.timedelta(seconds=1)
    after_kill = new["started_at"] >= killed.replace(microsecond=0).isoformat()
    before_kill = new["finished_at"] <= (killed + second).replace(microsecond=0).isoformat()
    assert new["status"] == "ok" and (after_kill or before_kill), (new["started_at"], new["finished_at"], killed)


def test_spec_targets_need_ray(project, tmp_path):
    run = perfsite("run", "targets.yaml", "--results", str(tmp_path), "--quick", cwd=project)
    first = run.stderr.strip().splitlines()[0]
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert first.startswith("error: `targets: [a, b]` in ") and "Run it with `--ray [ADDRESS]`" in run.stderr


def test_without_ray_installed(project, tmp_path):
    """Ray hidden from the interpreter: `--ray` says what to install; every other command is unaffected."""
    hide = "import sys; sys.modules['ray'] = None; from generator.cli.app import main; sys.argv[0] = 'perfsite'; main()"
    run = subprocess.run([sys.executable, "-c", hide, "run", "spec.yaml", "--ray", "--results", str(tmp_path)],
                         cwd=project, capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().startswith("error: Ray is not installed") and "perfsite[ray,cpu]" in run.stderr
    ok = subprocess.run([sys.executable, "-c", hide, "validate", "spec.yaml"], cwd=project, capture_output=True,
                        text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("ok  "), ok.stderr


def test_cannot_connect(project, tmp_path):
    """Nothing listens at the address: refused at once (Ray's own connection would retry for minutes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening
        run = perfsite("run", "spec.yaml", "--results", str(tmp_path), "--ray", f"127.0.0.1:{port}", cwd=project,
                       timeout=60)
    first = run.stderr.strip().splitlines()[0]
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert first.startswith(f"error: Cannot connect to the Ray cluster at 127.0.0.1:{port}: "), first
    assert "Connection refused" in run.stderr and "docs/ray.md" in run.stderr


@pytest.fixture(scope="module", autouse=True)
def silent_head(project, tmp_path_factory, _probe_cache):
    """`perfsite run --ray` at a port that accepts connections and never answers, started with the module's
    first test: its wait of several seconds for an answer overlaps the other tests instead of adding to them.
    A fork of this process (support.cli.start_perfsite), which warms it for the module's other forks.
    (port, its run's outcome and duration once ended, results folder)"""
    results = tmp_path_factory.mktemp("silent-head") / "r"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()  # the kernel completes connections in the backlog: no accept() needed
        port = server.getsockname()[1]
        run = start_perfsite("run", "spec.yaml", "--results", str(results), "--ray", f"127.0.0.1:{port}",
                             cwd=project, env={"PERFSITE_CACHE_DIR": str(_probe_cache), "PERFSITE_QUICK": "1"})
        started, ended = time.monotonic(), []  # its end, seen by a thread: read after other tests

        def wait() -> None:
            try:
                ended.append((run.wait(timeout=180), time.monotonic() - started))
            except Exception as e:  # it did not end within 180 s: said by the test that reads it
                ended.append(e)

        def outcome():
            waiter.join()
            if isinstance(ended[0], Exception):
                pytest.fail(f"`perfsite run --ray` at a silent head did not end: {ended[0]}")
            return ended[0]

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        try:
            yield port, outcome, results
        finally:
            if waiter.is_alive():  # its test was deselected or failed first: end it
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.pid, signal.SIGKILL)
                waiter.join()


def test_address_that_is_not_a_ray_head(silent_head):
    """A port that accepts connections and never answers: refused within seconds (Ray's own connection retried
    for minutes), before any model version is built, without Ray's log lines, and with nothing written."""
    port, outcome, results = silent_head
    run, took = outcome()
    message = " ".join(run.stderr.split())
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert message.startswith(f"error: Cannot connect to the Ray cluster at 127.0.0.1:{port}: it accepts "
                              "connections but did not answer within 5 s"), message
    assert "the address of a running Ray head as `ray start --head` prints it" in message
    assert [line for line in run.stderr.splitlines() if line.startswith("[")] == []  # "[date W pid] rpc_client.h"
    assert took < 30 and not results.exists()


def test_groups_whose_target_lost_its_only_node_are_failed_not_waited_for_forever():
    """The only node offering a target died mid-run: Ray kept its group pending for good and the run hung with
    no message. The run's waiting loop looks at the cluster's live nodes; a target missing at two looks in a row
    has its groups cancelled and their trials reported failed (never stored). The cluster's answers are stood
    in for here: killing a node of the module's cluster would take it from the other tests."""
    from types import SimpleNamespace

    from generator.plan import Configuration
    from generator.runner import cluster as C
    from generator.runner.sides import RunSummary

    class Cluster:
        def __init__(self) -> None:
            self.alive = [{"Alive": True, "Resources": {C.NODE_RESOURCE: 1.0, f"{C.TARGET_PREFIX}x86": 1.0}}]
            self.cancelled: list[str] = []

        def nodes(self) -> list[dict]:
            return self.alive

        def cancel(self, ref: str, force: bool) -> None:
            self.cancelled.append(ref)

    trial = SimpleNamespace(label="a b1 t1 c1")
    jobs = [SimpleNamespace(target=t, config=Configuration(), trials=(trial,)) for t in ("x86", "arm")]
    fan = SimpleNamespace(jobs=jobs, summary=RunSummary("e", "r", [], 1.0))
    progress = SimpleNamespace(trial_done=lambda *_: None)
    ray, pending = Cluster(), {"ref-x86": 0, "ref-arm": 1}
    gone = C._drop_orphans(ray, fan, pending, set(), progress)  # first look: arm missing, not yet given up
    assert gone == {"arm"} and set(pending) == {"ref-x86", "ref-arm"} and not ray.cancelled
    C._drop_orphans(ray, fan, pending, gone, progress)  # second look: cancelled, failed, never stored
    assert ray.cancelled == ["ref-arm"] and set(pending) == {"ref-x86"}
    assert fan.summary.failed == [("a b1 t1 c1 (b1 t1 c1 on arm)", "no live node of the cluster offers target arm any "
                                   "more (its node left the cluster while the run waited for it)")]
    assert fan.summary.unstored_failures == 1 and fan.summary.ok_count == 0


def _nice_now_and_in_a_child() -> str:
    from generator.runner.cluster_work import normal_priority

    os.nice(15)  # as Ray starts its workers
    said = normal_priority()
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"],
                           capture_output=True, text=True, check=True)
    return f"{said}|{os.getpriority(os.PRIO_PROCESS, 0)}|{child.stdout.strip()}"


@pytest.mark.skipif(os.geteuid() != 0, reason="lowering a niceness needs root")
def test_a_ray_task_measures_at_normal_priority_and_says_so_where_it_may_not():
    """Ray runs its workers at niceness 15, which the measuring processes inherited: any neighbour at normal
    priority on the node took the CPU from them. The task goes back to 0, and its children with it; a user who
    may not lower it gets a warning naming Ray's setting (a real refusal: the child drops root first)."""
    (said,) = in_forks([_nice_now_and_in_a_child], at_once=1)  # the fork keeps the changed niceness, not pytest
    assert said == "None|0|0"

    def unprivileged() -> str:
        from generator.runner.cluster_work import normal_priority

        os.nice(15)
        os.setresuid(65534, 65534, 0)  # acting as nobody, who may raise a niceness but never lower it...
        said = f"{normal_priority()}|{os.getpriority(os.PRIO_PROCESS, 0)}"
        os.seteuid(0)  # ...and root again (the saved id) to hand the answer back through in_forks' file
        return said

    (dropped,) = in_forks([unprivileged], at_once=1)
    said, niceness = dropped.rsplit("|", 1)
    assert niceness == "15"
    assert said.startswith("Warning: this node measures at niceness 15 (Ray's worker_niceness)"), said
    assert "RAY_worker_niceness=0" in said and "docs/ray.md" in said
