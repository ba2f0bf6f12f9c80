"""Profile analysis: the join of executed nodes with the static analysis, the roofline, the model summary,
providers, thread-pool efficiency and the Amdahl what-ifs, each against figures computed by hand.

Frames are built with the schema's columns (generator.results.schema), one small trial at a time.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from generator.analysis import profile as P
from generator.analysis import roofline as R
from generator.analysis import summaries as S
from generator.analysis import whatif as W
from generator.analysis.profile_times import ProcessTimes as PT
from generator.results.cells import decoded
from generator.results.schema import column_names

KEY = "t" * 20


def frame(table: str, rows: list[dict]) -> pd.DataFrame:
    """Rows with the schema's columns, list and shape cells decoded as load_experiment decodes them."""
    data = pd.DataFrame([{c: r.get(c) for c in column_names(table)} for r in rows], columns=column_names(table))
    return decoded(table, data)


def trial(**changes) -> S.TrialSummary:
    row = {
        "trial_key": KEY, "version": "int8", "env_id": "env", "config_label": "b2 t2 c1", "batch": 2, "threads": 2,
        "concurrency": 1, "optimization_level": "all", "provider": "cpu", "spinning": True, "inter_op_threads": 1,
        "dims": "{}", "status": "ok", "quick": False, "latency_headline_ms": 1.2, "latency_mean_ms": 1.1,
        "latency_p50_ms": 1.0, "throughput_ips": 2000.0, "profiled": True, "profiled_latency_us": 1000.0,
        "model_run_us": 950.0, "kernel_sum_us": 800.0, "model_bytes": 4096,
    }
    return S.trial_summary(pd.Series({**row, **changes}))


def node(order: int, name: str, op: str, dur: float, originals: list[str], **extra) -> dict:
    return {"trial_key": KEY, "exec_order": order, "node_name": name, "op_type": op, "provider": "CPUExecutionProvider",
            "parent": None, "calls": 1, "dur_mean_us": dur, "dur_p50_us": dur, "original_nodes": originals, **extra}


def layer(name: str, op: str, flops: float = 0.0, int_ops: float = 0.0, weight_bytes: int = 0,
          input_bytes: int = 0, output_bytes: int = 0, counted: bool = True, params: int = 0) -> dict:
    return {"trial_key": KEY, "node": name, "op_type": op, "flops": flops, "macs": (flops + int_ops) / 2,
            "int_ops": int_ops, "params": params, "weight_bytes": weight_bytes, "input_bytes": input_bytes,
            "output_bytes": output_bytes, "counted": counted}


ENV = {"env_id": "env", "physical_cores": 4, "logical_cores": 8, "isa": ["AVX2", "FMA"],
       "peak_gflops_fp32": 200.0, "peak_gops_int8": 400.0, "bandwidth_gbs": 20.0, "limits_settled": True}

# A QDQ-like inference: a QLinearConv and the Transpose onnxruntime put before it both cover the Conv region;
# the input DequantizeLinear is covered by both (counted once, split evenly); an If's body is not top level.
NODES = [
    node(0, "input_QuantizeLinear", "QuantizeLinear", 50.0, ["input_Q"], activation_bytes=4000, output_bytes=1000),
    node(1, "Transpose", "Transpose", 50.0, ["input_DQ", "/conv/Conv"], activation_bytes=1000, output_bytes=1000),
    node(2, "/conv/Conv_token_1", "QLinearConv", 600.0, ["input_DQ", "/conv/Conv", "w_DQ"], pool_share=0.4),
    node(3, "/fc/Gemm", "Gemm", 100.0, ["/fc/Gemm"], activation_bytes=400, output_bytes=40, pool_share=0.0),
    node(4, "/branch/If", "If", 100.0, ["/branch/If"]),
    {**node(5, "/branch/then/Identity", "Identity", 80.0, ["/branch/then/Identity"]), "parent": "/branch/If"},
]
LAYERS = [
    layer("input_Q", "QuantizeLinear", flops=2000.0, input_bytes=4000, output_bytes=1000),
    layer("input_DQ", "DequantizeLinear", flops=1000.0, input_bytes=1000, output_bytes=4000),
    layer("/conv/Conv", "Conv", int_ops=100e6, weight_bytes=9000, input_bytes=1000, output_bytes=16000,
          params=9000),
    layer("w_DQ", "DequantizeLinear"),  # folded at load time: 0 per inference
    layer("/fc/Gemm", "Gemm", flops=2e4, weight_bytes=4000, input_bytes=400, output_bytes=40, params=1000),
    layer("/branch/If", "If", counted=False),
    layer("/unused/Constant", "Shape", flops=10.0),  # covered by no executed node
]


