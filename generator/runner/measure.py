"""The timed loop: N request streams on ONE shared session, and the statistics of request latency.

Concurrency N means N threads calling ``session.run`` on the same session at once, as a server would; the
session is thread-safe and onnxruntime releases the GIL inside ``run``. The streams warm up, meet at a barrier
and start together; wall time runs from that common start until the last stream drained, so that
``items / wall`` is the throughput the process sustained.

The loop adds as little as it can around ``run``: the bound method is looked up once, the latency buffer is
preallocated, and the stopping rule is two integer comparisons on the timestamp already taken.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# The latency buffer starts with room for the minimum iterations, up to this (then doubles when full).
INITIAL_BUFFER_MAX = 1 << 16
# Below this many samples fewer than ~5 lie above the 99th percentile: too few to estimate it.
P99_MIN_SAMPLES = 460


@dataclass(frozen=True)
class LoopResult:
    """What one timed loop measured (one measurement process)."""

    latencies_ns: tuple[np.ndarray, ...] = field(repr=False)  # one int64 array per stream
    wall_ns: int  # common start until every stream drained
    cpu_s: float  # process CPU time (all threads) over the timed phase
    items: int  # requests × batch
    first_run_ms: float  # the first request after session creation (cold)

    @property
    def iterations(self) -> int:
        return int(sum(len(a) for a in self.latencies_ns))

    @property
    def wall_s(self) -> float:
        return self.wall_ns / 1e9

    @property
    def cores_used(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_ns > 0 else float("nan")

    @property
    def throughput_ips(self) -> float:
        return self.items / self.wall_s if self.wall_ns > 0 else float("nan")

    def all_latencies_ms(self) -> np.ndarray:
        return np.concatenate(self.latencies_ns).astype(np.float64) / 1e6


@dataclass
class _Clock:
    """Shared between streams: the common start, set by the barrier once every stream has warmed up."""

    start_ns: int = 0
    cpu_start_s: float = 0.0
    stop: list[bool] = field(default_factory=lambda: [False])

    def mark_start(self) -> None:
        self.cpu_start_s = time.process_time()
        self.start_ns = time.perf_counter_ns()


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
    cpu_s = time.process_time() - clock.cpu_start_s
    return _loop_result(outcomes, clock, cpu_s, batch, first_run_ms)


def _loop_result(
    outcomes: list[Any], clock: _Clock, cpu_s: float, batch: int, first_run_ms: float
) -> LoopResult:
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    if errors:
        # The stream that failed first aborted the barrier; the others only report the broken barrier.
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    latencies = tuple(lat for lat, _ in outcomes)
    end_ns = max(end for _, end in outcomes)
    total = sum(len(a) for a in latencies)
    return LoopResult(latencies, end_ns - clock.start_ns, cpu_s, total * int(batch), first_run_ms)


def _stream(index: int, session: Any, feeds: dict, warmup: int, limits: tuple[int, int, int],
            barrier: threading.Barrier, clock: _Clock, outcomes: list[Any]) -> None:
    try:
        run = session.run
        for _ in range(warmup):
            run(None, feeds)
        barrier.wait()
        outcomes[index] = _timed(run, feeds, limits, clock)
    except BaseException as e:  # reported by the caller; the other streams stop at their next request
        clock.stop[0] = True
        barrier.abort()
        outcomes[index] = e


def _timed(run: Any, feeds: dict, limits: tuple[int, int, int], clock: _Clock) -> tuple[np.ndarray, int]:
    """The hot loop. Everything it touches is a local; the buffer grows by doubling (rarely)."""
    min_iter, min_ns, max_ns = limits
    min_deadline = clock.start_ns + min_ns
    max_deadline = clock.start_ns + max_ns
    stop = clock.stop
    now = time.perf_counter_ns
    buf = [0] * min(max(min_iter + 64, 1024), INITIAL_BUFFER_MAX)
    cap = len(buf)
    i = 0
    while True:
        t0 = now()
        run(None, feeds)
        t1 = now()
        buf[i] = t1 - t0
        i += 1
        if (i >= min_iter and t1 >= min_deadline) or t1 >= max_deadline or stop[0]:
            break
        if i == cap:
            buf.extend([0] * cap)
            cap = len(buf)
    return np.array(buf[:i], dtype=np.int64), t1


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
