"""The profiler's own cost inside each kernel call's recorded duration, measured per process.

onnxruntime's profiler records each kernel call's duration with its own bookkeeping inside: on this project's
2-core VM it added 2.5 µs to every kernel call at one intra-op thread and 6.5 µs at two, while the 12–16 µs it
costs per node in all fall mostly between kernels. Left in, it made a small model's kernels add up to 142 % of
its measured latency and gave a 5 µs Flatten 1 % of the time. Each profiling process measures it on a chain of
trivial kernels (a Relu of 16 floats runs in well under a microsecond unprofiled) with its own session options,
and generator.results.profiled subtracts it from every call.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from generator.errors import RunError
from generator.machine.profiling import parse_profile

CALIBRATION_NODES = 32
CALIBRATION_RUNS = 40


def calibration_model_bytes() -> bytes:
    """A chain of CALIBRATION_NODES Relu nodes on a [1, 16] float tensor, serialized."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", [f"x{i}"], [f"x{i + 1}"], name=f"calibration_{i}")
             for i in range(CALIBRATION_NODES)]
    graph = helper.make_graph(nodes, "perfsite_profiler_calibration",
                              [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info(f"x{CALIBRATION_NODES}", TensorProto.FLOAT, [1, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model.SerializeToString()


def profiler_cost_us(config: dict[str, Any], work: Path, model_path: str | Path | None = None) -> float | None:
    """The profiler's cost per kernel call with this configuration's session options: the median recorded
    duration of a trivial kernel under the profiler, less its time per node unprofiled (both on the calibration
    chain). None when it cannot be measured (the calibration itself failed)."""
    from generator.machine.session import open_session

    path = Path(model_path) if model_path else work / "calibration.onnx"
    try:
        if not path.exists():
            path.write_bytes(calibration_model_bytes())
        feeds = {"x0": np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(1, 16)}
        plain, _ = open_session(path, {**config, "concurrency": 1})
        per_node_us = _median_run_us(plain, feeds) / CALIBRATION_NODES
        del plain
        folder = work / "calibration"
        folder.mkdir(exist_ok=True)
        profiled, _ = open_session(path, {**config, "concurrency": 1}, profile_dir=folder)
        _median_run_us(profiled, feeds)
        recording = parse_profile(profiled.end_profiling(), skip_runs=CALIBRATION_RUNS // 4)
    except (RunError, OSError, ImportError):
        return None
    durations = [n.dur_us for r in recording.runs for n in r.nodes]
    return max(0.0, float(np.median(durations)) - per_node_us) if durations else None


def _median_run_us(session: Any, feeds: dict[str, np.ndarray]) -> float:
    run = session.run
    for _ in range(CALIBRATION_RUNS // 4):
        run(None, feeds)
    times = np.empty(CALIBRATION_RUNS)
    for i in range(CALIBRATION_RUNS):
        t0 = time.perf_counter_ns()
        run(None, feeds)
        times[i] = time.perf_counter_ns() - t0
    return float(np.median(times)) / 1e3