@pytest.fixture
def tables():
    return SimpleNamespace(
        trials=frame("trials", [{"trial_key": KEY, "model_bytes": 4096}]),
        processes=frame("processes", [{"trial_key": KEY, "process": i, "latency_median_ms": m,
                                       "throughput_ips": 2000.0 / m} for i, m in enumerate((0.9, 1.0, 1.2))]),
        latencies=frame("latencies", []), nodes=frame("nodes", NODES), layers=frame("layers", LAYERS),
        environments=frame("environments", [ENV]),
    )


def _by_name(results):
    return {r.node_name: r for r in results}


def test_an_original_node_goes_to_the_executed_nodes_of_its_op_family_else_is_split_evenly(tables):
    t = trial()
    results = _by_name(R.layer_results(tables.nodes, tables.layers, t, R.roofline(tables.environments, t)))
    assert "/branch/then/Identity" not in results  # sub-graph nodes are inside their If's time
    conv, transpose = results["/conv/Conv_token_1"], results["Transpose"]
    # The Conv belongs to the QLinearConv alone; the input DequantizeLinear is halved between both nodes.
    assert conv.int_ops == 100e6 and conv.flops == 500.0
    assert transpose.int_ops == 0.0 and transpose.flops == 500.0
    assert conv.integer and not transpose.integer
    # Every operation of the covered original nodes is counted exactly once.
    assert sum(r.ops for r in results.values()) == 2000.0 + 1000.0 + 100e6 + 2e4
    assert results["/branch/If"].analysed and results["/branch/If"].ops == 0.0


def test_traffic_is_static_weights_plus_the_kernels_own_activation_sizes(tables):
    t = trial()
    results = _by_name(R.layer_results(tables.nodes, tables.layers, t, R.roofline(tables.environments, t)))
    # /fc/Gemm: 4000 weight bytes (static) + 400 in + 40 out (as onnxruntime reported them).
    assert results["/fc/Gemm"].bytes == 4440
    # The QLinearConv has no reported sizes: the static activations of what it owns, halves where shared.
    assert results["/conv/Conv_token_1"].bytes == 9000 + (1000 / 2 + 1000) + (4000 / 2 + 16000)
    assert results["/conv/Conv_token_1"].intensity == pytest.approx((100e6 + 500) / 28500)


def test_roofline_attainable_efficiency_and_far_below_by_hand(tables):
    t = trial()
    limits = R.roofline(tables.environments, t)
    assert limits.thread_scale == 0.5  # 2 threads of 4 physical cores
    assert (limits.peak_gflops_fp32, limits.peak_gops_int8, limits.bandwidth_gbs) == (100.0, 200.0, 20.0)
    assert limits.attainable(1.0, integer=False) == 20.0 and limits.attainable(1000.0, integer=True) == 200.0
    results = _by_name(R.layer_results(tables.nodes, tables.layers, t, limits))
    gemm = results["/fc/Gemm"]
    assert gemm.achieved_gops == pytest.approx(2e4 / 100e-6 / 1e9)  # 0.2 GOP/s
    assert gemm.attainable_gops == pytest.approx(2e4 / 4440 * 20.0)  # memory bound: 4.5 ops/byte × 20 GB/s
    assert gemm.efficiency == pytest.approx(0.2 / (2e4 / 4440 * 20.0))
    conv = results["/conv/Conv_token_1"]
    assert conv.attainable_gops == 200.0  # ~3,500 ops/byte: compute bound, under the INT8 peak
    assert conv.efficiency == pytest.approx((100e6 + 500) / 600e-6 / 1e9 / 200.0)  # 83%
    assert gemm.far_below and not conv.far_below
    assert [r.node_name for r in R.layer_results(tables.nodes, tables.layers, t, limits)][:2] == [
        "/conv/Conv_token_1", "/fc/Gemm"]  # slowest first, ties by execution order


