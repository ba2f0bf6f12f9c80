"""docs/ci.md stays honest: the `run:` steps of its GitHub Actions workflow, taken from the page's YAML block,
are executed with bash on a temporary clone whose pull-request branch left `main` before `main` moved on.

Checked: the baseline measured is the merge-base (not main's tip) and the candidate the branch head, both
through `git worktree` on this machine; the diff writes its summary, JSON verdict and exit status output; the
preview site has its changes page; the last step exits with the diff's status. Steps that need GitHub
(`uses:`) or the package registry (`install`) are not run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from perfsite_testing import ROOT, write_spec
from test_diff_git import git, tiny_cnn

from generator.results.store import load_experiment

DOC = ROOT / "docs" / "ci.md"
RUN_STEPS = ("measure", "diff", "site", "verdict")  # the ids of the steps the test executes, in order
SPEC = """\
    name: tiny
    models:
      main: {path: models/tiny.onnx}
    inputs:
      input: {shape: [1, 3, 32, 32], dtype: float32}
    measure: {warmup: 3, min_iterations: 10, min_seconds: 0.05, repeats: 3, profile_iterations: 5}
    """


def workflow() -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, "docs/ci.md should hold exactly one YAML block: the workflow"
    return yaml.safe_load(blocks[0])


def steps_by_id(flow: dict) -> dict[str, dict]:
    (job,) = flow["jobs"].values()
    return {s["id"]: s for s in job["steps"] if "id" in s}


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def pull_request(tmp_path) -> tuple[Path, str, str]:
    """(clone checked out at the PR head, merge-base sha, head sha); main moved on after the branch left."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "config", "user.email", "ci@example.org")
    git(upstream, "config", "user.name", "CI")
    (upstream / "experiments" / "models").mkdir(parents=True)
    (upstream / "experiments" / "models" / "tiny.onnx").write_bytes(tiny_cnn(3))
    write_spec(upstream / "experiments", SPEC, "tiny.yaml")
    (upstream / ".gitignore").write_text(".perfsite/\nsite/\n")
    fork_point = commit_all(upstream, "tiny model")
    git(upstream, "checkout", "-q", "-b", "feature")
    (upstream / "README.md").write_text("The pull request's change.\n")
    head = commit_all(upstream, "feature")
    git(upstream, "checkout", "-q", "main")
    (upstream / "CHANGELOG.md").write_text("Merged after the branch left.\n")
    commit_all(upstream, "main moves on")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    git(clone, "checkout", "-q", "--detach", head)  # actions/checkout with ref: the PR's head sha
    return clone, fork_point, head


def expand(text: str, outputs: dict[str, dict[str, str]]) -> str:
    """The `${{ ... }}` expressions the run steps use, as GitHub would expand them."""
    def value(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        if expr == "github.base_ref":
            return "main"
        step = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+)", expr)
        assert step, f"expression ${{{{ {expr} }}}} in a run step is not known to this test"
        return outputs[step.group(1)][step.group(2)]
    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def run_step(step: dict, clone: Path, runner_temp: Path, outputs: dict) -> subprocess.CompletedProcess:
    output_file = runner_temp / f"output-{step['id']}"
    output_file.write_text("")
    env = {**os.environ, "RUNNER_TEMP": str(runner_temp), "GITHUB_OUTPUT": str(output_file), "PERFSITE_QUICK": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.update({k: expand(str(v), outputs) for k, v in (step.get("env") or {}).items()})
    # GitHub's default shell for `run:` on Linux.
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(step["run"], outputs)],
                          cwd=clone, env=env, capture_output=True, text=True)
    outputs[step["id"]] = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
    return done


def test_recipe_measures_merge_base_and_head_and_reports(pull_request, tmp_path):
    clone, fork_point, head = pull_request
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    steps = steps_by_id(workflow())
    outputs: dict[str, dict[str, str]] = {}
    done = {}
    for step_id in RUN_STEPS:
        done[step_id] = run_step(steps[step_id], clone, runner_temp, outputs)
        if step_id != "verdict":
            assert done[step_id].returncode == 0, f"{step_id}: {done[step_id].stdout}{done[step_id].stderr}"

    perf = runner_temp / "perfsite"
    base = load_experiment(perf / "base-results" / "tiny")
    candidate = load_experiment(perf / "head-results" / "tiny")
    assert set(base.runs["git_commit"]) == {fork_point}  # the merge-base, not main's tip
    assert set(candidate.runs["git_commit"]) == {head}
    assert set(base.environments["fingerprint"]) == set(candidate.environments["fingerprint"])

    code = int(outputs["diff"]["exit_code"])
    assert code in (0, 3)  # the model did not change: no regression (3 only if this machine was too busy)
    assert done["verdict"].returncode == code
    summary = (perf / "summary.md").read_text()
    assert summary.startswith("**perfsite diff: ")
    assert json.loads((perf / "verdict.json").read_text())["exit_code"] == code
    assert (perf / "site" / "reports" / "_changes" / "index.html").is_file()


def test_comment_step_posts_the_summary_the_diff_wrote():
    flow = workflow()
    (job,) = flow["jobs"].values()
    comment = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/github-script"))
    diff = steps_by_id(flow)["diff"]["run"]
    assert '--markdown "$PERF/summary.md"' in diff
    assert "/perfsite/summary.md" in comment["with"]["script"]
    assert flow["permissions"]["pull-requests"] == "write"
