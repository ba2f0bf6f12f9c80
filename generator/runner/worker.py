"""One child process: a measurement process or the profiled pass of one trial.

Usage: ``python -m generator.runner.worker JOB.json OUT.json``

JOB.json: a generator.runner.protocol.WorkerJob (mode measure | profile | outputs, model paths, config, feeds,
measure settings, work folder).

OUT.json, measure mode: iterations, items, wall_s, cpu_s, cores_used, latency_median_ms, latency_mean_ms,
throughput_ips, load_ms, first_run_ms, peak_rss_mb, arena_mb, latency_files (one float64 .npy of request
latencies in ms per stream, next to OUT.json), run_delay_files (the same per stream for each request's scheduler
run-delay in ms; empty when the kernel does not tell), delay_threads (threads read per request, 0: unknown) and
measured_until (time.monotonic() when the figures were written: what the parent charges to the budget).
Profile mode: nodes (``nodes`` table records, mapped to the
original graph), model_run_us, kernel_sum_us, profiled_latency_us (means per inference), runs, arena_mb,
optimized_model, profile_file, load_ms, layers (``layers`` table records without trial_key: static FLOP
analysis of the original model at the feeds' shapes), layers_notes (what was not counted and why), timeline
(``timeline`` table records without trial_key: every kernel call of the median profiled inference,
generator.timeline) and, when the analysis or one of its counters failed (a bug), layers_error; with the job
field ``record_outputs``, what outputs mode answers too (output_names, outputs_files), or outputs_error (one line)
when recording them failed, which leaves the profiled pass whole.
Outputs mode (job field ``extra_feeds_paths``: more input batches): output_names (the tensor outputs
with a numeric or bool dtype, in the model's order), outputs_files (one .npz per input batch in work_dir, the
trial's feeds first, arrays ``arr_0 ..`` in output_names order), load_ms.

Exit status 0 when OUT.json holds the outcome. Any exception writes ``{"error": "<one line>"}`` and exits 3;
user errors (PerfsiteError) keep their message, others are prefixed by their type and their traceback goes to
stderr. A crash (signal) leaves no OUT.json and a negative status for the parent.

Test hook: ``PERFSITE_TEST_FAULT=crash|hang|oom`` makes the worker segfault, sleep forever or run out of
memory right after session creation, when ``PERFSITE_TEST_FAULT_VERSION`` is unset or a substring of the
model path (generator.runner.process_env).

Phases mode (generative versions of one configuration, any number, given as pair mode gives them): their
prefill and one decode step profiled pass by pass in turn; each OUT.json holds its version's ``phase_ops`` and
``phase_nodes`` rows (generator.decode.phases).

Pair mode: ``python -m generator.runner.worker JOB_A.json OUT_A.json JOB_B.json OUT_B.json`` measures two
measure-mode jobs together (generator.runner.interleave: a paired run's baseline and candidate at one request
in flight) and answers each in its own OUT file as measure mode does (no peak memory: the process held both
models), then profiles each whose job asks.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from generator.errors import PerfsiteError, RunError
from generator.machine import profiler_cost, profiling
from generator.machine.session import open_session
from generator.results import clean
from generator.runner import interleave, measure, process_env
from generator.runner.protocol import WorkerJob, profile_path

EXIT_OK = 0
EXIT_ERROR = 3
PROFILE_WARMUP_MAX = 5  # untimed runs before the profiled ones: enough to settle arenas and caches


def run_job(job: WorkerJob, out_path: Path) -> dict[str, Any]:
    """Run one job and return what OUT.json should hold (the latency .npy files are written here)."""
    if job.mode == "phases":
        return phase_profiles((job,))[0]
    if job.mode == "measure":
        return measure_process(job, out_path)
    if job.mode == "profile":
        return profile_pass(job)
    return outputs_pass(job)


def profile_after_measuring(job: WorkerJob, out_path: Path) -> None:
    """The profiled inferences of a measurement process, written to profile_path once OUT.json holds the
    measurement: a crash while profiling costs the profile, never the timed figures."""
    started = time.perf_counter()
    try:
        outcome = profile_pass(job, full=job.profile_full)
        # Not measuring time: the parent leaves it out of the trial's measuring budget.
        outcome["profile_s"] = time.perf_counter() - started
    except Exception as e:
        if not isinstance(e, PerfsiteError | MemoryError):
            traceback.print_exc(file=sys.stderr)
        outcome = {"error": _error_line(e)}
    _write_json(profile_path(out_path), outcome)


def _feeds(feeds_path: str) -> dict[str, np.ndarray]:
    path = Path(feeds_path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except (OSError, ValueError) as e:
        raise RunError(f"Cannot read the input feeds {path}: {e}.") from e


def measure_process(job: WorkerJob, out_path: Path) -> dict[str, Any]:
    """Measure mode: open the session (load_ms), then the timed loop (first run, warmup, timed phase)."""
    config, settings = job.config, job.measure
    if job.decoder is not None:
        return _generative_process(job, out_path)
    feeds = _feeds(job.feeds_path)
    session, load_ms = open_session(job.model_path, config)
    process_env.test_fault(job.model_path)
    loop = measure.timed_loop(
        session, feeds, warmup=int(settings["warmup"]), min_iterations=int(settings["min_iterations"]),
        min_seconds=float(settings["min_seconds"]), max_seconds=float(settings["max_seconds"]),
        concurrency=int(config.get("concurrency", 1)), batch=int(config.get("batch", 1)),
    )
    return loop_outcome(loop, load_ms, out_path, process_env.peak_rss_mb())


def _generative_process(job: WorkerJob, out_path: Path) -> dict[str, Any]:
    """Measure mode for a generative trial: timed greedy generations (generator.runner.generative), answered
    as a measurement process answers, with each request's TTFT and decode steps in files beside OUT.json."""
    from generator.runner.generative import generation_files, timed_generations

    handle, load_ms = _open_decoder(job)
    process_env.test_fault(job.model_path)
    loop = _decode_loop(job, handle, _prompt([job]))
    generations = timed_generations(loop, job.config, job.measure)
    outcome = loop_outcome(generations.loop, load_ms, out_path, process_env.peak_rss_mb())
    return {**outcome, **generation_files(generations, out_path)}