def test_shares_and_cumulative_shares_follow_the_slowest_first_order(tables):
    t = trial()
    results = R.layer_results(tables.nodes, tables.layers, t, R.roofline(tables.environments, t))
    total = 50 + 50 + 600 + 100 + 100
    assert [round(r.share * total) for r in results] == [600, 100, 100, 50, 50]
    assert results[-1].cumulative_share == pytest.approx(1.0)
    assert results[1].cumulative_share == pytest.approx(700 / total)


def test_unprobed_environment_gives_no_ceilings_but_keeps_the_operations(tables):
    t = trial(env_id="other")
    limits = R.roofline(tables.environments, t)
    assert not limits.measured and limits.attainable(10.0, False) is None
    conv = _by_name(R.layer_results(tables.nodes, tables.layers, t, limits))["/conv/Conv_token_1"]
    assert conv.achieved_gops is not None and conv.efficiency is None and not conv.far_below


@pytest.mark.parametrize(("settled", "quality", "why"), [
    (False, "unsettled: the undisturbed probes disagreed by more than 5 %: bandwidth 5.9 against 17.6 GB/s "
            "(2 undisturbed of 4)",
     "the undisturbed probes disagreed by more than 5 %: bandwidth 5.9 against 17.6 GB/s (2 undisturbed of 4)"),
    # Written before probes had to agree: one probe no second one checked, however clean it said it was.
    (None, "clean (1 probe)", "these results come from an earlier perfsite, which took its limits from a probe no "
                              "second one checked (clean (1 probe))"),
])
def test_unsettled_limits_are_no_ceilings_for_any_figure(tables, settled, quality, why):
    """The one place every page and the one-shot follow: no efficiency, far below, peak share or bound."""
    tables.environments = tables.environments.assign(limits_settled=settled, limits_quality=quality)
    t = trial()
    limits = R.roofline(tables.environments, t)
    assert not limits.measured and not limits.roofline_drawn and limits.unsettled_reason == why
    assert limits.machine_gflops_fp32 is None and limits.attainable(10.0, False) is None
    profile = P.trial_profile(tables, t, {}, {})
    assert all(r.efficiency is None and r.attainable_gops is None and not r.far_below for r in profile.layers)
    assert profile.far_below == [] and {o.far_below for o in profile.op_types} == {None}
    assert profile.summary.peak_share_fp32 is None and profile.summary.peak_share_int8 is None
    assert profile.summary.achieved_gflops is not None  # the model's own rate stays


def test_model_summary_totals_and_achieved_rates(tables):
    t = trial()
    summary = P.model_summary(tables.trials, tables.processes, tables.latencies, tables.layers, tables.environments, t)
    assert summary.isa == ("AVX2", "FMA") and summary.model_bytes == 4096
    totals = summary.totals
    assert totals.flops == 2000 + 1000 + 2e4 + 10 and totals.int_ops == 100e6
    assert totals.params == 10000 and totals.uncounted_op_types == ("If",)
    # 1000 requests per second (2000 items/s at batch 2); shares of the whole machine's probed peaks.
    assert summary.achieved_gflops == pytest.approx(totals.flops * 1000 / 1e9)
    assert summary.achieved_gops_int8 == pytest.approx(100e6 * 1000 / 1e9)
    assert summary.peak_share_fp32 == pytest.approx(summary.achieved_gflops / 200.0)
    assert summary.peak_share_int8 == pytest.approx(100.0 / 400.0)
    # No stored requests (a partial copy): the processes table's medians are the only ones.
    assert summary.spread.latency_median_min_ms == 0.9 and summary.spread.processes == 3
    assert not summary.spread.clean
    assert P.static_totals(tables.layers, "no-such-trial") is None


def test_op_type_profiles_pool_efficiency_and_providers(tables):
    profile = P.trial_profile(tables, trial(), {}, {})
    ops = {o.op_type: o for o in profile.op_types}
    assert list(ops)[:2] == ["QLinearConv", "Gemm"]
    total_ops = 2000 + 1000 + 100e6 + 2e4
    assert ops["QLinearConv"].ops_share == pytest.approx((100e6 + 500) / total_ops)
    assert ops["QLinearConv"].time_share == pytest.approx(600 / 900)
    pool = {q.op_type: q for q in profile.pool}
    assert set(pool) == {"QLinearConv", "Gemm"}  # only nodes with statistics
    assert pool["QLinearConv"].efficiency == pytest.approx(0.4 / 0.5)
    assert profile.providers[0].provider == "CPUExecutionProvider" and not profile.providers[0].fallback
    assert profile.unexecuted_ops == pytest.approx(10.0)  # the Shape node no executed node covers


