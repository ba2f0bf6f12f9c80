"""How `perfsite build` scales: a full build of a big store, a rebuild after one experiment changed, page sizes.

Issue 15 asks, on 2 cores: a full build of 1,000 trials / 1 M executed-node rows in ≤ 30 s with ≤ 2 GB peak
memory; a rebuild after one experiment's results changed (its page names kept) in ≤ 5 s; no page over 3 MB.
This writes such a store (bench/scale_store.py: seeded, deterministic, through the results store), runs the
`perfsite build` command users run in a child process, and prints each figure against its target (measured
figures: docs/scale.md)::

    store: 25 experiments, 1,000 trials, 1,000,040 node rows, 3 environments (written in … s)
    figure                        measured      target    ratio
    full build                       … s        30.0 s       …
    peak memory (process tree)       … MB    2,048.0 MB      …
    rebuild after one change         … s         5.0 s       …
    largest page                     … MB        3.0 MB      …

CPU seconds of each build (the build and its child processes) are printed too: on a shared machine they show
what a build costs when the wall time shows how busy the machine was. Peak memory is the largest sum of the
proportional set size of the build and all its child processes (a pool of page workers, mkdocs), sampled
every 50 ms to half a second (reading it costs the kernel a page-table walk; see Tree): pages shared by
several processes (the workers share what their server imported) count once; the sum of resident sizes,
which counts them in every process, is printed beside it. The changed
experiment is re-measured with every time 10 % slower: same trial keys, same page names, new figures.

Usage: ``python bench/site_scale.py [--trials 1000] [--nodes N] [--work DIR] [--perfsite PATH]`` (`--trials 20
--nodes 600` is a smoke run of a few seconds). Exit status 1 when a figure is over its target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import psutil
import scale_store

MB = 1024 * 1024
TARGETS = {"full build": 30.0, "peak memory (process tree)": 2048.0, "rebuild after one change": 5.0,
           "largest page": 3.0}
UNITS = {"full build": "s", "peak memory (process tree)": "MB", "rebuild after one change": "s",
         "largest page": "MB"}
SEED = 7


def write_store(results: Path, trials: int, nodes: int) -> list[scale_store.Plan]:
    plans = scale_store.plans(trials, nodes, SEED)
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(scale_store.write_experiment, [results] * len(plans), plans, [SEED] * len(plans)))
    return plans


def timed_build(work: Path, perfsite: Path) -> tuple[float, float, float, float]:
    """Seconds, CPU seconds, peak proportional and peak resident memory (MB) of `perfsite build` run in `work`,
    the build and all its child processes together."""
    command = [str(perfsite), "build", "--results", "results", "--site", "site"]
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tree = Tree()
    sampler = threading.Thread(target=tree.sample, args=(child,), daemon=True)
    sampler.start()
    output, _ = child.communicate()
    seconds = time.perf_counter() - start
    sampler.join()
    if child.returncode != 0:
        sys.exit(f"perfsite build failed (exit status {child.returncode}):\n{output[-3000:]}")
    return seconds, sum(tree.cpu.values()), tree.peak_pss / MB, tree.peak_rss / MB


class Tree:
    """The build's process tree, sampled every 50 ms: the largest sums of resident size and of proportional set
    size (shared pages counted once over the processes sharing them: the pool's workers share what their server
    imported), and each process's last CPU time (a process ending between two samples loses at most 50 ms).
    Proportional size is read less often: the kernel walks a process's page tables for it (5 to 10 ms a
    process), and read every 50 ms it took half a core of this 2-core machine from the build being timed. It is
    read when the sampler's own time stays under a twentieth of the elapsed time, at least every half second."""

    SHARE = 0.05

    def __init__(self) -> None:
        self.peak_pss = self.peak_rss = 0
        self.cpu: dict[int, float] = {}

    def sample(self, child: subprocess.Popen) -> None:
        try:
            root = psutil.Process(child.pid)
            last_pss, cost = 0.0, 0.0
            while child.poll() is None:
                now = time.perf_counter()
                with_pss = now - last_pss >= min(0.5, cost / self.SHARE)
                self._once([root, *root.children(recursive=True)], with_pss)
                if with_pss:
                    last_pss, cost = now, time.perf_counter() - now
                time.sleep(0.05)
        except psutil.Error:
            pass

    def _once(self, processes: list[psutil.Process], with_pss: bool) -> None:
        pss = rss = 0
        for p in processes:
            try:
                with p.oneshot():
                    memory, times = (p.memory_full_info() if with_pss else p.memory_info()), p.cpu_times()
            except psutil.Error:  # a worker that just ended
                continue
            pss, rss = pss + getattr(memory, "pss", 0), rss + memory.rss
            self.cpu[p.pid] = times.user + times.system
        self.peak_rss = max(self.peak_rss, rss)
        if with_pss:
            self.peak_pss = max(self.peak_pss, pss)


