"""Faults during a sweep that tests/test_run.py does not already cover, each really done: a measurement process
out of memory (address space capped with RLIMIT_AS), `kill -9` of `perfsite run` and of a results writer at
random moments, and a bad input found in the middle of a sweep. See docs/errors.md, "Faults during a sweep".
"""

from __future__ import annotations

import functools
import os
import random
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from onnx import TensorProto, helper
from support.cli import Started, perfsite, start_perfsite, write_spec
from support.models import matmul_model, onnx_model, save
from support.results import nodes, processes, trial_row, write_results

from generator.results.store import TRIAL_TABLES, WHEN_FILLED, ResultsDir, TrialFiles, load_experiment

# budget_s: one process a trial (`repeats`), as the rows expect: adaptive measurement would add more (0.5 s
# still did, when a process took under half a second).
MEASURE = ("measure: {warmup: 1, min_iterations: 3, min_seconds: 0.01, max_seconds: 1, repeats: 1, "
           "budget_s: 0.01, profile_iterations: 1, timeout_s: 60}")


def _free_width_model(path: Path) -> Path:
    """x [batch, width] -> Relu -> y: takes any width."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "width"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "width"])
    return save(onnx_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])),
                path)


@pytest.fixture
def two_versions(tmp_path) -> Path:
    """A project with two versions in separate files (so a fault hook can pick one) and two batch sizes."""
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "victim.onnx", before="Relu")
    matmul_model(tmp_path / "models" / "healthy.onnx", before="Relu")
    write_spec(tmp_path, f"""\
        name: faults
        models:
          victim: {{path: models/victim.onnx}}
          healthy: {{path: models/healthy.onnx}}
        inputs:
          x: {{shape: [batch, 4], dtype: float32}}
        sweep: {{batch: [1, 2]}}
        {MEASURE}
        """)
    return tmp_path


def _assert_whole(experiment: Path) -> pd.DataFrame:
    """What a reader sees is whole: every Parquet file reads, every stored trial has all its side tables,
    each table folder reads as one dataset, and the store loads. Returns the trials."""
    for path in experiment.rglob("*.parquet"):
        if not path.name.startswith("."):
            pq.read_table(path)  # raises on a half-written file
    trials = experiment / "trials"
    keys = {p.stem for p in trials.glob("*.parquet")} if trials.is_dir() else set()
    for key in keys:
        missing = [t for t in TRIAL_TABLES if t not in WHEN_FILLED and not (experiment / t / f"{key}.parquet")
                   .is_file()]
        assert not missing, f"trial {key} is stored without its {missing}"
    for table in ("trials", *TRIAL_TABLES):
        if keys and (experiment / table).is_dir():
            pd.read_parquet(experiment / table)  # the dataset reader skips the dot-named temporary files
    if not keys:
        return pd.DataFrame()
    loaded = load_experiment(experiment)
    assert set(loaded.trials["trial_key"]) == keys
    return loaded.trials


def test_out_of_memory_trial_is_recorded_and_the_sweep_goes_on(two_versions):
    env = {"PERFSITE_TEST_FAULT": "oom", "PERFSITE_TEST_FAULT_VERSION": "victim.onnx"}
    # One configuration: the victim's process runs first in it, the healthy version's after its failure.
    result = perfsite("run", "spec.yaml", "--results", "results", "--only", "batch=1", cwd=two_versions, env=env)
    assert result.returncode == 0, result.stderr
    assert "1 measured, 0 already stored, 1 failed" in result.stdout
    assert "failed: victim b1 t1 c1: the measurement process ran out of memory" in " ".join(result.stdout.split())
    trials = _assert_whole(two_versions / "results" / "faults").set_index("version").sort_index()
    assert list(trials["status"]) == ["ok", "failed"]  # healthy, victim
    assert "ran out of memory" in trials.loc["victim", "error"]
    assert trials.loc["healthy", "throughput_ips"] > 0
    # Every trial of a run failed: exit 1 (it was 0, and a CI job that measured nothing passed), stored all the same.
    alone = perfsite("run", "spec.yaml", "--results", "results", "--only", "version=victim,batch=1", "--force",
                     cwd=two_versions, env=env)
    message = " ".join(alone.stderr.split())
    assert alone.returncode == 1 and "Traceback" not in alone.stderr, alone.stderr
    assert ("error: No trial could be measured: the one trial to measure failed (the first, victim b1 t1 c1: the "
            "measurement process ran out of memory") in message, message
    assert message.endswith("The failures are stored and the site shows them; fix the model or the spec's inputs "
                            "(a generative spec's `generate:` lengths) and run again.")


def _start(project: Path) -> Started:
    # Forked, in a session of its own (support.cli.start_perfsite), so that the test can also stop the orphaned
    # measurement processes afterwards.
    (project / "tmp").mkdir(exist_ok=True)
    return start_perfsite("run", "spec.yaml", "--results", "results", cwd=project,
                          env={"TMPDIR": str(project / "tmp")})


def _wait_for(condition, what: str, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {limit_s:g} s"
        time.sleep(0.01)


def _stored(experiment: Path) -> int:
    return len(list((experiment / "trials").glob("*.parquet"))) if (experiment / "trials").is_dir() else 0


def _reached(phase, proc: Started) -> bool:
    return phase(proc) or proc.poll() is not None


def _kill_9(proc: Started) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the orphaned workers: they write only to their own temp folder
    except ProcessLookupError:
        pass


def test_kill_9_at_random_moments_never_leaves_a_partial_result(two_versions):
    rng = random.Random(5)
    experiment = two_versions / "results" / "faults"
    stored_counts = []
    # A random moment in each phase, each found by what the run leaves on disk rather than by a fixed sleep (a
    # busy machine stretches them): start-up (environment, model checks, the run's rows; a few tenths of a
    # second in a fork, imports done), measuring (once the run's temp folder exists), and, once this run has
    # stored a trial, the next configuration's trials.
    tmp = two_versions / "tmp"
    phases = [
        lambda proc: True,
        lambda proc: any(p.name.startswith(f"perfsite-run-{proc.pid}-") for p in tmp.iterdir()),
        lambda proc: _stored(experiment) > stored_counts[-1],
    ]
    for phase, latest_s in zip(phases, (0.4, 1.0, 1.0), strict=True):
        proc = _start(two_versions)
        _wait_for(functools.partial(_reached, phase, proc), "moment to kill at")
        time.sleep(rng.uniform(0, latest_s))
        _kill_9(proc)
        stored_counts.append(len(_assert_whole(experiment)))
    assert stored_counts == sorted(stored_counts), stored_counts  # nothing stored is ever lost
    assert stored_counts[-1] >= 1, stored_counts  # the last kill came after its run stored a trial
    final = perfsite("run", "spec.yaml", "--results", "results", cwd=two_versions)
    assert final.returncode == 0, final.stderr
    assert f"{4 - stored_counts[-1]} measured, {stored_counts[-1]} already stored" in final.stdout
    trials = _assert_whole(experiment)
    assert len(trials) == 4 and set(trials["status"]) == {"ok"} and trials["trial_key"].is_unique


# The writer appends trials with large latency tables (so that a kill often lands inside a write: writing is
# nearly all a writer does), through the real store, to an experiment folder made by tests/support/results.py.
# 100 000 requests a trial, about a tenth of a second of writing: with 400 000, each check between kills, which
# reads every stored trial again, read four times as much.
def _writer(experiment: Path, tag: str, ready: int) -> None:
    """In a forked child (it has pandas and pyarrow imported already): write trials until killed."""
    spec_sha256 = pd.read_parquet(experiment / "trials")["spec_sha256"].iloc[0]
    rd, rows = ResultsDir(experiment), 100_000
    os.write(ready, b"ready\n")
    for i in range(10_000):
        key = f"{tag}{i:016d}"
        row = {**trial_row(key, "fp32", 1, 1, False, False, 0), "spec_sha256": spec_sha256}
        latencies = pa.table({"trial_key": [key] * rows, "process": np.zeros(rows, np.int64),
                              "stream": np.zeros(rows, np.int64), "iteration": np.arange(rows),
                              "latency_ms": np.random.default_rng(i).random(rows)})
        rd.write_trial(TrialFiles(trial=row, processes=processes(key, row), latencies=latencies,
                                  nodes=nodes(key, row, "fp32", False)))


def _start_writer(experiment: Path, tag: str) -> int:
    """A writer process, forked: a fresh interpreter spent most of each cycle importing pandas and pyarrow."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            _writer(experiment, tag, write_end)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as ready:
        assert ready.readline().strip() == "ready", "the writer did not start"
    return pid


