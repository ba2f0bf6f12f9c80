"""`perfsite diff` on small, fixed results directories written through the real results store.

Every side (tests/support/diff.py) is synthetic but shaped like a real run (5 measurement processes of 120
requests each, a profiled pass of 10 iterations, an environment row, the stored spec), and deterministic, so
verdicts and the Markdown summary are byte-stable. The real-measurement acceptance test is tests/test_diff_git.py.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli import perfsite
from support.diff import EXPERIMENT, OTHER_ENV, PAYLOAD, REGRESSION, Side, git, sides, write_side
from support.models import matmul_model

from generator.analysis.records_compare import RatioCI
from generator.cli.diff import diff_command
from generator.diff.report import change_text, code, signed_pct
from generator.errors import PerfsiteError

SNAPSHOTS = Path(__file__).parent / "snapshots" / "diff"
UPDATE = os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1"


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"no snapshot {path}; create it with PERFSITE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(), f"{name} differs from its snapshot; regenerate with PERFSITE_UPDATE_SNAPSHOTS=1"


def test_regression_verdict_layers_and_exit_codes(tmp_path, monkeypatch):
    sides(tmp_path, Side(), REGRESSION)
    monkeypatch.chdir(tmp_path)  # relative folder names: the summary names them, and the snapshot is stable
    base, cand = "baseline", "candidate"
    text, code_ = diff_command(base, cand, fail_on="regression", json_out=tmp_path / "v.json",
                               markdown_out=tmp_path / "s.md", site_url="https://example.org/pr/7/")
    assert code_ == 2
    assert text.startswith("**perfsite diff: slower**: 1 of 2 configurations")
    assert "added: `/layer4/conv/Conv`" in text and "slower: `/layer2/conv/Conv`" in text
    assert "[changes](https://example.org/pr/7/reports/_changes/)" in text
    assert (tmp_path / "s.md").read_text() == text
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["verdict"] == "slower" and verdict["exit_code"] == 2
    by_config = {t["config_label"]: t for t in verdict["trials"]}
    assert by_config["b1 t1 c1"]["verdict"] == "slower"
    assert by_config["b4 t1 c1"]["verdict"] == "no significant change"
    assert by_config["b1 t1 c1"]["latency_ratio"]["low"] > 1.0
    # Without --fail-on a regression is reported, not failed.
    assert diff_command(base, cand)[1] == 0
    check_snapshot("regression.md", text)


def test_a_configuration_that_failed_in_the_candidate_is_a_regression_with_its_reason(tmp_path, monkeypatch):
    """It was listed as "only in the baseline (not compared)", and the diff passed (exit 0 with --fail-on
    regression), also when the rest of the candidate was fine. A failure the other way is a fix, named too."""
    sides(tmp_path, Side(), Side(seed=1, failed=(4,)))
    monkeypatch.chdir(tmp_path)
    text, code_ = diff_command("baseline", "candidate", fail_on="regression", json_out=tmp_path / "v.json")
    assert code_ == 2 and text.startswith(
        "**perfsite diff: failed**: 1 configuration the baseline measured failed in the candidate (below); of 1 "
        "measured in both, none got slower.")
    assert ("Failed in the candidate (measured in the baseline):\n\n- cnn · fp32 · b4 t1 c1: `Fail: "
            "[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Reshape node. Name:'/head/"
            "Reshape<script>alert(1)</script>\\|'x'' Input shape:{4,4}`") in text
    assert "Only in the" not in text and diff_command("baseline", "candidate")[1] == 0
    # A store that also keeps an older ok trial of that configuration (a reused paired store, a results folder
    # measured again): its latest trial failing is what counts; the old ok one stood for it, exit 0.
    write_side(tmp_path / "again", Side(seed=1))
    write_side(tmp_path / "again", Side(seed=2, failed=(4,), finished="2026-01-05T12:00:00Z"))
    text, code_ = diff_command("baseline", "again", fail_on="regression")
    assert code_ == 2 and "Failed in the candidate (measured in the baseline):\n\n- cnn · fp32 · b4 t1 c1" in text
    # Without --fail-on, the configurations compared still decide the status: on other machines, exit 3.
    sides(tmp_path / "env", Side(), Side(seed=1, failed=(4,), env=dict(OTHER_ENV)))
    assert diff_command("env/baseline", "env/candidate")[1] == 3
    assert diff_command("env/baseline", "env/candidate", fail_on="regression")[1] == 2
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["verdict"] == "failed" and verdict["exit_code"] == 2 and verdict["only_baseline"] == []
    assert [f["name"] for f in verdict["failed_in_candidate"]] == ["cnn · fp32 · b4 t1 c1"]
    # Every configuration failed in the candidate: the same verdict, not "nothing to compare" (a user error).
    sides(tmp_path / "all", Side(), Side(failed=(1, 4)))
    text, code_ = diff_command("all/baseline", "all/candidate", fail_on="regression")
    assert code_ == 2 and text.startswith("**perfsite diff: failed**: 2 configurations the baseline measured "
                                          "failed in the candidate (below).")
    # Mended in the candidate: named, and no regression.
    sides(tmp_path / "fixed", Side(failed=(4,)), Side(seed=1))
    text, code_ = diff_command("fixed/baseline", "fixed/candidate", fail_on="regression")
    assert code_ == 0 and text.startswith("**perfsite diff: no significant change** in any of 1 configuration")
    assert "Failed in the baseline, measured in the candidate:\n\n- cnn · fp32 · b4 t1 c1: `Fail:" in text


def test_identical_results_show_no_change(tmp_path):
    base, cand = sides(tmp_path, Side(), Side(seed=1))
    text, code_ = diff_command(base, cand, fail_on="regression")
    assert code_ == 0 and text.startswith("**perfsite diff: no significant change**")
    assert "| no significant change |" in text and "Top regressions" not in text and "quick mode" not in text
    # Both sides quick (a `--quick` preview in CI): said in the notes, as every page says it.
    text, _ = diff_command(*sides(tmp_path / "quick", Side(quick=True), Side(seed=1, quick=True)))
    assert ("- For every configuration, a side was measured in quick mode (`--quick` or PERFSITE_QUICK, a preview): "
            "warm-up and measurement were shrunk, so the figures are rough") in text


def test_thresholds_from_spec_and_command_line(tmp_path):
    base, cand = sides(tmp_path, Side(), Side(latency={1: 1.03, 4: 1.0}))
    # 3 % slower, inside the 5 % threshold: not a regression.
    text, code_ = diff_command(base, cand, fail_on="regression")
    assert code_ == 0 and "no significant change" in text.splitlines()[0]
    # Beyond a 1 % threshold, but two separate runs can drift by that much: the interval cannot decide.
    text, code_ = diff_command(base, cand, fail_on="regression", latency_ratio=1.01)
    assert code_ == 3 and "the interval cannot decide" in text
    # Measured in one paired run, the same figures decide.
    base, cand = sides(tmp_path / "paired", Side(pair_id="p1"), Side(latency={1: 1.03, 4: 1.0}, pair_id="p1"))
    assert diff_command(base, cand, fail_on="regression", latency_ratio=1.01)[1] == 2
    lenient = Side(latency={1: 1.3, 4: 1.0}, regression={"latency_ratio": 1.5, "throughput_ratio": 0.5})
    base2, cand2 = sides(tmp_path / "lenient", Side(), lenient)
    assert diff_command(base2, cand2, fail_on="regression")[1] == 0


def test_faster_candidate(tmp_path):
    base, cand = sides(tmp_path, Side(), Side(latency={1: 0.7, 4: 0.7}, layer_factor={"/layer1/conv/Conv": 0.3}))
    text, code_ = diff_command(base, cand, fail_on="regression")
    assert code_ == 0 and text.startswith("**perfsite diff: faster**")
    assert "### Top improvements" in text and "faster: `/layer1/conv/Conv`" in text


def test_environment_mismatch_is_not_comparable_unless_allowed(tmp_path):
    base, cand = sides(tmp_path, Side(), Side(latency={1: 1.3, 4: 1.0}, env=OTHER_ENV))
    text, code_ = diff_command(base, cand, fail_on="regression")
    assert code_ == 3 and text.startswith("**perfsite diff: not comparable**: the baseline and the candidate")
    assert "- onnxruntime: `1.31.1` → `1.30.0`" in text
    text, code_ = diff_command(base, cand, fail_on="regression", allow_env_mismatch=True)
    assert code_ == 2 and "Compared anyway (--allow-env-mismatch)" in text


def test_starved_processes_are_left_out_or_make_it_not_comparable(tmp_path):
    base, cand = sides(tmp_path, Side(), Side(starved=2, seed=1))
    text, code_ = diff_command(base, cand, fail_on="regression")
    assert code_ == 0 and "2 of 5 measurement processes of the candidate were starved" in text
    base, cand = sides(tmp_path / "worse", Side(), Side(starved=4, seed=1))
    text, code_ = diff_command(base, cand, fail_on="regression")
    assert code_ == 3 and "could not be judged" in text.splitlines()[0]
    assert "only 1 of 5 measurement processes of the candidate got the CPU" in text


def test_drift_between_separate_runs_is_never_called_a_change(tmp_path):
    # 4 % slower in a second run, processes agreeing: within the drift two time windows show on a shared
    # machine (issue 12: A/A pairs differed by ~5 %), so separately measured it is not called a regression.
    drifted = Side(latency={1: 1.04, 4: 1.04}, seed=1)
    base, cand = sides(tmp_path, Side(), drifted)
    text, code_ = diff_command(base, cand, fail_on="regression", latency_ratio=1.03)
    assert code_ == 3 and "could not be judged" in text.splitlines()[0]
    assert "its 95 % interval still holds no change: the interval cannot decide" in text
    # The same change measured paired (same rounds) is a change.
    base, cand = sides(tmp_path / "paired", Side(pair_id="p1"), Side(latency={1: 1.04, 4: 1.04}, seed=1,
                                                                        pair_id="p1"))
    text, code_ = diff_command(base, cand, fail_on="regression", latency_ratio=1.03)
    assert code_ == 2 and text.startswith("**perfsite diff: slower**")
    # A large change is a change, paired or not.
    loud = Side(latency={1: 1.5, 4: 1.5}, process_factors=(0.9, 1.0, 1.1, 1.125, 1.0), seed=1)
    base, cand = sides(tmp_path / "loud", Side(), loud)
    assert diff_command(base, cand, fail_on="regression")[1] == 2


def test_a_pair_measured_until_its_interval_settled_is_judged_by_the_confidence_sequence_it_stopped_on(tmp_path):
    """The same five rounds, 6 % slower with rounds that disagree by a few percent: a paired run stored before
    confidence sequences (no ci_sequential) keeps its fixed-sample 95 % t interval (+2.9 % to +10.4 % at b1:
    slower); a paired run that stopped early on its sequence is judged by it at 99.5 % per figure (the interval
    cannot decide); one that ran to its budget, at that last look, by Student's t at 98 % per figure (slower:
    the last look spends 4 % of the 5 %). The summary says which rule judged it."""
    rounds = {"base": (0.99, 1.0, 1.01, 1.0, 0.995), "cand": (1.0, 1.03, 0.97, 1.02, 0.99)}
    early = ("each figure's interval is a 99.5% confidence sequence, valid at whichever round measuring stopped",
             "the latency estimate lies beyond the threshold but its 99.5% confidence sequence still holds no "
             "change")
    last = ("ran to its budget: it is judged at that last look, each figure by a 98% Student's t interval",)
    for sequential, at_budget, verdict, said in ((None, False, "slower", ()), (True, False, "not comparable", early),
                                                  (True, True, "slower", last)):
        base, cand = sides(tmp_path / f"{sequential}-{at_budget}",
                           Side(pair_id="p1", process_factors=rounds["base"], sequential=sequential,
                                at_budget=at_budget),
                           Side(latency={1: 1.06, 4: 1.06}, pair_id="p1", process_factors=rounds["cand"], seed=1,
                                sequential=sequential, at_budget=at_budget))
        text, _ = diff_command(base, cand)
        assert text.startswith(f"**perfsite diff: {verdict}**"), text
        assert all(line in text for line in said), text
        assert not any(line in text for line in early + last if line not in said), text


def test_nothing_in_common_is_a_user_error_not_exit_3(tmp_path):
    """Exit 3 means an interval that cannot decide or machines that differ; two folders without one shared
    configuration are the wrong folders (or a renamed version): one paragraph naming both sides, exit 1."""
    base, cand = sides(tmp_path, Side(), Side(version="int8"))
    with pytest.raises(PerfsiteError) as err:
        diff_command(base, cand)
    message = " ".join(str(err.value).split())
    assert "share no version and configuration, so there is nothing to compare." in message
    assert "Only in the baseline: cnn · fp32 · b1 t1 c1, cnn · fp32 · b4 t1 c1." in message
    assert "Only in the candidate: cnn · int8 · b1 t1 c1" in message


def test_the_candidates_newest_trial_is_compared(tmp_path):
    # The candidate folder also holds an older trial of the same configuration on the baseline's environment.
    base = write_side(tmp_path / "baseline", Side())
    cand = tmp_path / "candidate"
    write_side(cand, Side(latency={1: 3.0, 4: 3.0}, finished="2026-01-04T09:00:00Z"))
    write_side(cand, Side(latency={1: 1.3, 4: 1.0}, added=("/layer4/conv/Conv",), finished="2026-01-05T11:00:00Z"))
    text, code_ = diff_command(str(base), str(cand), fail_on="regression")
    assert code_ == 2 and "+30.0%" in text and "environments differ" not in text
    # Newer still, on the same machine with another onnxruntime (a store in git after an upgrade): compared,
    # not passed over for the shared environment's older trial, which compared it with itself and said "no
    # change" while the new software measured 5 times slower (a hostile tour, 2026-12-07).
    write_side(cand, Side(latency={1: 5.0, 4: 5.0}, env=OTHER_ENV, finished="2026-01-06T11:00:00Z"))
    text, code_ = diff_command(str(base), str(cand), fail_on="regression")
    assert code_ == 3 and text.startswith("**perfsite diff: not comparable**: the baseline and the candidate were "
                                          "measured on different environments")
    assert "- onnxruntime: `1.31.1` → `1.30.0`" in text and "+400%" in text


def test_hostile_node_names_stay_inside_code_spans(tmp_path):
    slower_layer1 = Side(node_payload=True, latency={1: 1.3, 4: 1.0}, layer_factor={"/layer1/conv/Conv": 2.0})
    base, cand = sides(tmp_path, Side(node_payload=True), slower_layer1)
    text, _ = diff_command(base, cand)
    assert "slower: `/layer1/conv/Conv<script>alert(1)</script>\\|'x'`" in text
    outside_code = re.sub(r"`[^`]*`", "", text)
    assert "<" not in outside_code and "`" not in outside_code
    assert code(PAYLOAD) == "`<script>alert(1)</script>\\|'x'`"


def _rename_version(root: Path, version: str) -> None:
    """The trials of the side at `root` under another version name, as a results file edited or written by
    another tool (or a pull request's commit, for `diff git:REF`) may hold it: the spec's slug rule is not theirs."""
    for file in (root / EXPERIMENT / "trials").glob("*.parquet"):
        table = pq.read_table(file)
        column = table.schema.get_field_index("version")
        table = table.set_column(column, "version", pa.array([version] * len(table)))
        pq.write_table(table.replace_schema_metadata(pq.read_schema(file).metadata), file)


def test_hostile_version_names_are_text_in_the_summary(tmp_path):
    """A version name from a results file went into the summary as Markdown: `[click me](https://…)` was a live
    link in the pull-request comment (table row and "Top regressions" line), `*bold*` emphasis and a backtick a
    code span; a tag was opened in the regressions line. Every form is now escaped, and plain names stay plain."""
    import markdown

    hostile = "[click me](https://evil.example/x) *bold* <b>x</b> `tick` _u_"
    base, cand = sides(tmp_path, Side(), Side(latency={1: 1.3, 4: 1.0}))
    for side in (base, cand):
        _rename_version(Path(side), hostile)
    text, code_ = diff_command(base, cand, site_url="https://preview.example/pr-1")
    assert code_ == 0 and "1. cnn · \\[click me\\](https://evil.example/x) \\*bold\\* &lt;b&gt;x&lt;/b&gt; " in text
    html = markdown.markdown(text, extensions=["tables"])
    assert "evil.example" in html and 'href="https://evil.example' not in html, html
    assert "<b>x" not in html and "<em>bold" not in html and "<em>u" not in html and "<code>tick" not in html
    assert "[click me](https://evil.example/x) *bold* &lt;b&gt;x&lt;/b&gt; `tick` _u_ · b1 t1 c1" in html, html
    plain, _ = diff_command(*sides(tmp_path / "plain", Side(version="int8_static"), Side(version="int8_static")))
    assert "| cnn · int8_static · b1 t1 c1 |" in plain  # an underscore inside a word is no emphasis: kept


def test_user_errors(tmp_path):
    base = str(write_side(tmp_path / "b", Side()))
    with pytest.raises(PerfsiteError, match="--fail-on 'always' is not known"):
        diff_command(base, base, fail_on="always")
    with pytest.raises(PerfsiteError, match="--latency-ratio 0.9 must be a finite number, 1 or more"):
        diff_command(base, base, latency_ratio=0.9)
    for endless in (float("inf"), float("nan")):  # inf: nothing could ever be a regression
        with pytest.raises(PerfsiteError, match=f"--latency-ratio {endless} must be a finite number"):
            diff_command(base, base, latency_ratio=endless)
    with pytest.raises(PerfsiteError, match="--throughput-ratio 1.2 must be above 0"):
        diff_command(base, base, throughput_ratio=1.2)
    with pytest.raises(PerfsiteError, match="does not exist"):
        diff_command(str(tmp_path / "missing"), base)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PerfsiteError, match="holds no finished trial"):
        diff_command(str(tmp_path / "empty"), base)
    # `perfsite diff "$BASE" results` with the variable unset read the current folder (" holds no finished trial
    # (looked in .)").
    with pytest.raises(PerfsiteError, match=re.escape("A side of the diff is empty (''): it names no results.")):
        diff_command("", base)


def test_a_trial_without_its_latencies_file_is_left_out_not_a_traceback(tmp_path):
    """A partial commit (latencies/ ignored as the largest table) made the bootstrap raise ValueError."""
    base, cand = sides(tmp_path, Side(), Side())
    lost = sorted((Path(cand) / EXPERIMENT / "latencies").glob("*.parquet"))[0]
    lost.unlink()
    text, code_ = diff_command(base, cand)
    assert code_ == 0 and "Only in the baseline (not compared): cnn · fp32 · b" in text
    # An empty latencies file (0 requests) is no better: the bootstrap raised ValueError on it.
    pq.write_table(pq.read_table(sorted(lost.parent.glob("*.parquet"))[0]).slice(0, 0), lost)
    text, code_ = diff_command(base, cand)
    assert code_ == 0 and "Only in the baseline (not compared): cnn · fp32 · b" in text


def test_nan_request_latencies_are_a_damaged_file_not_no_change(tmp_path):
    """A NaN in latencies/ gave "no significant change" and exit 0 (--fail-on regression passed)."""
    base, cand = sides(tmp_path, Side(), Side())
    damaged = sorted((Path(cand) / EXPERIMENT / "latencies").glob("*.parquet"))[0]
    table = pq.read_table(damaged)
    index = table.column_names.index("latency_ms")
    table = table.set_column(index, "latency_ms", pa.array(np.full(table.num_rows, np.nan)))
    pq.write_table(table, damaged)
    with pytest.raises(PerfsiteError) as err:
        diff_command(base, cand)
    message = " ".join(str(err.value).split())
    assert f"The results file {damaged} holds {table.num_rows:,} request latencies that are not a finite" in message


def test_measure_globs_must_be_relative_to_the_checkout(tmp_path):
    """Path.glob refused an absolute or an empty pattern with a traceback."""
    from generator.runner.paired import spec_files

    for pattern in ("", str(tmp_path / "experiments" / "*.yaml")):
        with pytest.raises(PerfsiteError, match=f"--measure '{re.escape(pattern)}' is not a glob relative to"):
            spec_files(tmp_path, [pattern])


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository whose first commit holds the baseline results and second a regression."""
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "ci@example.org")
    git(tmp_path, "config", "user.name", "CI")
    (tmp_path / "README").write_text("project\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "no results yet")
    write_side(tmp_path / "results", Side())
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "baseline results")
    return tmp_path


