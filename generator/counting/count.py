"""Count the instructions of steady-state inferences of several model versions in one valgrind process.

``count_instructions`` writes each version's input feeds, compiles perfsite's marker
(generator.counting.marker), runs generator.counting.worker under callgrind and reads one dump per counted
inference (generator.counting.callgrind). Instruction counts do not depend on the machine's load: they are
the figure for pull-request checks on shared runners, where latency is noisy (docs/count-mode.md says when
counts mislead).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from generator import processes
from generator.counting.callgrind import find_valgrind, read_dumps, valgrind_command, valgrind_version
from generator.counting.marker import compile_marker
from generator.counting.worker import EMPTY, count_label
from generator.errors import RunError
from generator.processes import owned_tempdir

DEFAULT_ITERATIONS = 10
DEFAULT_WARMUP = 5
# Thrown-away instrumented rounds, a guard for one-off work on the first instrumented call.
SETTLE_ROUNDS = 1
DEFAULT_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class VersionCount:
    """One version's counted inferences; ``instructions`` is their median, ``spread_pct`` (max − min) / median."""

    name: str
    model_path: Path
    counts: tuple[int, ...]  # instructions of each counted inference, in the order counted
    inputs: str = ""  # what each inference was fed: "x float32 [1, 256]; mask int64 [1, 8]"
    instructions: float = field(init=False)
    spread_pct: float = field(init=False)

    def __post_init__(self) -> None:
        if not self.counts:
            raise ValueError(f"version {self.name!r} has no counted inference")
        median = float(statistics.median(self.counts))
        object.__setattr__(self, "instructions", median)
        object.__setattr__(self, "spread_pct", 100.0 * (max(self.counts) - min(self.counts)) / median)


@dataclass(frozen=True)
class CountResult:
    """Every version's counts from one valgrind process, and how they were obtained."""

    versions: tuple[VersionCount, ...]
    iterations: int
    warmup: int
    # Median count of an empty counted call: what perfsite's marker and the Python call add to every count.
    marker_instructions: float
    valgrind: str
    onnxruntime: str
    seconds: float  # wall time of the valgrind process
    threads: int = 1

    def version(self, name: str) -> VersionCount:
        return next(v for v in self.versions if v.name == name)


def count_instructions(versions: Mapping[str, Path], feeds: Mapping[str, Mapping[str, np.ndarray]],
                       iterations: int = DEFAULT_ITERATIONS, warmup: int = DEFAULT_WARMUP,
                       optimization_level: str = "all", timeout_s: float = DEFAULT_TIMEOUT_S,
                       progress: Callable[[str], None] | None = None) -> CountResult:
    """Count ``iterations`` steady-state inferences of every version (name -> model file, fed ``feeds[name]``)
    in one valgrind process, versions alternating; RunError when valgrind, a compiler or the marker's headers
    are missing, or when a version cannot be loaded or run."""
    if iterations < 1 or warmup < 0:
        raise RunError(f"count: iterations must be at least 1 and warmup at least 0 (got {iterations}, {warmup}).")
    say = progress or (lambda _text: None)
    valgrind = find_valgrind()
    names = list(versions)
    with owned_tempdir("perfsite-count-") as tmp:
        work = Path(tmp)
        job = _write_job(work, versions, feeds, iterations, warmup, optimization_level, compile_marker(work))
        say(f"Counting {iterations} inferences of {len(names)} versions under valgrind (callgrind)...")
        started = time.monotonic()
        _run_worker(valgrind, work, job, timeout_s, say)
        seconds = time.monotonic() - started
        dumps = read_dumps(work)
        worker_out = json.loads((work / "result.json").read_text())
    counted = tuple(VersionCount(name, Path(versions[name]), _counts(dumps, str(i), iterations),
                                 describe_feeds(feeds[name])) for i, name in enumerate(names))
    return CountResult(counted, iterations, warmup, float(statistics.median(_counts(dumps, EMPTY, iterations))),
                       valgrind_version(valgrind), worker_out["onnxruntime"], seconds)


def describe_feeds(feeds: Mapping[str, np.ndarray]) -> str:
    """The inputs of one inference as a reader compares them: name, element type and shape of each."""
    return "; ".join(f"{name} {array.dtype} [{', '.join(str(d) for d in array.shape)}]"
                     for name, array in feeds.items())


def _write_job(work: Path, versions: Mapping[str, Path], feeds: Mapping[str, Mapping[str, np.ndarray]],
               iterations: int, warmup: int, optimization_level: str, marker: Path) -> Path:
    entries = []
    for i, (name, model_path) in enumerate(versions.items()):
        feeds_path = work / f"feeds-{i}.npz"
        np.savez(feeds_path, **feeds[name])
        entries.append({"name": name, "model_path": str(Path(model_path).absolute()), "feeds_path": str(feeds_path)})
    job = {"marker": str(marker), "versions": entries, "iterations": iterations, "warmup": warmup,
           "settle": SETTLE_ROUNDS, "optimization_level": optimization_level,
           "result_path": str(work / "result.json")}
    path = work / "job.json"
    path.write_text(json.dumps(job, indent=1))
    return path


def _run_worker(valgrind: str, work: Path, job: Path, timeout_s: float, say: Callable[[str], None]) -> None:
    command = valgrind_command(valgrind, work, [sys.executable, "-m", "generator.counting.worker", str(job)])
    # A fixed hash seed makes the Python share of every count repeat from one run to the next.
    env = processes.measuring_env({"PYTHONHASHSEED": "0"})
    stderr_path = work / "stderr.txt"
    with stderr_path.open("w") as stderr, processes.start(
        command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=work
    ) as proc:
        reader = threading.Thread(target=_forward, args=(proc.stdout, say), daemon=True)
        reader.start()
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            proc.kill()
            raise RunError(f"Counting under valgrind took longer than {timeout_s:.0f} s and was stopped; count "
                           "fewer iterations or a smaller input shape.") from e
        except BaseException:  # Ctrl-C: leave no valgrind behind
            proc.kill()
            raise
        reader.join(timeout=5)
    if code != 0:
        raise RunError(_worker_error(work, code, stderr_path.read_text(errors="replace")))


def _forward(lines: IO[str] | None, say: Callable[[str], None]) -> None:
    for line in lines or ():
        say("  " + line.rstrip())


def _worker_error(work: Path, code: int, stderr: str) -> str:
    result = work / "result.json"
    if result.is_file():
        error = json.loads(result.read_text()).get("error")
        if error:
            return error
    tail = " | ".join(line for line in stderr.strip().splitlines()[-5:]) or "no message"
    return f"The counting process under valgrind failed (exit status {code}): {tail}"


def _counts(dumps: Mapping[str, int], version: str, iterations: int) -> tuple[int, ...]:
    labels = [count_label("count", version, r) for r in range(iterations)]
    missing = [label for label in labels if label not in dumps]
    if missing:
        raise RunError(f"callgrind wrote no dump for {missing[0]} ({len(missing)} of {len(labels)} missing); "
                       "was the run cut short?")
    return tuple(dumps[label] for label in labels)
