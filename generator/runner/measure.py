"""The timed loop: N request streams on ONE shared session, and the statistics of request latency.

Concurrency N means N threads calling ``session.run`` on the same session at once, as a server would; the
session is thread-safe and onnxruntime releases the GIL inside ``run``. The streams warm up, meet at a barrier
and start together; wall time runs from that common start until the last stream drained, so that
``items / wall`` is the throughput the process sustained.

The loop adds as little as it can around ``run``: the bound method is looked up once, the latency buffer is
preallocated, and the stopping rule is two integer comparisons on the timestamp already taken.

**Preemption accounting.** After every request the stream reads the scheduler's run-delay (nanoseconds a thread
was runnable but waiting for a CPU; second field of Linux's ``/proc/<tid>/schedstat``) of its own thread and of
the session's pool threads, with one ``pread`` per thread on a file opened before timing (about 1 µs each; the
text is parsed after the loop). The growth between two reads is the CPU time the request lost to other
processes: a request is *preempted* when that exceeds the rule of ``generator.results.clean``. Where
schedstat is missing (not Linux, or a kernel without it) the delays are unknown (``None``) and every request
counts as clean, which the pages say.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from generator.results.headline import P99_MIN_SAMPLES

# The latency buffer starts with room for the minimum iterations, up to this (then doubles when full).
INITIAL_BUFFER_MAX = 1 << 16


@dataclass(frozen=True)
class LoopResult:
    """What one timed loop measured (one measurement process)."""

    latencies_ns: tuple[np.ndarray, ...] = field(repr=False)  # one int64 array per stream
    wall_ns: int  # common start until every stream drained
    cpu_s: float  # process CPU time (all threads) over the timed phase
    items: int  # requests × batch
    first_run_ms: float  # the first request after session creation (cold)
    # Per stream, each request's scheduler run-delay (ns) summed over the stream's thread and the pool's
    # threads; None where the kernel does not tell (no schedstat).
    run_delays_ns: tuple[np.ndarray | None, ...] = field(default=(), repr=False)
    delay_threads: int = 0  # threads whose delay was read per request (0: unknown)

    @property
    def iterations(self) -> int:
        return int(sum(len(a) for a in self.latencies_ns))

    @property
    def wall_s(self) -> float:
        return self.wall_ns / 1e9

    @property
    def cores_used(self) -> float:
        """CPU time over wall time of the timed phase; NaN where it cannot be told (cores_used_of)."""
        return cores_used_of(self.cpu_s, self.wall_s)

    @property
    def throughput_ips(self) -> float:
        return self.items / self.wall_s if self.wall_ns > 0 else float("nan")

    def all_latencies_ms(self) -> np.ndarray:
        return np.concatenate(self.latencies_ns).astype(np.float64) / 1e6


SCHEDSTAT = "/proc/thread-self/schedstat"
# The process CPU clock adds another thread's time when the scheduler accounts it (at a tick, or when the thread
# stops running), so a window of a few milliseconds read 1.7 to 29 "cores" on a 2-CPU machine. Below this much
# wall time the figure is not given; above the CPUs the process may use, it is not given either.
MIN_CORES_WALL_S = 0.25


def cores_used_of(cpu_s: float, wall_s: float) -> float:
    """Cores used over a timed phase, or NaN when the phase is too short to tell or the figure exceeds the
    CPUs this process may run on (a clock that accounted another phase's time)."""
    if not wall_s or wall_s < MIN_CORES_WALL_S or not math.isfinite(cpu_s):
        return float("nan")
    cores = cpu_s / wall_s
    return cores if cores <= _usable_cpus() * 1.05 else float("nan")


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _schedstat_fd(path: str) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        os.pread(fd, 64, 0)
    except OSError:
        os.close(fd)
        return None
    return fd


def _run_delay(raw: bytes) -> int:
    return int(raw.split()[1])


def _pool_tids(streams: set[int]) -> list[int]:
    """The process's threads other than the request streams: onnxruntime's pool threads (idle Python threads,
    if any, accumulate no run-delay: they are not runnable)."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task") if int(t) not in streams)
    except OSError:
        return []


@dataclass
class _Clock:
    """Shared between streams: the common start, set by the barrier once every stream has warmed up."""

    start_ns: int = 0
    cpu_start_s: float = 0.0
    stop: list[bool] = field(default_factory=lambda: [False])
    stream_tids: set[int] = field(default_factory=set)
    pool_fds: list[int] = field(default_factory=list)

    def mark_start(self) -> None:
        # Every stream has registered its thread: the others are the session's pool.
        self.pool_fds = [fd for tid in _pool_tids(self.stream_tids)
                         if (fd := _schedstat_fd(f"/proc/self/task/{tid}/schedstat")) is not None]
        self.cpu_start_s = time.process_time()
        self.start_ns = time.perf_counter_ns()

    def close(self) -> None:
        for fd in self.pool_fds:
            os.close(fd)
        self.pool_fds = []


def timed_loop(
    session: Any,
    feeds: Mapping[str, np.ndarray],
    *,
    warmup: int,
    min_iterations: int,
    min_seconds: float,
    max_seconds: float,
    concurrency: int,
    batch: int,
) -> LoopResult:
    """Run the timed phase: each stream runs until it did ceil(min_iterations / N) requests AND min_seconds
    passed since the common start, or until max_seconds passed, whichever comes first.

    The first request (cold) is timed on its own; then every stream runs ``warmup`` untimed requests.
    """
    feeds = dict(feeds)
    t0 = time.perf_counter_ns()
    session.run(None, feeds)
    first_run_ms = (time.perf_counter_ns() - t0) / 1e6
    n = max(1, int(concurrency))
    clock = _Clock()
    barrier = threading.Barrier(n, action=clock.mark_start)
    limits = (math.ceil(min_iterations / n), int(min_seconds * 1e9), int(max_seconds * 1e9))
    outcomes: list[Any] = [None] * n
    threads = [
        threading.Thread(target=_stream, args=(i, session, feeds, warmup, limits, barrier, clock, outcomes),
                         name=f"perfsite-stream-{i}", daemon=True)
        for i in range(1, n)
    ]
    for t in threads:
        t.start()
    _stream(0, session, feeds, warmup, limits, barrier, clock, outcomes)  # the calling thread is stream 0
    for t in threads:
        t.join()
    clock.close()
    return _loop_result(outcomes, clock, batch, first_run_ms)


def _loop_result(outcomes: list[Any], clock: _Clock, batch: int, first_run_ms: float) -> LoopResult:
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    if errors:
        # The stream that failed first aborted the barrier; the others only report the broken barrier.
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    latencies = tuple(lat for lat, _, _, _, _ in outcomes)
    delays = tuple(d for _, d, _, _, _ in outcomes)
    # CPU time read by the stream that finished last, at its last request's end: the wall time's end too (it was
    # read after the streams joined, and the joins were counted against a wall that had stopped).
    end_ns, cpu_end = max((end, cpu) for _, _, end, _, cpu in outcomes)
    cpu_s = cpu_end - clock.cpu_start_s
    total = sum(len(a) for a in latencies)
    threads = min(n for _, _, _, n, _ in outcomes) if all(d is not None for d in delays) else 0
    return LoopResult(latencies, end_ns - clock.start_ns, cpu_s, total * int(batch), first_run_ms,
                      delays if threads else tuple(None for _ in delays), threads)


def _stream(index: int, session: Any, feeds: dict, warmup: int, limits: tuple[int, int, int],
            barrier: threading.Barrier, clock: _Clock, outcomes: list[Any]) -> None:
    try:
        run = session.run
        for _ in range(warmup):
            run(None, feeds)
        clock.stream_tids.add(threading.get_native_id())
        own = _schedstat_fd(SCHEDSTAT)
        try:
            barrier.wait()
            fds = [own, *clock.pool_fds] if own is not None else []
            outcomes[index] = _timed(run, feeds, limits, clock, fds)
        finally:
            if own is not None:
                os.close(own)
    except BaseException as e:  # reported by the caller; the other streams stop at their next request
        clock.stop[0] = True
        barrier.abort()
        outcomes[index] = e


def _timed(run: Any, feeds: dict, limits: tuple[int, int, int], clock: _Clock,
           fds: list[int]) -> tuple[np.ndarray, np.ndarray | None, int, int, float]:
    """The hot loop. Everything it touches is a local; the buffers grow by doubling (rarely).

    Returns (latencies ns, run-delays ns or None, end timestamp, threads whose delay was read, the process's CPU
    time at the end)."""
    min_iter, min_ns, max_ns = limits
    min_deadline = clock.start_ns + min_ns
    max_deadline = clock.start_ns + max_ns
    stop = clock.stop
    now = time.perf_counter_ns
    pread = os.pread
    buf = [0] * min(max(min_iter + 64, 1024), INITIAL_BUFFER_MAX)
    cap = len(buf)
    marks: list = [None] * (cap + 1)
    one = fds[0] if len(fds) == 1 else None
    many = fds if len(fds) > 1 else None
    if one is not None:
        marks[0] = pread(one, 64, 0)
    elif many:
        marks[0] = _read_each(many, None)
    i = 0
    while True:
        t0 = now()
        run(None, feeds)
        t1 = now()
        buf[i] = t1 - t0
        i += 1
        # One read per thread after each request: its growth since the previous read is this request's delay.
        if one is not None:
            marks[i] = pread(one, 64, 0)
        elif many:
            try:  # free unless raised (Python 3.11)
                marks[i] = [pread(fd, 64, 0) for fd in many]
            except ProcessLookupError:
                marks[i] = _read_each(many, marks[i - 1])
        if (i >= min_iter and t1 >= min_deadline) or t1 >= max_deadline or stop[0]:
            break
        if i == cap:
            buf.extend([0] * cap)
            marks.extend([None] * cap)
            cap = len(buf)
    return np.array(buf[:i], dtype=np.int64), _delays(marks[: i + 1], len(fds)), t1, len(fds), time.process_time()


def _read_each(fds: list[int], previous: list[bytes] | None) -> list[bytes]:
    """Each thread's schedstat; a thread that ended since the loop began (a library's helper thread, seen among
    the pool's at the start) reads ESRCH: it keeps its last figure, as it waits for no CPU any more."""
    out = []
    for k, fd in enumerate(fds):
        try:
            out.append(os.pread(fd, 64, 0))
        except ProcessLookupError:
            out.append(previous[k] if previous is not None else b"0 0 0")
    return out


def _delays(marks: list, threads: int) -> np.ndarray | None:
    """Per request, the growth of the summed run-delay between the reads around it."""
    if not threads:
        return None
    if threads == 1:
        total = np.array([_run_delay(m) for m in marks], dtype=np.int64)
    else:
        total = np.array([sum(_run_delay(x) for x in m) for m in marks], dtype=np.int64)
    return np.diff(total)


def process_delay_reader() -> Callable[[], int] | None:
    """A reader of the run-delay (ns) summed over every thread of this process so far (the calling thread and
    a session's pool), its schedstat files opened once; None where the kernel does not tell. For the profiled
    inferences, which a neighbour hits as it hits the timed requests: the same rule leaves the hit ones out
    (generator.results.clean, generator.runner.profiles)."""
    fds = [fd for tid in _pool_tids(set()) if (fd := _schedstat_fd(f"/proc/self/task/{tid}/schedstat")) is not None]
    if not fds:
        return None
    last: list[list[bytes] | None] = [None]

    def read() -> int:
        last[0] = _read_each(fds, last[0])
        return sum(_run_delay(x) for x in last[0])

    return read


def latency_stats(all_latencies_ms: Sequence[float] | np.ndarray) -> dict[str, float | None]:
    """Distribution figures of request latency (ms): mean, p50, p90, p95, p99, std, min, max and cv.

    Percentiles use linear interpolation between order statistics (numpy's default). p99 is ``None`` below
    ``P99_MIN_SAMPLES`` samples. ``std`` is the sample standard deviation (0 for one sample); ``cv`` is
    std / mean. Raises ValueError on an empty input: a trial without requests has no latency.
    """
    a = np.asarray(all_latencies_ms, dtype=np.float64)
    if a.size == 0:
        raise ValueError("latency_stats needs at least one latency")
    p50, p90, p95, p99 = (float(v) for v in np.percentile(a, [50, 90, 95, 99]))
    mean = float(a.mean())
    std = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return {
        "mean": mean,
        "p50": p50,
        "p90": p90,
        "p95": p95,
        "p99": p99 if a.size >= P99_MIN_SAMPLES else None,
        "std": std,
        "min": float(a.min()),
        "max": float(a.max()),
        "cv": std / mean if mean > 0 else float("nan"),
    }
