"""Charts of a compare page: pure functions from a Comparison (generator.analysis.records_compare) to altair
charts. Interactivity lives in the Vega-Lite spec itself (parameters), so the static page needs no server.

Every parameter and view is named explicitly (deterministic JSON, see generator.site.charts). Versions keep
one colour across the page: the i-th version of the experiment gets the i-th colour of PALETTE in every chart,
so A and B in the inference-time chart look like A and B in the results chart.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from generator.analysis.records_compare import Comparison, ConfigPoint, LayerTypeRow, VersionTiming
from generator.site.chart_spec import Chart, inline_rows
from generator.site.charts import (
    LINE_AXES,
    LOG_SCALE_RATIO,
    NOISE_SHAPES,
    THRESHOLD_COLOR,
    THRESHOLD_TEXT,
    _round,
    data_domain,
    threshold_meta,
)

# Vega-Lite's default categorical scheme (tableau10), written out so that colours can be assigned per version.
PALETTE = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
           "#bab0ac")
SWEET_SPOT_COLOR = "#1565c0"
# The ink of labels, whiskers and frontier lines: perfsite.js swaps this exact colour for a light one when the
# reader chose the dark scheme.
INK = "#1b1e23"
# Legend-bound selections below mean "hidden": clicking an entry hides it, clicking again shows it. Vega-Lite
# fades the legend entries *not* selected, the opposite here, so charts switch that fading off (config
# legend.unselectedOpacity 1) and mark the hidden entries in their label instead.
_HIDDEN_LABEL = ("datum.label + ({name} && {name}.{field} && indexof({name}.{field}, datum.value) >= 0 "
                 "? ' (hidden)' : '')")


def version_colors(versions: list[str]) -> dict[str, str]:
    """Colour of each version, by its position in the experiment's version order."""
    return {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(versions)}


def _versions(c: Comparison) -> list[str]:
    """The experiment's versions in spec order (those with points, A and B included in any case)."""
    ordered = list(c.versions) or list(dict.fromkeys(p.version for p in c.points))
    return ordered + [v for v in (c.a, c.b) if v not in ordered]


def _hiding_legend(name: str, field: str, title: str) -> alt.Legend:
    """A legend whose clicks hide entries (selection `name` over `field`), hidden ones labelled so."""
    return alt.Legend(title=title, labelExpr=_HIDDEN_LABEL.format(name=name, field=field), labelLimit=260)


def _shown(name: str) -> alt.LogicalNotPredicate:
    """A filter keeping rows whose legend entry was not clicked away (nothing clicked: every row)."""
    return alt.LogicalNotPredicate(**{"not": alt.ParameterPredicate(param=name, empty=False)})


def config_text(config: dict[str, Any]) -> str:
    """Every axis of a configuration, in a stable order: `batch 1 · threads 2 · ... · seq_len 128`."""
    def value(v: Any) -> str:
        return ("on" if v else "off") if isinstance(v, bool) else str(v)

    return " · ".join(f"{k.replace('_', ' ')} {value(v)}" for k, v in config.items())


def line_axis(points: list[ConfigPoint]) -> str | None:
    """The first of LINE_AXES taking more than one value among the points (as charts.line_axis for trials)."""
    return next((a for a in LINE_AXES if len({p.config.get(a) for p in points}) > 1), None)


def _series(point: ConfigPoint, axis: str | None) -> str:
    others = [f"{k} {v}" for k, v in point.config.items() if k != axis]
    return " · ".join([point.version, *others])


def _point_record(point: ConfigPoint, axis: str | None) -> dict[str, Any]:
    along = point.config.get(axis) if axis else None  # LINE_AXES are counts: the line follows their value
    return {
        "version": point.version, "series": _series(point, axis),
        "order": along if isinstance(along, int) else point.order,
        "configuration": config_text(point.config), "label": point.config_label,
        "latency_ms": _round(point.latency_ms), "throughput_ips": _round(point.throughput_ips),
        "noise": "uncertain" if point.uncertain else "ok", "role": (point.role or "").upper(), "key": point.trial_key,
    }


