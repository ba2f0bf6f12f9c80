"""What the "choose A and B" pages cost: build time and site size with and without them, measured in one run.

Issue 14 allows pair selection at most to double the build time and the site size of an experiment of at least
4 versions and 36 configurations. This measures the quickstart with an FP16 version added (4 versions × 12
configurations = 48 trials, every one profiled), run in quick mode (the pages' cost depends on the number of
trials and nodes, not on how long each was measured), then builds its site twice in this process, once with
every page kind and once without the chooser, and prints::

    trials: 48 (4 versions)
    build with chooser      8.5 s   site   9.1 MB   largest file 1.03 MB
    build without chooser   5.0 s   site   5.7 MB
    ratio: build 1.72 ×, size 1.60 × (limit 2 ×)

Usage: ``python bench/chooser_cost.py [--results DIR]`` (an existing results folder instead of a new run; its
experiments are all built). Exit status 1 when a ratio is over 2 or a file is over 3 MB.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 2.0
MAX_FILE_BYTES = 3 * 1024 * 1024
FP16 = "  fp16:        {from: fp32, fp16: true}\n"


def _results(work: Path) -> Path:
    """The quickstart with an FP16 version, measured in quick mode into work/results."""
    spec = (ROOT / "experiments" / "quickstart.yaml").read_text()
    spec = spec.replace("  int8-dyn:", FP16 + "  int8-dyn:", 1)
    (work / "models").mkdir()
    shutil.copy(ROOT / "experiments" / "models" / "cnn.onnx", work / "models" / "cnn.onnx")
    (work / "quickstart.yaml").write_text(spec)
    perfsite = Path(sys.executable).with_name("perfsite")
    subprocess.run([str(perfsite), "run", "quickstart.yaml", "--results", "results", "--quick"], cwd=work,
                   check=True)
    return work / "results"


def _build(results: Path, site: Path, project: Path, chooser: bool) -> float:
    from generator.site import build_site, pages

    kinds = dict(pages.PAGE_KINDS)
    if not chooser:
        pages.PAGE_KINDS.pop("choose")
    try:
        start = time.perf_counter()
        build_site(results, site, project)
        return time.perf_counter() - start
    finally:
        pages.PAGE_KINDS.clear()
        pages.PAGE_KINDS.update(kinds)


def _size(site: Path) -> tuple[int, int]:
    sizes = [p.stat().st_size for p in site.rglob("*") if p.is_file()]
    return sum(sizes), max(sizes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, help="an existing results folder (default: a new quick run)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from generator.results.store import find_experiments, load_experiment

    with tempfile.TemporaryDirectory(prefix="perfsite-chooser-bench-") as tmp:
        work = Path(tmp)
        results = args.results or _results(work)
        experiments = [load_experiment(p) for p in find_experiments(results)]
        trials = sum(int((e.trials["status"] == "ok").sum()) for e in experiments)
        versions = max(e.trials["version"].nunique() for e in experiments)
        print(f"trials: {trials} ({versions} versions)")
        (work / "project").mkdir()
        figures = {}
        for chooser in (True, False):
            site = work / f"site-{chooser}"
            seconds = min(_build(results, site, work / "project", chooser) for _ in range(2))
            figures[chooser] = (seconds, *_size(site))
        (t1, s1, big), (t0, s0, _) = figures[True], figures[False]
        print(f"build with chooser    {t1:5.1f} s   site {s1 / 1e6:5.1f} MB   largest file {big / 1e6:.2f} MB")
        print(f"build without chooser {t0:5.1f} s   site {s0 / 1e6:5.1f} MB")
        print(f"ratio: build {t1 / t0:.2f} ×, size {s1 / s0:.2f} × (limit {LIMIT:g} ×)")
        return 0 if t1 / t0 <= LIMIT and s1 / s0 <= LIMIT and big <= MAX_FILE_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
