"""One probe of the machine's limits (an *attempt*): peak FP32 and INT8 rates through onnxruntime, and memory
bandwidth, each the best of repeated runs, with what disturbed it. generator.machine.probe repeats attempts
until two agree (generator.machine.probe_settle).

- Compute: one large MatMul (FP32) and one MatMulInteger (uint8 × int8 → int32) run through onnxruntime with
  the intra-op pool at every logical core; the best of repeated runs (a shared machine only ever slows a run
  down). 2·n³ operations per run (a multiply-add counts 2). The FP32 peak is the higher of that MatMul and a
  3×3 convolution of 256 channels at 14×14 (2·C²·9·H·W operations), which onnxruntime runs in its blocked NCHWc
  layout: those convolution kernels reach more than its MatMul does (on the 2-core development VM 118 against
  96 GFLOP/s on one thread), and with the MatMul alone, most of a CNN's convolutions measured above their
  ceiling (docs/methodology-profile.md gives the counts).
- Bandwidth: an onnxruntime Add of a scalar over a large float array, bound to preallocated buffers (IO
  binding, so no run allocates or page-faults): bytes read + bytes written per run, best of the runs of a time
  budget. A numpy copy of the same size is recorded in the notes for reference; the roofline uses
  onnxruntime's figure, which streams with ordinary stores like the kernels it bounds.

An attempt is *disturbed* when the runs of one measurement disagree (median more than DISAGREEMENT above the
best), when its threads waited for a CPU (scheduler run-delay of every thread of the process,
/proc/self/task/*/schedstat, above RUN_DELAY_SHARE of the measurement's wall time × threads), or when they
ran on fewer cores than they are (process CPU time ÷ wall time below MIN_CORES_SHARE × threads: on the 2-vCPU
development VM the process sometimes gets one core for seconds, and then every run agrees, at half the peak,
with no run-delay to show for it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# (matrix size n, minimum runs, time budget in s per compute measurement), (floats in the bandwidth arrays,
# minimum runs, time budget). The bandwidth gets a budget of its own: on the development VM the best of 8
# back-to-back runs ranged from 21 to 41 GB/s between attempts, the best of half a second's runs from 34 to 38.
# The quick sizes keep an attempt near 0.4 s; the bandwidth arrays stay larger than the last-level cache.
FULL = {"gemm_n": 1024, "min_runs": 8, "budget_s": 0.5, "stream_floats": 64 << 20, "stream_runs": 8,
        "stream_budget_s": 0.5}
QUICK = {"gemm_n": 512, "min_runs": 3, "budget_s": 0.06, "stream_floats": 16 << 20, "stream_runs": 4,
         "stream_budget_s": 0.1}
# The convolution of the FP32 peak: channels in and out, height and width (about 0.23 GFLOP a run). Of the
# shapes tried on the development VM (64 to 256 channels, 14 to 56 pixels), the fastest per operation.
CONV_CHANNELS, CONV_PIXELS = 256, 14
CONV_OPS = 2.0 * CONV_CHANNELS**2 * 9 * CONV_PIXELS**2
# Runs of one measurement whose median is this much slower than their best were disturbed: on a quiet machine
# they repeat within a few per cent.
DISAGREEMENT = 0.25
# Share of the probe's thread-time spent waiting for a CPU above which another process took the machine.
RUN_DELAY_SHARE = 0.10
# Cores used by the timed runs, as a share of the threads, below which the process did not get its cores: on
# the 2-vCPU development VM, timed runs that had both cores used 1.8 to 2.0 (the bandwidth's down to 1.5),
# those that got one 0.9 to 1.35.
MIN_CORES_SHARE = 0.75
# Instruction sets that give the CPU an int8 dot-product path (see environment.ISA_FLAGS); without one,
# onnxruntime's u8s8 kernels fall back to AVX2's 16-bit multiply-adds.
INT8_DOT_ISA = ("AVX512-VNNI", "AVX-VNNI", "AMX-INT8")


@dataclass(frozen=True)
class ProbeAttempt:
    """One attempt's figures (each the best of its runs), how they were obtained, and what disturbed it."""

    peak_gflops_fp32: float
    peak_gops_int8: float | None  # None when onnxruntime could not run MatMulInteger here
    bandwidth_gbs: float
    notes: tuple[str, ...] = ()
    disturbances: tuple[str, ...] = ()  # in words; empty: undisturbed

    @property
    def disturbed(self) -> bool:
        return bool(self.disturbances)


