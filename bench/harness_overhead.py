"""How much the runner's timed loop adds around ``session.run``, compared with the barest possible loop.

Builds the example CNN (generator.models), opens one session (batch 1, 1 intra-op thread) and alternates, in
blocks within this one process, (a) ``generator.runner.measure.timed_loop`` and (b) a bare
``t0 = perf_counter_ns(); session.run(None, feeds); ...`` loop, swapping which goes first in every other block
so that neither always runs on a warmer machine. Each block's figure is its wall time per request (what
throughput sees, loop bookkeeping included, run-delay accounting too); the ratio is the median of the
**per-block paired ratios** (runner block / the bare block beside it), so that a neighbour that comes and goes
hits both members of a pair and cancels (the ratio of medians over blocks printed 2.94 in one run under load)::

    harness overhead ratio: 1.003 (paired over 20 blocks; runner 1.234 ms, bare 1.230 ms median)

Usage: ``python bench/harness_overhead.py [--blocks 20] [--iterations 50] [--model PATH]``.
Target: ratio <= 1.02.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from generator.runner.measure import timed_loop


def _cnn_path(out_dir: Path) -> Path:
    from generator.models import build_example_models

    paths = build_example_models(out_dir)
    cnn = [p for p in paths if "cnn" in p.stem]
    if not cnn:
        raise SystemExit(f"no CNN among the example models: {', '.join(p.name for p in paths)}")
    return cnn[0]


def _feeds(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    """Random inputs, every symbolic dimension bound to 1 (batch 1)."""
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in inp.shape]
        if inp.type != "tensor(float)":
            raise SystemExit(f"input {inp.name} is {inp.type}; this benchmark feeds float32 only")
        feeds[inp.name] = rng.random(shape, dtype=np.float32)
    return feeds


def _runner_block(session: ort.InferenceSession, feeds: dict, iterations: int) -> float:
    r = timed_loop(session, feeds, warmup=0, min_iterations=iterations, min_seconds=0.0, max_seconds=3600.0,
                   concurrency=1, batch=1)
    return r.wall_ns / r.iterations / 1e6


def _bare_block(session: ort.InferenceSession, feeds: dict, iterations: int) -> float:
    now = time.perf_counter_ns
    latencies = []
    start = now()
    for _ in range(iterations):
        t0 = now()
        session.run(None, feeds)
        latencies.append(now() - t0)
    return (now() - start) / iterations / 1e6


def measure_overhead(model: Path, blocks: int, iterations: int) -> tuple[float, float, float]:
    """(median per-block ratio runner / bare, median runner ms per request, median bare ms per request)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    feeds = _feeds(session)
    for _ in range(20):
        session.run(None, feeds)
    runner, bare = [], []
    for block in range(blocks):
        if block % 2:
            bare.append(_bare_block(session, feeds, iterations))
            runner.append(_runner_block(session, feeds, iterations))
        else:
            runner.append(_runner_block(session, feeds, iterations))
            bare.append(_bare_block(session, feeds, iterations))
    ratios = np.array(runner) / np.array(bare)
    return float(np.median(ratios)), float(np.median(runner)), float(np.median(bare))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=50, help="requests per block and loop kind")
    parser.add_argument("--model", type=Path, help="ONNX model with float inputs (default: the example CNN)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="perfsite-bench-") as tmp:
        model = args.model or _cnn_path(Path(tmp))
        ratio, runner_ms, bare_ms = measure_overhead(model, args.blocks, args.iterations)
    print(f"harness overhead ratio: {ratio:.3f} (paired over {args.blocks} blocks; runner {runner_ms:.3f} ms, "
          f"bare {bare_ms:.3f} ms median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