def measure_generation_group(jobs: tuple[WorkerJob, ...], outs: tuple[Path, ...]) -> tuple[dict[str, Any], ...]:
    """Generative versions of one configuration in one process, their requests in turn
    (generator.runner.generative.timed_generation_group), each answered as a measurement process is; no peak
    memory (the process held every model) and a cold start for the version loaded first only."""
    from generator.runner.generative import generation_files, timed_generation_group

    handles = []
    for job in jobs:
        handles.append(_open_decoder(job))
        process_env.test_fault(job.model_path)
    prompt = _prompt(jobs)
    loops = [_decode_loop(job, handle, prompt) for job, (handle, _) in zip(jobs, handles, strict=True)]
    groups = timed_generation_group(loops, jobs[0].config, jobs[0].measure)
    answers = []
    for k, (generations, (_, load_ms), out) in enumerate(zip(groups, handles, outs, strict=True)):
        answer = {**loop_outcome(generations.loop, load_ms, out, None), **generation_files(generations, out)}
        if k:  # loaded into a process that had started onnxruntime: no cold start
            answer.update(load_ms=math.nan, first_run_ms=math.nan)
        answers.append(answer)
    return tuple(answers)


def _layout(job: WorkerJob):
    from generator.decode.convention import DecoderLayout

    return DecoderLayout(**job.decoder)


def _prompt(jobs) -> np.ndarray:
    """The prompt the jobs' versions (one configuration's) generate from."""
    from generator.decode.loop import shared_prompt

    config = jobs[0].config
    return shared_prompt([_layout(job) for job in jobs], int(config["batch"]), int(config["prompt_tokens"]))


