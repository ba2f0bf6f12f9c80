"""The machine's limits, measured: peak FP32 and INT8 rates through onnxruntime, and memory bandwidth.

The profile pages place every layer on a roofline (attainable = min(peak, intensity × bandwidth)); its two
ceilings come from here. They are measured, never computed from nominal clocks: `/proc/cpuinfo` understates
the clock of these VMs, and what matters is what onnxruntime's own kernels reach on this machine.

- Compute: one large MatMul (FP32) and one MatMulInteger (uint8 × int8 → int32) run through onnxruntime with
  the intra-op pool at every logical core; the best of repeated runs (a shared machine only ever slows a run
  down). 2·n³ operations per run (a multiply-add counts 2). The FP32 peak is the higher of that MatMul and a
  3×3 convolution of 256 channels at 14×14 (2·C²·9·H·W operations), which onnxruntime runs in its blocked NCHWc
  layout: those convolution kernels reach more than its MatMul does (on the 2-core development VM 118 against
  96 GFLOP/s on one thread), and with the MatMul alone, most of a CNN's convolutions measured above their
  ceiling (docs/methodology-profile.md gives the counts).
- Bandwidth: an onnxruntime Add of a scalar over a large float array, bound to preallocated buffers (IO
  binding, so no run allocates or page-faults): bytes read + bytes written per run, best of repeated runs. A
  numpy copy of the same size is recorded in the notes for reference; the roofline uses onnxruntime's figure,
  which streams with ordinary stores like the kernels it bounds.

Disturbance: a neighbour can only slow the probe down, so every figure is the best of repeated runs, and the
probe also checks whether it was disturbed: the runs of one measurement disagreeing (median more than
DISAGREEMENT above the best) or its threads waiting for a CPU (scheduler run-delay of every thread of the
process, /proc/self/task/*/schedstat, above RUN_DELAY_SHARE of the probe's wall time × threads). A disturbed
probe is repeated (up to ATTEMPTS in all), each figure the best over the attempts; its quality (clean or
disturbed, how many attempts) and date are cached with it and shown on the pages beside the limits.

The result is cached per environment fingerprint (``ensure_limits``) in one per-user folder
(``probe_cache_dir``) that `perfsite run` and `perfsite profile` share: a probe costs a few seconds once.
``reprobe`` measures again when a layer ran faster than the cached limits allow (generator.runner.limits_check).
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

from generator.machine.environment import Environment
from generator.paths import CACHE_ENV, cache_warning, unusable_reason

# (matrix size n, minimum runs, time budget in s per measurement), (floats in the bandwidth arrays, runs).
# The quick sizes keep a probe under a second; the bandwidth arrays stay larger than any last-level cache.
FULL = {"gemm_n": 1024, "min_runs": 8, "budget_s": 1.0, "stream_floats": 64 << 20, "stream_runs": 8}
QUICK = {"gemm_n": 512, "min_runs": 3, "budget_s": 0.06, "stream_floats": 16 << 20, "stream_runs": 4}
# The convolution of the FP32 peak: channels in and out, height and width (about 0.23 GFLOP a run). Of the
# shapes tried on the development VM (64 to 256 channels, 14 to 56 pixels), the fastest per operation.
CONV_CHANNELS, CONV_PIXELS = 256, 14
# 2: quality, attempts and reprobed added to the cached limits. 3: the FP32 peak includes the convolution.
CACHE_VERSION = 3
# Runs of one measurement whose median is this much slower than their best were disturbed: on a quiet machine
# they repeat within a few per cent.
DISAGREEMENT = 0.25
# Share of the probe's thread-time spent waiting for a CPU above which another process took the machine.
RUN_DELAY_SHARE = 0.10
ATTEMPTS = 2
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
    quality: str = "clean"  # "clean" or "disturbed" (see the module docstring)
    attempts: int = 1  # probes whose best figures these are
    disturbances: tuple[str, ...] = ()  # what disturbed the last attempt, in words
    reprobed: bool = False  # measured again because a layer ran above the previous limits

    @property
    def quality_text(self) -> str:
        """The quality as pages show it: ``clean (1 probe)``, ``disturbed (2 probes: ...)``."""
        probes = f"{self.attempts} probe{'s' if self.attempts != 1 else ''}"
        why = f": {'; '.join(self.disturbances)}" if self.disturbances else ""
        again = ", re-probed after a layer exceeded the earlier limits" if self.reprobed else ""
        return f"{self.quality} ({probes}{why}{again})"


def probe_machine(quick: bool, threads: int | None = None, isa: tuple[str, ...] = ()) -> MachineLimits:
    """Measure the FP32 and INT8 peaks and the memory bandwidth (see the module docstring), probing again
    while disturbed, up to ATTEMPTS probes; each figure is the best over the probes.

    `threads` is the intra-op pool size (default: every logical core); `isa` (the environment's instruction
    sets) only annotates the INT8 figure with the dot-product path the CPU has.
    """
    threads = threads or os.cpu_count() or 1
    best: MachineLimits | None = None
    for attempt in range(1, ATTEMPTS + 1):
        limits = _probe_once(quick, threads, isa)
        best = limits if best is None else best_of(best, limits)
        best = dataclasses.replace(best, quality=limits.quality, disturbances=limits.disturbances,
                                   attempts=attempt, measured_at=limits.measured_at)
        if limits.quality == "clean":
            break
    assert best is not None
    return best


def best_of(a: MachineLimits, b: MachineLimits) -> MachineLimits:
    """Each figure the higher of two probes (a shared machine only ever slows a probe down); the rest from `b`,
    but for `quick`: the figures are at least a full probe's when either was one, so a quick run's re-probe
    of a full probe leaves it good enough for a full run (which otherwise probed the machine all over again)."""
    int8 = max((x for x in (a.peak_gops_int8, b.peak_gops_int8) if x is not None), default=None)
    return dataclasses.replace(b, peak_gflops_fp32=max(a.peak_gflops_fp32, b.peak_gflops_fp32),
                               peak_gops_int8=int8, bandwidth_gbs=max(a.bandwidth_gbs, b.bandwidth_gbs),
                               quick=a.quick and b.quick)


@dataclass
class _Watch:
    """What a probe's runs looked like: the slowest median-over-best ratio and the threads' run-delay."""

    worst_spread: float = 1.0
    worst_what: str = ""

    def runs(self, what: str, times: list[float]) -> float:
        best = min(times)
        spread = float(np.median(times)) / best if best > 0 else 1.0
        if spread > self.worst_spread:
            self.worst_spread, self.worst_what = spread, what
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


def disturbances(spread: float, what: str, delay_s: float | None, wall_s: float, threads: int) -> tuple[str, ...]:
    """Why a probe counts as disturbed, in words (empty: clean); see the module docstring for the rules."""
    out = []
    if spread > 1 + DISAGREEMENT:
        out.append(f"{what} runs disagreed, median {100 * (spread - 1):.0f} % above the best")
    if delay_s is not None and wall_s > 0 and delay_s / (wall_s * threads) > RUN_DELAY_SHARE:
        out.append(f"its threads waited for a CPU {100 * delay_s / (wall_s * threads):.0f} % of the time")
    return tuple(out)


def _probe_once(quick: bool, threads: int, isa: tuple[str, ...]) -> MachineLimits:
    import onnxruntime as ort

    size = QUICK if quick else FULL
    n = size["gemm_n"]
    watch, delay0, wall0 = _Watch(), _run_delay_s(), time.perf_counter()
    fp32_s = watch.runs("FP32", _run_times(_gemm_runner(n, integer=False, threads=threads), size["min_runs"],
                                           size["budget_s"]))
    conv_s = watch.runs("FP32 convolution", _run_times(_conv_runner(threads), size["min_runs"], size["budget_s"]))
    try:
        int8_s: float | None = watch.runs("INT8", _run_times(_gemm_runner(n, integer=True, threads=threads),
                                                             size["min_runs"], size["budget_s"]))
    except Exception:  # noqa: BLE001  onnxruntime's pybind errors: a build without the int8 kernel
        int8_s = None
    floats = size["stream_floats"]
    stream_s = watch.runs("bandwidth", _run_times(_stream_runner(floats, threads), size["stream_runs"], 0.0))
    ort_bw = 8 * floats / stream_s / 1e9
    delay1, wall_s = _run_delay_s(), time.perf_counter() - wall0
    numpy_bw = _numpy_copy_gbs(floats, size["stream_runs"])
    delay = delay1 - delay0 if delay0 is not None and delay1 is not None else None
    why = disturbances(watch.worst_spread, watch.worst_what, delay, wall_s, threads)
    ops = 2.0 * n**3
    gemm_gflops, conv_gflops = ops / fp32_s / 1e9, CONV_OPS / conv_s / 1e9
    dot = [name for name in INT8_DOT_ISA if name in isa]
    notes = (
        f"FP32: the higher of onnxruntime {ort.__version__} MatMul {n}×{n}×{n} ({gemm_gflops:.1f} GFLOP/s, "
        f"2·n³ FLOP per run) and a 3×3 Conv of {CONV_CHANNELS} channels at {CONV_PIXELS}×{CONV_PIXELS} "
        f"({conv_gflops:.1f} GFLOP/s, 2·C²·9·H·W FLOP per run), {threads} intra-op "
        f"thread{'s' if threads != 1 else ''}, best run of at least {size['min_runs']} each.",
        f"INT8: MatMulInteger uint8 × int8 → int32 at the same size and threads; int8 dot-product "
        f"instructions: {', '.join(dot) if dot else 'none (16-bit multiply-add path)'}."
        + ("" if int8_s is not None else " onnxruntime could not run it here."),
        f"Bandwidth: onnxruntime Add over {floats * 4 >> 20} MiB of float32 into a preallocated output, "
        f"bytes read + written per run, best of {size['stream_runs']}; a numpy copy of the same size reached "
        f"{numpy_bw:.1f} GB/s.",
    )
    return MachineLimits(
        peak_gflops_fp32=max(gemm_gflops, conv_gflops), peak_gops_int8=ops / int8_s / 1e9 if int8_s else None,
        bandwidth_gbs=ort_bw, threads=threads, quick=quick, notes=notes,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        quality="disturbed" if why else "clean", disturbances=why,
    )


def _run_times(run: Callable[[], None], min_runs: int, budget_s: float) -> list[float]:
    """At least `min_runs` timed calls, continuing until `budget_s` has passed, in seconds; one untimed call
    first (session warm-up, prepacking, first-touch of buffers)."""
    run()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return times


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


CONV_OPS = 2.0 * CONV_CHANNELS**2 * 9 * CONV_PIXELS**2


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
    return 8 * floats / min(_run_times(lambda: np.copyto(dst, src), runs, 0.0)) / 1e9


def probe_cache_dir() -> Path:
    """The one cache of machine probes, shared by `perfsite run` and `perfsite profile`: $PERFSITE_CACHE_DIR/probe
    when set (tests point it at a temporary folder), else $XDG_CACHE_HOME/perfsite/probe, else
    ~/.cache/perfsite/probe. Per user, not per project: the limits belong to the machine."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]) / "probe"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfsite" / "probe"


