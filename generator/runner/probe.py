"""The machine's limits, measured: peak FP32 and INT8 GEMM rates through onnxruntime, and memory bandwidth.

The profile pages place every layer on a roofline (attainable = min(peak, intensity × bandwidth)); its two
ceilings come from here. They are measured, never computed from nominal clocks: `/proc/cpuinfo` understates
the clock of these VMs, and what matters is what onnxruntime's own kernels reach on this machine.

- Compute: one large MatMul (FP32) and one MatMulInteger (uint8 × int8 → int32) run through onnxruntime with
  the intra-op pool at every logical core; the best of repeated runs (a shared machine only ever slows a run
  down). 2·n³ operations per run (a multiply-add counts 2).
- Bandwidth: an onnxruntime Add of a scalar over a large float array, bound to preallocated buffers (IO
  binding, so no run allocates or page-faults): bytes read + bytes written per run, best of repeated runs. A
  numpy copy of the same size is recorded in the notes for reference; the roofline uses onnxruntime's figure,
  which streams with ordinary stores like the kernels it bounds.

The result is cached per environment fingerprint (``ensure_limits``): a probe costs a few seconds once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from generator.errors import RunError
from generator.runner.environment import Environment

# (matrix size n, minimum runs, time budget in s per measurement), (floats in the bandwidth arrays, runs).
# The quick sizes keep a probe under a second; the bandwidth arrays stay larger than any last-level cache.
FULL = {"gemm_n": 1024, "min_runs": 8, "budget_s": 1.0, "stream_floats": 64 << 20, "stream_runs": 8}
QUICK = {"gemm_n": 512, "min_runs": 3, "budget_s": 0.06, "stream_floats": 16 << 20, "stream_runs": 4}
CACHE_VERSION = 1
# Instruction sets that give the CPU an int8 dot-product path (see environment.ISA_FLAGS); without one,
# onnxruntime's u8s8 kernels fall back to AVX2's 16-bit multiply-adds.
INT8_DOT_ISA = ("AVX512-VNNI", "AVX-VNNI", "AMX-INT8")


@dataclass(frozen=True)
class MachineLimits:
    """Measured limits of one machine, with how each figure was obtained."""

    peak_gflops_fp32: float
    peak_gops_int8: float | None  # None when onnxruntime could not run MatMulInteger here
    bandwidth_gbs: float
    threads: int
    quick: bool
    notes: tuple[str, ...]
    measured_at: str


def probe_machine(quick: bool, threads: int | None = None, isa: tuple[str, ...] = ()) -> MachineLimits:
    """Measure the FP32 and INT8 GEMM peaks and the memory bandwidth (see the module docstring).

    `threads` is the intra-op pool size (default: every logical core); `isa` (the environment's instruction
    sets) only annotates the INT8 figure with the dot-product path the CPU has.
    """
    import onnxruntime as ort

    size = QUICK if quick else FULL
    threads = threads or os.cpu_count() or 1
    n = size["gemm_n"]
    fp32_s = _best_run_s(_gemm_runner(n, integer=False, threads=threads), size["min_runs"], size["budget_s"])
    try:
        int8_s: float | None = _best_run_s(_gemm_runner(n, integer=True, threads=threads), size["min_runs"],
                                           size["budget_s"])
    except Exception:  # noqa: BLE001  onnxruntime's pybind errors: a build without the int8 kernel
        int8_s = None
    floats = size["stream_floats"]
    ort_bw = 8 * floats / _best_run_s(_stream_runner(floats, threads), size["stream_runs"], 0.0) / 1e9
    numpy_bw = _numpy_copy_gbs(floats, size["stream_runs"])
    ops = 2.0 * n**3
    dot = [name for name in INT8_DOT_ISA if name in isa]
    notes = (
        f"FP32: onnxruntime {ort.__version__} MatMul {n}×{n}×{n}, {threads} intra-op threads, best run of "
        f"at least {size['min_runs']}; 2·n³ FLOP per run.",
        f"INT8: MatMulInteger uint8 × int8 → int32 at the same size and threads; int8 dot-product "
        f"instructions: {', '.join(dot) if dot else 'none (16-bit multiply-add path)'}."
        + ("" if int8_s is not None else " onnxruntime could not run it here."),
        f"Bandwidth: onnxruntime Add over {floats * 4 >> 20} MiB of float32 into a preallocated output, "
        f"bytes read + written per run, best of {size['stream_runs']}; a numpy copy of the same size reached "
        f"{numpy_bw:.1f} GB/s.",
    )
    return MachineLimits(
        peak_gflops_fp32=ops / fp32_s / 1e9, peak_gops_int8=ops / int8_s / 1e9 if int8_s else None,
        bandwidth_gbs=ort_bw, threads=threads, quick=quick, notes=notes,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _best_run_s(run: Callable[[], None], min_runs: int, budget_s: float) -> float:
    """The fastest of at least `min_runs` timed calls, continuing until `budget_s` has passed; one untimed
    call first (session warm-up, prepacking, first-touch of buffers)."""
    run()
    best, runs, start = float("inf"), 0, time.perf_counter()
    while runs < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best


def _session(model_bytes: bytes, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, sess_options=so, providers=["CPUExecutionProvider"])


def _bound_runner(model_bytes: bytes, threads: int, feed: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    """A no-argument run of a one-input, one-output model with both buffers bound once (no allocation)."""
    import onnxruntime as ort

    session = _session(model_bytes, threads)
    binding = session.io_binding()
    binding.bind_cpu_input("X", feed)
    binding.bind_ortvalue_output("Y", ort.OrtValue.ortvalue_from_numpy(out))
    return lambda: session.run_with_iobinding(binding)


def _gemm_runner(n: int, integer: bool, threads: int) -> Callable[[], None]:
    from onnx import TensorProto

    rng = np.random.default_rng(0)
    if integer:
        weight = rng.integers(-64, 64, (n, n), dtype=np.int8)
        feed = rng.integers(0, 255, (n, n), dtype=np.uint8)
        model = _one_node_model("MatMulInteger", TensorProto.UINT8, TensorProto.INT32, (n, n), weight)
        return _bound_runner(model, threads, feed, np.empty((n, n), np.int32))
    weight = rng.standard_normal((n, n), dtype=np.float32)
    feed = rng.standard_normal((n, n), dtype=np.float32)
    model = _one_node_model("MatMul", TensorProto.FLOAT, TensorProto.FLOAT, (n, n), weight)
    return _bound_runner(model, threads, feed, np.empty((n, n), np.float32))


def _stream_runner(floats: int, threads: int) -> Callable[[], None]:
    from onnx import TensorProto

    model = _one_node_model("Add", TensorProto.FLOAT, TensorProto.FLOAT, (floats,), np.ones(1, np.float32))
    # Filled, not np.empty: untouched pages would make the first runs measure page faults.
    return _bound_runner(model, threads, np.ones(floats, np.float32), np.zeros(floats, np.float32))


def _one_node_model(op: str, in_type: int, out_type: int, shape: tuple[int, ...], weight: np.ndarray) -> bytes:
    """Y = op(X, W) with W an initializer; opset 17 / IR 10, which every onnxruntime we allow loads (NOTES.md)."""
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node(op, ["X", "W"], ["Y"])], "probe",
        [helper.make_tensor_value_info("X", in_type, list(shape))],
        [helper.make_tensor_value_info("Y", out_type, list(shape))],
        [numpy_helper.from_array(weight, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model.SerializeToString()


def _numpy_copy_gbs(floats: int, runs: int) -> float:
    src, dst = np.ones(floats, np.float32), np.zeros(floats, np.float32)
    return 8 * floats / _best_run_s(lambda: np.copyto(dst, src), runs, 0.0) / 1e9


def ensure_limits(env: Environment, cache_dir: Path, quick: bool) -> Environment:
    """`env` with peak_gflops_fp32, peak_gops_int8 and bandwidth_gbs filled: from the cache file
    ``cache_dir/probe-<fingerprint>.json`` when it holds a probe good enough (a full probe always is; a quick
    one only for a quick run), otherwise probed now and cached. A damaged cache file is probed again."""
    limits = _cached(cache_dir, env.fingerprint, quick)
    if limits is None:
        limits = probe_machine(quick, threads=env.logical_cores, isa=tuple(env.isa or ()))
        _store(cache_dir, env.fingerprint, limits)
    return dataclasses.replace(env, peak_gflops_fp32=limits.peak_gflops_fp32,
                               peak_gops_int8=limits.peak_gops_int8, bandwidth_gbs=limits.bandwidth_gbs)


def cache_path(cache_dir: Path, fingerprint: str) -> Path:
    return Path(cache_dir) / f"probe-{fingerprint}.json"


def _cached(cache_dir: Path, fingerprint: str, quick: bool) -> MachineLimits | None:
    try:
        data = json.loads(cache_path(cache_dir, fingerprint).read_text())
        if data.get("version") != CACHE_VERSION or data.get("fingerprint") != fingerprint:
            return None
        limits = MachineLimits(**{**data["limits"], "notes": tuple(data["limits"]["notes"])})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing or damaged: measure again (the cache is only a shortcut)
    return limits if quick or not limits.quick else None


def _store(cache_dir: Path, fingerprint: str, limits: MachineLimits) -> None:
    from generator.results.store import atomic_write_bytes

    data = {"version": CACHE_VERSION, "fingerprint": fingerprint, "limits": dataclasses.asdict(limits)}
    path = cache_path(cache_dir, fingerprint)
    try:
        atomic_write_bytes(path, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode())
    except OSError as e:
        raise RunError(
            f"Cannot write the machine-limits cache {path}: {e.strerror or e}. Make the folder writable (it is "
            "under the project's .perfsite folder) or remove the file that blocks it."
        ) from e