def _open_decoder(job: WorkerJob) -> tuple[Any, float]:
    """What generates the job's tokens and its load time (ms): an onnxruntime session for perfsite's decode
    loop, or onnxruntime-genai's model (`engine: genai`, its folder in the job's work folder)."""
    if job.engine != "genai":
        return open_session(job.model_path, job.config)
    from generator.decode.genai import open_model

    config = job.config
    started = time.perf_counter_ns()
    model = open_model(Path(job.model_path), _layout(job), int(config.get("threads", 1)),
                       int(config["prompt_tokens"]) + int(config["new_tokens"]), job.work / "genai")
    return model, (time.perf_counter_ns() - started) / 1e6


def _decode_loop(job: WorkerJob, handle: Any, prompt: np.ndarray) -> Any:
    """The job's greedy generation from `prompt`: perfsite's DecodeLoop, or onnxruntime-genai's (GenaiLoop)."""
    new_tokens = int(job.config["new_tokens"])
    if job.engine == "genai":
        from generator.decode.genai import GenaiLoop

        return GenaiLoop(handle, prompt, new_tokens)
    from generator.decode.loop import DecodeLoop

    return DecodeLoop(handle, _layout(job), prompt, new_tokens)


def measure_pair(jobs: tuple[WorkerJob, WorkerJob], outs: tuple[Path, Path]) -> tuple[dict, dict]:
    """A pair process (generator.runner.interleave): both jobs' sessions, their timed requests in alternating
    blocks, each answered as a measurement process answers. Its peak memory is both models': none is given;
    the cold start is only the first-loaded version's."""
    sessions = []
    for job in jobs:
        sessions.append(open_session(job.model_path, job.config))
        process_env.test_fault(job.model_path)
    settings = [job.measure for job in jobs]
    most = {k: max(float(s[k]) for s in settings) for k in ("warmup", "min_iterations", "min_seconds", "max_seconds")}
    loops = interleave.timed_pair_loop(
        tuple(session.run for session, _ in sessions), tuple(_feeds(job.feeds_path) for job in jobs),
        warmup=int(most["warmup"]), min_iterations=int(most["min_iterations"]), min_seconds=most["min_seconds"],
        max_seconds=most["max_seconds"], batch=int(jobs[0].config.get("batch", 1)))
    answers = [loop_outcome(loop, load_ms, out, None) for loop, (_, load_ms), out in zip(loops, sessions, outs,
                                                                                            strict=True)]
    # The version loaded second found onnxruntime started and the process warm: its load and first request
    # are not a cold start. The sweep loads each side first in every other round.
    answers[1].update(load_ms=math.nan, first_run_ms=math.nan)
    return tuple(answers)


def loop_outcome(loop: measure.LoopResult, load_ms: float, out_path: Path, rss_mb: float | None) -> dict[str, Any]:
    """What OUT.json holds for a timed loop; its latencies and run-delays written beside it."""
    latency_files, delay_files = [], []
    for i, lat_ns in enumerate(loop.latencies_ns):
        path = out_path.with_name(f"{out_path.stem}.stream{i}.latency_ms.npy")
        np.save(path, lat_ns.astype(np.float64) / 1e6)
        latency_files.append(str(path))
        delay_ns = loop.run_delays_ns[i] if i < len(loop.run_delays_ns) else None
        if delay_ns is not None:
            path = out_path.with_name(f"{out_path.stem}.stream{i}.run_delay_ms.npy")
            np.save(path, delay_ns.astype(np.float64) / 1e6)
            delay_files.append(str(path))
    all_ms = loop.all_latencies_ms()
    return {
        "iterations": loop.iterations, "items": loop.items, "wall_s": loop.wall_s, "cpu_s": loop.cpu_s,
        "cores_used": loop.cores_used, "latency_median_ms": float(np.median(all_ms)),
        "latency_mean_ms": float(all_ms.mean()), "throughput_ips": loop.throughput_ips, "load_ms": load_ms,
        "first_run_ms": loop.first_run_ms, "peak_rss_mb": rss_mb,
        # onnxruntime's Python API exposes no allocator statistics (the C API's AllocatorGetStats is not
        # bound), so the arena is only known from a profiled pass (profile mode reports it).
        "arena_mb": None, "latency_files": latency_files,
        "run_delay_files": delay_files, "delay_threads": loop.delay_threads,
    }


