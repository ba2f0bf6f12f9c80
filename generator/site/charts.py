"""Charts: pure functions from summary records to altair charts, and the inline HTML that embeds them.

Data is inline in each spec (no URLs, so pages also work from ``file://``). Every parameter and view is named
explicitly: altair otherwise generates names (``param_1``, ``view_…``) that can change between runs, and the
chart JSON must be byte-identical for the same results.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

import altair as alt
from altair.utils import schemapi

from generator.analysis.profile import OpTypeTime
from generator.analysis.side_by_side import ConfigRow
from generator.analysis.summaries import AXIS_COLUMNS, TrialSummary
from generator.numbers import rounded
from generator.site.chart_spec import Chart, chart_dict, inline_rows
from generator.site.escape import inline_json, shown_json
from generator.site.formatting import config_text

# An axis switches to a log scale when its values span more than this ratio: batch sweeps easily cover two
# orders of magnitude in latency, and a linear axis then squeezes the small configurations into one corner.
LOG_SCALE_RATIO = 20.0
THRESHOLD_COLOR = "#c62828"
INK = "#1b1e23"  # text and thin lines (perfsite.js lightens it on the dark scheme)
# The threshold's label as the pages' `num` filter and the threshold box write it: three significant digits,
# whole numbers from 100 up (the label said 1.806 ms beside a box saying 1.81).
THRESHOLD_TEXT = ("'threshold ' + (abs(latency_threshold) >= 100 ? format(latency_threshold, ',.0f') "
                  ": format(latency_threshold, '.3r')) + ' ms'")
NOISE_SHAPES = alt.Scale(domain=["ok", "uncertain"], range=["circle", "triangle"])
_CHART_ID = re.compile(r"[a-z][a-z0-9-]*")


@contextlib.contextmanager
def unvalidated() -> Iterator[None]:
    """Charts made without altair's debug mode, which checks every chart object against the Vega-Lite schema as
    it is made: a twelfth of a big site's build, for charts whose construction does not depend on the data's
    values. tests/test_charts_valid.py validates every chart kind; altair's setting is restored on exit."""
    with schemapi.debug_mode(False):
        yield


def _round(value: float | None, digits: int = 6) -> float | None:
    """Significant-digit rounding of chart data (generator.numbers.rounded)."""
    return rounded(value, digits)


def _scale(values: list[float]) -> alt.Scale:
    """Log when the values span more than LOG_SCALE_RATIO, else linear; the domain follows the data (see
    data_domain), so that no mark sits on or beyond the frame."""
    positive = [v for v in values if v and v > 0]
    if positive and max(positive) / min(positive) > LOG_SCALE_RATIO:
        return alt.Scale(type="log", nice=False, domain=data_domain(positive, True))
    return alt.Scale(zero=False, nice=False, domain=data_domain(positive, False)) if positive else alt.Scale()


def data_domain(values: list[float], log: bool) -> list[float]:
    """The values' range with a margin for the marks' own size: a fifth of a step either way on a log axis (a
    factor 1.25), 8 % of the range on a linear one (never below 0). Fixed, so that moving a threshold rule
    never rescales the chart; the rule is clipped to the frame instead."""
    low, high = min(values), max(values)
    if log:
        return [_round(low / 1.25, 4), _round(high * 1.25, 4)]
    pad = (high - low) * 0.08 or abs(high) * 0.1 or 1.0
    return [_round(max(0.0, low - pad), 4), _round(high + pad, 4)]


def threshold_meta(values: list[float], threshold_ms: float | None, percentile: str) -> dict[str, Any]:
    """What perfsite.js needs to draw a chart's latency-threshold control (a log slider and a typed value):
    its range, from half the lowest latency to twice the highest (and the spec's threshold), and its start."""
    positive = [v for v in values + ([threshold_ms] if threshold_ms else []) if v and v > 0]
    low, high = _round(min(positive) / 2, 3), _round(max(positive) * 2, 3)
    return {"perfsiteThreshold": {"min": low, "max": high, "value": threshold_ms if threshold_ms else high,
                                  "percentile": percentile, "spec": threshold_ms}}


