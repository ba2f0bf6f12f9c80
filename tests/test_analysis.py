"""Analysis summaries: best results, sweet spots, profiled configurations, op-type and layer tables."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from support.results import NODES, write_results

from generator.analysis import profile as P
from generator.analysis import run_summaries as R
from generator.analysis import summaries as S
from generator.results.store import load_experiment


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return load_experiment(write_results(tmp_path_factory.mktemp("results")))


@pytest.fixture(scope="module")
def trials(results):
    return S.trial_summaries(results.trials, ["fp32", "int8"])


def _one(trials, version, label):
    return next(t for t in trials if t.version == version and t.config_label == label)


def test_trials_are_ordered_by_spec_version_then_configuration(trials):
    assert [(t.version, t.config_label) for t in trials][:4] == [
        ("fp32", "b1 t1 c1"), ("fp32", "b1 t2 c1"), ("fp32", "b8 t1 c1"), ("fp32", "b8 t2 c1")]
    assert S.ordered_versions(pd.DataFrame({"version": ["b", "zz", "a"]}), ["zz"]) == ["zz", "a", "b"]


def test_failed_trial_has_no_figures_and_is_not_ok(trials):
    failed = _one(trials, "int8", "b8 t2 c1")
    assert failed.status == "failed" and not failed.ok
    assert failed.latency_headline_ms is None and failed.throughput_ips is None
    assert failed.error.startswith("worker crashed")


def test_best_results_ignore_failed_trials(trials):
    fp32, int8 = S.version_bests(trials, ["fp32", "int8"], 12.0)
    assert fp32.best_throughput.config_label == "b8 t2 c1"
    assert fp32.best_latency.config_label == "b1 t2 c1"
    assert int8.best_throughput.config_label == "b1 t2 c1"  # its b8 t2 trial failed
    assert all(t.ok for b in (fp32, int8) for t in (b.best_throughput, b.best_latency, b.sweet_spot))


def test_sweet_spot_is_best_throughput_under_the_threshold(trials):
    fp32 = [t for t in trials if t.version == "fp32"]
    # b8 t2 (7.8 ms) has the best throughput; under 5 ms only batch 1 qualifies.
    assert S.sweet_spot(fp32, 12.0).config_label == "b8 t2 c1"
    assert S.sweet_spot(fp32, 5.0).config_label == "b1 t2 c1"
    assert S.sweet_spot(fp32, 0.1) is None
    assert S.sweet_spot(fp32, None) is None


def test_sweet_spot_ties_go_to_lower_latency_then_trial_key(trials):
    base = _one(trials, "fp32", "b1 t1 c1")
    slow = dataclasses.replace(base, trial_key="a", throughput_ips=100.0, latency_headline_ms=3.0)
    fast = dataclasses.replace(base, trial_key="b", throughput_ips=100.0, latency_headline_ms=2.0)
    twin = dataclasses.replace(base, trial_key="c", throughput_ips=100.0, latency_headline_ms=2.0)
    assert S.sweet_spot([slow, twin, fast], 10.0).trial_key == "b"


def test_version_infos_count_trials_and_take_the_latest_model(results):
    fp32, int8 = S.version_infos(results.trials, ["fp32", "int8"])
    assert (fp32.trials_ok, fp32.trials_failed, int8.trials_ok, int8.trials_failed) == (4, 0, 3, 1)
    assert fp32.model_files == 1 and len(fp32.model_sha256) == 64 and fp32.model_bytes == 1_843_200
    assert int8.source == "fp32 → quantize(static_qdq)" and "skip_symbolic_shape" in int8.notes
    assert fp32.notes is None


def test_default_profile_is_batch_1_at_most_threads_concurrency_1(trials):
    fp32 = [t for t in trials if t.version == "fp32"]
    targets = S.profile_targets(fp32, [], {"batch": 8, "threads": 1, "concurrency": 1, "provider": "cpu"})
    assert [t.trial.config_label for t in targets] == ["b1 t2 c1"]


def test_default_profile_is_a_configuration_some_trial_has_when_exclude_left_it_out(trials):
    # `exclude: [{batch: 1, threads: 2}]` leaves the default (batch 1 at the most threads) out of the plan: the
    # profile page of a spec without `profile:` said "No trial with this configuration" and showed no profile.
    fp32 = [t for t in trials if t.version == "fp32" and t.config_label != "b1 t2 c1"]
    targets = S.profile_targets(fp32, [], {"batch": 1, "threads": 1, "concurrency": 1, "provider": "cpu"})
    assert [t.trial.config_label for t in targets] == ["b1 t1 c1"]
    only_batch_8 = [t for t in fp32 if t.batch == 8]
    assert [t.trial.config_label for t in S.profile_targets(only_batch_8, [], {"batch": 1})] == ["b8 t2 c1"]


def test_profile_entries_are_partial_and_each_trial_shows_once(trials):
    fp32 = [t for t in trials if t.version == "fp32"]
    targets = S.profile_targets(fp32, [{"batch": 8}, {"threads": 2}, {"batch": 4}], {})
    labels = [t.trial.config_label if t.trial else None for t in targets]
    assert labels == ["b8 t1 c1", "b8 t2 c1", "b1 t2 c1", None]
    assert targets[-1].wanted == (("batch", 4),)
    assert len(S.profile_targets(fp32, [{}], {})) == 4  # `{}` matches every configuration


def test_profile_match_is_strict_about_booleans(trials):
    fp32 = [t for t in trials if t.version == "fp32"]
    assert all(t.trial is None for t in S.profile_targets(fp32, [{"spinning": 1}], {}))
    assert len(S.profile_targets(fp32, [{"spinning": True}], {})) == 4


def test_op_type_times_skip_sub_graph_nodes_and_share_the_total(results, trials):
    key = _one(trials, "int8", "b1 t1 c1").trial_key
    times = P.op_type_times(results.nodes, key)
    assert "Identity" not in {o.op_type for o in times}  # inside the If: already in its time
    assert times[0].op_type == "Conv" and times[0].nodes == 3
    assert sum(o.share for o in times) == pytest.approx(1.0)
    assert [o.dur_us for o in times] == sorted((o.dur_us for o in times), reverse=True)


def test_top_layers_are_the_slowest_top_level_nodes(results, trials):
    key = _one(trials, "fp32", "b1 t1 c1").trial_key
    layers, count = P.top_layers(results.nodes, key, limit=3)
    assert count == len(NODES)
    assert [layer.node_name for layer in layers] == ["conv1", "conv2", "conv3"]
    assert layers[0].original_nodes == ("conv1", "bn0")
    assert layers[0].weights == ("conv1.weight", "conv1.bias")
    assert layers[0].share == pytest.approx(0.31 / sum(share for *_, share in NODES))


def test_the_kernels_are_set_against_the_measured_latency_and_the_rest_is_outside_them(results, trials):
    trial = _one(trials, "fp32", "b1 t1 c1")
    acc = P.time_accounting(results, trial)
    top = P.top_level_nodes(results.nodes, trial.trial_key)
    assert acc.kernel_sum_us == pytest.approx(float(top["dur_us"].sum()))
    assert acc.measured_latency_us == pytest.approx(trial.latency_p50_ms * 1000)
    assert acc.outside_us == pytest.approx(acc.measured_latency_us - acc.kernel_sum_us)
    assert acc.share(acc.kernel_sum_us) + acc.share(acc.outside_us) == pytest.approx(1.0)
    assert acc.consistent and acc.why_not is None


def test_kernels_beyond_the_measured_latency_say_why_the_parts_do_not_add_up():
    """Kernels that take longer than the measured inference, beyond both intervals: the profiled inferences
    ran slower than the timed ones, which every page then says, and estimates built on them are not settled."""
    from generator.analysis.accounting import time_accounting

    fits = time_accounting(450.0, (430.0, 470.0), 0.46, (0.44, 0.48), 900.0, 7.0, 29)
    assert fits.consistent and fits.outside_us == pytest.approx(10.0)
    overlapping = time_accounting(500.0, (470.0, 530.0), 0.46, (0.44, 0.48), 900.0, 7.0, 29)
    assert overlapping.consistent  # within their intervals
    beyond = time_accounting(2214.0, (2000.0, 2400.0), 0.452, (0.44, 0.46), 2800.0, 7.0, 29)
    assert beyond.disturbed and beyond.outside_us < 0
    assert beyond.why_not.startswith("the kernels take 2,214 µs (2,000–2,400) against 452 µs (440–460) measured")
    assert time_accounting(None, None, 0.46, None, None, None, 0) is None
    assert time_accounting(450.0, None, None, None, None, None, 29).consistent  # nothing measured to compare


def test_process_spread_over_measurement_processes(results, trials):
    """Without preemption known every process counts with every request: the range is over the medians of
    each process's stored requests (the headline's own), and its throughput over the processes table's."""
    trial = _one(trials, "fp32", "b8 t2 c1")
    spread = P.process_spread(results.processes, results.latencies, trial)
    assert (spread.processes, spread.clean) == (3, False)
    lat = results.latencies[results.latencies["trial_key"] == trial.trial_key]
    medians = lat.groupby("process")["latency_ms"].median()
    assert (spread.latency_median_min_ms, spread.latency_median_max_ms) == pytest.approx((medians.min(), medians.max()))
    rows = results.processes[results.processes["trial_key"] == trial.trial_key]
    assert (spread.throughput_min_ips, spread.throughput_max_ips) == pytest.approx(
        (rows["throughput_ips"].min(), rows["throughput_ips"].max()))
    missing = dataclasses.replace(trial, trial_key="no-such-trial")
    assert P.process_spread(results.processes, results.latencies, missing) is None