def _profiled_figures(recording: profiling.ProfileRecording, stats: list[profiling.NodeStat],
                      latencies_ns: np.ndarray, delays_ns: np.ndarray | None) -> dict[str, Any]:
    """A profiling process's figures: per inference (for the medians per process) and their means."""
    arena = recording.arena_held_bytes
    return {
        "model_run_runs_us": list(recording.model_run_us), "kernel_sum_runs_us": list(recording.kernel_sum_us),
        "latency_runs_us": [float(x) / 1e3 for x in latencies_ns],
        "node_runs_us": profiling.node_run_times(recording, stats),
        "run_delays_us": None if delays_ns is None else [float(x) / 1e3 for x in delays_ns],
        "model_run_us": float(np.mean(recording.model_run_us)),
        "kernel_sum_us": float(np.mean(recording.kernel_sum_us)),
        "profiled_latency_us": float(latencies_ns.mean() / 1e3), "runs": len(recording.runs),
        "arena_mb": arena / 2**20 if arena is not None else None,
    }


def profile_pass(job: WorkerJob, full: bool = True) -> dict[str, Any]:
    """A session with onnxruntime's profiler on: per-node statistics, each node's time in every profiled
    inference (``node_runs_us``, for the medians per process the pages use) and the profiler's own cost per
    kernel call measured on a calibration chain (``profiler_cost_us``). With `full` (profile mode, or the
    first profiling process of a trial): also the nodes mapped to the model file, the static analysis, the
    timeline and the outputs when asked for."""
    config, settings = job.config, job.measure
    work = job.work
    work.mkdir(parents=True, exist_ok=True)
    optimized = work / "optimized.onnx"
    feeds = _feeds(job.feeds_path)
    profiled = {**config, "concurrency": 1}
    session, load_ms = open_session(job.model_path, profiled, profile_dir=work,
                                    optimized_path=optimized if full else None)
    process_env.test_fault(job.model_path)
    warmup = max(1, min(int(settings.get("warmup", 1)), PROFILE_WARMUP_MAX))
    run = session.run
    for _ in range(warmup):
        run(None, feeds)
    iterations = max(1, job.profile_requests or int(settings.get("profile_iterations", 10)))
    latencies_ns, delays_ns = _profiled_runs(run, feeds, iterations, int(profiled.get("threads", 1)))
    profile_file = Path(session.end_profiling())
    recording = profiling.parse_profile(profile_file, skip_runs=warmup)
    stats = profiling.node_statistics(recording)
    common = {**_profiled_figures(recording, stats, latencies_ns, delays_ns), "load_ms": load_ms,
              "profiler_cost_us": profiler_cost.profiler_cost_us(profiled, work, job.calibration_model or None)}
    if not full:
        return {**common, "nodes": [s.as_dict() for s in stats]}
    from generator.layers.mapping import mapped_columns  # only the profiled pass maps nodes

    mapped = mapped_columns(job.original_model_path, optimized, stats)
    outputs = _recorded_outputs(session, job) if job.record_outputs else {}
    return {
        **outputs, **common,
        "nodes": [{**s.as_dict(), **m} for s, m in zip(stats, mapped, strict=True)],
        "timeline": _timeline_rows(recording),
        "optimized_model": str(optimized), "profile_file": str(profile_file),
        **_layer_analysis(job.original_model_path, feeds),
    }


