"""Acceptance test of `perfsite diff` on a real git repository with real measurements.

A tiny CNN's results are committed; the model then gets three more conv blocks and is measured again into the
working tree: `perfsite diff git:BASE results --fail-on regression` must say "slower", exit 2 and name the
added layers. With the model unchanged, ten diffs between five independent measurements must never say
"slower" or "faster" at the default thresholds. Measurement uses the spec's own small settings (a small
measuring budget; none beyond `repeats` for the A/A runs), not quick mode. Each side is measured once: no retry
hides a disturbed measurement (each process is judged by its clean requests, and the drift between two
separately measured runs is in the interval). Both run in make test's quiet part: beside three busy workers
the regression's baseline processes were 70 % apart and it read "not comparable", as an unpaired diff should.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import pytest
from support.cli import perfsite, write_spec
from support.diff import git
from support.models import stacked_cnn

SNAPSHOT = Path(__file__).parent / "snapshots" / "diff" / "git_regression.md"
UPDATE = os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1"
NOT_QUICK = {"PERFSITE_QUICK": ""}
SPEC = """\
    name: tiny
    description: a few 3x3 convolutions at 32x32
    models:
      main: {path: models/tiny.onnx}
    inputs:
      input: {shape: [1, 3, 32, 32], dtype: float32}
    sweep: {threads: [1]}
    measure: {warmup: 5, min_iterations: 20, min_seconds: 0.1, repeats: 6, budget_s: 4, profile_iterations: 10}
    """
# A model four times as slow stands out of a few processes a side: the regression test measures with fewer than
# the A/A test, whose subject is the noise. It stops at a ± 10 % target, which a quiet machine reaches in about
# five processes (the confidence sequence is 13 standard errors wide at three, 5.4 at five), and goes on for up to
# 3 s where the host's speed swings. A model twice as slow, 3 processes and 1 s a side, was "not comparable" in
# 1 of 3 runs on this VM, its baseline's processes 69 % apart (2026-12-07).
FEWER = SPEC.replace("repeats: 6, budget_s: 4", "repeats: 3, budget_s: 3, target: 0.1")
# The A/A runs measure six processes each and no adaptive rounds after them (budget_s: 0.01 stops them), each
# timing 0.05 s of requests (~90 of ~0.55 ms) instead of 0.1 s. The verdict's interval is Welch's t on the
# per-process log figures, widened by the 5 % between-run drift floor per side (generator.results.intervals),
# and the floor dominates it: a false alarm needs two runs' p90s about 17 % apart (t 2.23, df 10). The adaptive
# rounds (up to 12 processes within 4 s, towards ± 2 %) added only degrees of freedom: about 15.5 % at 12
# processes a side (t 2.07). Half the timing adds sampling noise to each process's p90, which the interval
# includes: from ~2.5 % to ~3.5 % per process at most, 2 % wider. Together about 6.5 s of the quiet part
# (2026-11-27).
AA = SPEC.replace("min_seconds: 0.1", "min_seconds: 0.05").replace("repeats: 6, budget_s: 4",
                                                                    "repeats: 6, budget_s: 0.01")


def make_repo(folder: Path, blocks: int = 3, spec: str = SPEC) -> Path:
    """A git repository with the tiny model, its spec and a .gitignore, committed (results not yet)."""
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.email", "ci@example.org")
    git(folder, "config", "user.name", "CI")
    (folder / "models").mkdir()
    (folder / "models" / "tiny.onnx").write_bytes(stacked_cnn(blocks))
    write_spec(folder, spec, "tiny.yaml")
    (folder / ".gitignore").write_text(".perfsite/\nsite/\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "tiny model and spec")
    return folder


def run(repo: Path) -> None:
    """`perfsite run` into repo/results, once."""
    out = perfsite("run", "tiny.yaml", "--results", "results", "--force", cwd=repo, env=NOT_QUICK)
    assert out.returncode == 0, out.stderr
    assert "1 measured" in out.stdout, out.stdout


def normalize(text: str) -> str:
    """The summary with run-dependent parts made constant: the commit id, measured figures (standalone
    numbers, not those inside names such as p90 or /layer4/), the notes, the line on processes that disagree
    and any unchanged layer flagged by noise (all say how busy this machine was during the test;
    tests/test_diff.py snapshots them from fixed results)."""
    blocks = text.split("\n\n")
    notes = [i for i, b in enumerate(blocks) if b == "Notes:"]
    if notes:  # the "Notes:" line and the list after it
        del blocks[notes[0]:notes[0] + 2]
    # Said only when a noisy trial's processes disagree with its pooled figure: how busy the machine was.
    blocks = [b for b in blocks if not b.startswith("The change is measured process by process")]
    text = "\n\n".join(blocks)
    text = "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(("   - slower:", "   - faster:")))
    text = re.sub(r"\(([0-9a-f]{12})\)", "(COMMIT)", text)
    return re.sub(r"(?<![\w/.])[+-]?\d[\d,]*(\.\d+)?", "N", text)


@pytest.mark.quiet  # separately measured runs: beside make test's other workers they were too noisy to decide
def test_slower_model_is_caught_with_its_added_layers(tmp_path):
    repo = make_repo(tmp_path / "repo", spec=FEWER)
    run(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "baseline results")
    git(repo, "tag", "base")
    (repo / "models" / "tiny.onnx").write_bytes(stacked_cnn(12))
    run(repo)  # the candidate, measured into the working tree beside the committed baseline trial

    out = perfsite("diff", "git:base", "results", "--fail-on", "regression", "--markdown", "summary.md",
                   "--json", "verdict.json", "--site-url", "https://example.org/pr-7", cwd=repo)

    assert out.returncode == 2, out.stdout + out.stderr
    verdict = json.loads((repo / "verdict.json").read_text())
    assert verdict["verdict"] == "slower" and verdict["exit_code"] == 2
    assert verdict["regressions"] == ["tiny · main · b1 t1 c1"]
    added = [c["layer"] for c in verdict["trials"][0]["layers"]["added"]]
    assert added == [f"/layer{i}/conv/Conv" for i in range(4, 13)]
    summary = (repo / "summary.md").read_text()
    assert summary == out.stdout
    assert summary.startswith("**perfsite diff: slower**")
    assert "added: `/layer4/conv/Conv`" in summary
    check_snapshot(normalize(summary))


def check_snapshot(text: str) -> None:
    if UPDATE:
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(text)
    assert SNAPSHOT.is_file(), f"no snapshot {SNAPSHOT}; create it with PERFSITE_UPDATE_SNAPSHOTS=1"
    assert text == SNAPSHOT.read_text(), "the summary differs from its snapshot; if intended, regenerate " \
                                         "with PERFSITE_UPDATE_SNAPSHOTS=1 and review the diff"


@pytest.mark.quiet  # separately measured runs: the suite's other worker must not come and go between them
def test_unchanged_model_is_never_called_slower(tmp_path, monkeypatch):
    from generator.diff.verdict import NO_CHANGE, NOT_COMPARABLE, diff_experiments
    from generator.results.store import load_experiment
    from generator.runner.orchestrate import RunOptions, run_experiment
    from generator.spec import load_spec

    monkeypatch.delenv("PERFSITE_QUICK")
    repo = make_repo(tmp_path / "repo", spec=AA)
    loaded = load_spec(repo / "tiny.yaml")
    folders = [tmp_path / f"measurement-{i}" for i in range(5)]
    for folder in folders:  # one after the other: each run measures alone, in a time window of its own
        run_experiment(loaded, RunOptions(results_dir=folder / "tiny"))

    # Ten diffs of five independent measurements (every pair: four independent contrasts). Each side is read
    # once, not once per diff (`perfsite diff` reads both from disk, then diff_experiments decides; the
    # printing and exit codes of its verdicts are tests/test_diff.py's subject).
    sides = [load_experiment(f / "tiny") for f in folders]
    for side in sides:  # every trial ok (a failed one is a "failed" verdict, as before), six processes a side
        assert set(side.trials["status"]) == {"ok"} and len(side.processes) == 6, side.trials.to_dict("records")
    diffs = [diff_experiments([a], [b], ("baseline", "candidate")) for a, b in itertools.combinations(sides, 2)]
    assert len(diffs) == 10
    wrong = [(d.verdict, d.trials[0].latency_ratio, d.trials[0].throughput_ratio) for d in diffs
             if d.verdict not in (NO_CHANGE, NOT_COMPARABLE)]
    assert not wrong, wrong