def test_pool_share_is_time_weighted_and_absent_with_one_thread():
    rows = [dataclasses.replace(_result(), dur_us=d, pool_share=s) for d, s in ((300.0, 0.5), (100.0, 0.1))]
    (profile,) = P.op_type_profiles(rows)
    assert profile.pool_share == pytest.approx((300 * 0.5 + 100 * 0.1) / 400)
    assert P.pool_efficiency([profile], threads=1) == []


def _result() -> R.LayerResult:
    return R.LayerResult(
        exec_order=0, node_name="n", op_type="Conv", provider=None, fallback=False, original_nodes=(), weights=(),
        input_shapes=(), output_shapes=(), precision=None, calls=1, dur_us=1.0, dur_profiled_us=None, share=0.5,
        cumulative_share=0.5, analysed=False, flops=0.0, int_ops=0.0, macs=0.0, params=0.0, bytes=None,
        intensity=None, achieved_gops=None, attainable_gops=None, efficiency=None, far_below=False, pool_share=None,
    )


def test_nodes_on_another_provider_than_asked_are_fallbacks(tables):
    nodes = tables.nodes.copy()
    nodes.loc[nodes["exec_order"] != 3, "provider"] = "CUDAExecutionProvider"
    profile = P.trial_profile(SimpleNamespace(**{**vars(tables), "nodes": nodes}), trial(provider="cuda"), {}, {})
    by = {p.provider: p for p in profile.providers}
    assert by["CPUExecutionProvider"].fallback and by["CPUExecutionProvider"].fallback_nodes == ("/fc/Gemm",)
    assert not by["CUDAExecutionProvider"].fallback
    assert R.provider_name("CUDAExecutionProvider") == "cuda" and R.provider_name("cpu") == "cpu"


def test_whatif_is_amdahl_over_shares_of_the_profiled_latency(tables):
    t = trial()
    results = R.layer_results(tables.nodes, tables.layers, t, R.roofline(tables.environments, t))
    estimate = W.whatif(results, t, {"Conv": 2.0, "/fc/Gemm": 4.0, "Attention": 3.0}, "spec", "whatif")
    # Shares of the 1 ms measured latency: the QLinearConv (Conv family) 60%, the Gemm 10%.
    expected = 1.0 * (1 - 0.6 * (1 - 1 / 2) - 0.1 * (1 - 1 / 4))
    assert estimate.estimated_ms == pytest.approx(expected)
    assert estimate.speedup == pytest.approx(1 / expected)
    assert estimate.estimated_ips == pytest.approx(2000.0 / expected)
    assert [f.key for f in estimate.factors] == ["Conv", "/fc/Gemm"] and estimate.unmatched == ("Attention",)
    assert W.whatif(results, trial(latency_p50_ms=None, latency_mean_ms=None), {"Conv": 2.0}, "spec", "x") is None



def test_whatif_items_per_second_follow_from_its_ms_per_batch():
    """Item 9 of the figures tour: fp32 b1 c1 measured 1.48 ms per batch and 554 items per second (the timed
    run counts the time between requests). Scaling 554 by the speed-up gave 1,024 items per second beside
    0.799 ms per batch, which at one item in flight is 1,252. Both now come from the latency."""
    row = NODES[2]  # the QLinearConv: 600 µs of the 1.48 ms measured
    for batch, concurrency in ((1, 1), (4, 2)):
        t = trial(batch=batch, concurrency=concurrency, latency_p50_ms=1.48, throughput_ips=554.0)
        results = R.layer_results(frame("nodes", [row]), frame("layers", LAYERS), t, R.roofline(frame(
            "environments", [ENV]), t))
        estimate = W.whatif(results, t, {"Conv": 2.0}, "spec", "whatif")
        assert estimate.estimated_ms == pytest.approx(1.48 - 0.600 / 2)  # its share is of the measured latency
        in_flight = batch * concurrency
        assert estimate.estimated_ips == pytest.approx(in_flight * 1000 / estimate.estimated_ms)
        assert estimate.measured_ips == pytest.approx(in_flight * 1000 / 1.48)
        assert estimate.estimated_ips / estimate.measured_ips == pytest.approx(estimate.speedup)

