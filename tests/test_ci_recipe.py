"""docs/ci.md stays honest: the `run:` steps of its GitHub Actions workflow, taken from the page's YAML block,
are executed with bash on a temporary clone whose pull-request branch left `main` before `main` moved on.

Checked by execution: the baseline measured is the merge-base (not main's tip) and the candidate the branch
head, both measured in one `perfsite diff --measure` run on this machine; the diff writes its summary (also to
$GITHUB_STEP_SUMMARY), JSON verdict and exit status output; the preview site has its changes page; the last
step exits with the diff's status. Steps that need GitHub (`uses:`) or the package registry (`install`) are not
run. Checked on the workflow's structure, with its `${{ }}` conditions evaluated for each kind of event: the
actions' major versions, the comment skipped for forks, the concurrency group, and the Pages job that runs on a
push to main only.
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
from support.cli import ROOT, write_spec
from support.diff import git
from support.models import stacked_cnn

from generator.results.store import load_experiment

DOC = ROOT / "docs" / "ci.md"
RUN_STEPS = ("base", "diff", "site", "verdict")  # the ids of the pull-request job's steps executed, in order
# The newest major release of each action found when the recipe was last reviewed (actions/checkout v7.0.1,
# setup-python v7.0.0, github-script v9.0.0, upload-artifact v7.0.1, upload-pages-artifact v5.0.0, deploy-pages
# v5.0.0, configure-pages v6.0.0); the issue's floor is checkout v5, setup-python v6, github-script v8.
ACTIONS = {"actions/checkout": 7, "actions/setup-python": 7, "actions/github-script": 9, "actions/upload-artifact": 7,
           "actions/upload-pages-artifact": 5, "actions/deploy-pages": 5, "actions/configure-pages": 6}
SAME_REPO = "octo/model"
SPEC = """\
    name: tiny
    models:
      main: {path: models/tiny.onnx}
    inputs:
      input: {shape: [1, 3, 32, 32], dtype: float32}
    measure: {warmup: 3, min_iterations: 10, min_seconds: 0.05, repeats: 3, budget_s: 4, profile_iterations: 5}
    """


def workflow() -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, "docs/ci.md should hold exactly one YAML block: the workflow"
    return yaml.safe_load(blocks[0])


def pr_job(flow: dict) -> dict:
    (job,) = [j for j in flow["jobs"].values() if "pull-requests" in (j.get("permissions") or {})]
    return job


def pages_job(flow: dict) -> dict:
    (job,) = [j for j in flow["jobs"].values() if (j.get("environment") or {}).get("name") == "github-pages"]
    return job


def steps_by_id(flow: dict) -> dict[str, dict]:
    return {s["id"]: s for s in pr_job(flow)["steps"] if "id" in s}


def github_context(event: str, head_repo: str = SAME_REPO, ref: str = "refs/heads/feature") -> dict:
    """The parts of GitHub's `github` context the workflow reads, for a pull request or a push."""
    pull_request = {"number": 7, "head": {"repo": {"full_name": head_repo}}} if event == "pull_request" else None
    return {"event_name": event, "repository": SAME_REPO, "ref": "refs/pull/7/merge" if pull_request else ref,
            "event": {"pull_request": pull_request} if pull_request else {}}


class _Context(dict):
    """A context object: `a.b.c` reads keys, and a missing key is null (falsy), as in GitHub's expressions."""

    def __getattr__(self, name: str):
        value = self.get(name)
        return _Context(value) if isinstance(value, dict) else (_Context() if value is None else value)


def evaluate(expression: str, github: dict, cancelled: bool = False, steps: dict | None = None):
    """A GitHub Actions expression, for the forms this workflow uses: context paths, 'strings', numbers, ==, !=,
    &&, ||, !, cancelled() and always(). A text with `${{ }}` inside is interpolated instead."""
    text = str(expression).strip()
    if "${{" in text and not (text.startswith("${{") and text.endswith("}}") and text.count("${{") == 1):
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), github, cancelled, steps)), text)
    text = text.removeprefix("${{").removesuffix("}}")
    python = re.sub(r"!(?!=)", " not ", text.replace("&&", " and ").replace("||", " or "))
    names = {"github": _Context(github), "steps": _Context(steps or {}), "cancelled": lambda: cancelled,
             "always": lambda: True}
    return eval(python, {"__builtins__": {}}, names)  # noqa: S307 - the recipe's own expressions, from docs/ci.md


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
    (upstream / "experiments" / "models" / "tiny.onnx").write_bytes(stacked_cnn(3))
    write_spec(upstream / "experiments", SPEC, "tiny.yaml")
    (upstream / ".gitignore").write_text(".perfsite/\nsite/\n")
    fork_point = commit_all(upstream, "tiny model")
    git(upstream, "checkout", "-q", "-b", "feature")
    # The pull request doubles the model's conv blocks: about 1.5 times the time, a verdict (and an exit status
    # the last step must pass on) that a neighbour cannot upset, so this test runs in make test's parallel part.
    (upstream / "experiments" / "models" / "tiny.onnx").write_bytes(stacked_cnn(6))
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
           "GITHUB_STEP_SUMMARY": str(runner_temp / "step-summary.md"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.update({k: expand(str(v), outputs) for k, v in (step.get("env") or {}).items()})
    # GitHub's default shell for `run:` on Linux.
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(step["run"], outputs)],
                          cwd=clone, env=env, capture_output=True, text=True)
    outputs[step["id"]] = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
    return done