def _latency_scale(latencies: list[float]) -> alt.Scale:
    """Follows the data (charts.data_domain), fixed so that moving the threshold rule never rescales the chart."""
    positive = [v for v in latencies if v and v > 0]
    log = bool(positive) and max(positive) / min(positive) > LOG_SCALE_RATIO
    return alt.Scale(type="log" if log else "linear", domain=data_domain(positive, log), nice=False, zero=False)


def _results_tooltip(percentile: str) -> list[alt.Tooltip]:
    return [
        alt.Tooltip("version:N", title="Version"), alt.Tooltip("configuration:N", title="Configuration"),
        alt.Tooltip("latency_ms:Q", title=f"Latency {percentile} (ms)", format=",.4~r"),
        alt.Tooltip("throughput_ips:Q", title="Throughput (items/s)", format=",.4~r"),
        alt.Tooltip("noise:N", title="Noise"),
    ]


def results_chart(c: Comparison) -> alt.LayerChart:
    """Every ok trial of every version: latency at the spec's percentile against throughput.

    A line per version (and per value of the other axes) joins the configurations along the first varying
    axis of LINE_AXES; A and B are labelled; the threshold is a dashed rule driven by a slider (parameter
    `latency_threshold`); the sweet spot (the highest throughput within the threshold among the versions
    shown, ties to the lower latency, then the trial key, as generator.analysis does) is recomputed by
    Vega-Lite from the slider and drawn as a filled circle. Clicking a legend entry hides or shows a version.
    """
    points = list(c.points)
    axis = line_axis(points)
    records = [_point_record(p, axis) for p in sorted(points, key=lambda p: (p.version, p.order, p.trial_key))]
    latencies = [p.latency_ms for p in points]
    meta = threshold_meta(latencies, c.threshold_ms, c.percentile)
    versions = _versions(c)
    colors = version_colors(versions)
    # Set by the page's threshold control (perfsite.js: a log slider and a typed value, text and table follow).
    threshold = alt.param(name="latency_threshold", value=meta["perfsiteThreshold"]["value"])
    hide = alt.selection_point(name="version_hide", fields=["version"], bind="legend", toggle="true")
    x = alt.X("throughput_ips:Q", title="Throughput (items/s)", axis=alt.Axis(tickCount=8),
              scale=_plain_scale([p.throughput_ips for p in points]))
    y = alt.Y("latency_ms:Q", title=f"Latency {c.percentile} (ms)", scale=_latency_scale(latencies))
    legend = _hiding_legend("version_hide", "version", "Version (click to hide)")
    color = alt.Color("version:N", sort=versions, legend=legend,
                      scale=alt.Scale(domain=versions, range=[colors[v] for v in versions]))
    layers = [
        _lines(x, y, color, hide), _sweet_spot_layer(x, y), _points_layer(x, y, color, c.percentile),
        _role_labels(x, y), *_threshold_rule(y), _nothing_within_threshold(),
    ]
    chart = alt.layer(*layers, data=inline_rows(records)).add_params(threshold)
    return chart.configure_legend(unselectedOpacity=1).properties(
        name="compare_results", width="container", height=400, usermeta=meta,
        title=alt.Title(f"Latency ({c.percentile}) vs throughput, every configuration of every version",
                        anchor="start"),
    )


def _lines(x, y, color, hide) -> alt.Chart:
    # The legend-bound selection lives on this layer; hidden versions' lines become transparent (the other
    # layers filter them out).
    hidden = alt.OpacityValue(**alt.condition(alt.param(name="version_hide", empty=False), alt.value(0.0),
                                              alt.value(1.0)))  # a channel object: see charts.py
    return Chart().mark_line(strokeWidth=1.5).encode(
        x=x, y=y, color=color, detail=alt.Detail("series:N"), order=alt.Order("order:Q"), opacity=hidden,
    ).add_params(hide).properties(name="lines")


def _points_layer(x, y, color, percentile: str) -> alt.Chart:
    return Chart().mark_point(filled=True, size=60, opacity=1).encode(
        x=x, y=y, color=color, tooltip=_results_tooltip(percentile),
        shape=alt.Shape("noise:N", title="Interval", scale=NOISE_SHAPES),  # as on the experiment page
    ).transform_filter(_shown("version_hide")).properties(name="points")