PROBING_MESSAGE = "Measuring the machine's peak and bandwidth (cached once per machine)..."


def ensure_limits(env: Environment, quick: bool, cache_dir: Path | None = None,
                  warn: Callable[[str], None] | None = None,
                  announce: Callable[[str], None] | None = None) -> Environment:
    """`env` with its limits filled (see with_limits): from the cache file ``probe-<fingerprint>.json`` in
    `cache_dir` (default probe_cache_dir()) when it holds a probe good enough (a full probe always is; a quick
    one only for a quick run), otherwise probed now and cached. A damaged cache file is probed again; an
    unwritable cache folder is named to `warn` and the probe is used uncached. `announce` hears PROBING_MESSAGE
    as the probe starts: it takes seconds, and is said only when it really runs."""
    folder = Path(cache_dir) if cache_dir is not None else probe_cache_dir()
    limits = cached_limits(folder, env.fingerprint, quick)
    if limits is None:
        if announce is not None:
            announce(PROBING_MESSAGE)
        limits = probe_machine(quick, threads=env.logical_cores, isa=tuple(env.isa or ()))
        _store(folder, env.fingerprint, limits, warn)
    return with_limits(env, limits)


def reprobe(env: Environment, quick: bool, cache_dir: Path | None = None,
            warn: Callable[[str], None] | None = None) -> Environment:
    """Probe again now, keep the better figure of the cached and the new probe for each limit (a disturbed
    probe only ever measures too low), mark the result `reprobed` and cache it (see ensure_limits: `warn`)."""
    folder = Path(cache_dir) if cache_dir is not None else probe_cache_dir()
    fresh = probe_machine(quick, threads=env.logical_cores, isa=tuple(env.isa or ()))
    old = cached_limits(folder, env.fingerprint, quick=True)
    limits = dataclasses.replace(best_of(old, fresh) if old else fresh, reprobed=True)
    _store(folder, env.fingerprint, limits, warn)
    return with_limits(env, limits)


