"""A generative trial's measurement process: timed greedy generations instead of timed `session.run` calls.

A request is one whole generation (generator.decode.loop): its latency is the generation's end-to-end time, its
items are its output tokens (batch × new_tokens), so that the trial's throughput is output tokens per second and
the adaptive rounds, preemption accounting and noise rules of every trial apply unchanged. Beside the latencies
the process keeps each request's time to first token and each decode step's time (`GenerativeLoop`), which the
parent turns into the TTFT, TPOT and ITL figures (generator.runner.generative_rows). One request at a time: the
spec refuses `concurrency` above 1 for a generative experiment.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from generator.decode.convention import DecoderLayout, decoder_layout
from generator.errors import PerfsiteError, RunError
from generator.runner.measure import LoopResult, process_delay_reader


@dataclass(frozen=True)
class GenerativeLoop:
    """One process's timed generations: the loop's figures, and per request its TTFT and decode steps."""

    loop: LoopResult
    ttft_ms: np.ndarray = field(repr=False)  # per timed request
    steps_ms: np.ndarray = field(repr=False)  # [requests, new_tokens - 1]


def timed_generations(loop: Any, config: Mapping[str, Any], settings: Mapping[str, Any]) -> GenerativeLoop:
    """The first generation of `loop` (a DecodeLoop or GenaiLoop: cold), `warmup` untimed ones, then timed ones
    until `min_iterations` and `min_seconds` are both reached, or `max_seconds` passed."""
    batch, new_tokens = int(config["batch"]), int(config["new_tokens"])
    started = time.perf_counter_ns()
    loop.generate()
    first_run_ms = (time.perf_counter_ns() - started) / 1e6
    for _ in range(int(settings["warmup"])):
        loop.generate()
    delay = process_delay_reader()
    latencies, delays, ttft, steps = [], [], [], []
    min_iter = int(settings["min_iterations"])
    cpu0, start = time.process_time(), time.perf_counter_ns()
    min_end = start + int(float(settings["min_seconds"]) * 1e9)
    max_end = start + int(float(settings["max_seconds"]) * 1e9)
    before = delay() if delay else 0
    while True:
        t0 = time.perf_counter_ns()
        generation = loop.generate()
        t1 = time.perf_counter_ns()
        latencies.append(t1 - t0)
        if delay:
            after = delay()
            delays.append(after - before)
            before = after
        ttft.append(generation.ttft_ms)
        steps.append(generation.steps_ms)
        if (len(latencies) >= min_iter and t1 >= min_end) or t1 >= max_end:
            break
    result = LoopResult(
        latencies_ns=(np.array(latencies, np.int64),), wall_ns=t1 - start, cpu_s=time.process_time() - cpu0,
        items=len(latencies) * batch * new_tokens, first_run_ms=first_run_ms,
        run_delays_ns=(np.array(delays, np.int64) if delay else None,), delay_threads=1 if delay else 0)
    return GenerativeLoop(result, np.array(ttft), np.array(steps).reshape(len(latencies), max(new_tokens - 1, 0)))


def timed_generation_group(loops: list[Any], config: Mapping[str, Any],
                           settings: Mapping[str, Any]) -> list[GenerativeLoop]:
    """Several versions' generations in one process, request by request in turn (A B C, A B C, ...), from one
    prompt: a change of the machine's speed falls on each alike, which separate processes a round apart could
    not give (the host's speed moved their ratios by half). Always in one order, so that every request follows
    another version's: in A B C, C B A rounds a version first in a round followed its own request, its weights
    still in the caches, and ran 3-6 % faster than when it followed another's; a version's requests then fell in
    two groups and its median sat in either (a decoder against its own copy read 0.952 in prefill,
    2026-12-07). Each version's figures are its own: its requests' times, their run-delays, and, for its
    tokens/s, the time its own requests took. `loops`: each version's DecodeLoop or GenaiLoop, all from one
    prompt (generator.decode.loop.shared_prompt)."""
    batch, new_tokens = int(config["batch"]), int(config["new_tokens"])
    firsts = []
    for loop in loops:
        started = time.perf_counter_ns()
        loop.generate()
        firsts.append((time.perf_counter_ns() - started) / 1e6)
    for _ in range(int(settings["warmup"])):
        for loop in loops:
            loop.generate()
    delay = process_delay_reader()
    figures: list[dict[str, list]] = [{"ns": [], "delay": [], "ttft": [], "steps": [], "cpu": []} for _ in loops]
    start = time.perf_counter_ns()
    min_end = start + int(float(settings["min_seconds"]) * 1e9)
    max_end = start + int(float(settings["max_seconds"]) * 1e9)
    i = 0
    while True:
        for k in range(len(loops)):
            before, cpu0 = (delay() if delay else 0), time.process_time()
            t0 = time.perf_counter_ns()
            generation = loops[k].generate()
            t1 = time.perf_counter_ns()
            mine = figures[k]
            mine["ns"].append(t1 - t0)
            mine["cpu"].append(time.process_time() - cpu0)
            if delay:
                mine["delay"].append(delay() - before)
            mine["ttft"].append(generation.ttft_ms)
            mine["steps"].append(generation.steps_ms)
        i += 1
        if (i >= int(settings["min_iterations"]) and t1 >= min_end) or t1 >= max_end:
            break
    return [GenerativeLoop(
        LoopResult(latencies_ns=(np.array(f["ns"], np.int64),), wall_ns=int(sum(f["ns"])), cpu_s=float(sum(f["cpu"])),
                   items=i * batch * new_tokens, first_run_ms=first,
                   run_delays_ns=(np.array(f["delay"], np.int64) if delay else None,), delay_threads=1 if delay else 0),
        np.array(f["ttft"]), np.array(f["steps"]).reshape(i, max(new_tokens - 1, 0)))
        for f, first in zip(figures, firsts, strict=True)]


def generation_files(generations: GenerativeLoop, out_path: Path) -> dict[str, str]:
    """Each request's TTFT and decode steps written beside OUT.json (what OUT.json names them by)."""
    files = {"ttft_file": out_path.with_name(f"{out_path.stem}.ttft_ms.npy"),
             "steps_file": out_path.with_name(f"{out_path.stem}.steps_ms.npy")}
    np.save(files["ttft_file"], generations.ttft_ms)
    np.save(files["steps_file"], generations.steps_ms)
    return {name: str(path) for name, path in files.items()}


def layout_of(model_path: Path) -> DecoderLayout:
    """A version's decoder layout, read from its graph once per run (keyed by the file's size and time too: a
    process that runs twice may meet a model file rewritten in between)."""
    stat = Path(model_path).stat()
    return _layout(Path(model_path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _layout(model_path: Path, _size: int, _mtime_ns: int) -> DecoderLayout:
    return decoder_layout(model_path)


def version_engines(loaded: Any) -> dict[str, str | None]:
    """Each version's engine as its trial keys hold it (generator.decode.genai.engine_key): None for perfsite's
    own decode loop; a spec's path and the version named where onnxruntime-genai is asked for and missing."""
    from generator.decode.genai import engine_key

    found = {}
    for name, model in loaded.spec.models.items():
        try:
            found[name] = engine_key(model.engine)
        except RunError as e:
            raise RunError(f"{loaded.path}: models.{name}.engine: {e}") from e
    return found


def check_decoders(spec_path: Path, model_paths: Mapping[str, Path], trials: Iterable[Any]) -> None:
    """Every version to measure is a decoder in the convention, and the longest context a trial reaches fits its
    position table where the graph has one: refused before anything is measured, naming the version."""
    requests: dict[str, tuple[int, int]] = {}  # each version's longest request
    for trial in trials:
        dims = dict(trial.config.dims)
        request = (dims["prompt_tokens"], dims["new_tokens"])
        if sum(request) > sum(requests.get(trial.version, (0, 0))):
            requests[trial.version] = request
    for version, (prompt, new) in requests.items():
        try:
            layout = layout_of(Path(model_paths[version]))
        except PerfsiteError as e:
            raise RunError(f"{spec_path}: version {version}: {e}") from e
        longest = layout.longest_request()
        if longest is not None and prompt + new > longest:
            raise RunError(
                f"{spec_path}: generate: prompt_tokens {prompt} + new_tokens {new} reach position {prompt + new - 2}, "
                f"past the {layout.max_positions} rows of the position table of version {version}'s model "
                f"{model_paths[version]}. Allowed: prompt_tokens + new_tokens at most {longest}; shorten the longest "
                "prompt or generate fewer tokens.")