@dataclass
class _Watch:
    """What an attempt's measurements looked like: the slowest median-over-best ratio, the fewest cores used."""

    threads: int
    worst_spread: float = 1.0
    worst_what: str = ""
    fewest_cores: float | None = None
    fewest_what: str = ""

    def best_s(self, what: str, run: Callable[[], None], min_runs: int, budget_s: float) -> float:
        """The fastest of the timed runs of `run`, in seconds (see _run_times), noting their spread and cores."""
        times, cores = _run_times(run, min_runs, budget_s)
        best = min(times)
        spread = float(np.median(times)) / best if best > 0 else 1.0
        if spread > self.worst_spread:
            self.worst_spread, self.worst_what = spread, what
        if cores is not None and (self.fewest_cores is None or cores < self.fewest_cores):
            self.fewest_cores, self.fewest_what = cores, what
        return best


def _run_delay_s() -> float | None:
    """Seconds every thread of this process has waited for a CPU so far (second field of each thread's
    schedstat); None where the kernel does not provide it (not Linux, or schedstats compiled out)."""
    total, seen = 0.0, False
    for path in Path("/proc/self/task").glob("*/schedstat"):
        try:
            total += int(path.read_text().split()[1]) / 1e9
            seen = True
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total if seen else None


def disturbances(spread: float, what: str, delay_s: float | None, wall_s: float, threads: int,
                 cores: float | None = None, cores_what: str = "") -> tuple[str, ...]:
    """Why an attempt counts as disturbed, in words (empty: undisturbed); see the module docstring."""
    out = []
    if spread > 1 + DISAGREEMENT:
        out.append(f"{what} runs disagreed, median {100 * (spread - 1):.0f} % above the best")
    if delay_s is not None and wall_s > 0 and delay_s / (wall_s * threads) > RUN_DELAY_SHARE:
        out.append(f"its threads waited for a CPU {100 * delay_s / (wall_s * threads):.0f} % of the time")
    if cores is not None and threads > 1 and cores < MIN_CORES_SHARE * threads:
        out.append(f"its {cores_what} runs used {cores:.1f} of {threads} cores")
    return tuple(out)


def probe_once(quick: bool, threads: int, isa: tuple[str, ...]) -> ProbeAttempt:
    """One attempt (see the module docstring); `isa` only annotates the INT8 figure's note."""
    import onnxruntime as ort

    size = QUICK if quick else FULL
    n, runs, budget = size["gemm_n"], size["min_runs"], size["budget_s"]
    watch, delay0, wall0 = _Watch(threads), _run_delay_s(), time.perf_counter()
    fp32_s = watch.best_s("FP32", _gemm_runner(n, integer=False, threads=threads), runs, budget)
    conv_s = watch.best_s("FP32 convolution", _conv_runner(threads), runs, budget)
    try:
        int8_s: float | None = watch.best_s("INT8", _gemm_runner(n, integer=True, threads=threads), runs, budget)
    except Exception:  # noqa: BLE001  onnxruntime's pybind errors: a build without the int8 kernel
        int8_s = None
    floats = size["stream_floats"]
    stream_s = watch.best_s("bandwidth", _stream_runner(floats, threads), size["stream_runs"],
                            size["stream_budget_s"])
    delay1, wall_s = _run_delay_s(), time.perf_counter() - wall0
    numpy_bw = _numpy_copy_gbs(floats, size["stream_runs"])
    delay = delay1 - delay0 if delay0 is not None and delay1 is not None else None
    ops = 2.0 * n**3
    gemm_gflops, conv_gflops = ops / fp32_s / 1e9, CONV_OPS / conv_s / 1e9
    dot = [name for name in INT8_DOT_ISA if name in isa]
    notes = (
        f"FP32: the higher of onnxruntime {ort.__version__} MatMul {n}×{n}×{n} ({gemm_gflops:.1f} GFLOP/s, "
        f"2·n³ FLOP per run) and a 3×3 Conv of {CONV_CHANNELS} channels at {CONV_PIXELS}×{CONV_PIXELS} "
        f"({conv_gflops:.1f} GFLOP/s, 2·C²·9·H·W FLOP per run), {threads} intra-op "
        f"thread{'s' if threads != 1 else ''}, best run of at least {runs} each.",
        f"INT8: MatMulInteger uint8 × int8 → int32 at the same size and threads; int8 dot-product "
        f"instructions: {', '.join(dot) if dot else 'none (16-bit multiply-add path)'}."
        + ("" if int8_s is not None else " onnxruntime could not run it here."),
        f"Bandwidth: onnxruntime Add over {floats * 4 >> 20} MiB of float32 into a preallocated output, "
        f"bytes read + written per run, best of at least {size['stream_runs']} runs; a numpy copy of the same "
        f"size reached {numpy_bw:.1f} GB/s.",
    )
    return ProbeAttempt(
        peak_gflops_fp32=max(gemm_gflops, conv_gflops), peak_gops_int8=ops / int8_s / 1e9 if int8_s else None,
        bandwidth_gbs=8 * floats / stream_s / 1e9, notes=notes,
        disturbances=disturbances(watch.worst_spread, watch.worst_what, delay, wall_s, threads,
                                  watch.fewest_cores, watch.fewest_what),
    )


