"""How many profiling processes, and how many profiled inferences each? Measures what decides it, on this machine.

A layer's figure is each profiling process's median over its profiled inferences, then the median over the
processes (docs/methodology.md, "The profiled inferences"). Two things limit how well it repeats: how fast a
process's median settles as its inferences add up, and how far one process's medians sit from another's (a
process lands on a busier core, a slower spell of the host). This script profiles the example CNN in
`--processes` separate processes of `--inferences` profiled inferences each, through perfsite's own worker
(profile mode), and prints for the slowest nodes:

- within a process: how far the median of its first k inferences lies from the median of all of them;
- between processes: the spread of their medians (standard deviation over median);
- the 95 % interval's half-width of a node's figure with 2, 3 and 5 processes;
- how often two processes rank the top three op types alike.

Usage: ``python bench/profile_processes.py [--processes 6] [--inferences 40] [--threads 2] [--batch 1]
[--model PATH]``
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.results import intervals  # noqa: E402
from generator.runner import children  # noqa: E402
from generator.runner.protocol import WorkerJob  # noqa: E402

TOP = 10


def profile_once(model: Path, work: Path, threads: int, batch: int, inferences: int) -> dict:
    feeds = work / "feeds.npz"
    if not feeds.exists():
        np.savez(feeds, input=np.random.default_rng(0).random((batch, 3, 64, 64), dtype=np.float32))
    job = WorkerJob(mode="profile", model_path=str(model), original_model_path=str(model),
                    config={"batch": batch, "threads": threads, "concurrency": 1, "optimization_level": "all",
                            "provider": "cpu", "spinning": True, "inter_op_threads": 1},
                    feeds_path=str(feeds), measure={"warmup": 5, "profile_iterations": inferences},
                    work_dir=str(work), profile_requests=inferences)
    result = children.run_child(job, timeout_s=300)
    if result.error:
        raise SystemExit(f"the profiled process failed: {result.error}")
    return result.output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--inferences", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--model", type=Path, default=ROOT / "experiments" / "models" / "cnn.onnx")
    args = parser.parse_args()
    if not args.model.exists():
        raise SystemExit(f"{args.model} is missing: build it with `perfsite example-models experiments/models`")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.processes):
            work = Path(tmp) / f"p{i}"
            work.mkdir()
            runs.append(profile_once(args.model, work, args.threads, args.batch, args.inferences))
    ops = [n["op_type"] for n in runs[0]["nodes"]]
    top_level = [n.get("parent") is None for n in runs[0]["nodes"]]
    times = np.array([run["node_runs_us"] for run in runs])  # processes × nodes × inferences
    medians = np.median(times, axis=2)  # processes × nodes
    figure = np.median(medians, axis=0)
    top = [i for i in np.argsort(-figure) if top_level[i]][:TOP]
    print(f"{args.model.name}, {args.threads} threads, batch {args.batch}: {args.processes} processes × "
          f"{args.inferences} profiled inferences; the {len(top)} slowest top-level nodes")
    for k in (5, 10, 20):
        if k < args.inferences:
            dev = np.abs(np.median(times[:, top, :k], axis=2) / medians[:, top] - 1)
            print(f"  within a process, median of the first {k:>2} inferences against all {args.inferences}: "
                  f"{np.median(dev):.1%} (90th percentile {np.quantile(dev, 0.9):.1%})")
    spread = np.std(medians[:, top], axis=0, ddof=1) / np.median(medians[:, top], axis=0)
    print(f"  between processes, spread of their medians (sd / median): {np.median(spread):.1%} "
          f"(largest {spread.max():.1%})")
    for count in (2, 3, 5):
        if count <= args.processes:
            halves = [intervals.one_side(list(medians[list(subset), i])).relative_halfwidth
                      for subset in itertools.combinations(range(args.processes), count) for i in top]
            print(f"  95 % interval of a node's figure with {count} processes: ± {np.median(halves):.1%} "
                  f"(median over nodes and subsets)")
    agree = _rank_agreement(medians, ops, top_level)
    print(f"  pairs of processes that rank the top three op types alike: {agree:.0%}")
    return 0


def _rank_agreement(medians: np.ndarray, ops: list[str], top_level: list[bool]) -> float:
    order = []
    for row in medians:
        by_op: dict[str, float] = {}
        for t, op, top in zip(row, ops, top_level, strict=True):
            if top:
                by_op[op] = by_op.get(op, 0.0) + float(t)
        order.append(tuple(sorted(by_op, key=lambda o: -by_op[o])[:3]))
    pairs = list(itertools.combinations(range(len(order)), 2))
    return sum(order[i] == order[j] for i, j in pairs) / len(pairs) if pairs else math.nan


if __name__ == "__main__":
    sys.exit(main())
