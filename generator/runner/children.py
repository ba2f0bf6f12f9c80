"""Run one worker child process and read what it reported.

Each measurement runs in its own process so that a crash (segfault, out of memory) or a hang is contained:
the parent records it as the trial's failure reason and the sweep goes on. The worker protocol is two JSON
files (job in, outcome out) plus one .npy of latencies per request stream; see generator.runner.worker.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generator import processes
from generator.runner.aggregate import ProcessOutcome
from generator.runner.protocol import WorkerJob, profile_path


@dataclass(frozen=True)
class ChildResult:
    output: dict[str, Any]
    error: str | None
    # A measurement process that profiled after its timed loop (WorkerJob.profile_requests): what it profiled,
    # or why not. Its timed figures stand either way: OUT.json was written before profiling started.
    profile: dict[str, Any] | None = None
    profile_error: str | None = None


def run_child(job: WorkerJob, timeout_s: float) -> ChildResult:
    """Run the worker on `job`; a crash, a timeout or an error becomes `error` (one line), never an exception."""
    job_path, out_path = job.work / "job.json", job.work / "out.json"
    job_path.write_text(job.to_json())
    cmd = [sys.executable, "-m", "generator.runner.worker", str(job_path), str(out_path)]
    try:
        proc = processes.run(cmd, timeout=timeout_s, text=True, env=processes.measuring_env())
    except subprocess.TimeoutExpired:
        return _timed_out(job, out_path, timeout_s)
    return _answer(job, proc, out_path)


def run_pair(jobs: tuple[WorkerJob, ...], timeout_s: float) -> tuple[ChildResult, ...]:
    """Run the worker on jobs done together in one process: two measure-mode jobs (generator.runner.interleave),
    a configuration's generative versions (measured, or profiled by phase, in turn); `timeout_s` for all; each
    job's answer as run_child gives it."""
    paths = [(job.work / "job.json", job.work / "out.json") for job in jobs]
    for job, (job_path, _) in zip(jobs, paths, strict=True):
        job_path.write_text(job.to_json())
    cmd = [sys.executable, "-m", "generator.runner.worker", *(str(p) for pair in paths for p in pair)]
    try:
        proc = processes.run(cmd, timeout=timeout_s, text=True, env=processes.measuring_env())
    except subprocess.TimeoutExpired:
        return tuple(_timed_out(job, out, timeout_s, "both versions' measure.timeout_s, measured together")
                     for job, (_, out) in zip(jobs, paths, strict=True))
    return tuple(_answer(job, proc, out) for job, (_, out) in zip(jobs, paths, strict=True))


def _answer(job: WorkerJob, proc: subprocess.CompletedProcess, out_path: Path) -> ChildResult:
    """What a finished worker answered for `job` (its OUT.json, and its profile when it profiled)."""
    output = _read_output(out_path)
    profiles = job.mode == "measure" and job.profile_requests > 0
    if "error" not in output and output and (proc.returncode == 0 or profiles):
        # A measurement whose profiling crashed the process: the figures stand, the profile is lost.
        return ChildResult(output, None, *_profile_of(proc, out_path, profiles))
    if proc.returncode == 0 and "error" not in output:
        return ChildResult(output, None)
    return ChildResult(output, _failure_reason(proc, output))


def _timed_out(job: WorkerJob, out_path: Path, timeout_s: float,
               setting: str = "measure.timeout_s") -> ChildResult:
    reason = f"timed out after {timeout_s:g} s ({setting})"
    output = _read_output(out_path) if job.mode == "measure" and job.profile_requests > 0 else {}
    if output and "error" not in output:  # killed while profiling: the timed figures were written
        return ChildResult(output, None, None, f"the profiled inferences {reason}")
    return ChildResult({}, reason)


def _profile_of(proc: subprocess.CompletedProcess, out_path: Path,
                profiles: bool) -> tuple[dict[str, Any] | None, str | None]:
    if not profiles:
        return None, None
    profile = _read_output(profile_path(out_path))
    if profile and "error" not in profile:
        return profile, None
    if "error" in profile:
        return None, str(profile["error"])
    return None, _failure_reason(proc, {}).replace("measurement process", "process, while profiling,", 1)


def _read_output(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _failure_reason(proc: subprocess.CompletedProcess, output: dict[str, Any]) -> str:
    if "error" in output:
        return str(output["error"])
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        # Linux's out-of-memory killer ends a process with SIGKILL and leaves no message of its own.
        hint = ", most likely by the kernel's out-of-memory killer" if proc.returncode == -signal.SIGKILL else ""
        return f"the measurement process crashed ({name}{hint}){_stderr_tail(proc.stderr)}"
    if "MemoryError" in (proc.stderr or ""):
        return "the measurement process ran out of memory"
    return f"the measurement process exited with status {proc.returncode}{_stderr_tail(proc.stderr)}"


def _stderr_tail(stderr: str | None) -> str:
    lines = [ln for ln in (stderr or "").strip().splitlines() if ln.strip()]
    return f": {lines[-1].strip()[:300]}" if lines else ""


def process_outcome(output: dict[str, Any], process: int, rnd: int, rule_applies: bool = True,
                    concurrency: int = 1) -> ProcessOutcome:
    """The outcome of a measure-mode worker as a typed record, latencies and run-delays loaded from its .npy
    files (`rule_applies`: generator.results.clean.applies for the trial's configuration)."""
    latencies = tuple(np.load(p) for p in output["latency_files"])
    delays = tuple(np.load(p) for p in output.get("run_delay_files", []))
    return ProcessOutcome(
        process=process,
        round=rnd,
        iterations=int(output["iterations"]),
        items=int(output["items"]),
        wall_s=float(output["wall_s"]),
        cpu_s=float(output["cpu_s"]),
        load_ms=float(output["load_ms"]),
        first_run_ms=float(output["first_run_ms"]),
        peak_rss_mb=output.get("peak_rss_mb"),
        arena_mb=output.get("arena_mb"),
        latencies_ms=latencies,
        run_delays_ms=delays,
        delay_threads=int(output.get("delay_threads", 0)) if len(delays) == len(latencies) else 0,
        rule_applies=rule_applies,
        concurrency=concurrency,
        ttft_ms=np.load(output["ttft_file"]) if output.get("ttft_file") else None,
        steps_ms=np.load(output["steps_file"]) if output.get("steps_file") else None,
    )


def measured_s(started: float, result: ChildResult) -> float:
    """What a measurement process started at `started` (time.monotonic()) charges the trial's budget: its time
    until it wrote its figures (OUT.json's measured_until, the clock every process shares), so that the
    profiling after them is left out, a crash or a timeout while profiling included; its whole wall time when
    it wrote none (a failure costs what it took)."""
    now = time.monotonic()
    until = (result.output or {}).get("measured_until")
    if isinstance(until, int | float) and started <= until <= now:
        return float(until) - started
    return now - started - float((result.profile or {}).get("profile_s", 0.0))