def _sweet_spot_layer(x, y) -> alt.Chart:
    spot = Chart().mark_point(filled=True, size=420, opacity=1, shape="circle", color=SWEET_SPOT_COLOR,
                                  stroke="#0d2b57", strokeWidth=1.5)
    spot = spot.transform_filter(_shown("version_hide")).transform_filter(
        "datum.latency_ms <= latency_threshold").transform_window(
        rank="row_number()", sort=[alt.SortField("throughput_ips", "descending"),
                                   alt.SortField("latency_ms", "ascending"), alt.SortField("key", "ascending")],
    ).transform_filter("datum.rank == 1")
    return spot.encode(x=x, y=y, tooltip=[alt.Tooltip("version:N", title="Sweet spot"),
                                          alt.Tooltip("configuration:N", title="Configuration")],
                       ).properties(name="sweet_spot")


def _role_labels(x, y) -> alt.Chart:
    return Chart().mark_text(fontWeight="bold", fontSize=14, dx=10, dy=-10, color=INK).encode(
        x=x, y=y, text=alt.Text("role:N"),
    ).transform_filter("datum.role != ''").transform_filter(_shown("version_hide")).properties(name="a_b")


def _threshold_rule(y) -> list[alt.Chart]:
    data = inline_rows([{"line": "threshold"}])
    base = Chart(data).transform_calculate(
        latency_ms="latency_threshold", text=THRESHOLD_TEXT)
    rule = base.mark_rule(color=THRESHOLD_COLOR, strokeDash=[6, 4], clip=True).encode(y=y)
    label = base.mark_text(color=THRESHOLD_COLOR, align="left", baseline="bottom", dx=4, dy=-2, x=0,
                           clip=True).encode(
        y=y, text=alt.Text("text:N"))
    return [rule.properties(name="threshold"), label.properties(name="threshold_label")]


def _nothing_within_threshold() -> alt.Chart:
    """A message in the plot when no shown configuration meets the threshold the slider sets."""
    text = Chart().mark_text(align="left", baseline="top", x=8, y=8, fontSize=13, color=THRESHOLD_COLOR,
                                 text="No configuration meets this latency threshold")
    text = text.transform_filter(_shown("version_hide")).transform_calculate(
        under="datum.latency_ms <= latency_threshold ? 1 : 0",
    ).transform_joinaggregate(within="sum(under)").transform_filter("datum.within == 0").transform_window(
        first="row_number()").transform_filter("datum.first == 1")
    return text.properties(name="no_sweet_spot")


def _roles(c: Comparison) -> tuple[str, str]:
    """Axis labels of A and B: `A · fp32`, `B · int8-static`."""
    return f"A · {c.a}", f"B · {c.b}"


def layer_type_chart(c: Comparison) -> alt.Chart:
    """Time per inference by layer (operator) type, one stacked bar for A and one for B; clicking a type in
    the legend takes it out of the distribution (Workbench's "Include to Distribution Chart"), and the
    tooltip's share is of the time of the types still shown."""
    rows: list[LayerTypeRow] = sorted(c.layer_types, key=lambda r: (-max(r.time_a_us, r.time_b_us), r.op_type))
    types = [r.op_type for r in rows]
    role_a, role_b = _roles(c)
    records = [{"op_type": r.op_type, "run": role, "time_us": _round(time), "nodes": nodes, "order": i}
               for i, r in enumerate(rows)
               for role, time, nodes in ((role_a, r.time_a_us, r.nodes_a), (role_b, r.time_b_us, r.nodes_b))]
    hide = alt.selection_point(name="op_type_hide", fields=["op_type"], bind="legend", toggle="true")
    color = alt.Color("op_type:N", sort=types, scale=alt.Scale(domain=types, scheme="tableau20"),
                      legend=_hiding_legend("op_type_hide", "op_type", "Layer type (click to hide)"))
    chart = Chart(inline_rows(records)).mark_bar().encode(
        y=alt.Y("run:N", title=None, sort=[role_a, role_b]),
        x=alt.X("time_us:Q", title="Time per inference (µs), profiled pass", stack="zero"),
        color=color, order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("run:N", title="Version"), alt.Tooltip("op_type:N", title="Layer type"),
                 alt.Tooltip("time_us:Q", title="Time (µs)", format=",.4~r"),
                 alt.Tooltip("share:Q", title="Share of the types shown", format=".1%"),
                 alt.Tooltip("nodes:Q", title="Executed nodes")],
    ).add_params(hide).transform_filter(_shown("op_type_hide")).transform_joinaggregate(
        shown_us="sum(time_us)", groupby=["run"],
    ).transform_calculate(share="datum.shown_us > 0 ? datum.time_us / datum.shown_us : 0")
    return chart.configure_legend(unselectedOpacity=1).properties(
        name="layer_types", width="container", height=max(110, 13 * len(types) + 30),  # room for the legend
        title=alt.Title("Time distribution by layer type", anchor="start"))


