"""Compare-page charts: explicit names, inline data, the threshold slider, legend toggles, shared colours.

What the parameters do in a browser (the sweet spot following the slider, a version hidden by a legend click)
is tested in tests/browser/test_compare_browser.py; here, the specs themselves.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from support.cli import json_keys
from support.compare import sample_comparison

from generator.site import charts
from generator.site import charts_compare as CC
from generator.site.escape import inline_json

CHARTS = {
    "results": CC.results_chart, "time": CC.inference_time_chart, "layer_types": CC.layer_type_chart,
    "pareto": CC.pareto_chart, "precision": CC.precision_chart,
}


def _layer(spec: dict, name: str) -> dict:
    return next(layer for layer in spec["layer"] if layer.get("name") == name)



@pytest.mark.parametrize("kind", sorted(CHARTS))
def test_specs_are_deterministic_named_and_inline(kind):
    first, second = CHARTS[kind](sample_comparison()).to_dict(), CHARTS[kind](sample_comparison()).to_dict()
    assert inline_json(first) == inline_json(second)
    text = json.dumps(first)
    assert not re.search(r'"(param|view)_\d', text), "altair generated a name; name params and views"
    assert "url" not in json_keys(first)


def test_results_chart_has_the_threshold_control_the_legend_toggle_and_every_layer():
    spec = CC.results_chart(sample_comparison()).to_dict()
    threshold = next(p for p in spec["params"] if p["name"] == "latency_threshold")
    assert threshold["value"] == 5.0 and "bind" not in threshold  # perfsite.js draws the control
    meta = spec["usermeta"]["perfsiteThreshold"]
    assert meta["min"] <= 1.1 / 2 and meta["max"] >= 6.5 and meta["value"] == meta["spec"] == 5.0
    hide = next(p for p in spec["params"] if p["name"] == "version_hide")
    assert hide["bind"] == "legend" and hide["select"]["toggle"] == "true" and hide["views"] == ["lines"]
    names = {layer["name"] for layer in spec["layer"]}
    assert names == {"lines", "sweet_spot", "points", "a_b", "threshold", "threshold_label", "no_sweet_spot"}
    assert spec["config"]["legend"]["unselectedOpacity"] == 1  # hidden entries are labelled instead


def test_results_chart_marks_a_and_b_and_joins_configurations_along_batch():
    spec = CC.results_chart(sample_comparison()).to_dict()
    records = spec["data"]["values"]
    assert {r["role"] for r in records} == {"A", "B", ""}
    assert {r["key"]: r["role"] for r in records if r["role"]} == {"fp32-1": "A", "int8-1": "B"}
    series = {}
    for r in records:
        series.setdefault(r["series"], []).append(r["order"])
    assert sorted(sorted(v) for v in series.values()) == [[1, 4], [1, 4]]
    assert all("batch" not in s.split(" · ", 1)[1] for s in series)  # the line's own axis is not in its name


def test_sweet_spot_is_recomputed_from_the_slider_like_the_analysis():
    spot = _layer(CC.results_chart(sample_comparison()).to_dict(), "sweet_spot")
    filters = [t["filter"] for t in spot["transform"] if "filter" in t]
    assert {"not": {"param": "version_hide", "empty": False}} in filters
    assert "datum.latency_ms <= latency_threshold" in filters
    window = next(t for t in spot["transform"] if "window" in t)
    # Highest throughput, ties to the lower latency, then the trial key: generator.analysis's order.
    assert [(s["field"], s["order"]) for s in window["sort"]] == [
        ("throughput_ips", "descending"), ("latency_ms", "ascending"), ("key", "ascending")]


def test_the_latency_axis_follows_the_data_and_the_threshold_rule_is_clipped():
    c = sample_comparison()
    spec = CC.results_chart(c).to_dict()
    y = _layer(spec, "points")["encoding"]["y"]["scale"]
    latencies = [p.latency_ms for p in c.points]
    low, high = y["domain"]
    # Every point inside the frame with a margin for its own size; the threshold does not stretch the axis.
    assert low < min(latencies) and high > max(latencies) and high < 2 * max(latencies)
    assert _layer(spec, "threshold")["mark"]["clip"] is True and _layer(spec, "threshold_label")["mark"]["clip"]


def test_threshold_control_covers_every_latency_and_the_threshold_on_a_log_range():
    meta = charts.threshold_meta([0.42, 3.3, 17.9], 25.0, "p90")["perfsiteThreshold"]
    assert meta["min"] == 0.21 and meta["max"] == 50.0 and meta["value"] == 25.0


def test_without_a_threshold_the_control_starts_at_its_top():
    c = sample_comparison(threshold_ms=None)
    meta = CC.results_chart(c).to_dict()["usermeta"]["perfsiteThreshold"]
    threshold = next(p for p in CC.results_chart(c).to_dict()["params"] if p["name"] == "latency_threshold")
    assert threshold["value"] == meta["max"] == meta["value"] and meta["spec"] is None


def test_versions_keep_one_colour_in_every_chart():
    c = sample_comparison(versions=("int8-dyn", "fp32", "int8"))
    results = _layer(CC.results_chart(c).to_dict(), "points")["encoding"]["color"]["scale"]
    colors = dict(zip(results["domain"], results["range"], strict=True))
    time = CC.inference_time_chart(c).to_dict()
    bars = _layer(time, "time_bars")["encoding"]["color"]["scale"]
    assert dict(zip(bars["domain"], bars["range"], strict=True)) == {"fp32": colors["fp32"], "int8": colors["int8"]}
    assert colors == CC.version_colors(["int8-dyn", "fp32", "int8"])


def test_inference_time_switches_metric_with_a_radio_and_draws_intervals():
    spec = CC.inference_time_chart(sample_comparison()).to_dict()
    metric = spec["params"][0]
    assert metric["name"] == "metric" and metric["value"] == "throughput"
    assert metric["bind"]["input"] == "radio" and metric["bind"]["options"] == ["throughput", "latency"]
    assert {"filter": "datum.metric == metric"} in spec["transform"]
    rows = {(r["metric"], r["version"]): r for r in spec["data"]["values"]}
    assert rows[("latency", "int8")]["low"] == 1.05 and rows[("throughput", "fp32")]["high"] == 520.0
    assert _layer(spec, "time_ci")["encoding"]["y2"]["field"] == "high"


def test_layer_types_can_be_taken_out_of_the_distribution():
    spec = CC.layer_type_chart(sample_comparison()).to_dict()
    assert spec["params"][0]["name"] == "op_type_hide" and spec["params"][0]["bind"] == "legend"
    assert {"filter": {"not": {"param": "op_type_hide", "empty": False}}} in spec["transform"]
    assert spec["encoding"]["color"]["scale"]["domain"] == ["Conv", "Gemm", "Relu"]  # most time first
    shares = next(t for t in spec["transform"] if "joinaggregate" in t)
    assert shares["groupby"] == ["run"]  # shares are of each version's shown time


def test_pareto_flags_the_frontier_and_sizes_it_by_model_size():
    spec = CC.pareto_chart(sample_comparison()).to_dict()
    records = spec["data"]["values"]
    assert {r["key"] for r in records if r["frontier"]} == {"int8-1", "int8-4"}
    assert {r["model_mib"] for r in records if r["version"] == "fp32"} == {2.0}
    size = _layer(spec, "frontier_points")["encoding"]["size"]
    assert size["field"] == "model_mib"
    # The size legend shows the frontier's own sizes, not round values none of the points has.
    assert size["legend"]["values"] == sorted({r["model_mib"] for r in records if r["frontier"]})


def test_a_trend_of_many_configurations_colours_versions_and_highlights_one_configuration():
    from generator.site.trend_page import TrendPoint, trend_chart

    points = [TrendPoint(f"{c:040x}", "2026-11-01", "s", c, "e", version, f"b{b} t1 c1", "p90", 1.0 + c + b, 100.0,
                         False) for c in range(3) for version in ("fp32", "int8", "fp16") for b in range(12)]
    spec = trend_chart(points, "latency", "trend_latency").to_dict()
    lines = spec["layer"][0]
    assert lines["encoding"]["color"]["field"] == "version" and lines["encoding"]["detail"]["field"] == "line"
    assert lines["encoding"]["color"]["legend"]["symbolLimit"] == 0
    assert len(set(lines["encoding"]["color"]["scale"]["range"])) == 3  # one colour per version, none repeated
    pick = next(p for p in spec["params"] if p["name"] == "trend_latency_series")
    assert len(pick["bind"]["options"]) == 1 + 36  # every configuration can be highlighted


def test_a_trend_whose_trial_reported_p95_for_p99_does_not_compare_the_two():
    """A trial with too few requests for p99 stores p95 as its headline (quick mode, a short CI budget). The
    trend drew it on the p99 line and its change table took p99 now / p95 then as a change of latency."""
    from generator.diff.sources import Commit
    from generator.site.trend_page import TrendPoint, series_changes, trend_chart, trend_page

    def point(position: int, latency: float, stand_in: str | None) -> TrendPoint:
        return TrendPoint(f"{position:040x}", "2026-11-01", "s", position, "e", "fp32", "b1 t1 c1", "p99", latency,
                          100.0, False, stand_in=stand_in)

    mixed = [point(0, 1.0, "p95"), point(1, 1.3, None)]
    (change,) = series_changes(mixed)
    assert not change.comparable and change.first.reported == "p95" and change.last.reported == "p99"
    commits = [Commit(f"{n:040x}", "2026-11-01", "s") for n in (0, 1)]
    row = next(line for line in trend_page(commits, mixed, 10).markdown.splitlines() if line.startswith("| e |"))
    assert "| 1.00 &#40;p95&#41; | 1.30 &#40;p99&#41; | — &#40;not the same percentile&#41; |" in row
    spec = trend_chart(mixed, "latency", "t").to_dict()
    assert spec["layer"][0]["encoding"]["y"]["title"] == "Latency p99 (p95 below 460 requests) (ms)"
    assert {t["field"] for t in spec["layer"][0]["encoding"]["tooltip"]} >= {"percentile"}
    assert len({r["line"] for r in spec["data"]["values"]}) == 2  # no line joins a p95 point to a p99 one
    (same,) = series_changes([point(0, 1.0, None), point(1, 1.3, None)])
    assert same.comparable and abs(same.latency_ratio - 1.3) < 1e-12


def test_precision_chart_orders_precisions():
    spec = CC.precision_chart(sample_comparison()).to_dict()
    assert spec["encoding"]["color"]["scale"]["domain"] == ["FP32", "INT8", "mixed"]
    assert {(r["version"], r["precision"]) for r in spec["data"]["values"]} >= {("int8", "INT8"), ("fp32", "FP32")}


def test_config_text_lists_every_axis_in_order():
    assert CC.config_text({"batch": 1, "spinning": False, "seq_len": 128}) == "batch 1 · spinning off · seq len 128"


def test_line_axis_falls_back_when_batch_does_not_vary():
    points = [p for p in sample_comparison().points if p.config["batch"] == 1]
    assert CC.line_axis(points) is None
    threads = [dataclasses.replace(p, config={**p.config, "threads": t}) for p in points for t in (1, 2)]
    assert CC.line_axis(threads) == "threads"
