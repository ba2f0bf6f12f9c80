"""Vega-Lite specs of one inference: the timeline (a lane per thread) and its temporal statistics.

Pure functions from timeline records to Vega-Lite dicts (built with altair, data inline, every view and
parameter named so that the JSON is byte-identical for the same results; see generator/site/charts.py).
Node names and op types are untrusted text: they only ever go into the charts' data, which Vega renders as
text.
"""

from __future__ import annotations

import json
import math
from typing import Any

import altair as alt

from generator.site.chart_spec import Chart, chart_dict, inline_rows
from generator.site.formatting import shapes
from generator.timeline.model import Timeline, TimelineEvent
from generator.timeline.stats import TemporalStats
from generator.timeline.trace import thread_lanes
from generator.timeline.view import compute_rate_title

LANE_STEP_PX = 30
POOL_COLOR = "#212121"
LIMIT_COLOR = "#c62828"
LIMIT_SHOWN_WITHIN = 3.0  # a limit further above the highest bin is named, not drawn (it would flatten the bars)
TRAFFIC_COLOR = "#3f51b5"
COMPUTE_COLOR = "#ff9800"
# A timeline draws at most this many calls, the longest: a 20,000-node model's 20,000 bars were 0.85 MB of
# data per chart and most were narrower than a pixel. The trace file keeps every call.
TIMELINE_CALLS = 1000
TRAFFIC = "Memory traffic (GB/s)"


def _round(value: float | None, digits: int = 6) -> float | None:
    """Significant-digit rounding, as generator.site.charts does (not imported from there: the site package
    imports this module)."""
    if value is None or value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def lane_label(rank: int, depth: int) -> str:
    """``thread 1`` for a thread's top-level calls; ``thread 1 · sub-graph`` (then ``· sub-graph 2``, ...)
    for the calls nested in its If/Loop/Scan calls, drawn in a thinner row right under it."""
    base = f"thread {rank + 1}"
    if depth == 0:
        return base
    return f"{base} · sub-graph" + (f" {depth}" if depth > 1 else "")


def _record(tl: Timeline, e: TimelineEvent, rank: int) -> dict[str, Any]:
    depth = tl.depth(e)
    share = e.pool_share
    return {
        "exec_order": e.exec_order, "node": e.node_name, "op_type": e.op_type, "parent": e.parent or "—",
        "lane": lane_label(rank, depth), "nested": depth > 0, "thread_id": e.thread_id,
        "start_us": _round(e.start_us), "end_us": _round(e.end_us), "dur_us": _round(e.dur_us),
        "pool_share": _round(share, 4) if share is not None else None,
        "pool_end_us": _round(e.start_us + e.dur_us * share) if share else None,
        "inputs": _shapes_text(e.input_shapes), "outputs": _shapes_text(e.output_shapes),
        "provider": e.provider or "—",
    }


def _shapes_text(shapes_json: str) -> str:
    """A call's tensor shapes as the pages write them (`1×16×16×48, scalar`), not their JSON
    (`[[1,16,16,48],[]]` in the tooltip)."""
    try:
        found = json.loads(shapes_json)
    except (TypeError, ValueError):
        return "—"
    return (shapes(found) or "—") if isinstance(found, list) else "—"


def drawn_events(tl: Timeline) -> list[TimelineEvent]:
    """The calls a timeline chart draws: all of them, or the TIMELINE_CALLS longest (in execution order)."""
    if len(tl.events) <= TIMELINE_CALLS:
        return list(tl.events)
    longest = sorted(range(len(tl.events)), key=lambda i: -tl.events[i].dur_us)[:TIMELINE_CALLS]
    return [tl.events[i] for i in sorted(longest)]


def timeline_records(tl: Timeline) -> tuple[list[dict[str, Any]], list[str]]:
    """One record per drawn call (drawn_events), and the lanes in drawing order (each thread, then its
    sub-graph rows)."""
    ranks = {t: i for i, t in enumerate(thread_lanes(tl))}
    records = [_record(tl, e, ranks[e.thread_id]) for e in drawn_events(tl)]
    depths = sorted({(ranks[e.thread_id], tl.depth(e)) for e in tl.events})
    return records, [lane_label(rank, depth) for rank, depth in depths]