def test_writer_killed_at_random_moments_leaves_only_whole_trials(tmp_path):
    experiment = write_results(tmp_path / "results")
    before = len(_assert_whole(experiment))
    rng = random.Random(9)
    for cycle in range(3):
        writer = _start_writer(experiment, f"k{cycle:02d}")
        if cycle == 0:  # on a busy machine a trial can take longer than any fixed sleep: let one finish first
            deadline = time.monotonic() + 60
            while not any((experiment / "trials").glob("k00*.parquet")) and time.monotonic() < deadline:
                time.sleep(0.01)
        time.sleep(rng.uniform(0.02, 0.4))
        os.kill(writer, signal.SIGKILL)
        _, status = os.waitpid(writer, 0)
        assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL, "the writer ended before it was killed"
        after = _assert_whole(experiment)
    assert len(after) > before  # the writers did finish trials between the kills (the last check's trials)


def test_bad_input_at_a_later_configuration_is_found_before_measuring(tmp_path):
    """`any` takes any width, `fixed` only 4: the sweep's second width used to stop the run after the first
    width was measured (kept). The inputs of every configuration are made when the sweep is planned now, so the
    run stops before measuring or writing anything, and the version that takes every width runs whole."""
    (tmp_path / "models").mkdir()
    _free_width_model(tmp_path / "models" / "any.onnx")
    matmul_model(tmp_path / "models" / "fixed.onnx", before="Relu")
    text = f"""\
        name: midway
        models:
          any: {{path: models/any.onnx}}
          fixed: {{path: models/fixed.onnx}}
        inputs:
          x: {{shape: [batch, width], dtype: float32}}
        sweep: {{width: [4, 5]}}
        {MEASURE}
        """
    spec = write_spec(tmp_path, text)
    result = perfsite("run", "spec.yaml", "--results", "results", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    message = " ".join(result.stderr.split())
    assert f"{spec}: inputs.x: shape [batch, width] has 5 on axis 1 where the model fixes 4" in message
    assert "(version fixed, configuration b1 t1 c1 width=5)" in message
    assert not (tmp_path / "results").exists()
    again = perfsite("run", "spec.yaml", "--results", "results", "--only", "version=any", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "2 measured, 0 already stored" in again.stdout


def _workers_of(project: Path) -> list[int]:
    """Measurement workers whose job lies under this project's temp folder."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "generator.runner.worker" in cmdline and str(project / "tmp") in cmdline:
                found.append(int(entry.name))
    return found


def test_kill_9_of_run_takes_its_worker_and_the_next_run_removes_its_temp_folder(two_versions):
    """The worker used to run on until its time limit (a run started at once was measured on a loaded
    machine), and its temp folder stayed."""
    proc = _start(two_versions)
    deadline = time.monotonic() + 60
    while not _workers_of(two_versions) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _workers_of(two_versions), "no worker started"
    proc.send_signal(signal.SIGKILL)  # the parent only: its worker must follow by itself
    proc.wait(timeout=30)
    deadline = time.monotonic() + 5
    while _workers_of(two_versions) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _workers_of(two_versions) == []
    left = sorted(p.name for p in (two_versions / "tmp").iterdir() if p.name.startswith("perfsite-"))
    assert left and all(name.startswith(f"perfsite-run-{proc.pid}-") for name in left), left
    # One trial: any run that measures removes the temp folders of dead runs before its own.
    final = perfsite("run", "spec.yaml", "--results", "results", "--only", "version=healthy,batch=1",
                     cwd=two_versions, env={"TMPDIR": str(two_versions / "tmp")})
    assert final.returncode == 0, final.stderr
    assert not [p for p in (two_versions / "tmp").iterdir() if p.name.startswith(f"perfsite-run-{proc.pid}-")]


def test_disk_full_during_run_is_one_paragraph_and_keeps_finished_trials(two_versions, monkeypatch):
    """ENOSPC on the second trial's files: a ResultsError naming the file (the CLI's one paragraph, exit 1),
    and the first trial stays whole."""
    import errno

    from generator.errors import ResultsError
    from generator.results import store
    from generator.runner.orchestrate import RunOptions, run_experiment
    from generator.spec import load_spec

    real, committed = store.atomic_write_bytes, []

    def fills_up(path: Path, data: bytes) -> None:
        if committed and path.parent.name == "processes":  # the second trial's first file
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)
        if path.parent.name == "trials":
            committed.append(path.stem)

    monkeypatch.setattr(store, "atomic_write_bytes", fills_up)
    monkeypatch.setenv("PERFSITE_QUICK", "1")
    loaded = load_spec(two_versions / "spec.yaml")
    results = two_versions / "results" / "faults"
    with pytest.raises(ResultsError) as raised:
        run_experiment(loaded, RunOptions(results_dir=results, quick=True))
    message = " ".join(str(raised.value).split())
    assert message.startswith(f"Cannot write {results / 'processes'}") and "No space left on device" in message
    assert "Every trial stored before it is kept and whole" in message
    trials = _assert_whole(results)
    assert list(trials["trial_key"]) == committed and len(committed) == 1
