"""A store holding two machines (issue 35, items 1 to 3): every comparison is of a machine with itself.

The store (tests/support/machines.py, write_two_machine_results) is the recorded run of the example CNN on one
machine, and its INT8 trials on a second machine with another CPU count, three times as slow and measured later:
"the newest trial per version and configuration" took fp32 from the first machine and INT8 from the second, and
the compare page said INT8 was about 3× slower. Nothing is measured here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.cli import perfsite
from support.compare import EXPERIMENT, write_compare_results
from support.diff import git
from support.machines import SLOWER_FACTOR, write_two_machine_results

from generator.analysis.compare import compare_versions
from generator.analysis.per_machine import per_environment
from generator.cli.diff import diff_command
from generator.results.store import load_experiment
from generator.site import pages as site_pages


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return write_two_machine_results(tmp_path_factory.mktemp("two") / "results")


@pytest.fixture(scope="module")
def one_machine(tmp_path_factory) -> Path:
    return write_compare_results(tmp_path_factory.mktemp("one") / "results")


@pytest.fixture(scope="module")
def rendered(store):
    """Every page of the two-machine store, by path (the chooser included)."""
    pages, views = site_pages.render_pages([load_experiment(store)])
    return {p.path: p for p in pages}, views


def _env_ids(folder: Path) -> list[str]:
    return sorted({str(e) for e in load_experiment(folder).trials["env_id"]})


def test_the_store_splits_into_two_machines_each_with_only_its_own_trials(store):
    results = load_experiment(store)
    parts = per_environment(results)
    assert [len(p.results.trials) for p in parts] != [len(results.trials)] and len(parts) == 2
    for part in parts:
        keys = set(part.results.trials["trial_key"])
        assert set(part.results.trials["env_id"]) == {part.machine.env_id}
        for table in ("processes", "latencies", "nodes", "layers", "timeline"):
            assert set(getattr(part.results, table)["trial_key"]) <= keys
    assert sum(len(p.results.trials) for p in parts) == len(results.trials)


def test_compare_pages_give_each_machine_its_own_ratio(store, one_machine, rendered):
    """Machine A's fp32-vs-int8 ratio is the one of A alone; the slow machine, which has no fp32, says so
    instead of comparing another machine's fp32 with its INT8."""
    pages, views = rendered
    alone = compare_versions(load_experiment(one_machine), "fp32", "int8-static")
    index = pages[f"reports/{EXPERIMENT}/index.md"].markdown
    assert "measured on 2 machines" in " ".join(index.split())
    slow = next(v for v in views if v.environments[0].logical_cores == 8)
    fast = next(v for v in views if v is not slow)
    assert fast.slug.startswith(f"{EXPERIMENT}/") and slow.slug.startswith(f"{EXPERIMENT}/")
    fast_compare = pages[f"reports/{fast.slug}/compare-fp32-vs-int8-static.md"].markdown
    ratio = f"{alone.latency_ratio.point:.2f}"
    assert ratio in fast_compare
    slow_compare = " ".join(pages[f"reports/{slow.slug}/compare-fp32-vs-int8-static.md"].markdown.split())
    assert "Version A &#96;fp32&#96; has no successful trial" in slow_compare
    assert f"on this machine, {slow.machine}" in slow_compare.replace("&#40;", "(")
    for view in views:  # no trial of the other machine on a machine's pages
        others = {t.trial_key for v in views if v is not view for t in v.trials}
        for path, page in pages.items():
            if path.startswith(f"reports/{view.slug}/"):
                assert not [k for k in others if k in page.markdown], path


