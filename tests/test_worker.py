"""The worker child process end to end: measure and profile modes, errors, the fault hook."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.models import onnx_model, save

from generator.layers import mapping
from generator.runner import process_env, worker
from generator.runner.measure import MIN_CORES_WALL_S
from generator.runner.protocol import WorkerJob

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {"batch": 2, "threads": 1, "concurrency": 2, "optimization_level": "all", "provider": "cpu",
          "spinning": False, "inter_op_threads": 1, "seq_len": 7}
MEASURE = {"warmup": 2, "min_iterations": 20, "min_seconds": 0.05, "max_seconds": 2.0,
           "profile_iterations": 5, "repeats": 1}


def _model(path: Path) -> Path:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 8, 8])],
        [w, b],
    )
    return save(onnx_model(graph), path)


@pytest.fixture
def job(tmp_path) -> dict:
    model = _model(tmp_path / "fp32.onnx")
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, x=np.random.default_rng(1).random((2, 4, 8, 8), dtype=np.float32))
    work = tmp_path / "work"
    work.mkdir()
    return {"mode": "measure", "model_path": str(model), "original_model_path": str(model),
            "config": dict(CONFIG), "feeds_path": str(feeds), "measure": dict(MEASURE), "work_dir": str(work)}


def _run(job: dict, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    work = Path(job["work_dir"])
    job_path, out_path = work / "job.json", work / "out.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run([sys.executable, "-m", "generator.runner.worker", str(job_path), str(out_path)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    return proc, json.loads(out_path.read_text()) if out_path.exists() else None


def test_peak_memory_is_the_workers_own_not_its_parents(job):
    # The parent grows by 256 MiB (on top of pytest's own) before forking: a worker that reported ru_maxrss
    # would show at least that (it survives fork and execve); the worker's own peak is about 60 MB. (A 1 GiB
    # ballast cost 5 CPU-seconds of page faults and page-table copies, a quarter of a minute of make test.)
    ballast = np.ones(2**28 // 8)  # 256 MiB, touched
    try:
        proc, out = _run(job)
    finally:
        del ballast
    assert proc.returncode == 0, proc.stderr
    assert 10 < out["peak_rss_mb"] < 200


def test_measure_mode(job):
    proc, out = _run(job)
    assert proc.returncode == 0, proc.stderr
    assert out["iterations"] >= 20 and out["items"] == 2 * out["iterations"]
    assert out["wall_s"] >= 0.05 and out["cpu_s"] > 0
    if out["wall_s"] >= MIN_CORES_WALL_S:
        assert out["cores_used"] == pytest.approx(out["cpu_s"] / out["wall_s"])
    else:  # too short a phase to tell (generator.runner.measure.cores_used_of)
        assert math.isnan(out["cores_used"])
    assert out["throughput_ips"] == pytest.approx(out["items"] / out["wall_s"])
    assert out["load_ms"] > 0 and out["first_run_ms"] > 0 and out["peak_rss_mb"] > 10
    assert out["arena_mb"] is None
    assert len(out["latency_files"]) == 2  # one per stream
    latencies = [np.load(p) for p in out["latency_files"]]
    assert sum(len(a) for a in latencies) == out["iterations"]
    assert all(len(a) >= 10 and a.dtype == np.float64 and (a > 0).all() for a in latencies)
    assert out["latency_median_ms"] == pytest.approx(np.median(np.concatenate(latencies)))


def test_profile_mode(job):
    job = {**job, "mode": "profile", "config": {**job["config"], "concurrency": 1}}
    proc, out = _run(job)
    if importlib.util.find_spec("generator.layers.mapping") is None:
        # The mapping module is another part of perfsite; without it the pass says what is missing.
        assert proc.returncode == 3 and "generator.layers.mapping" in out["error"]
        return
    assert proc.returncode == 0, proc.stderr
    assert out["runs"] == 5 and Path(out["optimized_model"]).exists() and Path(out["profile_file"]).exists()
    assert 0 < out["kernel_sum_us"] <= out["model_run_us"] <= out["profiled_latency_us"] * 1.5
    assert [n["exec_order"] for n in out["nodes"]] == list(range(len(out["nodes"])))
    assert all(isinstance(n["original_nodes"], list) and isinstance(n["weights"], list) for n in out["nodes"])


def test_the_profiled_pass_imports_no_pandas(job):
    """Importing pandas was half of a profiled pass's 0.6 s on the example CNN: every trial has one."""
    job["mode"] = "profile"
    work = Path(job["work_dir"])
    (work / "job.json").write_text(json.dumps(job))
    code = ("import sys; from generator.runner import worker; "
            f"rc = worker.main([{str(work / 'job.json')!r}, {str(work / 'out.json')!r}]); "
            "print(rc, sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.stdout.split("\n")[-2] == "0 []", proc.stdout + proc.stderr
    assert json.loads((work / "out.json").read_text())["nodes"]


def test_profile_pass_statistics(job, monkeypatch):
    """The profiled pass itself, in process, with the mapping step replaced by an empty mapping."""
    empty = {"original_nodes": [], "weights": [], "mapping_method": "none"}
    monkeypatch.setattr(mapping, "mapped_columns", lambda original, optimized, stats: [empty] * len(stats))
    config = {**job["config"], "concurrency": 1, "optimization_level": "disable"}
    job = {**job, "mode": "profile", "config": config}
    out = worker.profile_pass(WorkerJob(**job))
    assert out["runs"] == 5
    assert [(n["node_name"], n["op_type"], n["parent"]) for n in out["nodes"]] == [
        ("conv", "Conv", None), ("relu", "Relu", None)]
    conv = out["nodes"][0]
    assert conv["input_shapes"] == "[[2,4,8,8],[8,4,3,3],[8]]" and conv["runtime_precision"] == "FP32"
    assert conv["parameter_bytes"] == (8 * 4 * 9 + 8) * 4
    assert conv["pool_share"] is None  # one thread: onnxruntime writes no scheduling stats
    assert 0 < out["kernel_sum_us"] <= out["model_run_us"]
    assert out["profiled_latency_us"] > 0 and out["load_ms"] > 0
    assert Path(out["optimized_model"]).exists()


def test_unavailable_provider_is_a_one_line_error(job):
    job["config"]["provider"] = "tensorrt"
    proc, out = _run(job)
    assert proc.returncode == 3
    assert "tensorrt" in out["error"] and "CPUExecutionProvider" in out["error"]
    assert "\n" not in out["error"] and "Traceback" not in proc.stderr


def test_rejected_input_is_reported(job, tmp_path):
    np.savez(job["feeds_path"], wrong=np.zeros((2, 4, 8, 8), np.float32))
    proc, out = _run(job)
    assert proc.returncode == 3 and "wrong" in out["error"] and "\n" not in out["error"]


def test_fault_hook_crash_gives_a_negative_status(job):
    proc, out = _run(job, {"PERFSITE_TEST_FAULT": "crash", "PERFSITE_TEST_FAULT_VERSION": "fp32"})
    assert proc.returncode < 0 and out is None


def test_fault_hook_oom_reports_memory(job):
    proc, out = _run(job, {"PERFSITE_TEST_FAULT": "oom"})
    assert proc.returncode == 3 and "out of memory" in out["error"]


def test_fault_hook_targets_one_version(monkeypatch):
    monkeypatch.setenv("PERFSITE_TEST_FAULT", "crash")
    monkeypatch.setenv("PERFSITE_TEST_FAULT_VERSION", "int8")
    process_env.test_fault("/models/fp32.onnx")  # not the target: returns, no signal


def test_unknown_mode_and_usage(tmp_path, job):
    job["mode"] = "bench"
    proc, out = _run(job)
    assert proc.returncode == 3 and "measure, profile" in out["error"]
    assert worker.main(["only-one-argument"]) == 2


def test_session_options_from_configuration():
    import onnxruntime as ort

    from generator.machine.session import session_options

    config = {**CONFIG, "threads": 3, "optimization_level": "basic", "inter_op_threads": 2}
    so, providers = session_options(config)
    assert providers == ["CPUExecutionProvider"]
    assert so.intra_op_num_threads == 3 and so.inter_op_num_threads == 2
    assert so.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert so.get_session_config_entry("session.inter_op.allow_spinning") == "0"
    so, _ = session_options({**CONFIG, "spinning": True})
    assert so.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "1"


def test_bad_configuration_and_unloadable_model(tmp_path):
    from generator.errors import RunError
    from generator.machine.session import open_session, session_options

    with pytest.raises(RunError, match="optimization_level.*allowed: disable, basic, extended, all"):
        session_options({**CONFIG, "optimization_level": "max"})
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(RunError, match="could not create a session for .*bad.onnx"):
        open_session(bad, CONFIG)
