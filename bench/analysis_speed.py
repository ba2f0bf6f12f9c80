"""Speed of perfsite's own analyses, against the budgets that keep `perfsite run` and `perfsite build` snappy.

Timed unit tests are flaky on shared machines, so these targets live here, measured in one run and printed as
ratios of the best time to its budget (<= 1.0 meets it)::

    flops analysis (cnn):               0.03 s, budget 0.50 s, ratio 0.06
    flops analysis (transformer):       0.02 s, budget 0.50 s, ratio 0.04
    bootstrap (10 x 1,000 requests):    0.47 s, budget 3.00 s, ratio 0.16
    quick machine probe:                0.24 s, budget 2.00 s, ratio 0.12
    worst ratio: 0.16

- FLOP analysis of one model file at concrete shapes runs in every profiled pass (budget 0.5 s).
- The hierarchical bootstrap (latency and throughput ratios, 2,000 resamples each) runs for every compare and
  diff pair (budget 3 s for ten processes of a thousand requests each).
- The quick machine probe runs once per environment in quick mode, i.e. in tests and previews (budget 2 s).

Usage: ``python bench/analysis_speed.py [--repeats 3]``. Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

BUDGETS_S = {"flops analysis (cnn)": 0.5, "flops analysis (transformer)": 0.5,
             "bootstrap (10 x 1,000 requests)": 3.0, "quick machine probe": 2.0}


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """Fastest of `repeats` timed calls after one untimed call (imports, first-call set-up)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def flops_cases(models_dir: Path) -> dict[str, Callable[[], object]]:
    from generator.flops import analyze_model
    from generator.models import build_example_models

    paths = {p.stem: p for p in build_example_models(models_dir)}
    return {
        "flops analysis (cnn)": lambda: analyze_model(paths["cnn"], {"input": (1, 3, 64, 64)}),
        "flops analysis (transformer)": lambda: analyze_model(
            paths["transformer"], {"input_ids": (1, 32), "attention_mask": (1, 32)}),
    }


def bootstrap_case() -> Callable[[], object]:
    from generator.analysis.stats import ProcessSamples, latency_ratio, throughput_ratio

    def trial(seed: int) -> ProcessSamples:
        rng = np.random.default_rng(seed)
        lat = tuple(rng.lognormal(0.0, 0.15, 1000) for _ in range(10))
        return ProcessSamples(lat, tuple(1000.0 / a.mean() for a in lat))

    a, b = trial(7), trial(8)
    return lambda: (latency_ratio(a, b, 0.9), throughput_ratio(a, b))


def probe_case() -> Callable[[], object]:
    from generator.machine.probe import probe_machine

    return lambda: probe_machine(quick=True, threads=2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cases = {**flops_cases(Path(tmp)), "bootstrap (10 x 1,000 requests)": bootstrap_case(),
                 "quick machine probe": probe_case()}
        ratios = []
        for name, fn in cases.items():
            seconds = best_of(args.repeats, fn)
            ratios.append(seconds / BUDGETS_S[name])
            print(f"{name + ':':34s}{seconds:6.2f} s, budget {BUDGETS_S[name]:.2f} s, ratio {ratios[-1]:.2f}")
    print(f"worst ratio: {max(ratios):.2f}")
    return 0 if max(ratios) <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