def with_limits(env: Environment, limits: MachineLimits) -> Environment:
    """`env` with peak_gflops_fp32, peak_gops_int8, bandwidth_gbs, limits_probed_at and limits_quality set."""
    return dataclasses.replace(env, peak_gflops_fp32=limits.peak_gflops_fp32, peak_gops_int8=limits.peak_gops_int8,
                               bandwidth_gbs=limits.bandwidth_gbs, limits_probed_at=limits.measured_at,
                               limits_quality=limits.quality_text)


def cache_path(cache_dir: Path, fingerprint: str) -> Path:
    return Path(cache_dir) / f"probe-{fingerprint}.json"


def cached_limits(cache_dir: Path, fingerprint: str, quick: bool) -> MachineLimits | None:
    """The cached probe of this environment, or None when there is none good enough (see ensure_limits)."""
    try:
        data = json.loads(cache_path(cache_dir, fingerprint).read_text())
        if data.get("version") != CACHE_VERSION or data.get("fingerprint") != fingerprint:
            return None
        raw = data["limits"]
        limits = MachineLimits(**{**raw, "notes": tuple(raw["notes"]), "disturbances": tuple(raw["disturbances"])})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing or damaged: measure again (the cache is only a shortcut)
    return limits if quick or not limits.quick else None


def _store(cache_dir: Path, fingerprint: str, limits: MachineLimits,
           warn: Callable[[str], None] | None = None) -> None:
    """Cache the probe; an unwritable folder only costs a probe next time, so it is a warning, not an error."""
    from generator.results.store import atomic_write_bytes

    data = {"version": CACHE_VERSION, "fingerprint": fingerprint, "limits": dataclasses.asdict(limits)}
    try:
        atomic_write_bytes(cache_path(cache_dir, fingerprint),
                           (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode())
    except OSError as e:
        if warn is not None:
            warn(cache_warning(cache_dir, unusable_reason(cache_dir, e), "the machine's limits are measured"))