def largest_page(site: Path) -> tuple[float, str, float]:
    """The largest HTML page (MB, its path) and the largest file of any kind (MB)."""
    files = [(p.stat().st_size, p) for p in site.rglob("*") if p.is_file()]
    pages = [(size, p) for size, p in files if p.suffix == ".html"]
    size, page = max(pages)
    return size / MB, page.relative_to(site).as_posix(), max(files)[0] / MB


def change_one(results: Path, plans: list[scale_store.Plan]) -> str:
    """Re-measure one experiment with every time 10 % slower (same trials, so the same page names)."""
    plan = plans[len(plans) // 2]
    scale_store.write_experiment(results, plan, SEED, slower=1.1)
    return plan.name


def report(figures: dict[str, float]) -> bool:
    print(f"{'figure':<30}{'measured':>12}{'target':>12}{'ratio':>9}")
    ok = True
    for name, value in figures.items():
        target, unit = TARGETS[name], UNITS[name]
        ok &= value <= target
        print(f"{name:<30}{value:>9,.1f} {unit:<2}{target:>9,.1f} {unit:<2}{value / target:>8.2f}")
    return ok


def run(work: Path, trials: int, nodes: int, perfsite: Path) -> bool:
    results = work / "results"
    start = time.perf_counter()
    plans = write_store(results, trials, nodes)
    rows = sum(p.nodes * len(p.trials) for p in plans)
    envs = len({t[2] for p in plans for t in p.trials})
    plural = "s" if len(plans) > 1 else ""
    print(f"store: {len(plans)} experiment{plural}, {trials:,} trials, {rows:,} node rows, {envs} environments "
          f"(written in {time.perf_counter() - start:.1f} s) in {results}")
    for old in (work / "site", work / ".perfsite"):  # a full build: no site, no page cache
        shutil.rmtree(old, ignore_errors=True)
    full_s, full_cpu, full_pss, full_rss = timed_build(work, perfsite)
    changed = change_one(results, plans)
    rebuild_s, rebuild_cpu, rebuild_pss, rebuild_rss = timed_build(work, perfsite)
    page_mb, page, file_mb = largest_page(work / "site")
    ok = report({"full build": full_s, "peak memory (process tree)": max(full_pss, rebuild_pss),
                 "rebuild after one change": rebuild_s, "largest page": page_mb})
    print(f"CPU time: full build {full_cpu:.1f} s, rebuild {rebuild_cpu:.1f} s ({os.cpu_count()} cores: wall time "
          f"on a quiet machine ≥ CPU time / cores); peak resident memory, shared pages counted in every process: "
          f"{max(full_rss, rebuild_rss):,.0f} MB")
    print(f"changed experiment {changed}; largest page {page}; largest file of any kind {file_mb:.2f} MB")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="trials in the store (default 1000)")
    parser.add_argument("--nodes", type=int, help="executed-node rows in the store (default 1000 per trial)")
    parser.add_argument("--work", type=Path, help="folder for the store and the site (default: a temporary one)")
    parser.add_argument("--perfsite", type=Path, default=Path(sys.executable).with_name("perfsite"),
                        help="the perfsite command to time (default: the one beside this Python), e.g. another "
                             "checkout's, for a before-and-after comparison")
    args = parser.parse_args()
    nodes = args.nodes or args.trials * 1000
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        ok = run(args.work.resolve(), args.trials, nodes, args.perfsite)
    else:
        with tempfile.TemporaryDirectory(prefix="site-scale-") as tmp:
            ok = run(Path(tmp), args.trials, nodes, args.perfsite)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