def _profiled_runs(run: Any, feeds: Mapping[str, np.ndarray], iterations: int,
                   threads: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Each profiled inference's session.run time and its run-delay (ns; None where the kernel does not tell,
    or where the session's own threads outnumber the cores and keep each other waiting: clean.applies)."""
    read = measure.process_delay_reader() if clean.applies(threads, 1, os.cpu_count()) else None
    latencies = np.empty(iterations, dtype=np.int64)
    delays = np.empty(iterations, dtype=np.int64) if read is not None else None
    for i in range(iterations):
        before = read() if read is not None else 0
        t0 = time.perf_counter_ns()
        run(None, feeds)
        latencies[i] = time.perf_counter_ns() - t0
        if delays is not None:
            delays[i] = read() - before
    return latencies, delays


def _timeline_rows(recording: profiling.ProfileRecording) -> list[dict[str, Any]]:
    # Imported here: generator.timeline needs pandas, which measurement processes never load (start-up time).
    from generator.timeline.model import timeline_rows

    return timeline_rows(recording)


def _layer_analysis(model_path: str | Path, feeds: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``layers`` (static FLOP analysis per original node at the feeds' shapes, generator.flops) and its
    ``layers_notes``; a failure of the analysis or of one node's counter is a bug reported as
    ``layers_error`` (traceback on stderr), never a failure of the profiled pass."""
    try:
        from generator.flops import analyze_model_report

        report = analyze_model_report(
            Path(model_path), {n: a.shape for n, a in feeds.items()}, {n: str(a.dtype) for n, a in feeds.items()}
        )
    except Exception as e:
        if not isinstance(e, PerfsiteError):
            traceback.print_exc(file=sys.stderr)
        return {"layers": [], "layers_error": _error_line(e)}
    out: dict[str, Any] = {"layers": [row.as_dict() for row in report.rows], "layers_notes": list(report.notes)}
    if report.errors:
        out["layers_error"] = f"{len(report.errors)} FLOP counter(s) failed: " + "; ".join(report.errors[:3])
    return out


def outputs_pass(job: WorkerJob) -> dict[str, Any]:
    """Outputs mode: one untimed run per input batch, every numeric tensor output saved for the agreement check
    between versions (generator.runner.agreement)."""
    work = job.work
    work.mkdir(parents=True, exist_ok=True)
    if job.decoder is not None:
        handle, load_ms = _open_decoder(job)
        process_env.test_fault(job.model_path)
        return {**_generation_outputs(handle, job), "load_ms": load_ms}
    session, load_ms = open_session(job.model_path, job.config)
    process_env.test_fault(job.model_path)
    return {**_save_outputs(session, job), "load_ms": load_ms}


def _generation_outputs(handle: Any, job: WorkerJob) -> dict[str, Any]:
    """A generative trial's outputs: the greedy tokens of one generation and the prefill's logits at the
    prompt's last position, from the trial's own prompt (generator.runner.agreement.generation_rows), by the
    version's engine."""
    loop = _decode_loop(job, handle, _prompt([job]))
    path = job.work / "outputs0.npz"
    np.savez(path, loop.generate().tokens, loop.prefill_logits())  # arr_0, arr_1: output_names order
    # This process held the version alone: its peak memory is the version's (its measuring processes held
    # every version of the configuration: measure_generation_group). Read before profiling, which loads the
    # model again.
    return {"output_names": ["greedy_tokens", "prefill_logits"], "outputs_files": [str(path)],
            "peak_rss_mb": process_env.peak_rss_mb()}


PHASE_PASSES = 5  # profiled passes of each phase: a median over five ranks no preempted pass's node first


def phase_profiles(jobs: tuple[WorkerJob, ...]) -> tuple[dict[str, Any], ...]:
    """Phases mode: where each generative version's time goes, prefill and one decode step apart, the versions of
    one configuration profiled in this process pass by pass in turn (generator.decode.phases), each answered with
    its `phase_ops` and `phase_nodes` rows."""
    from generator.decode.convention import DecoderLayout
    from generator.decode.phases import phase_nodes_rows, phase_ops_rows, profile_phases_together

    config = jobs[0].config
    found = profile_phases_together([(Path(j.model_path), DecoderLayout(**j.decoder)) for j in jobs],
                                    int(config["batch"]), int(config["prompt_tokens"]), int(config["new_tokens"]),
                                    int(config.get("threads", 1)), passes=PHASE_PASSES)
    return tuple({"phase_ops": phase_ops_rows(phases), "phase_nodes": phase_nodes_rows(phases)} for phases in found)


def _recorded_outputs(session, job: WorkerJob) -> dict[str, Any]:
    """Profile mode's outputs (record_outputs), taken once the profiler has stopped; a failure is reported as
    outputs_error, as a failed outputs process would be, and the profile stays."""
    try:
        return _save_outputs(session, job)
    except Exception as e:
        if not isinstance(e, PerfsiteError | MemoryError):
            traceback.print_exc(file=sys.stderr)
        return {"outputs_error": _error_line(e)}


def _save_outputs(session, job: WorkerJob) -> dict[str, Any]:
    """One run per input batch (the trial's feeds, then extra_feeds_paths), each numeric tensor output saved in
    work_dir/outputs<i>.npz."""
    work = job.work
    # Sequences, maps and string tensors have no numeric distance: they are left out of the comparison.
    names = [o.name for o in session.get_outputs() if o.type.startswith("tensor(") and o.type != "tensor(string)"]
    files = []
    batches = [job.feeds_path, *job.extra_feeds_paths] if names else []  # run([]) means "all"
    for i, feeds_path in enumerate(batches):
        values = session.run(names, _feeds(feeds_path))
        path = work / f"outputs{i}.npz"
        # Positional keys: output names are arbitrary text and may clash with np.savez's own arguments.
        np.savez(path, *values)
        files.append(str(path))
    return {"output_names": names, "outputs_files": files}


def _error_line(e: BaseException) -> str:
    if isinstance(e, MemoryError):
        return "the measurement process ran out of memory (MemoryError)"
    text = " ".join(str(e).split()) or type(e).__name__
    return text if isinstance(e, PerfsiteError) else f"{type(e).__name__}: {text}"


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write to a temporary name and rename, so the parent never reads half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, allow_nan=True))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 4 and len(args) % 2 == 0:
        return _pair_main(tuple(Path(a) for a in args[0::2]), tuple(Path(a) for a in args[1::2]))
    if len(args) != 2:
        sys.stderr.write("usage: python -m generator.runner.worker JOB.json OUT.json [JOB_B.json OUT_B.json ...]\n")
        return 2
    job_path, out_path = Path(args[0]), Path(args[1])
    try:
        job = WorkerJob.from_json(job_path.read_text())
        outcome = run_job(job, out_path)
    except Exception as e:  # every failure must reach the parent as one line
        if not isinstance(e, PerfsiteError | MemoryError):
            traceback.print_exc(file=sys.stderr)
        _write_json(out_path, {"error": _error_line(e)})
        return EXIT_ERROR
    if job.mode == "measure":
        # When measuring ended, on the clock every process shares: the parent charges the trial's budget up to
        # here, whatever profiling after it costs (a crash or a timeout while profiling included).
        outcome["measured_until"] = time.monotonic()
    _write_json(out_path, outcome)
    if job.mode == "measure" and job.profile_requests > 0:
        profile_after_measuring(job, out_path)
    return EXIT_OK


def _pair_main(job_paths: tuple[Path, ...], outs: tuple[Path, ...]) -> int:
    """Measure-mode jobs measured together (measure_pair for two; generative versions' in turn, any number:
    measure_generation_group), each answered in its own OUT.json, then each profiled when its job asks, as a
    measurement process is."""
    try:
        jobs = tuple(WorkerJob.from_json(p.read_text()) for p in job_paths)
        if all(job.mode == "phases" for job in jobs):
            outcomes = phase_profiles(jobs)
        elif all(job.decoder is not None for job in jobs):
            outcomes = measure_generation_group(jobs, outs)
        elif len(jobs) == 2:
            outcomes = measure_pair(jobs, outs)
        else:
            raise RunError(f"{len(jobs)} jobs to measure together: only generative ones can be more than two.")
    except Exception as e:  # both trials get the one line
        if not isinstance(e, PerfsiteError | MemoryError):
            traceback.print_exc(file=sys.stderr)
        for out in outs:
            _write_json(out, {"error": _error_line(e)})
        return EXIT_ERROR
    until = time.monotonic()
    for outcome, out in zip(outcomes, outs, strict=True):
        _write_json(out, {**outcome, "measured_until": until})
    for job, out in zip(jobs, outs, strict=True):
        if job.mode == "measure" and job.profile_requests > 0:
            profile_after_measuring(job, out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
