"""Is this machine quiet enough for perfsite's noise rules? Times a fixed amount of work, nothing else.

perfsite's spread rule (docs/methodology.md, *Noise flags*) flags a trial whose per-process median latencies
spread more than 5 % (2 σ / median). On a virtual machine the host can change how fast a vCPU runs (its other
guests, SMT siblings, frequency) without the guest seeing it: no run-delay, no steal time. This script shows
whether that happens here. It runs one fixed pure-Python loop (no I/O, no allocation, no model) back to back on
one thread for `--seconds` (generator.machine.host_noise, the measurement `perfsite run` makes once per run
for a few seconds), groups the loops into windows as long as a `make demo` measurement process
(`--window`, 0.5 s), and prints the spread of the window medians by the same 2 σ / median formula, with the
guest's steal and the process's run-delay over the whole run::

    fixed work: 2,883 loops of 8.90 ms median in 60 windows of 0.5 s
    window medians: 8.10 to 14.62 ms (81% apart); spread 2σ/median 52.5% (perfsite's rule: 5%)
    slowest stretch: 11 windows in a row ≥ 10% above the fastest window
    steal time: 0.04 s; this thread's run-delay: 0.10 s (neither explains it: the host changed the CPU's speed)

(the project's 2-core cloud VM, 2026-11-27, `--seconds 30`). A machine where this spread is above 5 % flags
perfsite trials noisy because it is noisy: the same work took different times. Compare runs of the same model
with paired measurement there (`perfsite diff --measure`).

Usage: ``python bench/host_noise.py [--seconds 20] [--window 0.5]``. Exit status 1 when the spread is above 5 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from generator.machine.host_noise import fixed_work, measure, spread, window_medians
from generator.results.noise import NOISE_SPREAD

SLOW = 1.10  # a window this much slower than the fastest one counts as slow


def steal_s() -> float:
    """The guest's steal time over all CPUs (the 8th field of /proc/stat's cpu line, in clock ticks)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return int(fields[8]) / 100


def run_delay_s() -> float:
    return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9


def longest_slow_stretch(medians: list[float]) -> int:
    fastest, longest, current = min(medians), 0, 0
    for m in medians:
        current = current + 1 if m >= fastest * SLOW else 0
        longest = max(longest, current)
    return longest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to run (default 20)")
    parser.add_argument("--window", type=float, default=0.5, help="window length, seconds (default 0.5)")
    args = parser.parse_args()
    fixed_work()  # warm
    steal0, delay0 = steal_s(), run_delay_s()
    loops = measure(args.seconds)
    steal, delay = steal_s() - steal0, run_delay_s() - delay0
    medians = window_medians(loops, args.window)
    if len(medians) < 3:
        sys.exit("too few windows: run longer (--seconds) or use shorter windows (--window)")
    spread_ = spread(medians) or 0.0
    low, high = min(medians), max(medians)
    print(f"fixed work: {len(loops):,} loops of {statistics.median(d for _, d in loops) * 1e3:.2f} ms median in "
          f"{len(medians)} windows of {args.window:g} s")
    print(f"window medians: {low * 1e3:.2f} to {high * 1e3:.2f} ms ({high / low - 1:.0%} apart); spread "
          f"2σ/median {spread_:.1%} (perfsite's rule: {NOISE_SPREAD:.0%})")
    print(f"slowest stretch: {longest_slow_stretch(medians)} windows in a row ≥ {SLOW - 1:.0%} above the fastest "
          "window")
    cause = ("neither explains it: the host changed the CPU's speed" if spread_ > NOISE_SPREAD
             and steal < 0.05 * args.seconds and delay < 0.05 * args.seconds else "")
    print(f"steal time: {steal:.2f} s; this thread's run-delay: {delay:.2f} s" + (f" ({cause})" if cause else ""))
    sys.exit(1 if spread_ > NOISE_SPREAD else 0)


if __name__ == "__main__":
    main()
