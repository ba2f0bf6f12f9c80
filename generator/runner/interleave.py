"""Two versions measured together: one process, both sessions, their requests in alternating blocks.

A paired run (`perfsite diff --measure`) compares a baseline and a candidate round by round. Measured in two
processes one after the other, a round's two figures are seconds apart, and on the machines users have (cloud
VMs whose host changes the vCPU's speed between half-seconds, laptops, CI runners) the baseline's own median
moved between 1.6 and 3.2 ms from round to round beside no neighbour: the per-round ratio of a 4 % slower
model spread 15 % (2026-12-07, this project's VM), and a 45 s budget could not tell 4 % from 0. Measured in
one process, in blocks of about BLOCK_S each, A B B A A B …, the two versions see the same host speed within a
few tens of milliseconds, and a round's ratio keeps only what differs between them.

Each block holds about BLOCK_S of its own version's requests (two versions of different speeds get the same
time, not the same count) and begins with one untimed request of its version (when a block holds two or
more): the other session's pool threads may still spin, and its weights may still fill the cache, for a moment
after a switch. The loop runs until each version has `min_iterations` timed requests and `min_seconds` of timed
blocks, or until one version has had `max_seconds`. One stream (concurrency 1): several streams of two sessions
would contend with each other, which a version measured alone never does; the sweep measures those apart.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from generator.runner.measure import SCHEDSTAT, LoopResult, _pool_tids, _read_each, _run_delay, _schedstat_fd

BLOCK_S = 0.02  # a block's length: well under the half-second over which a host changes a vCPU's speed
MAX_BLOCK = 64  # requests at most in one block (a model of well under a millisecond)


def timed_pair_loop(runs: tuple[Callable[..., Any], Callable[..., Any]],
                    feeds: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]], *, warmup: int,
                    min_iterations: int, min_seconds: float, max_seconds: float,
                    batch: int) -> tuple[LoopResult, LoopResult]:
    """Both versions' timed phases, interleaved (module docstring); `runs` are the sessions' bound `run`."""
    feeds = (dict(feeds[0]), dict(feeds[1]))
    first_ms = tuple(_first_run_ms(run, f) for run, f in zip(runs, feeds, strict=True))
    for run, f in zip(runs, feeds, strict=True):
        for _ in range(warmup):
            run(None, f)
    blocks = tuple(_block_size(run, f) for run, f in zip(runs, feeds, strict=True))
    fds = _delay_fds()
    try:
        sides = _alternate(runs, feeds, blocks, (min_iterations, min_seconds, max_seconds), fds)
    finally:
        for fd in fds:
            os.close(fd)
    return tuple(_result(side, first, batch, len(fds)) for side, first in zip(sides, first_ms, strict=True))


def _first_run_ms(run: Callable[..., Any], feeds: dict) -> float:
    t0 = time.perf_counter_ns()
    run(None, feeds)
    return (time.perf_counter_ns() - t0) / 1e6


def _block_size(run: Callable[..., Any], feeds: dict) -> int:
    """Requests per block for one version: about BLOCK_S of them (from the median of three), 1 to MAX_BLOCK."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        run(None, feeds)
        times.append(time.perf_counter() - t0)
    typical = sorted(times)[1]
    return max(1, min(MAX_BLOCK, int(BLOCK_S / typical) if typical > 0 else MAX_BLOCK))


def _delay_fds() -> list[int]:
    """This thread's and every other thread's schedstat (the two sessions' pools), opened once."""
    own = _schedstat_fd(SCHEDSTAT)
    if own is None:
        return []
    me = threading.get_native_id()
    others = [fd for tid in _pool_tids({me}) if (fd := _schedstat_fd(f"/proc/self/task/{tid}/schedstat")) is not None]
    return [own, *others]


class _Side:
    """One version's timed requests so far: latencies, schedstat reads around them, its time and CPU time."""

    def __init__(self) -> None:
        self.latencies: list[int] = []
        self.marks: list[list[bytes]] = []  # reads before and after each request (pairs)
        self.wall_ns = 0
        self.cpu_s = 0.0


def _alternate(runs: tuple, feeds: tuple, blocks: tuple[int, int], limits: tuple[int, float, float],
               fds: list[int]) -> tuple[_Side, _Side]:
    min_iter, min_s, max_s = limits
    sides = (_Side(), _Side())
    min_ns, max_ns = int(min_s * 1e9), int(max_s * 1e9)
    now = time.perf_counter_ns
    order = (0, 1, 1, 0)  # A B B A: each version goes first as often as the other
    k = 0
    while True:
        which = order[k % 4]
        k += 1
        run, f, side, block = runs[which], feeds[which], sides[which], blocks[which]
        if block > 1:
            run(None, f)  # the switch: untimed (module docstring)
        cpu0, t_block = time.process_time(), now()
        for _ in range(block):
            before = _read_each(fds, None) if fds else None
            t0 = now()
            run(None, f)
            t1 = now()
            side.latencies.append(t1 - t0)
            if before is not None:
                side.marks.append(before)
                side.marks.append(_read_each(fds, before))
        side.wall_ns += now() - t_block
        side.cpu_s += time.process_time() - cpu0
        if k % 2 == 0 and _enough(sides, min_iter, min_ns, max_ns):  # both have had a block since the last check
            return sides


def _enough(sides: tuple[_Side, _Side], min_iter: int, min_ns: int, max_ns: int) -> bool:
    """Each side has its minimum of requests and of timed time, or one has had its maximum time."""
    if any(s.wall_ns >= max_ns for s in sides):
        return True
    return all(len(s.latencies) >= min_iter and s.wall_ns >= min_ns for s in sides)


def _result(side: _Side, first_run_ms: float, batch: int, threads: int) -> LoopResult:
    latencies = np.array(side.latencies, dtype=np.int64)
    delays = _request_delays(side.marks, threads) if threads else None
    return LoopResult((latencies,), side.wall_ns, side.cpu_s, len(side.latencies) * int(batch), first_run_ms,
                      (delays,) if delays is not None else (None,), threads if delays is not None else 0)


def _request_delays(marks: list[list[bytes]], threads: int) -> np.ndarray | None:
    """Per request, the run-delay its threads gained between the reads just before and just after it."""
    if not marks or not threads:
        return None
    totals = np.array([sum(_run_delay(x) for x in m) for m in marks], dtype=np.int64)
    return totals[1::2] - totals[0::2]