def test_whatif_shares_never_exceed_the_whole_inference(tables):
    t = trial(profiled_latency_us=500.0)  # below the 900 µs kernel sum: timer granularity, or a bad record
    results = R.layer_results(tables.nodes, tables.layers, t, R.roofline(tables.environments, t))
    everything = {op: 1e9 for op in {r.op_type for r in results}}
    assert W.whatif(results, t, everything, "spec", "all").estimated_ms > 0


def test_op_type_whatifs_match_exactly_and_measured_factors_compare_families(tables):
    t = trial()
    results = R.layer_results(tables.nodes, tables.layers, t, R.roofline(tables.environments, t))
    rows = {w.label: w for w in W.op_type_whatifs(results, t, 2.0)}
    assert list(rows)[0] == "QLinearConv" and rows["QLinearConv"].factors[0].time_share == pytest.approx(0.6)
    factors, left_out, per_process = W.measured_factors(
        {"QLinearConv": 600.0, "Gemm": 100.0, "Transpose": 50.0},
        {"FusedConv": 900.0, "Conv": 300.0, "Gemm": 50.0, "ReorderInput": 5.0})
    assert factors == {"Conv": 0.5, "Gemm": 2.0}
    assert left_out == ("ReorderInput",) and per_process == {}  # one figure a side: no factor per process
    # Profiled in the same rounds, each process's factor too: an estimate's interval holds their spread.
    mine = {"QLinearConv": PT(600.0, (590.0, 600.0, 620.0))}
    other = {"Conv": PT(1200.0, (1180.0, 1200.0, 1210.0))}
    assert W.measured_factors(mine, other)[2] == {"Conv": pytest.approx((590 / 1180, 0.5, 620 / 1210))}
    assert W.op_family("QLinearConv") == "Conv" and W.op_family("Relu") == "Relu"


def test_trial_profile_adds_the_spec_and_measured_whatifs(tables):
    profile = P.trial_profile(tables, trial(), {"Conv": 2.0}, {"fp32": {"Conv": 1200.0, "Gemm": 100.0}})
    assert [(w.kind, w.label) for w in profile.whatifs] == [("spec", "whatif"), ("measured", "fp32")]
    measured = profile.whatifs[1]
    assert {f.key: f.factor for f in measured.factors} == {"Conv": 0.5, "Gemm": 1.0}
    assert [w.label for w in profile.op_whatifs] == ["QLinearConv", "Gemm", "If", "QuantizeLinear", "Transpose"]


RECORDED = json.loads((Path(__file__).parent / "data" / "preempted_trials.json").read_text())


def _recorded(version: str):
    """The recorded trial of `version`: its TrialSummary, processes and latencies frames."""
    (row,) = [r for r in RECORDED["trials"] if r["version"] == version]
    tables = {name: frame(name, [r for r in RECORDED[name] if r["trial_key"] == row["trial_key"]])
              for name in ("processes", "latencies")}
    return S.trial_summary(pd.Series(row)), tables["processes"], tables["latencies"]


def test_process_spread_is_over_the_processes_and_requests_of_the_headline():
    """Real trials: fp32 kept 2 usable processes of 3, int8-dyn none. The per-process range must hold the
    stored headline median and throughput, and count the processes the headline's interval was over."""
    t, processes, latencies = _recorded("fp32")
    assert (t.processes, t.usable_processes, t.judged_processes, t.clean_figures) == (3, 2, 2, True)
    # The stored all-request medians of every process lie above the clean headline (the reported defect).
    assert processes["latency_median_ms"].min() > t.latency_p50_ms
    spread = P.process_spread(processes, latencies, t)
    assert (spread.processes, spread.clean) == (2, True)
    assert spread.latency_median_min_ms <= t.latency_p50_ms <= spread.latency_median_max_ms
    assert spread.throughput_min_ips <= t.throughput_ips <= spread.throughput_max_ips

    t, processes, latencies = _recorded("int8-dyn")
    assert (t.processes, t.usable_processes, t.judged_processes, t.clean_figures) == (3, 0, 3, False)
    spread = P.process_spread(processes, latencies, t)
    assert (spread.processes, spread.clean) == (3, False)  # every request of every process, as the headline
    assert spread.latency_median_min_ms <= t.latency_p50_ms <= spread.latency_median_max_ms
    assert spread.throughput_min_ips <= t.throughput_ips <= spread.throughput_max_ips