def test_environments_and_last_run(results):
    (env,) = R.environment_summaries(results.environments, results.trials)
    assert env.isa == ("AVX", "AVX2", "FMA") and env.trials == 8 and env.logical_cores == 2
    assert R.environment_summaries(results.environments, results.trials.iloc[0:0]) == []
    assert R.last_run(results.runs)["git_commit"] == "0123456789abcdef"
    assert R.last_run(results.runs.iloc[0:0]) is None


def test_clean_turns_every_missing_flavour_into_none():
    assert [S.clean(v) for v in (None, float("nan"), pd.NA)] == [None, None, None]
    assert S.parse_dims('{"seq_len": 128, "a": 1}') == (("a", 1), ("seq_len", 128))
    assert S.parse_dims(None) == ()


def test_side_by_side_sets_every_version_against_the_first_measured_and_its_outputs_against_its_reference():
    from generator.analysis.records_compare import AgreementRow
    from generator.analysis.side_by_side import side_by_side

    trials = [_summary("a", "b1", 2.0, 500.0), _summary("b", "b1", 1.0, 1000.0, halfwidth=0.1),
              _summary("c", "b1", 4.0, 250.0), _summary("b", "b2", 1.0, 2000.0)]  # b2: b alone, no row
    worst = AgreementRow("b", "a", "y", 0.5, None, 0.97, 0.9, trial_key="b-b1", within_tolerance=False)
    fine = AgreementRow("b", "a", "z", 0.01, None, 0.9999, 1.0, trial_key="b-b1", within_tolerance=True)
    [row] = side_by_side(trials, ["a", "b", "c"], [], {"b-b1": (fine, worst)})
    assert row.config_label == "b1" and row.reference == "a" and [c.version for c in row.cells] == ["a", "b", "c"]
    a, b, c = row.cells
    assert (a.latency_ratio, b.latency_ratio, c.latency_ratio) == (1.0, 0.5, 2.0)
    assert (b.throughput_ratio, c.throughput_ratio) == (2.0, 0.5)
    assert (b.low_ms, b.high_ms) == pytest.approx((0.9, 1.1)) and a.low_ms is None
    assert (b.worst_cosine, b.worst_top1, b.within_tolerance, b.against) == (0.97, 0.9, False, "a")
    assert a.against is None and a.within_tolerance is None


def _summary(version: str, label: str, latency_ms: float, throughput: float,
             halfwidth: float | None = None) -> S.TrialSummary:
    base = {f: None for f in S.TrialSummary.__dataclass_fields__}
    return S.TrialSummary(**{**base, "trial_key": f"{version}-{label}", "version": version, "config_label": label,
                             "status": "ok", "latency_headline_ms": latency_ms, "throughput_ips": throughput,
                             "ci_halfwidth": halfwidth})