def test_each_finding_rests_on_one_machine_and_findings_json_lists_both(store, rendered):
    pages, views = rendered
    files = dict(f for p in pages.values() for f in p.files if f[0].endswith("findings.json"))
    top = json.loads(files[f"reports/{EXPERIMENT}/findings.json"])
    assert [m["env_id"] for m in top["machines"]] == [v.environments[0].env_id for v in views]
    assert top["count"] == sum(m["count"] for m in top["machines"]) == len(top["findings"]) > 0
    env_of = {str(k): str(e) for k, e in zip(*(load_experiment(store).trials[c] for c in ("trial_key", "env_id")),
                                             strict=True)}
    for view in views:
        mine = json.loads(files[f"reports/{view.slug}/findings.json"])
        assert mine["machine"] == view.machine and mine["env_id"] == view.environments[0].env_id
        for f in mine["findings"]:
            assert {env_of[k] for k in f["evidence"]["trials"]} <= {mine["env_id"]}, f["id"]
    ids = {v.environments[0].env_id: v for v in views}
    assert all(f["id"].split("/", 1)[0] in ids and f["machine"] == ids[f["id"].split("/", 1)[0]].machine
               for f in top["findings"])


def test_perfsite_compare_prints_each_machine_and_picks_one(store, one_machine):
    alone = perfsite("compare", "--results", str(one_machine), "--a", "fp32", "--b", "int8-static")
    both = perfsite("compare", "--results", str(store.parent), "--a", "fp32", "--b", "int8-static")
    assert both.returncode == 0, both.stderr
    sections = re.split(r"(?m)^On ", both.stdout)[1:]
    assert len(sections) == 2 and "of 2 machines" in sections[0]
    measured = next(s for s in sections if ": not compared" not in s.splitlines()[0])
    refused = next(s for s in sections if ": not compared" in s.splitlines()[0])
    # The machine with both versions answers as the store of that machine alone does.
    assert measured.split("\n", 1)[1].strip() == alone.stdout.strip()
    assert "fp32" in refused
    env = _env_ids(store)
    slow = perfsite("compare", "--results", str(store.parent), "--a", "int8-static", "--b", "int8-dyn",
                    "--machine", [e for e in env if e not in _env_ids(one_machine)][0][:6])
    assert slow.returncode == 0 and slow.stdout.startswith("On ") and "of 2 machines:" in slow.stdout  # the store's
    bad = perfsite("compare", "--results", str(store.parent), "--a", "fp32", "--machine", "nowhere")
    assert bad.returncode == 1 and "--machine 'nowhere': no machine" in bad.stderr and "machines:" in bad.stderr


def test_diff_compares_each_machine_with_itself_and_names_the_one_that_changed(tmp_path):
    """Machine B went from 3× to 6× the recorded latencies, machine A did not change: a regression on B."""
    base = write_two_machine_results(tmp_path / "base" / "results")
    cand = write_two_machine_results(tmp_path / "cand" / "results", factor=2 * SLOWER_FACTOR, run="20300102T0-cand")
    text, code = diff_command(str(base.parent), str(cand.parent), fail_on="regression")
    assert code == 2 and text.startswith("**perfsite diff: slower**"), text[:300]
    flat = " ".join(text.split())
    assert "on ARM" not in flat and re.search(r"int8-dyn · b1 t1 c1 · on [^|]*8 CPUs", flat), flat[:2000]
    assert not re.search(r"fp32 · [^|]* · on [^|]*8 CPUs", flat)  # fp32 exists on one machine only


def test_the_trend_keeps_a_line_per_machine(tmp_path, one_machine):
    """A second machine's results committed into the same folder are its own series, not a +200 % step."""
    from generator.site.trend_page import collect_trend, trend_page

    repo = tmp_path / "repo"
    shutil.copytree(one_machine.parent, repo / "results")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "machine A")
    shutil.rmtree(repo / "results")
    write_two_machine_results(repo / "results")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "machine B too")
    trend = collect_trend(repo / "results", 5)
    machines = sorted({p.machine for p in trend.points})
    assert len(trend.commits) == 2 and len(machines) == 2 and machines[1].endswith(", 8 CPUs")
    page = trend_page(trend.commits, trend.points, 5, trend.skipped, trend.shallow).markdown
    assert '!!! note "2 machines"' in page
    from generator.site.trend_page import series_changes

    for change in series_changes(trend.points):
        assert change.latency_ratio == pytest.approx(1.0), change.series  # nothing changed on either machine