def test_recipe_measures_merge_base_and_head_together_and_reports(pull_request, tmp_path):
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
    base = load_experiment(perf / "paired" / "baseline" / "tiny")
    candidate = load_experiment(perf / "paired" / "candidate" / "tiny")
    assert set(base.runs["git_commit"]) == {fork_point}  # the merge-base, not main's tip
    assert set(candidate.runs["git_commit"]) == {head}
    assert set(base.environments["fingerprint"]) == set(candidate.environments["fingerprint"])

    code = int(outputs["diff"]["exit_code"])
    summary = (perf / "summary.md").read_text()
    assert code == 2, summary  # the pull request's model is slower: a regression, and the job fails with it
    assert done["verdict"].returncode == 2
    assert summary.startswith("**perfsite diff: slower**"), summary
    assert "/layer6/conv" in summary  # the layers the pull request added are named
    assert (runner_temp / "step-summary.md").read_text() == summary  # the run's page shows it, forks included
    assert json.loads((perf / "verdict.json").read_text())["exit_code"] == code
    assert (perf / "site" / "reports" / "_changes" / "index.html").is_file()
    assert evaluate(steps["site"]["if"], github_context("pull_request"), steps={"diff": {"outputs": outputs["diff"]}})


def test_comment_step_posts_the_summary_the_diff_wrote_except_from_forks():
    flow = workflow()
    comment = next(s for s in pr_job(flow)["steps"] if s.get("uses", "").startswith("actions/github-script"))
    diff = steps_by_id(flow)["diff"]["run"]
    assert '--markdown "$PERF/summary.md"' in diff
    assert "/perfsite/summary.md" in comment["with"]["script"]
    assert pr_job(flow)["permissions"]["pull-requests"] == "write"
    assert "github.event.pull_request.head.repo.full_name == github.repository" in comment["if"]
    assert evaluate(comment["if"], github_context("pull_request")) is True
    assert evaluate(comment["if"], github_context("pull_request", head_repo="someone/fork")) is False
    assert evaluate(comment["if"], github_context("pull_request"), cancelled=True) is False


def test_diff_step_writes_the_step_summary_and_the_site_needs_a_measurement():
    steps = steps_by_id(workflow())
    diff = steps["diff"]["run"]
    assert re.search(r'cat "\$PERF/summary.md" >> "\$GITHUB_STEP_SUMMARY"', diff)
    assert "--measure 'experiments/*.yaml'" in diff and '"$PERF/base" .' in diff
    pr = github_context("pull_request")
    for code, built in (("0", True), ("2", True), ("3", True), ("1", False)):  # 1: a user error, nothing measured
        assert evaluate(steps["site"]["if"], pr, steps={"diff": {"outputs": {"exit_code": code}}}) is built


def test_actions_are_on_their_current_major_versions():
    flow = workflow()
    used = {s["uses"] for job in flow["jobs"].values() for s in job["steps"] if "uses" in s}
    assert used, "the workflow uses no action"
    for uses in used:
        action, _, version = uses.partition("@")
        assert action in ACTIONS, f"{action} has no known current version in this test; look it up and add it"
        assert version == f"v{ACTIONS[action]}", f"{uses}: use {action}@v{ACTIONS[action]}"
    assert {u.partition("@")[0] for u in used} == set(ACTIONS)


def test_concurrency_cancels_superseded_pull_request_runs_but_never_a_deploy():
    concurrency = workflow()["concurrency"]
    pr, other_pr = github_context("pull_request"), {**github_context("pull_request")}
    other_pr["event"] = {"pull_request": {**pr["event"]["pull_request"], "number": 8}}
    push = github_context("push", ref="refs/heads/main")
    group = {name: evaluate(concurrency["group"], ctx) for name, ctx in
             (("pr", pr), ("other_pr", other_pr), ("push", push))}
    assert group["pr"] != group["other_pr"] and len(set(group.values())) == 3
    assert group["push"] == "perfsite-refs/heads/main"
    assert evaluate(concurrency["cancel-in-progress"], pr) is True
    assert evaluate(concurrency["cancel-in-progress"], push) is False


def test_pages_job_publishes_main_only_on_a_push_to_main():
    flow = workflow()
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads the key `on` as true
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    pages, pr = pages_job(flow), pr_job(flow)
    assert evaluate(pages["if"], github_context("push", ref="refs/heads/main")) is True
    assert evaluate(pages["if"], github_context("push", ref="refs/heads/other")) is False
    assert evaluate(pages["if"], github_context("pull_request")) is False
    assert evaluate(pr["if"], github_context("pull_request")) is True
    assert evaluate(pr["if"], github_context("push", ref="refs/heads/main")) is False
    assert pages["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert "pages" not in flow["permissions"]  # only the deploy job may write to Pages
    publish = next(s for s in pages["steps"] if s.get("id") == "publish")["run"]
    run = re.search(r'perfsite run experiments/\*\.yaml --results "([^"]+)"', publish)
    build = re.search(r'perfsite build --results "([^"]+)" --site "([^"]+)"', publish)
    assert run and build and run.group(1) == build.group(1)
    upload = next(s for s in pages["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert 'PERF="$RUNNER_TEMP/perfsite"' in publish
    site = build.group(2).replace("$PERF", "$RUNNER_TEMP/perfsite")
    assert upload["with"]["path"].replace("${{ runner.temp }}", "$RUNNER_TEMP") == site
    assert pages["steps"][-1]["uses"].startswith("actions/deploy-pages")
