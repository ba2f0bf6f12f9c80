"""The machine's own noise: how much the time of one fixed piece of work varies from moment to moment.

One fixed pure-Python loop (no I/O, no allocation, no model) runs back to back on one thread; the loops are
grouped into windows of a fixed length, and each window gives the median time of its loops. On a virtual
machine the host can change how fast a vCPU runs (its other guests, SMT siblings, frequency) without the
guest seeing it: no run-delay, no steal time. The window medians show it: the same work takes different times
at different moments. Their spread is measured by the spread rule's own formula (2 σ / median,
generator.results.noise.NOISE_SPREAD), so it reads on the same scale as a trial's process spread.

`perfsite run` measures it once per run, before measuring starts (HostNoise into the `runs` table);
bench/host_noise.py runs the same measurement for as long as asked.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

# (seconds, window length in s) of the run's measurement: a full run's windows are as long as a short
# measurement process; quick mode (tests, previews) only keeps the figure's shape. A window holds a few loops
# even on a busy machine (15 ms a loop under a load of 6 on the 2-vCPU development VM).
FULL = (2.0, 0.25)
QUICK = (0.2, 0.1)
MIN_LOOPS = 3  # a window with fewer loops has no median worth the name


def fixed_work() -> int:
    """The fixed work: about 9 ms of integer arithmetic in the interpreter on the development VM."""
    total = 0
    for i in range(200_000):
        total += i * i
    return total


def measure(seconds: float) -> list[tuple[float, float]]:
    """(start, duration) of every loop of `seconds` of back-to-back fixed work, in seconds."""
    loops = []
    end = time.perf_counter() + seconds
    while (start := time.perf_counter()) < end:
        fixed_work()
        loops.append((start, time.perf_counter() - start))
    return loops


def window_medians(loops: list[tuple[float, float]], window: float) -> list[float]:
    """The median duration of the loops that started in each `window` seconds, in order; windows of fewer than
    MIN_LOOPS loops are left out."""
    if not loops:
        return []
    first = loops[0][0]
    windows: dict[int, list[float]] = {}
    for start, duration in loops:
        windows.setdefault(int((start - first) / window), []).append(duration)
    return [statistics.median(d) for _, d in sorted(windows.items()) if len(d) >= MIN_LOOPS]


def spread(medians: list[float]) -> float | None:
    """2 σ / median of the window medians (the spread rule's formula); None below two windows."""
    if len(medians) < 2:
        return None
    return 2 * statistics.stdev(medians) / statistics.median(medians)


@dataclass(frozen=True)
class HostNoise:
    """One measurement of the machine's own noise (module docstring)."""

    seconds: float
    window_s: float
    windows: int
    fastest_ms: float | None  # the fastest window's median loop
    slowest_ms: float | None
    spread: float | None  # 2 σ / median of the window medians

    def row(self) -> dict[str, float | int | None]:
        """The `runs` table's host_noise_* columns."""
        return {"host_noise_s": self.seconds, "host_noise_window_s": self.window_s,
                "host_noise_windows": self.windows, "host_noise_fastest_ms": self.fastest_ms,
                "host_noise_slowest_ms": self.slowest_ms, "host_noise_spread": self.spread}


# Of the measuring a run expects, the share the noise measurement may take (at least MIN_FULL_S): two seconds
# before a run of ten would be a fifth of it.
SHARE_OF_RUN = 0.05
MIN_FULL_S = 0.5


def measure_host_noise(quick: bool, run_estimate_s: float | None = None) -> HostNoise:
    """The fixed work for FULL's (QUICK's) seconds in its windows, on this thread, after one warm loop; a full
    measurement takes at most SHARE_OF_RUN of the run's estimated measuring (at least MIN_FULL_S)."""
    seconds, window = QUICK if quick else FULL
    if not quick and run_estimate_s is not None:
        seconds = min(seconds, max(MIN_FULL_S, SHARE_OF_RUN * run_estimate_s))
    fixed_work()
    medians = window_medians(measure(seconds), window)
    return HostNoise(seconds=seconds, window_s=window, windows=len(medians),
                     fastest_ms=min(medians) * 1e3 if medians else None,
                     slowest_ms=max(medians) * 1e3 if medians else None, spread=spread(medians))