def _timeline_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("node:N", title="Node"), alt.Tooltip("op_type:N", title="Op type"),
        alt.Tooltip("parent:N", title="Inside"), alt.Tooltip("lane:N", title="Lane"),
        alt.Tooltip("start_us:Q", title="Start (µs)", format=",.1f"),
        alt.Tooltip("dur_us:Q", title="Duration (µs)", format=",.4~r"),
        alt.Tooltip("inputs:N", title="Input shapes"), alt.Tooltip("outputs:N", title="Output shapes"),
        alt.Tooltip("pool_share:Q", title="Work on pool threads", format=".0%"),
        alt.Tooltip("provider:N", title="Provider"),
    ]


def timeline_chart(tl: Timeline, name: str = "timeline") -> dict[str, Any]:
    """A lane per thread that ran calls, a bar per call from its start to its end, coloured by op type;
    sub-graph calls in a thinner row under their thread's lane. The dark stripe through a bar is the share
    of the call's parallel work the intra-op pool's other threads ran (onnxruntime's scheduling statistics:
    the pool threads are not traced, so they get no lane of their own). Drag to pan, scroll to zoom (x)."""
    records, lanes = timeline_records(tl)
    x = alt.X("start_us:Q", title="Time from model_run start (µs)",
              scale=alt.Scale(domain=[0, _round(tl.span_us) or 1], nice=False))
    y = alt.Y("lane:N", title=None, sort=lanes, scale=alt.Scale(domain=lanes))
    color = alt.Color("op_type:N", title="Op type", scale=alt.Scale(scheme="tableau20"),
                      legend=alt.Legend(orient="bottom", columns=6, symbolLimit=0, labelLimit=160))
    zoom = alt.selection_interval(name=f"{name}_zoom", bind="scales", encodings=["x"])
    base = Chart()  # the records are the layer's data, once, inherited by every layer
    tooltip = _timeline_tooltip()
    top = base.transform_filter("!datum.nested").mark_bar(height={"band": 0.8}).encode(
        x=x, x2=alt.X2("end_us:Q"), y=y, color=color, tooltip=tooltip).add_params(zoom)
    nested = base.transform_filter("datum.nested").mark_bar(height={"band": 0.45}).encode(
        x=x, x2=alt.X2("end_us:Q"), y=y, color=color, tooltip=tooltip)
    pool = base.transform_filter("datum.pool_end_us != null").mark_bar(
        height={"band": 0.16}, color=POOL_COLOR, opacity=0.6).encode(x=x, x2=alt.X2("pool_end_us:Q"), y=y,
                                                                     tooltip=tooltip)
    layers = [top.properties(name=f"{name}_calls"), nested.properties(name=f"{name}_subgraph"),
              pool.properties(name=f"{name}_pool")]
    # A fixed height from the lane count, not a step: a step height with a container width makes Vega-Lite
    # warn in the console ("Dropping fit-y").
    chart = alt.layer(*layers, data=inline_rows(records),
                      name=name, width="container", height=LANE_STEP_PX * max(1, len(lanes)))
    return chart_dict(chart)  # not validated: the tests validate it (generator.site.charts.chart_block says why)


def temporal_records(stats: TemporalStats, integer: bool = False) -> list[dict[str, Any]]:
    """Long format, one record per bin and series (compute only when operation counts are known; `integer`: a
    mostly-integer model, whose compute series is integer operations, not FLOPs)."""
    series = [(TRAFFIC, stats.traffic_gbs, stats.bytes_per_bin, "bytes")]
    if stats.has_flops:
        unit = "operations" if integer else "flops"
        series.append((compute_rate_title(integer), stats.compute_gflops, stats.flops_per_bin, unit))
    return [{"measure": label, "start_us": _round(start), "end_us": _round(start + stats.bin_us),
             "rate": _round(rates[i]), "amount": _round(amounts[i]), "unit": unit}
            for label, rates, amounts, unit in series for i, start in enumerate(stats.bin_start_us)]