def _timing_records(c: Comparison, timings: tuple[VersionTiming, VersionTiming]) -> list[dict[str, Any]]:
    out = []
    for role, t in zip(_roles(c), timings, strict=True):
        out.append({"metric": "throughput", "run": role, "version": t.version, "value": _round(t.throughput_ips),
                    "low": _round(t.throughput_ci_low), "high": _round(t.throughput_ci_high)})
        out.append({"metric": "latency", "run": role, "version": t.version, "value": _round(t.latency_ms),
                    "low": _round(t.latency_ci_low), "high": _round(t.latency_ci_high)})
    return out


def inference_time_chart(c: Comparison) -> alt.LayerChart:
    """Throughput (default) or latency of the two compared trials side by side, switched by a radio parameter
    (`metric`), coloured like A and B in the results chart, with their 95 % confidence intervals."""
    if c.timings is None:
        raise ValueError("inference_time_chart needs a comparison with timings (a configuration both ran)")
    colors = version_colors(_versions(c))
    metric = alt.param(name="metric", value="throughput", bind=alt.binding_radio(
        options=["throughput", "latency"], labels=["Throughput", f"Latency {c.timing_percentile}"], name="Show "))
    roles = list(_roles(c))
    x = alt.X("run:N", title=None, sort=roles, axis=alt.Axis(labelAngle=0, labelLimit=260))
    color = alt.Color("version:N", legend=None, scale=alt.Scale(domain=[c.a, c.b], range=[colors[c.a], colors[c.b]]))
    bars = Chart().mark_bar(width={"band": 0.6}).encode(
        x=x, y=alt.Y("value:Q", title=None), color=color, tooltip=[
            alt.Tooltip("run:N", title="Version"), alt.Tooltip("value:Q", title="Value", format=",.4~r"),
            alt.Tooltip("low:Q", title="95 % CI low", format=",.4~r"),
            alt.Tooltip("high:Q", title="95 % CI high", format=",.4~r")])
    errors = Chart().mark_rule(strokeWidth=2, color=INK).encode(x=x, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    ticks = [Chart().mark_tick(width=18, thickness=2, color=INK).encode(x=x, y=alt.Y(f"{end}:Q"))
             for end in ("low", "high")]
    title = (f"metric == 'throughput' ? 'Throughput (items/s), 95 % CI' : "
             f"'Latency {c.timing_percentile} (ms), 95 % CI'")
    layers = [bars.properties(name="time_bars"), errors.properties(name="time_ci"),
              ticks[0].properties(name="time_ci_low"), ticks[1].properties(name="time_ci_high")]
    return alt.layer(*layers, data=inline_rows(_timing_records(c, c.timings))).transform_filter(
        "datum.metric == metric").add_params(metric).properties(
        name="inference_time", width="container", height=260,
        title=alt.Title(alt.ExprRef(expr=title), anchor="start"))


def pareto_chart(c: Comparison) -> alt.LayerChart:
    """Every configuration of every version (faded), the Pareto frontier over all of them (no other point
    has both lower latency and higher throughput) as a line, its points sized by the version's model size."""
    versions = _versions(c)
    colors = version_colors(versions)
    axis = line_axis(list(c.points))
    frontier = {p.trial_key for p in c.pareto}
    records = []
    for p in sorted(c.points, key=lambda p: (p.latency_ms, -p.throughput_ips, p.trial_key)):
        size = p.model_bytes if p.model_bytes is not None else c.model_bytes.get(p.version)
        records.append({**_point_record(p, axis), "frontier": p.trial_key in frontier,
                        "model_mib": _round(size / 2**20, 4) if size else None})
    x = alt.X("throughput_ips:Q", title="Throughput (items/s)", axis=alt.Axis(tickCount=8),
              scale=_plain_scale([p.throughput_ips for p in c.points]))
    y = alt.Y("latency_ms:Q", title=f"Latency {c.percentile} (ms)",
              scale=_plain_scale([p.latency_ms for p in c.points]))
    color = alt.Color("version:N", title="Version", sort=versions,
                      scale=alt.Scale(domain=versions, range=[colors[v] for v in versions]))
    tooltip = _results_tooltip(c.percentile) + [alt.Tooltip("model_mib:Q", title="Model size (MiB)", format=",.3~r")]
    everything = Chart().mark_point(size=30, opacity=0.5, filled=True).encode(
        x=x, y=y, color=color, tooltip=tooltip)
    on_frontier = Chart().transform_filter("datum.frontier")
    line = on_frontier.mark_line(color=INK, strokeDash=[4, 3], strokeWidth=1.2).encode(
        x=x, y=y, order=alt.Order("latency_ms:Q"))
    # The legend shows the sizes the frontier's points have, not round values none of them has.
    sizes = sorted({r["model_mib"] for r in records if r["frontier"] and r["model_mib"]})
    dots = on_frontier.mark_circle(opacity=0.85, stroke=INK, strokeWidth=1).encode(
        x=x, y=y, color=color, tooltip=tooltip,
        size=alt.Size("model_mib:Q", title="Model size (MiB)", scale=alt.Scale(range=[60, 600], zero=True),
                      legend=alt.Legend(values=sizes)))
    layers = [everything.properties(name="all_points"), line.properties(name="frontier_line"),
              dots.properties(name="frontier_points")]
    return alt.layer(
        *layers, data=inline_rows(records), name="pareto", width="container", height=320,
        title=alt.Title("Pareto frontier of every version, sized by model size", anchor="start"))


def _plain_scale(values: list[float]) -> alt.Scale:
    """Log when the values span more than LOG_SCALE_RATIO (as the experiment page's chart), else linear."""
    positive = [v for v in values if v > 0]
    # Padding (pixels) keeps the extreme points whole instead of cut in half by the plot's edge.
    if positive and max(positive) / min(positive) > LOG_SCALE_RATIO:
        return alt.Scale(type="log", nice=False, padding=12)
    return alt.Scale(zero=False, nice=False, padding=12)


PRECISIONS = ("FP32", "FP16", "INT8", "mixed", "other")
PRECISION_COLORS = ("#4c78a8", "#72b7b2", "#f58518", "#b279a2", "#bab0ac")


def precision_chart(c: Comparison) -> alt.Chart:
    """Share of each version's kernel time by runtime precision, one bar per profiled version."""
    versions = [v for v in _versions(c) if v in c.precision_share]
    records = [{"version": v, "precision": precision, "share": _round(share, 4),
                "order": PRECISIONS.index(precision) if precision in PRECISIONS else len(PRECISIONS)}
               for v in versions for precision, share in sorted(c.precision_share[v].items())]
    present = {r["precision"] for r in records}
    found = [p for p in PRECISIONS if p in present] + sorted(present - set(PRECISIONS))
    palette = dict(zip(PRECISIONS, PRECISION_COLORS, strict=True))
    color = alt.Color("precision:N", title="Runtime precision", sort=found,
                      scale=alt.Scale(domain=found, range=[palette.get(p, "#9d755d") for p in found]))
    return Chart(inline_rows(records)).mark_bar().encode(
        y=alt.Y("version:N", title=None, sort=versions), color=color, order=alt.Order("order:Q"),
        x=alt.X("share:Q", title="Share of kernel time", axis=alt.Axis(format="%"), stack="zero",
                scale=alt.Scale(domain=[0, 1])),
        tooltip=[alt.Tooltip("version:N", title="Version"), alt.Tooltip("precision:N", title="Precision"),
                 alt.Tooltip("share:Q", title="Share of kernel time", format=".1%")],
    ).properties(name="precision_share", width="container", height=max(60, 28 * len(versions)),
                 title=alt.Title("Time share by runtime precision", anchor="start"))
