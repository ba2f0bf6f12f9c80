"""Charts: stable explicit names, inline data, safe inline JSON, lines along the varying axis, scales."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from support.cli import json_keys
from support.results import PAYLOAD, write_results

from generator.analysis import profile as P
from generator.analysis import summaries as S
from generator.results.store import load_experiment
from generator.site import charts
from generator.site.escape import inline_json


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    results = load_experiment(write_results(tmp_path_factory.mktemp("results")))
    return S.trial_summaries(results.trials, ["fp32", "int8"]), results



def _latency_chart(trials, threshold=12.0):
    return charts.latency_throughput_chart(trials, ["fp32", "int8"], "p95", threshold)


def test_specs_are_identical_across_calls_with_explicit_names(trials):
    summaries, results = trials
    first, second = _latency_chart(summaries).to_dict(), _latency_chart(summaries).to_dict()
    assert inline_json(first) == inline_json(second)
    text = json.dumps(first)
    assert not re.search(r'"(param|view)_\d', text), "altair generated a name; name params and views"
    assert [p["name"] for p in first["params"]] == ["version_pick", "latency_threshold"]
    assert {layer["name"] for layer in first["layer"]} >= {"lines", "points", "threshold", "sweet_spots"}


def test_data_is_inline_and_the_spec_has_no_urls(trials):
    summaries, results = trials
    spec = _latency_chart(summaries).to_dict()
    assert "url" not in json_keys(spec)
    points = next(layer for layer in spec["layer"] if layer["name"] == "points")["data"]["values"]
    assert len(points) == 7  # every ok trial, not the failed one
    op = charts.op_time_chart(P.op_type_times(results.nodes, summaries[0].trial_key))
    assert "url" not in json_keys(op.to_dict())


def test_lines_join_configurations_that_differ_in_batch_only(trials):
    summaries, _ = trials
    assert charts.line_axis(summaries) == "batch"
    spec = _latency_chart(summaries).to_dict()
    lines = next(layer for layer in spec["layer"] if layer["name"] == "lines")
    assert lines["encoding"]["detail"]["field"] == "series" and lines["encoding"]["order"]["field"] == "order"
    series = {}
    for record in lines["data"]["values"]:
        series.setdefault(record["series"], []).append((record["batch"], record["threads"]))
    # fp32 t1, fp32 t2, int8 t1 join batch 1 and 8; int8 t2 has only batch 1 (its batch 8 failed).
    assert sorted(len(v) for v in series.values()) == [1, 2, 2, 2]
    assert all(len({threads for _, threads in v}) == 1 for v in series.values())


def test_no_lines_axis_when_only_threads_vary_falls_back_to_threads(trials):
    summaries, _ = trials
    batch_one = [t for t in summaries if t.batch == 1]
    assert charts.line_axis(batch_one) == "threads"
    assert charts.line_axis(batch_one[:1]) is None


def test_log_scale_only_for_wide_ranges(trials):
    summaries, _ = trials
    spec = _latency_chart(summaries).to_dict()
    points = next(layer for layer in spec["layer"] if layer["name"] == "points")
    assert points["encoding"]["y"]["scale"].get("type") != "log"  # 0.69 .. 13.5 ms
    wide = [dataclasses.replace(t, latency_headline_ms=t.latency_headline_ms * (100 if t.batch == 8 else 1))
            for t in summaries if t.ok]
    spec = charts.latency_throughput_chart(wide, ["fp32", "int8"], "p95").to_dict()
    points = next(layer for layer in spec["layer"] if layer["name"] == "points")
    assert points["encoding"]["y"]["scale"]["type"] == "log"


def test_no_threshold_means_no_rule_or_rings(trials):
    summaries, _ = trials
    spec = charts.latency_throughput_chart(summaries, ["fp32", "int8"], "p95").to_dict()
    assert {layer["name"] for layer in spec["layer"]} == {"lines", "points"}


def test_inline_json_cannot_close_its_script_element():
    value = {"name": PAYLOAD + "</script><!-- & \u2028"}
    text = inline_json(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert "\n" not in text
    assert json.loads(text) == value


def test_chart_block_embeds_the_spec_after_its_div(trials):
    summaries, _ = trials
    block = charts.chart_block("chart-x", _latency_chart(summaries))
    div, script = block.split("\n")
    assert div == '<div class="perfsite-chart" data-chart="chart-x"></div>'
    assert script.startswith('<script type="application/json" id="chart-x">[{')
    assert script.endswith("}]</script>")
    (spec,) = json.loads(script.split(">", 1)[1].removesuffix("</script>"))
    assert spec == _latency_chart(summaries).to_dict()
    with pytest.raises(ValueError):
        charts.chart_block('x" onload="alert(1)', _latency_chart(summaries))


def test_a_nan_or_infinite_figure_reaches_a_page_as_missing_not_a_traceback(tmp_path):
    """NaN kernel times in a damaged nodes file, or 1.7e308 items/s times a chart's margin, made `build` fail
    in json.dumps; JSON has no such numbers, so the page shows them missing."""
    assert inline_json({"dur": float("nan"), "ips": [float("inf"), 2.0]}) == '{"dur":null,"ips":[null,2.0]}'
    experiment = write_results(tmp_path / "results")
    results = load_experiment(experiment)
    results.nodes["dur_mean_us"] = float("nan")
    summaries = S.trial_summaries(results.trials, ["fp32", "int8"])
    chart = charts.op_time_chart(P.op_type_times(results.nodes, summaries[0].trial_key))
    assert "NaN" not in inline_json(chart.to_dict())


def test_chart_dict_is_altairs_dict_with_the_inline_data_put_back():
    """generator.site.chart_spec converts a chart without altair walking its records: the same dict as
    altair's, for layered and concatenated charts with data at any level, and altair's own route for records
    that are not plain JSON (a numpy number)."""
    import altair as alt
    import numpy as np

    from generator.site.chart_spec import chart_dict

    rows = [{"x": i, "y": i * 1.5, "label": f"n{i}", "flag": i % 2 == 0, "gap": None} for i in range(50)]
    own = alt.Chart(alt.Data(values=[{"x": 1, "y": 2.0}])).mark_rule().encode(x="x:Q")
    layered = alt.layer(alt.Chart().mark_point().encode(x="x:Q", y="y:Q").properties(name="points"),
                        own.properties(name="rule"), data=alt.Data(values=rows)).properties(name="l")
    numpy_rows = alt.Chart(alt.Data(values=[{"x": np.int64(3), "y": 1.0}])).mark_bar().encode(x="x:Q")
    for chart in (layered, alt.vconcat(layered, numpy_rows).properties(name="v"), numpy_rows):
        with charts.unvalidated():
            assert chart_dict(chart) == chart.to_dict(validate=False)
    assert layered.data.values is rows  # the chart itself is left as it was


def test_inline_rows_are_shared_by_altairs_copies_and_convert_as_alt_data():
    import altair as alt

    from generator.site.chart_spec import chart_dict, inline_rows

    rows = [{"x": i, "y": i / 3} for i in range(20)]
    with charts.unvalidated():
        mine = alt.layer(alt.Chart().mark_point().encode(x="x:Q", y="y:Q"), data=inline_rows(rows)).properties(name="c")
        theirs = alt.layer(alt.Chart().mark_point().encode(x="x:Q", y="y:Q"), data=alt.Data(values=rows)).properties(
            name="c")
        assert mine.copy(deep=True).data is mine.data  # not copied row by row
        assert chart_dict(mine) == theirs.to_dict(validate=False)