# Axes that trade latency for throughput, in the order a chart's lines follow them: a line joins the
# configurations of one version that differ only in this axis (batch: the classic batching curve).
LINE_AXES = ("batch", "concurrency", "threads", "inter_op_threads")


def line_axis(trials: list[TrialSummary]) -> str | None:
    """The first of LINE_AXES with more than one value among the ok trials; None when none varies."""
    ok = [t for t in trials if t.ok]
    return next((a for a in LINE_AXES if len({t.axis_value(a) for t in ok}) > 1), None)


def _series(trial: TrialSummary, axis: str | None) -> str:
    """The line a trial belongs to: its version and every configuration axis except the line's axis."""
    others = [(a, trial.axis_value(a)) for a in AXIS_COLUMNS if a != axis] + list(trial.dims)
    return " · ".join([trial.version] + [f"{name} {value}" for name, value in others])


def _point_record(trial: TrialSummary, percentile: str, axis: str | None = None) -> dict[str, Any]:
    return {
        "version": trial.version, "series": _series(trial, axis),
        "order": trial.axis_value(axis) if axis else 0, "configuration": config_text(trial),
        "label": trial.config_label, "batch": trial.batch, "threads": trial.threads,
        "concurrency": trial.concurrency, "latency_ms": _round(trial.latency_headline_ms),
        "latency_mean_ms": _round(trial.latency_mean_ms), "latency_p50_ms": _round(trial.latency_p50_ms),
        "throughput_ips": _round(trial.throughput_ips), "cores_used": _round(trial.cores_used, 3),
        "noise": trial.uncertain or "none", "percentile": percentile,
    }


def _tooltip(percentile: str) -> list[alt.Tooltip]:
    return [
        alt.Tooltip("version:N", title="Version"),
        alt.Tooltip("configuration:N", title="Configuration"),
        alt.Tooltip("latency_ms:Q", title=f"Latency {percentile} (ms)", format=",.4~r"),
        alt.Tooltip("latency_mean_ms:Q", title="Latency mean (ms)", format=",.4~r"),
        alt.Tooltip("latency_p50_ms:Q", title="Latency p50 (ms)", format=",.4~r"),
        alt.Tooltip("throughput_ips:Q", title="Throughput (items/s)", format=",.4~r"),
        alt.Tooltip("cores_used:Q", title="Cores used", format=".2f"),
        alt.Tooltip("noise:N", title="Noise flags"),
    ]


def latency_throughput_chart(
    trials: list[TrialSummary],
    versions: list[str],
    percentile: str,
    latency_threshold_ms: float | None = None,
) -> alt.LayerChart:
    """Latency at the spec's percentile against throughput: a point per ok trial; lines (coloured by version)
    join the configurations that differ only in the first varying axis of LINE_AXES, in its order; the
    latency threshold as a dashed rule and each version's sweet spot (best throughput under the threshold)
    as a ring, both following the page's threshold control. Click a legend entry to highlight one version."""
    axis = line_axis(trials)
    ok = sorted((t for t in trials if t.ok), key=lambda t: (t.version, t.sort_key(), t.trial_key))
    records = [_point_record(t, percentile, axis) for t in ok]
    lat = [r["latency_ms"] for r in records]
    throughput = [r["throughput_ips"] for r in records]
    x = alt.X("throughput_ips:Q", title="Throughput (items/s)", scale=_scale(throughput))
    y = alt.Y("latency_ms:Q", title=f"Latency {percentile} (ms)", scale=_scale(lat))
    color = alt.Color("version:N", title="Version", scale=alt.Scale(domain=versions), sort=versions)
    pick = alt.selection_point(name="version_pick", fields=["version"], bind="legend")
    # Channel objects, not shorthand strings or dicts: altair turns those into channels with from_dict, which
    # hashes every Vega-Lite schema class each time (a third of a profile page's charts).
    faded = alt.OpacityValue(**alt.condition(pick, alt.value(1.0), alt.value(0.15)))
    base = Chart(inline_rows(records))
    # The legend-bound selection lives on the lines' layer, whose only legend is the versions': on the points'
    # layer, which has the interval's shape legend too, clicks on the legend did nothing.
    lines = base.mark_line(strokeWidth=1.5).encode(
        x=x, y=y, color=color, detail=alt.Detail("series:N"), order=alt.Order("order:Q"), opacity=faded,
    ).add_params(pick)
    points = base.mark_point(filled=True, size=70).encode(
        x=x, y=y, color=color, opacity=faded, tooltip=_tooltip(percentile),
        shape=alt.Shape("noisy:N", title="Interval", scale=NOISE_SHAPES),
    ).transform_calculate(noisy="datum.noise == 'none' ? 'ok' : 'uncertain'")
    layers = [lines.properties(name="lines"), points.properties(name="points")]
    chart = alt.layer(*layers, *_threshold_layers(latency_threshold_ms, base, x, y, color, percentile))
    if latency_threshold_ms is not None and lat:
        threshold = threshold_meta(lat, latency_threshold_ms, percentile)
        chart = chart.add_params(alt.param(name="latency_threshold", value=latency_threshold_ms)).properties(
            usermeta=threshold)
    return chart.properties(
        name="latency_throughput", width="container", height=380,
        title=alt.Title(f"Latency ({percentile}) vs throughput, every configuration", anchor="start"),
    )