def _run_times(run: Callable[[], None], min_runs: int, budget_s: float) -> tuple[list[float], float | None]:
    """At least `min_runs` timed calls, continuing until `budget_s` has passed, in seconds, and the cores the
    process used meanwhile (CPU time ÷ wall time; None over no measurable time); one untimed call first
    (session warm-up, prepacking, first-touch of buffers)."""
    run()
    times: list[float] = []
    start, cpu0 = time.perf_counter(), time.process_time()
    while len(times) < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - start
    return times, (time.process_time() - cpu0) / wall if wall > 0 else None


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


def _conv_runner(threads: int) -> Callable[[], None]:
    """The FP32 convolution (same padding: the output has the input's shape)."""
    from onnx import TensorProto

    rng = np.random.default_rng(0)
    c, p = CONV_CHANNELS, CONV_PIXELS
    weight = rng.standard_normal((c, c, 3, 3), dtype=np.float32) * 0.01
    model = _one_node_model("Conv", TensorProto.FLOAT, TensorProto.FLOAT, (1, c, p, p), weight, pads=[1, 1, 1, 1])
    feed = rng.standard_normal((1, c, p, p), dtype=np.float32)
    return _bound_runner(model, threads, feed, np.empty((1, c, p, p), np.float32))


def _stream_runner(floats: int, threads: int) -> Callable[[], None]:
    from onnx import TensorProto

    model = _one_node_model("Add", TensorProto.FLOAT, TensorProto.FLOAT, (floats,), np.ones(1, np.float32))
    # Filled, not np.empty: untouched pages would make the first runs measure page faults.
    return _bound_runner(model, threads, np.ones(floats, np.float32), np.zeros(floats, np.float32))


def _one_node_model(op: str, in_type: int, out_type: int, shape: tuple[int, ...], weight: np.ndarray,
                    **attributes: object) -> bytes:
    """Y = op(X, W) with W an initializer; opset 17 / IR 10, which every onnxruntime we allow loads (NOTES.md)."""
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node(op, ["X", "W"], ["Y"], **attributes)], "probe",
        [helper.make_tensor_value_info("X", in_type, list(shape))],
        [helper.make_tensor_value_info("Y", out_type, list(shape))],
        [numpy_helper.from_array(weight, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model.SerializeToString()


def _numpy_copy_gbs(floats: int, runs: int) -> float:
    src, dst = np.ones(floats, np.float32), np.zeros(floats, np.float32)
    return 8 * floats / min(_run_times(lambda: np.copyto(dst, src), runs, 0.0)[0]) / 1e9
