"""generator.timeline on the golden onnxruntime profiles (tests/data) and on hand-made timelines: the median
inference, sub-graph nesting, temporal statistics, layer details, the Chrome trace and the chart specs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from generator.machine.profiling import parse_profile
from generator.results.schema import column_names
from generator.site.charts_timeline import temporal_chart, timeline_chart
from generator.timeline import (
    Timeline,
    TimelineEvent,
    chrome_trace,
    chrome_trace_json,
    counted_events,
    layer_details,
    median_run,
    temporal_statistics,
    timeline_from_table,
    timeline_rows,
)

DATA = Path(__file__).parent / "data"


def timeline_from_recording(rec, flops=None) -> Timeline:
    """The timeline of a parsed profile's median inference, through the results table's rows (the one route)."""
    return timeline_from_table(pd.DataFrame(timeline_rows(rec)), flops)


def _event(order: int, name: str, start: float, dur: float, *, op: str = "Conv", parent: str | None = None,
           tid: int | None = 7, read: int | None = 0, written: int | None = 0, flops: float | None = None,
           pool: float | None = None) -> TimelineEvent:
    return TimelineEvent(order, name, op, "CPUExecutionProvider", parent, tid, start, dur, pool, "[[1,2]]",
                         "[[1,2]]", read, written, flops)


def test_median_inference_of_the_golden_if_profile():
    rec = parse_profile(DATA / "profile_if.json")
    assert rec.model_run_us == (160.0, 80.0, 96.0)
    index, run = median_run(rec)
    assert index == 2 and run.dur_us == 96.0  # sorted 80, 96, 160
    tl = timeline_from_recording(rec)
    assert (tl.model_run_us, tl.kernel_sum_us) == (96.0, run.kernel_sum_us)
    assert [(e.node_name, e.parent) for e in tl.events] == [
        ("sum", None), ("positive", None), ("conv", None), ("branch", None), ("then_relu", "branch"),
        ("then_mul", "branch"), ("relu_out", None)]
    branch = next(e for e in tl.events if e.node_name == "branch")
    for e in tl.events:
        if e.parent == "branch":
            assert branch.start_us <= e.start_us and e.end_us <= branch.end_us
            assert tl.depth(e) == 1
    assert tl.depth(branch) == 0


def test_top_level_durations_add_up_to_the_kernel_time_of_that_inference():
    for name in ("profile_tiny.json", "profile_if.json"):
        rec = parse_profile(DATA / name)
        tl = timeline_from_recording(rec)
        _, run = median_run(rec)
        assert sum(e.dur_us for e in tl.top_level) == pytest.approx(run.kernel_sum_us)
        assert tl.kernel_sum_us == pytest.approx(run.kernel_sum_us)
        assert tl.kernel_sum_us <= tl.model_run_us
        assert len(tl.events) == len(run.nodes)


def test_rows_round_trip_through_the_table_schema():
    rec = parse_profile(DATA / "profile_tiny.json")
    rows = timeline_rows(rec)
    assert set(rows[0]) == set(column_names("timeline")) - {"trial_key"}
    assert [r["exec_order"] for r in rows] == list(range(6)) and rows[0]["run_index"] == 1
    shuffled = pd.DataFrame(rows).sample(frac=1, random_state=3)
    flops = {"conv1": 2e6, "fc": 300.0}
    assert timeline_from_table(shuffled, flops) == timeline_from_recording(rec, flops)
    conv1 = timeline_from_table(shuffled, flops).events[0]
    assert (conv1.read_bytes, conv1.written_bytes, conv1.flops) == (65536 + 18432, 131072, 2e6)
    assert conv1.start_us == 6.0 and conv1.pool_share == 0.5
    assert timeline_from_table(pd.DataFrame(columns=column_names("timeline"))).events == ()


def test_a_loop_body_called_twice_splits_its_operations():
    rows = pd.DataFrame([
        {"exec_order": 0, "node_name": "loop", "op_type": "Loop", "start_us": 0.0, "dur_us": 10.0},
        {"exec_order": 1, "node_name": "body", "op_type": "MatMul", "parent": "loop", "start_us": 1.0, "dur_us": 3.0},
        {"exec_order": 2, "node_name": "body", "op_type": "MatMul", "parent": "loop", "start_us": 5.0, "dur_us": 3.0},
    ]).assign(model_run_us=12.0)
    tl = timeline_from_table(rows, {"body": 100.0})
    assert [e.flops for e in tl.events] == [None, 50.0, 50.0]
    assert tl.kernel_sum_us == 10.0 and tl.model_run_us == 12.0
    assert [e.node_name for e in counted_events(tl)] == ["body", "body"]  # the Loop's work is its body's


def test_a_matmul_reads_its_weights_though_onnxruntime_reports_no_parameter_size():
    """onnxruntime gives MatMul's weight no parameter size: a batch-1 256x256 MatMul moved 2 KiB by its figures
    and came out compute-bound, where it streams 256 KiB of weights (0.5 operations per byte, memory-bound on
    any machine). The static weight bytes stand in where the node has a static analysis."""
    rows = pd.DataFrame([
        {"exec_order": 0, "node_name": "mm", "op_type": "MatMul", "start_us": 0.0, "dur_us": 5.0,
         "activation_bytes": 1024, "parameter_bytes": 0, "output_bytes": 1024},
        {"exec_order": 1, "node_name": "conv", "op_type": "Conv", "start_us": 5.0, "dur_us": 5.0,
         "activation_bytes": 100, "parameter_bytes": 3000, "output_bytes": 100},
    ]).assign(model_run_us=10.0)
    tl = timeline_from_table(rows, {"mm": 131072.0}, {"mm": 262144.0})
    assert [e.moved_bytes for e in tl.events] == [1024 + 262144 + 1024, 100 + 3000 + 100]
    details = layer_details(tl, peak_gflops=237.0, bandwidth_gbs=54.0)  # ridge: 4.4 operations per byte
    assert details[0].bound == "memory"
    assert timeline_from_table(rows, {"mm": 131072.0}).events[0].moved_bytes == 2048  # without: as reported


def test_temporal_statistics_conserve_bytes_and_operations():
    events = (
        _event(0, "a", 0.0, 10.0, read=1000, written=500, flops=3e4),
        _event(1, "b", 3.3, 0.0, read=77, written=None, flops=None),  # zero-length: all in one bin
        _event(2, "c", 4.0, 7.5, tid=8, read=None, written=2048, flops=1e3),  # overlaps a on another thread
        _event(3, "d", 12.0, 8.0, read=None, written=None),  # no sizes reported: adds nothing
    )
    tl = Timeline(events, model_run_us=20.0, kernel_sum_us=25.5)
    for bins in (1, 7, 100):
        stats = temporal_statistics(tl, bins)
        assert len(stats.bytes_per_bin) == bins and stats.bin_us == pytest.approx(20.0 / bins)
        assert sum(stats.bytes_per_bin) == pytest.approx(stats.total_bytes) and stats.total_bytes == 1500 + 77 + 2048
        assert sum(stats.flops_per_bin) == pytest.approx(stats.total_flops) and stats.total_flops == 3.1e4
        rates = [b / stats.bin_us / 1e3 for b in stats.bytes_per_bin]
        assert stats.traffic_gbs == pytest.approx(tuple(rates))
        assert stats.peak_traffic_gbs == pytest.approx(max(rates))
    stats = temporal_statistics(tl, 20)  # 1 µs bins
    assert stats.bytes_per_bin[0] == pytest.approx(150.0)  # a alone: 1500 B over 10 µs
    assert stats.bytes_per_bin[3] == pytest.approx(150.0 + 77)  # b lands in [3, 4)
    assert stats.bytes_per_bin[5] == pytest.approx(150.0 + 2048 / 7.5)  # a and c overlap
    assert stats.mean_traffic_gbs == pytest.approx(stats.total_bytes / 20.0 / 1e3)
    assert stats.has_flops


def test_temporal_statistics_of_an_empty_timeline_and_without_operations():
    stats = temporal_statistics(Timeline((), 0.0, 0.0), 10)
    assert stats.total_bytes == 0 and stats.peak_traffic_gbs == 0 and not stats.has_flops
    stats = temporal_statistics(Timeline((_event(0, "a", 0, 4, read=40),), 4.0, 4.0), 4)
    assert not stats.has_flops and stats.compute_gflops == (0.0,) * 4


def test_layer_details_bound_on_hand_values():
    # Machine: 100 GFLOP/s, 10 GB/s -> ridge point 10 operations per byte.
    events = (
        _event(0, "gemm", 0, 50, read=1000, written=0, flops=1e6),  # 1000 op/B: compute
        _event(1, "add", 50, 5, read=800, written=400, flops=1200),  # 1 op/B: memory
        _event(2, "ridge", 55, 5, read=100, written=0, flops=1000),  # exactly at the ridge: compute
        _event(3, "shape", 60, 1, read=0, written=0, flops=0),  # nothing to do: unknown
        _event(4, "nocount", 61, 1, read=64, written=64, flops=None),  # no operation count: unknown
        _event(5, "nosize", 62, 1, read=None, written=None, flops=10.0),  # no sizes: unknown
    )
    details = layer_details(Timeline(events, 70.0, 63.0), peak_gflops=100.0, bandwidth_gbs=10.0)
    assert [d.bound for d in details] == ["compute", "memory", "compute", "unknown", "unknown", "unknown"]
    gemm, add = details[0], details[1]
    assert gemm.compute_time_us == pytest.approx(10.0) and gemm.data_time_us == pytest.approx(0.1)
    assert gemm.limit_share == pytest.approx(10.0 / 50) and gemm.achieved_gflops == pytest.approx(20.0)
    assert add.data_time_us == pytest.approx(0.12) and add.moved_bytes == 1200
    loop = (_event(0, "loop", 0, 10, op="Loop", read=4, written=4, flops=0.0),
            _event(1, "body", 1, 5, op="Add", parent="loop", read=400, written=200, flops=100.0))
    assert [d.bound for d in layer_details(Timeline(loop, 12.0, 10.0), 100.0, 10.0)] == ["unknown", "memory"]
    unprobed = layer_details(Timeline(events, 70.0, 63.0), None, 10.0)
    assert {d.bound for d in unprobed} == {"unknown"} and unprobed[1].data_time_us == pytest.approx(0.12)


def test_chrome_trace_lanes_and_nesting():
    rec = parse_profile(DATA / "profile_if.json")
    tl = timeline_from_recording(rec)
    trace = json.loads(chrome_trace_json(tl, "if <model>"))
    assert trace == chrome_trace(tl, "if <model>")
    calls = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert calls[0]["name"] == "model_run" and calls[0]["dur"] == 96.0
    assert [c["name"] for c in calls[1:]] == [e.node_name for e in tl.events]
    assert {c["tid"] for c in calls} == {8496} and {c["pid"] for c in calls} == {1}
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {8496: "thread 8496 · runs model_run"}
    then_mul = next(c for c in calls if c["name"] == "then_mul")
    assert then_mul["args"]["parent"] == "branch" and then_mul["args"]["op_type"] == "Mul"
    assert then_mul["args"]["input_shapes"] == [[1, 8, 16, 16], []]
    assert "pool_share" in then_mul["args"]


def test_chrome_trace_has_a_lane_per_thread():
    events = (_event(0, "a", 0, 5, tid=11), _event(1, "b", 1, 5, tid=22), _event(2, "c", 6, 1, tid=None))
    trace = chrome_trace(Timeline(events, 8.0, 11.0), "t")
    lanes = [e["tid"] for e in trace["traceEvents"] if e["name"] == "thread_name"]
    assert lanes == [11, 22, 0]
    assert {e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"} == {11, 22, 0}


def test_charts_are_deterministic_and_carry_untrusted_text_as_data_only():
    hostile = '<img src=x onerror=alert(1)> | [x](javascript:1)'
    events = (_event(0, hostile, 0, 5, op=hostile, pool=0.5, flops=10.0, read=10),
              _event(1, "If", 5, 5, op="If"), _event(2, "inner", 6, 2, op="Relu", parent="If"))
    tl = Timeline(events, 12.0, 10.0)
    spec = timeline_chart(tl, "timeline_1")
    assert spec == timeline_chart(tl, "timeline_1")
    values = spec["data"]["values"]  # once, at the top: the layers inherit it
    assert all("data" not in layer for layer in spec["layer"])
    assert [v["node"] for v in values] == [hostile, "If", "inner"]
    assert [v["lane"] for v in values] == ["thread 1", "thread 1", "thread 1 · sub-graph"]
    assert values[0]["pool_end_us"] == 2.5 and values[1]["pool_end_us"] is None
    assert spec["params"][0]["bind"] == "scales" and spec["params"][0]["name"] == "timeline_1_zoom"
    stats = temporal_statistics(tl, 10)
    temporal = temporal_chart(stats, 50.0, 4.0, "temporal_1")
    assert temporal == temporal_chart(stats, 50.0, 4.0, "temporal_1")
    text = json.dumps(temporal)
    assert "measured bandwidth 4" in text and "measured peak 50" in text and "peak " in text
    assert len(temporal["vconcat"]) == 2
    bare = temporal_chart(temporal_statistics(Timeline(events[1:], 12.0, 5.0), 10), None, None)
    assert len(bare["vconcat"]) == 1 and "measured" not in json.dumps(bare)


def test_a_limit_far_above_the_bins_is_named_not_drawn():
    """A 2,974 GOP/s peak above bins of a few GOP/s flattened them into the axis: beyond 3× the highest bin the
    limit is a label saying where it is, and the axis follows the bins."""
    events = (_event(0, "conv", 0, 5, op="Conv", flops=10.0, read=10),)
    stats = temporal_statistics(Timeline(events, 6.0, 5.0), 10)
    spec = temporal_chart(stats, 1e6, 1e6, "temporal_1")
    for panel, name in zip(spec["vconcat"], ("temporal_1_traffic", "temporal_1_compute"), strict=True):
        layers = {layer["name"].rsplit("_", 1)[0]: layer for layer in panel["layer"]}  # vconcat adds _0, _1
        assert f"{name}_limit" not in layers and "above this chart" in json.dumps(layers[f"{name}_limit_label"])
        top = max(v["rate"] for v in spec["data"]["values"] if v["measure"] == panel["layer"][0]["transform"][0]
                  ["filter"]["equal"])
        assert layers[f"{name}_bars"]["encoding"]["y"]["scale"]["domain"][1] < 1.2 * top
    near = temporal_chart(stats, max(stats.compute_gflops) * 2, max(stats.traffic_gbs) * 2, "temporal_1")
    assert all(any(layer["name"].rsplit("_", 1)[0].endswith("_limit") for layer in p["layer"])
               for p in near["vconcat"])