def _threshold_layers(threshold_ms, base, x, y, color, percentile) -> list:
    """The threshold as a dashed rule and each version's sweet spot (best throughput within it, ties to the
    lower latency) as a ring, both following the `latency_threshold` parameter that the page's threshold
    control sets (perfsite.js); the rule is clipped to the frame when the control leaves the data's range."""
    if threshold_ms is None:
        return []
    rule_data = Chart(inline_rows([{"line": "threshold"}])).transform_calculate(
        latency_ms="latency_threshold", text=THRESHOLD_TEXT)
    rule = rule_data.mark_rule(color=THRESHOLD_COLOR, strokeDash=[6, 4], clip=True).encode(y=y)
    label = rule_data.mark_text(
        color=THRESHOLD_COLOR, align="left", baseline="bottom", dx=4, dy=-2, x=0, clip=True,
    ).encode(y=y, text=alt.Text("text:N"))
    tooltip = [alt.Tooltip("version:N", title="Sweet spot of")] + _tooltip(percentile)
    ring = base.mark_point(size=380, strokeWidth=2.5, filled=False).encode(
        x=x, y=y, color=color, tooltip=tooltip,
    ).transform_filter("datum.latency_ms <= latency_threshold").transform_window(
        rank="row_number()", groupby=["version"],
        sort=[alt.SortField("throughput_ips", "descending"), alt.SortField("latency_ms", "ascending"),
              alt.SortField("label", "ascending")],
    ).transform_filter("datum.rank == 1")
    return [rule.properties(name="threshold"), label.properties(name="threshold_label"),
            ring.properties(name="sweet_spots")]


def op_time_chart(op_times: list[OpTypeTime], name: str = "op_time") -> alt.LayerChart:
    """Mean time per inference by op type (top-level nodes), largest first, with each one's share."""
    records = [{"op_type": o.op_type, "dur_us": _round(o.dur_us), "share": _round(o.share, 4),
                "nodes": o.nodes, "calls": o.calls} for o in op_times]
    y = alt.Y("op_type:N", title=None, sort=[o.op_type for o in op_times])
    # Room right of the longest bar for its share label.
    top = max((o.dur_us for o in op_times), default=0.0)
    scale = alt.Scale(domain=[0, _round(top * 1.15, 3)]) if top > 0 else alt.Scale()
    x = alt.X("dur_us:Q", title="Time per inference (µs)", scale=scale)
    base = Chart(inline_rows(records))
    bars = base.mark_bar(color="#3f51b5").encode(x=x, y=y, tooltip=[
        alt.Tooltip("op_type:N", title="Op type"),
        alt.Tooltip("dur_us:Q", title="Time per inference (µs)", format=",.4~r"),
        alt.Tooltip("share:Q", title="Share of kernel time", format=".1%"),
        alt.Tooltip("nodes:Q", title="Nodes"), alt.Tooltip("calls:Q", title="Kernel calls"),
    ])
    share = alt.Text("share:Q", format=".1%")
    labels = base.mark_text(align="left", dx=4, fontSize=11).encode(x=x, y=y, text=share)
    layers = [bars.properties(name=f"{name}_bars"), labels.properties(name=f"{name}_labels")]
    return alt.layer(*layers, name=name, width="container", height=max(60, 22 * len(records)))