def test_git_sources_read_committed_results(repo):
    base = git(repo, "rev-parse", "HEAD")
    write_side(repo / "results", REGRESSION)  # the working tree now holds a newer trial per configuration
    text, code_ = diff_command(f"git:{base}", str(repo / "results"), results=repo / "results", fail_on="regression")
    assert code_ == 2 and f"Baseline: `git:{base} ({base[:12]})`" in text
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "slower")
    text, code_ = diff_command("git:HEAD~1", "git:HEAD", results=repo / "results", fail_on="regression")
    assert code_ == 2 and "added: `/layer4/conv/Conv`" in text
    assert git(repo, "status", "--porcelain") == ""  # nothing written into the working tree


def test_git_source_errors(repo):
    with pytest.raises(PerfsiteError, match="git:no-such-branch names no commit"):
        diff_command("git:no-such-branch", "git:HEAD", results=repo / "results")
    with pytest.raises(PerfsiteError, match=r"The results folder `results` does not exist at git:HEAD~1"):
        diff_command("git:HEAD~1", "git:HEAD", results=repo / "results")
    outside = repo.parent / f"{repo.name}-not-git"
    outside.mkdir()
    with pytest.raises(PerfsiteError, match="is not inside a git repository"):
        diff_command("git:HEAD", "git:HEAD", results=outside / "results")


