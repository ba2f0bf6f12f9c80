"""Do two runs of the same experiment state the same findings? Issue 34's acceptance check, on demand.

Compares two findings.json files (docs/findings.md) finding by finding: how many each run settled, how many
both settled, and every finding both settled with different answers (strings unequal, or numeric intervals
that do not overlap). With ``--run`` it first measures the spec twice into fresh results folders, once with the
machine otherwise idle and once beside a neighbour spinning on one core (``while True: pass``), and builds a
site from each::

    python bench/findings_repeat.py --run [--spec experiments/quickstart.yaml] [--keep DIR]
    python bench/findings_repeat.py A/reports/quickstart/findings.json B/reports/quickstart/findings.json

Prints both runs' wall times, the counts, the share settled in each, and the disagreements (exit status 1 when
there is one).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PERFSITE = [sys.executable, "-m", "generator.cli"]
ESTIMATE_PRECISION = 0.05  # generator.analysis.findings.profile's, restated so the script reads files alone


def agree(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two settled findings of one id say the same thing: equal answers; numbers within the ± 5 % a settled
    estimate is known to (generator.analysis.findings.profile.ESTIMATE_PRECISION), or whose intervals overlap."""
    x, y = a["answer"], b["answer"]
    if isinstance(x, int | float) and isinstance(y, int | float):
        if x > 0 and y > 0 and abs(math.log(x / y)) <= math.log1p(ESTIMATE_PRECISION):
            return True
        ia, ib = a["evidence"]["interval"], b["evidence"]["interval"]
        return bool(ia and ib and None not in ia and None not in ib and ia[0] <= ib[1] and ib[0] <= ia[1])
    return x == y


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    fa = {f["id"]: f for f in a["findings"]}
    fb = {f["id"]: f for f in b["findings"]}
    both = [i for i in fa if i in fb and fa[i]["settled"] and fb[i]["settled"]]
    differ = [(i, fa[i]["answer"], fb[i]["answer"]) for i in both if not agree(fa[i], fb[i])]
    return {"a": (sum(f["settled"] for f in fa.values()), len(fa)), "b": (sum(f["settled"] for f in fb.values()),
            len(fb)), "common": len(set(fa) & set(fb)), "both_settled": len(both), "differ": differ}


def run(spec: Path, results: Path, site: Path, neighbour: bool) -> float:
    """Measure `spec` into `results` (beside a spinning neighbour when asked) and build `site`; wall seconds."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if neighbour else None
    started = time.perf_counter()
    try:
        subprocess.run([*PERFSITE, "run", str(spec), "--results", str(results)], cwd=ROOT, check=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    seconds = time.perf_counter() - started
    subprocess.run([*PERFSITE, "build", "--results", str(results), "--site", str(site)], cwd=ROOT, check=True)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="two findings.json files")
    parser.add_argument("--run", action="store_true", help="measure the spec twice (idle, then beside a neighbour)")
    parser.add_argument("--spec", type=Path, default=ROOT / "experiments" / "quickstart.yaml")
    parser.add_argument("--keep", type=Path, default=None, help="keep the results and sites here")
    args = parser.parse_args()
    if args.run:
        folder = args.keep or Path(tempfile.mkdtemp(prefix="findings-repeat-"))
        name = args.spec.stem
        times = {}
        for label, neighbour in (("idle", False), ("neighbour", True)):
            times[label] = run(args.spec, folder / f"results-{label}", folder / f"site-{label}", neighbour)
            print(f"{label}: measured in {times[label]:.0f} s")
        files = [folder / f"site-{label}" / "reports" / name / "findings.json" for label in ("idle", "neighbour")]
    elif len(args.files) == 2:
        files = args.files
    else:
        parser.error("give two findings.json files, or --run")
    a, b = (json.loads(f.read_text()) for f in files)
    out = compare(a, b)
    for label, (settled, count) in (("A", out["a"]), ("B", out["b"])):
        print(f"{label}: {settled} of {count} findings settled ({settled / count:.0%})" if count else f"{label}: none")
    print(f"in both: {out['common']} findings, {out['both_settled']} settled in both; "
          f"{len(out['differ'])} of those disagree")
    for fid, x, y in out["differ"]:
        print(f"  {fid}: {x!r} against {y!r}")
    return 1 if out["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