def chart_block(chart_id: str, chart: alt.TopLevelMixin | dict[str, Any]) -> str:
    """HTML to put on its own lines in a Markdown page: the chart's div and, right after it, its spec as
    inline JSON, wrapped in a one-element array.

    Why the array: mkdocs-material's instant navigation re-inserts a page's inline scripts without their
    attributes, so the browser runs the JSON as JavaScript. A bare object would be a syntax error (a console
    error on every navigation); an array literal is valid JSON and a JavaScript expression without effects.
    perfsite.js finds the spec by id, or as the div's next sibling once the id is gone.
    """
    if not _CHART_ID.fullmatch(chart_id):
        raise ValueError(f"chart id {chart_id!r} must match {_CHART_ID.pattern}")
    # Not validated against the Vega-Lite schema here: that took a tenth of a big site's build, for charts
    # whose construction does not depend on the data's values; tests/test_charts_valid.py validates every
    # chart of the snapshot pages.
    # Shown strings: Vega draws names from the data in tooltips, axes and legends, as the tables print them.
    spec = shown_json([chart if isinstance(chart, dict) else chart_dict(chart)], inline_json)
    return (
        f'<div class="perfsite-chart" data-chart="{chart_id}"></div>\n'
        f'<script type="application/json" id="{chart_id}">{spec}</script>'
    )


def versions_chart(rows: Sequence[ConfigRow], versions: list[str], percentile: str) -> alt.LayerChart:
    """Every version's latency at each configuration where two or more ran, side by side (a bar each), with its
    95 % interval over processes as a rule; the configurations in the table's order."""
    records = [{"config": r.config_label, "version": c.version,
                **{k: rounded(v, 4) for k, v in (("latency_ms", c.trial.latency_headline_ms), ("low_ms", c.low_ms),
                                                  ("high_ms", c.high_ms), ("throughput_ips", c.trial.throughput_ips),
                                                  ("ratio", c.latency_ratio))},
                "reference": r.reference} for r in rows for c in r.cells]
    configs = [r.config_label for r in rows]
    x = alt.X("config:N", title="Configuration", sort=configs, axis=alt.Axis(labelAngle=-30, labelLimit=160))
    offset = alt.XOffset("version:N", sort=versions)
    y = alt.Y("latency_ms:Q", title=f"Latency {percentile} (ms)")
    color = alt.Color("version:N", title="Version", scale=alt.Scale(domain=versions), sort=versions)
    base = Chart(inline_rows(records))
    tooltip = [alt.Tooltip("config:N", title="Configuration"), alt.Tooltip("version:N", title="Version"),
               alt.Tooltip("latency_ms:Q", title=f"Latency {percentile} (ms)", format=",.3~r"),
               alt.Tooltip("low_ms:Q", title="95 % interval from (ms)", format=",.3~r"),
               alt.Tooltip("high_ms:Q", title="to (ms)", format=",.3~r"),
               alt.Tooltip("throughput_ips:Q", title="Throughput (items/s)", format=",.3~r"),
               alt.Tooltip("ratio:Q", title="Latency ÷ the reference's", format=".3f"),
               alt.Tooltip("reference:N", title="Reference")]
    bars = base.mark_bar().encode(x=x, xOffset=offset, y=y, color=color, tooltip=tooltip)
    rules = base.mark_rule(color=INK).encode(
        x=x, xOffset=offset, y=alt.Y("low_ms:Q"), y2=alt.Y2("high_ms:Q")).transform_filter("isValid(datum.low_ms)")
    return alt.layer(bars.properties(name="bars"), rules.properties(name="intervals"), name="versions",
                     width="container", height=300,
                     title=alt.Title(f"Latency ({percentile}) of every version, each configuration", anchor="start"))