def test_a_committed_link_out_of_the_results_is_a_source_error(repo):
    """`results -> /srv/perf` in a past commit: tarfile's data filter refused it with a traceback, and
    `--trend` failed instead of skipping that commit."""
    git(repo, "rm", "-q", "-r", "results")
    (repo / "results").symlink_to("/srv/perf")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "results moved out")
    (repo / "results").unlink()
    write_side(repo / "results", Side())
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "results back")
    with pytest.raises(PerfsiteError, match=r"`results` at git:HEAD~1 \(\w+\) in .* cannot be read as results"):
        diff_command("git:HEAD~1", "git:HEAD", results=repo / "results")


def test_results_a_gitattributes_marks_export_ignore_are_read_from_git(repo):
    """`results/** export-ignore` keeps results out of `git archive` tarballs: read through `git archive`, the
    committed results were an empty archive and a tarfile.ReadError."""
    (repo / ".gitattributes").write_text("results/** export-ignore\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "no results in release tarballs")
    base = git(repo, "rev-parse", "HEAD")
    write_side(repo / "results", REGRESSION)
    text, code_ = diff_command("git:HEAD", str(repo / "results"), results=repo / "results", fail_on="regression")
    assert code_ == 2 and f"Baseline: `git:HEAD ({base[:12]})`" in text and "slower" in text


def test_cli_exit_codes(repo):
    out = perfsite("diff", "git:HEAD", "results", "--fail-on", "regression", cwd=repo)
    assert out.returncode == 0 and out.stdout.startswith("**perfsite diff: no significant change**")
    out = perfsite("diff", "git:nope", "results", cwd=repo)
    assert out.returncode == 1 and "git:nope names no commit" in out.stderr and "Traceback" not in out.stderr


def test_signed_percentages():
    assert [signed_pct(r) for r in (1.924, 0.519, 1.0, 1.0004, 12.0)] == ["+92.4%", "-48.1%", "+0%", "+0.0400%",
                                                                         "+1,100%"]
    # A capped interval (a layer's time spread hundreds of times its mean) names its ends, not 300 digits.
    unbounded = RatioCI(point=1.3, low=1.3 * math.exp(-700), high=1.3 * math.exp(700), significant=False)
    assert change_text(unbounded) == "+30.0% (-99% or lower to ×100 or higher)"
    assert change_text(RatioCI(point=1.2, low=0.9, high=1.6, significant=False)) == "+20.0% (-10.0% to +60.0%)"


def test_trend_follows_each_figure_over_the_commits(repo):
    from generator.site.trend_page import collect_trend, trend_page

    write_side(repo / "results", Side(latency={1: 1.05, 4: 1.0}, seed=1, finished="2026-01-06T10:00:00Z"))
    commit_all = ("add", "-A")
    git(repo, *commit_all)
    git(repo, "commit", "-q", "-m", "drift <b>1</b>")
    write_side(repo / "results", Side(latency={1: 1.1, 4: 1.0}, seed=2, finished="2026-01-07T10:00:00Z"))
    git(repo, *commit_all)
    git(repo, "commit", "-q", "-m", "drift 2")
    trend = collect_trend(repo / "results", 10)
    commits, points, skipped = trend.commits, trend.points, trend.skipped
    assert skipped == []
    # The first commit held no results folder: skipped; the other three in order, oldest first.
    assert [c.subject for c in commits] == ["baseline results", "drift <b>1</b>", "drift 2"]
    b1 = [p.latency_ms for p in points if p.config_label == "b1 t1 c1"]
    assert len(b1) == 3 and b1[0] < b1[1] < b1[2]
    assert len(collect_trend(repo / "results", 2).commits) == 2
    page = trend_page(commits, points, 10)
    assert page.path == "reports/_trend/index.md"
    assert "| cnn | fp32 · b1 t1 c1 |" in page.markdown and "| &#43;10.0% |" in page.markdown
    assert "<b>" not in page.markdown and "drift &#60;b&#62;1&#60;/b&#62;" in page.markdown
    assert 'data-chart="chart-trend-latency-1"' in page.markdown
    assert "Quick mode" not in page.markdown
    import dataclasses

    quick = trend_page(commits, [dataclasses.replace(p, quick=p.position == 2) for p in points], 10).markdown
    assert '!!! warning "Quick mode"\n    2 of the 6 points below were measured in quick mode' in quick


def test_a_shallow_clone_says_its_history_is_cut_on_the_trend_and_in_diff(repo, tmp_path):
    """In a `--depth 1` clone (actions/checkout's default) the trend showed 1 of 3 measured commits and never
    said the history was cut; `diff git:HEAD~1` there said nothing of the shallow clone either."""
    from generator.site.trend_page import collect_trend, trend_page

    write_side(repo / "results", Side(latency={1: 1.05, 4: 1.0}, seed=1, finished="2026-01-06T10:00:00Z"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "drift")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    trend = collect_trend(clone / "results", 10)
    assert trend.shallow and len(trend.commits) == 1
    page = " ".join(trend_page(trend.commits, trend.points, 10, trend.skipped, trend.shallow).markdown.split())
    assert '!!! warning "History cut by a shallow clone"' in page and "`git fetch --unshallow`" in page
    assert not collect_trend(repo / "results", 10).shallow
    with pytest.raises(PerfsiteError) as raised:
        diff_command("git:HEAD~1", "git:HEAD", results=clone / "results")
    assert "git:HEAD~1 names no commit" in str(raised.value) and "This clone is shallow" in str(raised.value)


def test_a_damaged_file_in_an_old_commit_is_skipped_by_the_trend_not_fatal(repo):
    """A corrupt Parquet file committed once used to fail every later `build --trend`."""
    from generator.site.trend_page import collect_trend, trend_page

    trial = sorted((repo / "results" / EXPERIMENT / "trials").glob("*.parquet"))[0]
    good = trial.read_bytes()
    trial.write_bytes(good[:100])
    git(repo, "commit", "-q", "-am", "a damaged copy")
    trial.write_bytes(good)
    git(repo, "commit", "-q", "-am", "repaired")
    trend = collect_trend(repo / "results", 10)
    commits, points, skipped = trend.commits, trend.points, trend.skipped
    assert [c.subject for c in commits] == ["baseline results", "repaired"] and points
    assert [(c.subject, f"results/{EXPERIMENT}/trials/{trial.name} is not readable Parquet" in why)
            for c, why in skipped] == [("a damaged copy", True)]
    page = trend_page(commits, points, 10, skipped).markdown
    assert '!!! warning "1 commit skipped: results unreadable"' in page and "a damaged copy" in page


def test_a_damaged_file_in_a_git_revision_is_named_with_the_revision(repo):
    """The working-folder advice ("delete the trial, run again") cannot apply to a commit's history."""
    from generator.errors import ResultsError

    trial = sorted((repo / "results" / EXPERIMENT / "trials").glob("*.parquet"))[0]
    good = trial.read_bytes()
    trial.write_bytes(good[:100])
    git(repo, "commit", "-q", "-am", "a damaged copy")
    trial.write_bytes(good)
    with pytest.raises(ResultsError) as raised:
        diff_command("git:HEAD", str(repo / "results"), results=repo / "results")
    message = " ".join(str(raised.value).split())
    assert message.startswith("The results committed at git:HEAD (") and "is not readable Parquet" in message
    assert "compare with another revision, or commit repaired results" in message


def test_trend_outside_git_is_a_user_error(tmp_path):
    from generator.site.trend_page import trend_pages

    write_side(tmp_path / "results", Side())
    with pytest.raises(PerfsiteError, match="--trend follows the results folder .* not inside a git repository"):
        trend_pages(tmp_path / "results", 5)


def test_trend_in_a_repository_without_a_commit_is_an_empty_history(tmp_path):
    """`perfsite build --trend 3` in a repository with no commit yet failed with git's own words (``git log
    --first-parent … failed …: fatal: your current branch 'main' does not have any commits yet``), where a history
    without a commit that changed the results gives the trend page's "No history yet"."""
    from generator.site.trend_page import Trend, collect_trend, trend_page

    git(tmp_path, "init", "-q")
    write_side(tmp_path / "results", Side())
    assert collect_trend(tmp_path / "results", 3) == Trend([], [], [], False)
    assert '!!! info "No history yet"' in trend_page([], [], 3).markdown


def test_changes_page_shows_both_sides_and_environment_differences(tmp_path):
    from generator.results.store import load_experiment
    from generator.site.changes_page import changes_pages

    write_side(tmp_path / "b", Side(node_payload=True))
    write_side(tmp_path / "c", Side(**{**REGRESSION.__dict__, "env": OTHER_ENV, "node_payload": True}))
    (page,) = changes_pages([load_experiment(tmp_path / "b" / "cnn")], [load_experiment(tmp_path / "c" / "cnn")])
    text = page.markdown
    assert page.path == "reports/_changes/index.md"
    assert '!!! warning "Not comparable"' in text and "| onnxruntime | 1.31.1 | 1.30.0 |" in text
    for chart in ("chart-changes-latency", "chart-changes-throughput", "chart-changes-layers-1"):
        assert f'data-chart="{chart}"' in text
    assert "| /layer4/conv/Conv | Conv | — |" in text and "| added |" in text
    assert "<script>alert" not in text.split("<script type=")[0]  # before the first chart: escaped text only
    assert "/layer1/conv/Conv&#60;script&#62;alert&#40;1&#41;" in text


def test_control_characters_in_layer_names_never_reach_the_terminal(tmp_path):
    """A layer named with an escape sequence (clear screen, ring the bell) is printed as visible escapes, by the
    real command line, and written so to the Markdown summary."""
    sneaky = "/layer4/conv/Conv\x1b[2J\x07"
    base, cand = sides(tmp_path, Side(), Side(latency={1: 1.3, 4: 1.3}, added=(sneaky,)))
    done = perfsite("diff", base, cand, "--markdown", str(tmp_path / "s.md"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "/layer4/conv/Conv\\x1b[2J\\x07" in done.stdout
    assert "\x1b" not in (tmp_path / "s.md").read_text()


def test_notes_that_say_the_same_thing_are_one_line():
    """A changes page once ended with ~70 near-identical notes: identical ones are listed once with their
    configurations, ones that differ only in figures once with each configuration's figures."""
    from types import SimpleNamespace

    from generator.diff.report import grouped_notes

    quick = "one side was measured in quick mode, the other not"
    trials = [SimpleNamespace(name=f"e · fp32 · b{b}", notes=(quick, f"baseline trial is noisy (process medians "
                                                                      f"spread {b}2 %)")) for b in (1, 4, 8)]
    trials.append(SimpleNamespace(name="e · int8 · b1", notes=("a single remark",)))
    lines = grouped_notes(trials)
    assert lines == [
        "one side was measured in quick mode, the other not: 3 configurations (e · fp32 · b1, e · fp32 · b4, "
        "e · fp32 · b8)",
        "baseline trial is noisy (process medians spread N %) — 3 configurations, N: e · fp32 · b1 (12), "
        "e · fp32 · b4 (42), e · fp32 · b8 (82)",
        "e · int8 · b1: a single remark",
    ]


def test_a_measure_glob_that_leaves_the_checkout_is_refused(tmp_path):
    """`--measure '../proj/experiments/*.yaml'` named the same files from both checkouts: both sides measured one
    spec and one model, and the diff passed whatever the candidate changed."""
    for side in ("base", "proj"):
        (tmp_path / side / "experiments").mkdir(parents=True)
    (tmp_path / "proj" / "experiments" / "tiny.yaml").write_text("name: tiny\n")
    result = perfsite("diff", "base", "proj", "--measure", "../proj/experiments/*.yaml", cwd=tmp_path)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message.startswith("error: --measure '../proj/experiments/*.yaml' leaves the checkout (`..`): "
                              "BASELINE and CANDIDATE would measure the same spec files"), message


def test_checkouts_whose_experiments_link_to_one_folder_are_refused(tmp_path):
    """`experiments/` a link to one folder outside both checkouts: both sides measured the same spec and
    model, and the diff gave a verdict about nothing the candidate changed."""
    shared = tmp_path / "shared" / "experiments"
    shared.mkdir(parents=True)
    matmul_model(shared / "tiny.onnx")
    (shared / "tiny.yaml").write_text("name: tiny\nmodels:\n  fp32: {path: tiny.onnx}\ninputs:\n  x: {shape: [1, 4]}\n")
    for side in ("base", "proj"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "experiments").symlink_to(shared)
    result = perfsite("diff", "base", "proj", "--measure", "experiments/*.yaml", cwd=tmp_path)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message.startswith(f"error: --measure experiments/*.yaml: the baseline's spec {tmp_path}/base/experiments/"
                              f"tiny.yaml and the candidate's {tmp_path}/proj/experiments/tiny.yaml are one file, "
                              f"{shared / 'tiny.yaml'} (a link out of both checkouts)"), message
    assert not (tmp_path / "proj" / ".perfsite").exists()  # nothing measured


def test_an_undecided_paired_diff_is_not_told_to_measure_paired(tmp_path):
    """A paired run whose interval could not decide was told to `measure paired (perfsite diff --measure)`, what
    it had just done."""
    noisy = (0.6, 1.0, 1.5, 0.8, 1.3)
    base, cand = sides(tmp_path, Side(pair_id="p1", process_factors=noisy),
                       Side(latency={1: 1.04, 4: 1.04}, seed=1, pair_id="p1", process_factors=noisy[::-1]))
    result = perfsite("diff", str(base), str(cand), "--latency-ratio", "1.03")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout.startswith("**perfsite diff: not comparable**: 2 of 2 configurations could not be judged")
    assert "interval cannot decide; they were measured paired already: measure again with a larger " \
           "measure.budget_s or more measure.repeats, or on a quieter machine: 2 configurations" in result.stdout
    assert "None got slower. They were measured paired already" in result.stdout
    assert "--measure" not in result.stdout


def test_site_url_is_a_web_address_and_cannot_break_out_of_its_links(tmp_path):
    """`--site-url` went into the summary's Markdown links as given: a `javascript:` URL was linked, and one put
    together from a branch name could close the link and open a tag in the pull-request comment."""
    base, cand = sides(tmp_path, Side(), Side(seed=1))
    result = perfsite("diff", str(base), str(cand), "--site-url", "javascript:alert(1)")
    assert result.returncode == 1 and "Traceback" not in result.stderr and not result.stdout
    assert " ".join(result.stderr.split()).startswith(
        "error: --site-url 'javascript:alert(1)' is not a web address. Allowed: an http:// or https:// URL")
    result = perfsite("diff", str(base), str(cand), "--site-url", 'https://o.github.io/pr/a)b"<img>[x]')
    assert result.returncode == 0
    assert "[changes](https://o.github.io/pr/a%29b%22%3Cimg%3E%5Bx%5D/reports/_changes/)" in result.stdout
    assert "<img>" not in result.stdout


def test_a_run_whose_processes_disagreed_is_not_called_faster_than_a_steadier_one():
    """A real A/A recording from make test's quiet part (tests/data/drift-aa, the same tiny CNN measured twice a
    few seconds apart while the host slowed): the first run's process medians spread 19 % and its p90 came out
    14 % above the second's. With the 3 % drift floor alone that pair read "faster"; each run's drift is now at
    least half its own spread, so the interval holds no change and cannot decide."""
    from generator.results.intervals import BETWEEN_RUN_SD, run_drift

    data = Path(__file__).parent / "data" / "drift-aa"
    text, code = diff_command(str(data / "run-0"), str(data / "run-2"), fail_on="regression")
    assert code == 3 and text.startswith("**perfsite diff: not comparable**"), text
    assert "None got slower" in text and "faster" not in text.splitlines()[0]
    assert run_drift(BETWEEN_RUN_SD, 0.19) == pytest.approx(0.095) and run_drift(BETWEEN_RUN_SD, 0.04) == 0.05
    assert run_drift(BETWEEN_RUN_SD, None) == run_drift(BETWEEN_RUN_SD, float("nan")) == 0.05


def test_a_whole_run_slower_by_the_machine_is_not_called_slower():
    """A real A/A recording from the suite's unpaired A/A test beside a spinning neighbour (tests/data/
    drift-aa-spin, the same tiny CNN measured in two windows): the second run's processes agreed with each other
    (process-median spread 4 %) and its p90 came out 10.4 % above the first's, the machine itself slower in that
    window. The 3 % drift floor called it "slower" (interval +0.2 % to +21.6 %); at 5 % per run
    (BETWEEN_RUN_SD, measured over five such runs) the interval holds no change and cannot decide."""
    data = Path(__file__).parent / "data" / "drift-aa-spin"
    text, code = diff_command(str(data / "run-0"), str(data / "run-4"), fail_on="regression")
    assert code == 3 and text.startswith("**perfsite diff: not comparable**"), text
    assert "None got slower" in text and "| slower |" not in text


def test_a_side_whose_every_request_was_preempted_is_not_comparable_not_a_verdict(tmp_path):
    """A candidate 1.5 times slower whose every request a neighbour preempted: no process kept enough clean
    requests, and its figures fall back to every request for the pages. That fallback decided the verdict
    ("slower", exit 2, and "no change" in a hostile user's run on a busy machine); a side needs two processes
    with enough clean requests (docs/ci.md), so it is not comparable, and the note says why."""
    import shutil

    import pandas as pd

    data = Path(__file__).parent / "data" / "drift-aa" / "run-0"
    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(data, base)
    shutil.copytree(data, cand)
    def edit(table: Path, change) -> None:  # keeps the file's schema metadata (perfsite's version)
        (path,) = table.glob("*.parquet")
        frame = pd.read_parquet(path)
        change(frame)
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(
            pq.read_schema(path).metadata), path)

    def slower_and_preempted(lat: pd.DataFrame) -> None:
        lat["latency_ms"] *= 1.5
        lat["run_delay_ms"] = lat["latency_ms"]

    edit(base / "tiny" / "latencies", lambda lat: lat.__setitem__("run_delay_ms", 0.0))
    edit(cand / "tiny" / "latencies", slower_and_preempted)
    # Another measurement, not the baseline's own (the diff says when both sides are one measurement).
    edit(cand / "tiny" / "trials", lambda t: t.__setitem__("finished_at", "2026-11-25T14:00:00+00:00"))
    text, code = diff_command(str(base), str(cand), fail_on="regression")
    assert code == 3 and text.startswith("**perfsite diff: not comparable**"), text
    processes = len(pd.read_parquet(next((cand / "tiny" / "processes").glob("*.parquet"))))
    assert (f"only 0 of {processes} measurement processes of the candidate kept enough clean (not preempted) "
            "requests") in " ".join(text.split()), text


def test_one_noisy_store_against_itself_says_first_that_both_sides_are_one_measurement(tmp_path):
    """`perfsite diff results results` on a busy machine's results printed "not comparable" with intervals such
    as "+0 % (-90.1 % to +915 %)" and exit 3; that both sides were one measurement came in a note far below. The
    first line says it now; the exit status stays that of the verdict (docs/ci.md)."""
    import shutil

    import pandas as pd

    store = tmp_path / "results"
    shutil.copytree(Path(__file__).parent / "data" / "drift-aa" / "run-0", store)
    (path,) = (store / "tiny" / "latencies").glob("*.parquet")
    frame = pd.read_parquet(path)
    frame["run_delay_ms"] = frame["latency_ms"]  # every request preempted: not comparable
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(
        pq.read_schema(path).metadata), path)
    text, code = diff_command(str(store), str(store))
    first = text.splitlines()[0]
    assert code == 3 and first.startswith(
        "**perfsite diff: not comparable**: the baseline and the candidate are the same stored measurement (one "
        "trial, run and finish time, for every configuration): nothing was measured for the candidate, so this diff "
        "says nothing about it. Measure the candidate first (`perfsite run`), or compare with `perfsite diff "
        "--measure`. Each trial against itself: 1 of 1 configurations could not be judged"), first


def test_a_spec_in_one_checkout_only_is_measured_on_its_side_and_named(tmp_path):
    """`--measure` measured only the specs both checkouts hold: an experiment a pull request added was neither
    measured nor mentioned. It is measured on its side alone now, and the summary names it as such."""
    from support.cli import write_spec
    from support.models import matmul_model

    from generator.runner.paired import measure_paired

    spec = "name: {name}\nmodels:\n  fp32: {{path: models/tiny.onnx}}\ninputs:\n  x: {{shape: [batch, 4]}}\n" \
           "measure: {{repeats: 1, budget_s: 0.01}}\n"
    for side, names in (("base", ("tiny",)), ("head", ("tiny", "added"))):
        (tmp_path / side / "models").mkdir(parents=True)
        matmul_model(tmp_path / side / "models" / "tiny.onnx")
        for name in names:
            write_spec(tmp_path / side, spec.format(name=name), f"{name}.yaml")
    labels: list[str] = []

    class Said:
        def __init__(self, label: str) -> None:
            labels.append(label)

        def __getattr__(self, _name: str):
            return lambda *args, **kwargs: None

    run = measure_paired(tmp_path / "base", tmp_path / "head", ["*.yaml"], tmp_path / "store", quick=True,
                         progress=Said)
    assert labels == ["tiny (paired)", "added (candidate only)"]
    assert [s.experiment for s in run.one_sided] == ["added"] and len(run.one_sided[0].measured) == 1
    text, _ = diff_command(str(run.baseline_results), str(run.candidate_results))
    assert "Only in the candidate (not compared): added · fp32 · b1 t1 c1." in text
    # A one-sided spec whose input its model refuses is planned before the pairs: refused before anything is
    # measured, not after them.
    write_spec(tmp_path / "head", spec.format(name="broken").replace("[batch, 4]", "[batch, 5]"), "broken.yaml")
    with pytest.raises(PerfsiteError, match=r"broken\.yaml: inputs\.x: shape \[batch, 5\] has 5 on axis 1"):
        measure_paired(tmp_path / "base", tmp_path / "head", ["*.yaml"], tmp_path / "store2", quick=True)
    assert not (tmp_path / "store2").exists()
    (tmp_path / "head" / "broken.yaml").unlink()
    # Another comparison into the same store, whose baseline `tiny` measures another model: refused before
    # measuring, in the paired run's terms (it was a message about --results, which diff does not take).
    (tmp_path / "other" / "models").mkdir(parents=True)
    matmul_model(tmp_path / "other" / "models" / "tiny.onnx", before="Relu")
    write_spec(tmp_path / "other", spec.format(name="tiny") + "description: another\n", "tiny.yaml")
    with pytest.raises(PerfsiteError) as refused:
        measure_paired(tmp_path / "other", tmp_path / "head", ["*.yaml"], tmp_path / "store", quick=True)
    assert " ".join(str(refused.value).split()) == (
        f"The paired store {tmp_path / 'store'} holds, in {tmp_path / 'store' / 'baseline' / 'tiny'}, trials an "
        f"earlier paired run measured with the spec {tmp_path / 'base' / 'tiny.yaml'}, also named `tiny` but "
        f"measuring other models than {tmp_path / 'other' / 'tiny.yaml'}. Allowed: one experiment per name in a "
        f"store: give this comparison its own --store DIR, or delete {tmp_path / 'store' / 'baseline' / 'tiny'} "
        "(a paired store holds nothing but those runs' results).")


def test_the_same_stored_trial_on_both_sides_is_said_not_called_unchanged_in_silence(tmp_path):
    """`perfsite diff git:HEAD results` without a `perfsite run` before it compared each trial with itself and
    said "no significant change": true of the numbers, silent about the candidate nobody measured."""
    base, _ = sides(tmp_path, Side(), Side(seed=1))
    text, code_ = diff_command(base, base)
    assert code_ == 0 and text.startswith("**perfsite diff: no significant change**: the baseline and the candidate "
                                          "are the same stored measurement (one trial, run and finish time, for "
                                          "every configuration): nothing was measured for the candidate")
    assert ("- For every configuration, the baseline and the candidate are the same stored measurement (one trial, "
            "run and finish time): nothing was measured again for the candidate") in text
    assert "same stored" not in diff_command(*sides(tmp_path / "two", Side(), Side(seed=1)))[0]
    # Measured again under the same trial key (`perfsite run --force`): another measurement, no note.
    import shutil

    again = tmp_path / "again"
    shutil.copytree(base, again)
    for file in (again / EXPERIMENT / "trials").glob("*.parquet"):
        table = pq.read_table(file)
        column = table.schema.get_field_index("finished_at")
        pq.write_table(table.set_column(column, "finished_at", pa.array(["2026-01-05T12:00:00Z"] * len(table))),
                       file)
    assert "same stored" not in diff_command(base, str(again))[0]


def test_a_change_column_that_disagrees_with_the_figure_columns_is_explained(tmp_path):
    """A noisy trial's pooled p90 (the columns) and its processes' figures (the change the verdict judges) can
    point opposite ways: 0.00865 -> 0.00813 ms was shown as -21.4 %. The table says why, for those rows only."""
    base, cand = sides(tmp_path, Side(), Side(seed=1, process_factors=(0.6, 0.6, 0.6, 2.0, 2.0)))
    text, _ = diff_command(base, cand, latency_ratio=10.0, throughput_ratio=0.1)
    # What each column is, truly: the throughput columns were said to "pool every clean request" but are the
    # median over processes, beside a Change that is a ratio of geometric means.
    assert "The change is measured process by process, as the verdict judges it: the ratio of the geometric means " \
           "of each measurement process's figure (its latency percentile over its clean requests, its clean " \
           "throughput, its median TTFT and TPOT). The latency columns pool every clean request of a trial; the " \
           "throughput, TTFT and TPOT columns are the median of its processes' figures. The two disagree where a " \
           "trial's processes disagree, as for cnn · fp32 · b1 t1 c1, cnn · fp32 · b4 t1 c1." in text
    assert "process by process" not in diff_command(*sides(tmp_path / "calm", Side(), Side(seed=1)))[0]


@pytest.mark.parametrize(("options", "start"), [
    (["--quick"], "--quick would do nothing here: it shrinks the measurement --measure makes, and there is no "
                  "--measure."),
    (["--store", "s"], "--store would do nothing here: it names where --measure stores what it measures"),
    (["--results", "r"], "--results would do nothing here: it names the folder a git:REF side reads, and "),
])
def test_options_that_would_do_nothing_are_refused(tmp_path, options, start):
    """`diff A B --quick` compared the stored results as measured, its user believing in a quick measurement;
    `--store` and `--results` were ignored as silently."""
    base, cand = sides(tmp_path, Side(), Side(seed=1))
    result = perfsite("diff", base, cand, *options)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and not result.stdout and message.startswith(f"error: {start}"), message
    assert message.endswith("Allowed: --store and --quick with --measure, --results with a git:REF side; else "
                            "leave the option out.")


def test_an_interrupted_paired_run_says_once_what_running_it_again_does(tmp_path, monkeypatch, capsys):
    """Each side's summary said "run the same command again to measure the rest", twice, though a paired run
    measures every pair again. The run's summaries stand in for a Ctrl-C in the middle of a real one."""
    from generator.cli import diff as cli_diff
    from generator.runner import paired
    from generator.runner.sides import RunSummary

    def interrupted(*_args, **_kwargs):
        sides_ = tuple(RunSummary("tiny", tmp_path / side, [], 1.0, interrupted=True) for side in paired.SIDES)
        return paired.PairedRun(tmp_path / "baseline", tmp_path / "candidate", (sides_,))

    monkeypatch.setattr(paired, "measure_paired", interrupted)
    for side in ("base", "head"):
        (tmp_path / side).mkdir()
    with pytest.raises(KeyboardInterrupt):
        cli_diff.measure_sides(str(tmp_path / "base"), str(tmp_path / "head"), ["*.yaml"], None)
    said = capsys.readouterr()
    err = said.err
    assert "run the same command again to measure the rest" not in said.out + err
    assert "tiny: 0 measured" in said.out + err  # the summaries are still printed
    assert err.count("Interrupted: no diff was made. Running the same command again measures every pair again.") == 1


def test_the_exit_status_table_of_the_ci_page_is_the_codes():
    """docs/ci.md gave exit 3 for "nothing measured on both sides", which is a user error (exit 1, as
    test_nothing_in_common_is_a_user_error_not_exit_3 checks and docs/cli.md says)."""
    from generator.cli.diff import EXIT_NOT_COMPARABLE, EXIT_OK, EXIT_REGRESSION

    page = (Path(__file__).resolve().parents[1] / "docs" / "ci.md").read_text()
    table = page.split("### Exit status", 1)[1].split("\n\n", 2)[1]
    rows = dict(re.findall(r"^\| (\d+) \| (.*) \|$", table, flags=re.M))
    assert set(map(int, rows)) == {EXIT_OK, 1, EXIT_REGRESSION, EXIT_NOT_COMPARABLE}, rows
    assert "share no version and configuration" in rows["1"]
    assert "nothing measured" not in rows[str(EXIT_NOT_COMPARABLE)]


def test_a_p99_headline_under_460_requests_is_p95_under_one_label_everywhere(tmp_path):
    """A spec asking for p99 over trials of 60 requests: the experiment page, the profile page, `perfsite
    compare` and `perfsite diff` all show the stored p95 under "p95 (p99 needs 460 requests)", and diff does not
    compute the p99 the pages refuse."""
    from support.results import write_results

    from generator.numbers import num
    from generator.results.store import load_experiment
    from generator.site.pages import experiment_pages, experiment_view, profile_pages, template_env

    folder = write_results(tmp_path / "results", percentile="p99")
    view = experiment_view(load_experiment(folder), "e")
    t = next(t for t in view.trials if (t.version, t.config_label) == ("fp32", "b1 t1 c1"))
    value = num(t.latency_headline_ms)
    label = "p95 &#40;p99 needs 460 requests&#41;"  # as the pages' Markdown escapes it
    page = experiment_pages(template_env(), view)[0].markdown
    assert f"Latency {label} (ms) |" in page and f"Best latency {label} (ms)" in page
    assert f"| fp32 | b1 t1 c1 | {num(t.latency_mean_ms)} | {num(t.latency_p50_ms)} | {value} |" in page
    assert '"title": "Latency p95 (p99 needs 460 requests) (ms)"' in page.replace('":"', '": "')
    profile = next(p.markdown for p in profile_pages(template_env(), view) if "fp32" in p.path)
    profiled = next(t for t in view.trials if (t.version, t.config_label) == ("fp32", "b1 t2 c1"))  # by default
    assert f"| Latency {label} (ms), headline | {num(profiled.latency_headline_ms)} |" in profile
    assert "| Latency p99 (ms) | — |" in profile

    compare = perfsite("compare", "--a", "fp32", "--b", "int8", "--config", "batch=1,threads=1",
                       "--results", str(tmp_path / "results"), cwd=tmp_path)
    assert compare.returncode == 0, compare.stderr
    row = next(line for line in compare.stdout.splitlines() if line.startswith("Latency "))
    assert row.startswith(f"Latency p95 (p99 needs 460 requests)  {value} ms"), row

    diff = perfsite("diff", "results", "results", cwd=tmp_path)
    assert diff.returncode in (0, 3) and not diff.stderr, diff.stderr  # 3: one stored measurement, "not comparable"
    assert "latency p99 (ms)" not in diff.stdout
    line = next(x for x in diff.stdout.splitlines() if x.startswith("| cnn-int8 · fp32 · b1 t1 c1 |"))
    assert f"| latency p95 (p99 needs 460 requests) (ms) | {value} | {value} |" in line, line
