"""Charts of the profile pages: share of operations against share of time per op type, and the roofline.

Pure functions from analysis records to altair charts, data inline, every view named (see charts.py: altair's
generated names would change between runs and break byte-identical pages).
"""

from __future__ import annotations

import math

import altair as alt

from generator.analysis.profile import OpTypeProfile
from generator.analysis.roofline import LayerResult, Roofline
from generator.site.chart_spec import Chart, inline_rows
from generator.site.charts import _round

TIME_COLOR = "#3f51b5"
OPS_COLOR = "#ff9800"
FAR_BELOW_COLOR = "#c62828"
OTHER_COLOR = "#5c6bc0"
FAR_BELOW = "far below its roofline"
OTHER = "other layers"
# A roofline draws at most this many nodes, those with the most time; the rest become one combined point (a
# 20,000-node model made a chart with 20,000 marks: 0.6 MB of data per page and seconds of drawing).
ROOFLINE_POINTS = 500


def ops_time_chart(profiles: list[OpTypeProfile], name: str = "ops_time") -> alt.Chart:
    """Per executed op type: its share of the kernel time beside its share of the operations (FLOPs and
    integer operations). A bar of time much longer than its bar of operations marks an op type that runs
    slowly for the work it does."""
    measures = ["Share of time", "Share of operations"]
    records = []
    for p in profiles:
        records.append({"op_type": p.op_type, "measure": measures[0], "share": _round(p.time_share, 4),
                        "time_us": _round(p.dur_us), "gops": _round(p.ops / 1e9, 4)})
        records.append({"op_type": p.op_type, "measure": measures[1], "share": _round(p.ops_share or 0.0, 4),
                        "time_us": _round(p.dur_us), "gops": _round(p.ops / 1e9, 4)})
    color = alt.Color("measure:N", title=None, scale=alt.Scale(domain=measures, range=[TIME_COLOR, OPS_COLOR]),
                      legend=alt.Legend(orient="top"))
    return Chart(inline_rows(records)).mark_bar().encode(
        y=alt.Y("op_type:N", title=None, sort=[p.op_type for p in profiles]),
        yOffset=alt.YOffset("measure:N", sort=measures),
        x=alt.X("share:Q", title="Share", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        color=color,
        tooltip=[alt.Tooltip("op_type:N", title="Op type"), alt.Tooltip("measure:N", title="Measure"),
                 alt.Tooltip("share:Q", title="Share", format=".1%"),
                 alt.Tooltip("time_us:Q", title="Time per inference (µs)", format=",.4~r"),
                 alt.Tooltip("gops:Q", title="Operations (G)", format=",.4~r")],
    ).properties(name=name, width="container", height=max(80, 34 * len(profiles)))


def _points(layers: list[LayerResult]) -> list[dict]:
    placed = [r for r in layers if r.intensity and r.achieved_gops]
    if len(placed) <= ROOFLINE_POINTS:
        return _layer_points(placed)
    placed.sort(key=lambda r: -r.dur_us)  # stable: equal times keep their order
    combined = _combined_point(placed[ROOFLINE_POINTS:])
    return _layer_points(placed[:ROOFLINE_POINTS]) + ([combined] if combined["intensity"] and combined["gops"] else [])


def roofline_combined(layers: list[LayerResult]) -> int:
    """How many nodes the roofline shows as one combined point (0: every node is its own point)."""
    return max(0, sum(1 for r in layers if r.intensity and r.achieved_gops) - ROOFLINE_POINTS)


def _combined_point(rest: list[LayerResult]) -> dict:
    """The nodes beyond ROOFLINE_POINTS as one: their operations over their bytes and over their time."""
    ops = sum(r.ops for r in rest)
    moved = sum(r.bytes or 0.0 for r in rest)
    time_us = sum(r.dur_us for r in rest)
    return {
        "node": f"{len(rest):,} shorter nodes, combined", "op_type": "(several)", "exec_order": None,
        "intensity": _round(ops / moved) if moved else None,
        "gops": _round(ops / time_us / 1e3) if time_us else None,  # operations per µs / 1e3 = GOP/s
        "attainable": None, "efficiency": None, "share": _round(sum(r.share for r in rest), 4),
        "time_us": _round(time_us), "ceiling": "—", "group": OTHER,
    }


def _layer_points(layers: list[LayerResult]) -> list[dict]:
    return [{
        "node": r.node_name, "op_type": r.op_type, "exec_order": r.exec_order,
        "intensity": _round(r.intensity), "gops": _round(r.achieved_gops),
        "attainable": _round(r.attainable_gops), "efficiency": _round(r.efficiency, 4),
        "share": _round(r.share, 4), "time_us": _round(r.dur_us),
        "ceiling": "INT8" if r.integer else "FP32", "group": FAR_BELOW if r.far_below else OTHER,
    } for r in layers]


def _ceilings(limits: Roofline, low: float, high: float) -> list[dict]:
    """Each roofline as a polyline over [low, high] operations per byte: the bandwidth slope up to the ridge
    point (peak / bandwidth), then the flat peak."""
    records: list[dict] = []
    if not limits.measured:
        return records
    for label, peak in (("FP32", limits.peak_gflops_fp32), ("INT8", limits.peak_gops_int8)):
        if not peak:
            continue
        ridge = peak / limits.bandwidth_gbs
        xs = sorted({low, high} | ({ridge} if low < ridge < high else set()))
        series = f"{label} roofline: {peak:,.0f} GOP/s, {limits.bandwidth_gbs:,.1f} GB/s"
        records += [{"series": series, "intensity": _round(x), "gops": _round(min(peak, x * limits.bandwidth_gbs)),
                     "order": i} for i, x in enumerate(xs)]
    return records


def _span(values: list[float]) -> tuple[float, float]:
    """A log axis domain: whole powers of ten around the values (one decade when there is a single one)."""
    low, high = min(values), max(values)
    return 10.0 ** math.floor(math.log10(low)), 10.0 ** math.ceil(math.log10(high) + (high == low))


def has_roofline_points(layers: list[LayerResult]) -> bool:
    """Whether any executed node has operations, traffic and time: the roofline chart needs one."""
    return bool(_points(layers))


def roofline_chart(layers: list[LayerResult], limits: Roofline, name: str = "roofline") -> alt.LayerChart:
    """Arithmetic intensity (operations per byte, log) against achieved GOP/s (log), one point per executed
    node with operations, sized by its share of the time; the measured rooflines as lines; the nodes far below
    their roofline in red. Nodes without operations or traffic have no place on it; call only when
    :func:`has_roofline_points`."""
    points = _points(layers)
    ridges = [p / limits.bandwidth_gbs for p in (limits.peak_gflops_fp32, limits.peak_gops_int8)
              if p and limits.bandwidth_gbs]
    x_low, x_high = _span([p["intensity"] for p in points] + ridges)
    ceilings = _ceilings(limits, x_low, x_high)
    y_low, y_high = _span([p["gops"] for p in points + ceilings])
    x = alt.X("intensity:Q", title="Arithmetic intensity (operations per byte)",
              scale=alt.Scale(type="log", domain=[x_low, x_high], nice=False))
    y = alt.Y("gops:Q", title="GOP/s", scale=alt.Scale(type="log", domain=[y_low, y_high], nice=False))
    dash = alt.StrokeDash("series:N", title="Measured ceilings",
                          legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0))
    lines = Chart(inline_rows(ceilings)).mark_line(color="#424242", strokeWidth=1.5).encode(
        x=x, y=y, order=alt.Order("order:Q"), strokeDash=dash,
    )
    group = alt.Color("group:N", title=None, scale=alt.Scale(domain=[FAR_BELOW, OTHER],
                                                             range=[FAR_BELOW_COLOR, OTHER_COLOR]))
    dots = Chart(inline_rows(points)).mark_circle(opacity=0.75).encode(
        x=x, y=y, color=group,
        size=alt.Size("share:Q", title="Share of time", scale=alt.Scale(range=[25, 900]), legend=None),
        tooltip=_roofline_tooltip(),
    )
    layers_ = [lines.properties(name=f"{name}_ceilings"), dots.properties(name=f"{name}_layers")]
    return alt.layer(*layers_, name=name, width="container", height=380)


def _roofline_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("node:N", title="Executed node"), alt.Tooltip("op_type:N", title="Op type"),
        alt.Tooltip("intensity:Q", title="Operations per byte", format=",.3~r"),
        alt.Tooltip("gops:Q", title="Achieved GOP/s", format=",.3~r"),
        alt.Tooltip("attainable:Q", title="Attainable GOP/s", format=",.3~r"),
        alt.Tooltip("efficiency:Q", title="Share of attainable", format=".1%"),
        alt.Tooltip("ceiling:N", title="Ceiling"),
        alt.Tooltip("share:Q", title="Share of time", format=".1%"),
        alt.Tooltip("time_us:Q", title="Time per inference (µs)", format=",.4~r"),
    ]