def _panel(stats: TemporalStats, records: list[dict[str, Any]], label: str, limit: float | None,
           limit_text: str, color: str, name: str) -> alt.LayerChart:
    peak_i = stats.peak_bin("traffic" if label == TRAFFIC else "compute")
    peak = records[peak_i] if label == TRAFFIC else records[len(stats.bin_start_us) + peak_i]
    x = alt.X("start_us:Q", title="Time from model_run start (µs)",
              scale=alt.Scale(domain=[0, _round(stats.span_us) or 1], nice=False))
    top = max((r["rate"] or 0.0 for r in records if r["measure"] == label), default=0.0)
    # The machine's limit is drawn only when it is within LIMIT_SHOWN_WITHIN × the highest bin: a 2,974 GOP/s
    # peak above bins of 50 flattened them into the axis. Otherwise the chart says where the limit is.
    shown = bool(limit) and top > 0 and limit <= LIMIT_SHOWN_WITHIN * top
    ceiling = max(top, limit if shown else 0.0) * 1.12 or 1.0
    y = alt.Y("rate:Q", title=label, scale=alt.Scale(domain=[0, _round(ceiling)], nice=False))
    # No data of its own: the bins are the concatenation's data (one dataset, for the page's CSV/JSON export).
    bars = Chart().transform_filter(alt.FieldEqualPredicate(field="measure", equal=label))
    bars = bars.mark_bar(color=color, binSpacing=0).encode(x=x, x2=alt.X2("end_us:Q"), y=y, y2=alt.Y2Datum(0), tooltip=[
        alt.Tooltip("start_us:Q", title="From (µs)", format=",.1f"),
        alt.Tooltip("end_us:Q", title="To (µs)", format=",.1f"),
        alt.Tooltip("rate:Q", title=label, format=",.4~r"), alt.Tooltip("amount:Q", title="Amount", format=",.4~r"),
        alt.Tooltip("unit:N", title="Unit")])
    mark = {"start_us": peak["start_us"], "rate": peak["rate"], "text": f"peak {peak['rate']:,.4g}"}
    label_mark = Chart(inline_rows([mark])).mark_text(align="left", dx=4, dy=-6, fontSize=11).encode(
        x=x, y=y, text=alt.Text("text:N"))
    layers = [bars.properties(name=f"{name}_bars"), label_mark.properties(name=f"{name}_peak")]
    if limit and not shown:
        # Every bin is 0 when no call moved data or did any counted work (a scalar Identity, Shape, Size).
        above = f"{limit / top:,.0f}× the highest bin" if top > 0 else "every bin is 0"
        off = {"text": f"{limit_text} {limit:,.4g}: {above}, above this chart"}
        layers.append(Chart(inline_rows([off])).mark_text(
            color=LIMIT_COLOR, align="right", baseline="top", x="width", y=2, dx=-4, fontSize=11,
        ).encode(text=alt.Text("text:N")).properties(name=f"{name}_limit_label"))
    if shown:
        rule_data = inline_rows([{"rate": _round(limit), "text": f"{limit_text} {limit:,.4g}"}])
        rule = Chart(rule_data).mark_rule(color=LIMIT_COLOR, strokeDash=[6, 4]).encode(y=y)
        text = Chart(rule_data).mark_text(color=LIMIT_COLOR, align="left", baseline="bottom", dx=4, dy=-2,
                                              x=0).encode(y=y, text=alt.Text("text:N"))
        layers += [rule.properties(name=f"{name}_limit"), text.properties(name=f"{name}_limit_label")]
    return alt.layer(*layers, name=name, width="container", height=180)


def temporal_chart(stats: TemporalStats, peak_gflops: float | None, bandwidth_gbs: float | None,
                   name: str = "temporal", integer: bool = False) -> dict[str, Any]:
    """Estimated memory traffic (GB/s) over the inference and, when operation counts are known, the compute
    rate (GFLOP/s; INT8 GOP/s for a mostly-integer model, `integer`, as the page's table says), one bar per
    time bin, each with its peak labelled and the machine's measured limit (the bandwidth, the compute peak,
    `peak_gflops`) as a dashed rule when it was probed."""
    records = temporal_records(stats, integer)
    panels = [_panel(stats, records, TRAFFIC, bandwidth_gbs, "measured bandwidth", TRAFFIC_COLOR,
                     f"{name}_traffic")]
    if stats.has_flops:
        panels.append(_panel(stats, records, compute_rate_title(integer), peak_gflops, "measured peak", COMPUTE_COLOR,
                             f"{name}_compute"))
    chart = alt.vconcat(*panels, data=inline_rows(records)).properties(name=name)
    return chart_dict(chart)  # not validated: the tests validate it (generator.site.charts.chart_block says why)
