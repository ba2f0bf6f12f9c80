"""The measurements of a one-shot profile, each in a worker child process (generator.runner.worker's protocol).

One model at one configuration could run in this process, but a crash inside onnxruntime (a segfault in a
kernel, the out-of-memory killer) would then end the command without a word. The sweep's worker already turns
every such failure into one line (generator.runner.children), so the profile reuses it: a ``measure`` job
(cold start, warmup, timed loop) and then a ``profile`` job (onnxruntime's profiler in a separate session, the
executed nodes mapped to the model's nodes, the static FLOP analysis), like one trial of ``perfsite run``.
Each job costs about 0.7 s of process start-up.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generator.errors import RunError
from generator.machine.environment import Environment
from generator.machine.session import check_providers
from generator.results import clean
from generator.runner import aggregate, children, worker
from generator.runner.protocol import WorkerJob

# The timed loop stops at whichever comes last of the asked iterations and MIN_SECONDS, or at max_seconds.
MIN_SECONDS = 0.0
# Beyond the timed phase: model load, warmup and the profiled pass of a large model.
TIMEOUT_MARGIN_S = 600.0
QUICK_CAPS = {"warmup": 3, "iterations": 10, "profile_iterations": 3, "max_seconds": 2.0}


@dataclass(frozen=True)
class ProfileOptions:
    """How to measure: the session's configuration and the loop's length."""

    threads: int
    iterations: int = 100
    warmup: int = 10
    profile_iterations: int = 10
    max_seconds: float = 60.0
    provider: str = "cpu"
    optimization_level: str = "all"
    spinning: bool = True
    quick: bool = False

    def effective(self) -> ProfileOptions:
        """Quick mode (tests, previews) caps the loop, as `perfsite run --quick` does; reports mark it."""
        if not self.quick:
            return self
        return dataclasses.replace(self, **{k: min(getattr(self, k), v) for k, v in QUICK_CAPS.items()})

    def config(self, batch: int) -> dict[str, Any]:
        """The worker's configuration dict (generator.plan.Configuration.as_dict() keys)."""
        return {"batch": batch, "threads": self.threads, "concurrency": 1,
                "optimization_level": self.optimization_level, "provider": self.provider,
                "spinning": self.spinning, "inter_op_threads": 1}

    def settings(self) -> dict[str, Any]:
        return {"warmup": self.warmup, "min_iterations": self.iterations, "min_seconds": MIN_SECONDS,
                "max_seconds": self.max_seconds, "profile_iterations": self.profile_iterations}


@dataclass(frozen=True)
class Measured:
    """What the two worker jobs reported."""

    loop: dict[str, Any]  # measure-mode OUT.json (iterations, wall_s, cpu_s, load_ms, first_run_ms, ...)
    latencies_ms: np.ndarray  # every timed request, in order
    process: aggregate.ProcessOutcome  # the same requests with their run-delays: clean and preempted ones
    profile: dict[str, Any]  # profile-mode OUT.json (nodes, layers, profile_file, model_run_us, ...)
    profile_warmup: int  # profiled runs the worker discarded before the kept ones


def measure_model(model_path: Path, feeds: dict[str, np.ndarray], batch: int, options: ProfileOptions,
                  work_dir: Path) -> Measured:
    """Run the measure job, then the profile job, on ``feeds``; RunError (naming the model) on any failure."""
    check_providers([options.provider], "--provider")
    feeds_path = work_dir / "feeds.npz"
    np.savez(feeds_path, **feeds)
    loop = _run(model_path, feeds_path, "measure", batch, options, work_dir)
    latencies = np.concatenate([np.load(p) for p in loop["latency_files"]])
    # The sweep's rule for preempted requests (generator.results.clean), on the one measurement process.
    applies = clean.applies(options.threads, 1, os.cpu_count())
    process = children.process_outcome(loop, process=0, rnd=0, rule_applies=applies, concurrency=1)
    profile = _run(model_path, feeds_path, "profile", batch, options, work_dir)
    warmup = max(1, min(options.warmup, worker.PROFILE_WARMUP_MAX))  # as the worker's profile_pass skips them
    return Measured(loop, latencies, process, profile, warmup)


def noise(measured: Measured, threads: int, percentile: str = "p90") -> dict[str, Any]:
    """The sweep's noise rules and preempted share for the one measurement process (generator.runner.aggregate),
    and the latency figures of its clean requests."""
    cores = min(threads, os.cpu_count() or threads)
    columns = aggregate.measurement_columns([measured.process], float(cores), percentile)
    reasons = columns["noise_reasons"]
    return {"noisy": bool(columns["noisy"]), "reasons": reasons.split("; ") if reasons else [],
            "preemption_known": bool(columns["preemption_known"]), "preempted_share": columns["preempted_share"],
            "clean_latency_ms": {k: columns[f"latency_{k}_ms"] for k in ("mean", "p50", "p90", "p95", "p99")}}


def _run(model_path: Path, feeds_path: Path, mode: str, batch: int, options: ProfileOptions,
         work_dir: Path) -> dict[str, Any]:
    work = work_dir / mode
    work.mkdir(parents=True, exist_ok=True)
    job = WorkerJob(mode=mode, model_path=str(model_path), original_model_path=str(model_path),
                    config=options.config(batch), feeds_path=str(feeds_path), measure=options.settings(),
                    work_dir=str(work))
    result = children.run_child(job, timeout_s=options.max_seconds + TIMEOUT_MARGIN_S)
    if result.error:
        what = "the timed runs" if mode == "measure" else "the profiled runs"
        raise RunError(f"{model_path}: {what} failed: {result.error}.")
    return result.output


def thread_scale(env: Environment, threads: int) -> float:
    """Share of the machine's compute peak `threads` intra-op threads can reach: the probe uses every core
    (the same rule as generator.analysis.roofline.roofline; bandwidth is not scaled)."""
    cores = env.physical_cores or env.logical_cores or threads
    return min(threads, cores) / cores


def scaled_peak_gflops(env: Environment, threads: int) -> float | None:
    """The FP32 peak `threads` intra-op threads can reach (None when the machine was not probed)."""
    return env.peak_gflops_fp32 * thread_scale(env, threads) if env.peak_gflops_fp32 else None
