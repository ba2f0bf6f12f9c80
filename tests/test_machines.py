"""The machines page: the same versions and configurations across environments (issue 15, item 2).

The store holds one real recorded run copied onto two more environments (tests/support/machines.py): nothing is
measured here. Analysis records are checked as pure functions; the page is snapshotted (regenerate with
PERFSITE_UPDATE_SNAPSHOTS=1); tests/browser/test_machines_browser.py builds it with mkdocs --strict beside the
overview page that links it and reads it in Chromium.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from support.cli import check_snapshots
from support.machines import ARM, LEFT_OUT, UPGRADE, write_machine_results
from support.results import write_results

from generator.analysis.machine_compare import best_machine, compare_machines
from generator.analysis.machines import machines, short_cpu
from generator.results.store import load_experiment
from generator.site import pages as site_pages
from generator.site.machines_page import best_sentence, machines_chart, machines_pages
from generator.site.page_base import experiment_view, template_env

SNAPSHOTS = Path(__file__).parent / "snapshots" / "machines"
CHART_RE = re.compile(r'<script type="application/json" id="([a-z0-9-]+)">(.*?)</script>')


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return write_machine_results(tmp_path_factory.mktemp("machines") / "results")


@pytest.fixture(scope="module")
def results(store):
    return load_experiment(store)


@pytest.fixture(scope="module")
def comparison(results):
    spec = results.spec
    first = {"batch": 1, "threads": 1, "concurrency": 1}
    return compare_machines(results, list(spec.models), spec.measure.percentile, spec.latency_threshold_ms, first)


def test_the_copies_are_valid_trials_of_three_environments(results):
    assert results.problems == ()
    assert results.trials["env_id"].nunique() == 3
    assert results.trials["trial_key"].is_unique
    assert len(results.trials) == 12 + 2 * 11  # one configuration left out of both copies


def test_machines_are_named_by_cpu_and_fingerprint_and_by_software_on_the_same_hardware(comparison):
    by_cpu = {m.env.cpu_model: m for m in comparison.machines if m.env.cpu_model != "AMD EPYC"}
    arm = by_cpu[ARM["cpu_model"]]
    assert arm.label == f"ARM Neoverse-N1 · {arm.env_id[:6]}"
    assert arm.hostname == ARM["hostname"]  # kept as stored: the page escapes it, the label never holds it
    assert (arm.peak_gflops_fp32, arm.bandwidth_gbs, arm.limits_quality) == (151.0, 24.5, ARM["limits_quality"])
    assert arm.limits_unknown is None
    epyc = [m for m in comparison.machines if m.env.cpu_model == "AMD EPYC"]
    assert sorted(m.label.rsplit(" · ", 1)[1] for m in epyc) == ["onnxruntime 1.31.1",
                                                                f"onnxruntime {UPGRADE['onnxruntime']}"]
    assert all(m.software_differs == ("onnxruntime",) and len(m.same_hardware) == 1 for m in epyc)
    # Limits two probes did not agree on are not shown as limits; the page says why (its snapshot).
    (upgrade,) = [m for m in epyc if m.env.onnxruntime == UPGRADE["onnxruntime"]]
    assert (upgrade.peak_gflops_fp32, upgrade.peak_gops_int8, upgrade.bandwidth_gbs) == (None, None, None)
    assert upgrade.limits_unknown == UPGRADE["limits_quality"].removeprefix("unsettled: ")
    assert [m.label for m in comparison.machines] == sorted((m.label for m in comparison.machines), key=str.casefold)


def test_target_names_label_machines_and_a_shared_name_gets_the_fingerprint_prefix(results):
    arm = results.environments["cpu_model"] == ARM["cpu_model"]
    envs = results.environments.assign(target_name=["arm-server" if a else "laptop" for a in arm])
    named = {m.env_id: m.label for m in machines(envs, results.trials)}
    assert sorted(named.values()) == ["arm-server", "laptop · onnxruntime 1.31.1", "laptop · onnxruntime 1.32.0"]
    # One name on two machines that the software does not tell apart: each gets its fingerprint prefix.
    two = envs[envs["onnxruntime"] != UPGRADE["onnxruntime"]].assign(target_name="ci <b>runner</b>")
    assert sorted(m.label for m in machines(two, results.trials)) == sorted(
        f"ci <b>runner</b> · {e[:6]}" for e in two["env_id"])
    # Where `perfsite run --ray --target NAME` writes it: the trials' `target_name` column.
    on_arm = results.trials["env_id"].isin(envs.loc[arm, "env_id"])
    trials = results.trials.assign(target_name=[("arm-server" if a else None) for a in on_arm])
    assert "arm-server" in {m.label for m in machines(results.environments, trials)}
    # The float `trials.target` (measure.target) is never taken for a name.
    assert all(m.targets == () for m in machines(results.environments, results.trials))


def test_all_trials_name_the_target_each_was_measured_on(results):
    """Trials of two targets measured on identical nodes were two rows of one version and configuration with
    different figures and nothing to tell them apart: the table gets a Target column when any trial has one."""
    plain = site_pages.experiment_pages(template_env(), experiment_view(results, "tiny-compare"))[0].markdown
    assert "| Target |" not in plain
    on_arm = results.trials["env_id"].isin(results.environments.loc[
        results.environments["cpu_model"] == ARM["cpu_model"], "env_id"])
    trials = results.trials.assign(target_name=[("arm-server" if a else None) for a in on_arm])
    view = experiment_view(dataclasses.replace(results, trials=trials), "tiny-compare")
    page = site_pages.experiment_pages(template_env(), view)[0].markdown
    rows = [line for line in page.splitlines() if line.startswith("| fp32 | b1 t1 c1 |")]
    assert "| Version | Configuration | Target | Environment |" in page
    assert any("| arm-server |" in r for r in rows) and any("| — |" in r for r in rows), rows


def test_cpu_models_are_shortened_readably():
    assert short_cpu("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz") == "Intel Xeon Platinum 8375C"
    assert short_cpu("AMD EPYC 7B13 64-Core Processor") == "AMD EPYC 7B13"
    assert short_cpu(None) == "unknown CPU"
    assert len(short_cpu("x" * 80)) == 32


def test_side_by_side_rows_have_intervals_around_each_figure(comparison):
    assert comparison.single == 1 and len(comparison.rows) == 11
    assert all(r.config_label != LEFT_OUT[1] or r.version != LEFT_OUT[0] for r in comparison.rows)
    for row in comparison.rows:
        cells = [c for c in row.cells if c is not None]
        assert len(cells) == 3
        for cell in cells:
            for f in (cell.latency_ms, cell.throughput_ips):
                assert f.processes == 2 and f.low < f.value < f.high
        arm = next(c for c in cells if c.trial.env_id == row.fastest)
        assert comparison.label(arm.env_id).startswith("ARM")  # 0.6 × the recorded latencies


def test_the_best_machine_under_the_threshold_is_a_sweet_spot_over_machines(comparison):
    for b in (*comparison.best, comparison.overall):
        assert comparison.label(b.best.env_id).startswith("ARM")
        assert b.best.trial.latency_headline_ms <= comparison.threshold_ms
        assert b.ratio.significant and b.ratio.low < 1 / 0.6 < b.ratio.high  # throughput ARM / runner-up
        mine = [p.trial for p in comparison.points if p.env_id == b.best.env_id
                and (b.version is None or p.trial.version == b.version) and p.trial.latency_headline_ms <= 6.0]
        assert b.best.trial.throughput_ips == max(t.throughput_ips for t in mine)
    assert comparison.overall.best.trial.version == "int8-static"
    sentence = best_sentence(comparison, comparison.overall)
    assert sentence.startswith("Over all versions, the best machine under 6.00 ms (p90) is **ARM Neoverse-N1 · ")
    assert "with int8-static: 3,751 items/s at b4 t2 c1 (1.10 ms), 1.7× the throughput of the runner-up" in sentence


def test_a_clear_message_when_no_machine_meets_the_threshold(comparison):
    strict = replace(comparison, threshold_ms=0.1)
    fp32 = [p for p in comparison.points if p.trial.version == "fp32"]
    b = best_machine(fp32, list(comparison.machines), 0.1, "fp32")
    assert b.best is None and b.runner_up is None
    assert b.lowest.trial.latency_headline_ms == min(p.trial.latency_headline_ms for p in fp32)
    sentence = best_sentence(strict, b)
    assert sentence.startswith("For **fp32**, no machine meets the latency threshold of 0.100 ms (p90): the lowest "
                               "p90 latency measured is 0.556 ms, on **ARM Neoverse-N1 · ")
    assert sentence.endswith("** at b1 t2 c1.")
    unset = best_sentence(replace(comparison, threshold_ms=None), best_machine(fp32, list(comparison.machines), None,
                                                                              "fp32"))
    assert unset.startswith("For **fp32**, the spec sets no `latency_threshold_ms`, so no machine is best under a "
                            "threshold; the lowest p90 latency measured is 0.556 ms, on **ARM Neoverse-N1 · ")


def test_layer_types_are_compared_where_several_machines_profiled(comparison):
    (fp32, *_) = comparison.layer_types
    assert fp32.version == "fp32" and len(fp32.machines) == 3
    conv = fp32.rows[0]
    assert conv.op_type == "Conv"
    arm = [comparison.label(e).startswith("ARM") for e in fp32.machines].index(True)
    assert conv.times_us[arm] == pytest.approx(0.6 * min(t for i, t in enumerate(conv.times_us) if i != arm))


def _machines_page(results) -> str:
    (page,) = machines_pages(template_env(), experiment_view(results, "tiny-compare"))
    assert page.path == "reports/tiny-compare/machines.md"
    return page.markdown


def test_machines_page_matches_its_snapshot_and_escapes_hostnames(results):
    markdown = _machines_page(results)
    assert "<script>" not in markdown and "onerror=" not in markdown
    assert "&#60;script&#62;alert&#40;&#39;x&#39;&#41;" in markdown  # the hostile hostname, inert
    generated = {"machines.md": markdown}
    for chart_id, spec in CHART_RE.findall(markdown):
        (chart,) = json.loads(spec)
        generated[f"machines.{chart_id}.json"] = json.dumps(chart, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert set(generated) == {"machines.md", "machines.chart-machines.json"}
    check_snapshots(generated, SNAPSHOTS)
    assert _machines_page(results) == markdown  # byte-identical on a re-run


def test_one_environment_gets_no_machines_page_and_no_link(tmp_path):
    results = load_experiment(write_results(tmp_path))
    view = experiment_view(results, "cnn-int8")
    assert machines_pages(template_env(), view) == []
    (overview,) = site_pages.experiment_pages(template_env(), view)
    assert "machines.md" not in overview.markdown


def test_environment_rows_without_trials_are_not_machines(results):
    extra = pd.concat([results.environments, results.environments.iloc[:1].assign(env_id="ffffffffffff")])
    assert len(machines(extra, results.trials)) == 3


def test_a_generative_experiments_throughput_reads_output_tokens_per_second(results, comparison):
    """A generative trial's items are its output tokens (runner.generative_rows): the page names them so."""
    spec = types.SimpleNamespace(generate=True)
    tokens = compare_machines(dataclasses.replace(results, spec=spec), list(results.spec.models), "p95", 12.0,
                              {"batch": 1, "threads": 1, "concurrency": 1})
    assert (comparison.unit, tokens.unit) == ("items/s", "output tokens/s")
    assert " output tokens/s at " in best_sentence(tokens, tokens.overall)
    chart = json.dumps(machines_chart(tokens).to_dict())
    assert "Throughput (output tokens/s)" in chart and "items/s" not in chart
