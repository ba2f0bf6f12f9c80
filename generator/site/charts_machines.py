"""The machines page's chart: latency against throughput, one colour per machine (generator.analysis.machine_compare).

Every ok trial of every machine is a point (its shape the version) with its 95 % intervals as thin bars; a line
joins one machine's configurations of a version along the first varying axis (charts.line_axis); the latency
threshold is a dashed rule. A pure function of the comparison: the same results give the same JSON.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from generator.analysis.machine_compare import MachineComparison, MachinePoint
from generator.analysis.summaries import AXIS_COLUMNS
from generator.numbers import rounded
from generator.site.chart_spec import Chart, inline_rows
from generator.site.charts import LOG_SCALE_RATIO, THRESHOLD_COLOR, data_domain, line_axis
from generator.site.formatting import config_text

LEGEND_LABEL_PX = 360


def _scale(values: list[float | None]) -> alt.Scale:
    """Log when the values span more than LOG_SCALE_RATIO, else linear, the domain fixed to the data."""
    positive = [v for v in values if v and v > 0]
    if not positive:
        return alt.Scale()
    log = max(positive) / min(positive) > LOG_SCALE_RATIO
    kind = {"type": "log"} if log else {"zero": False}
    return alt.Scale(nice=False, domain=data_domain(positive, log), **kind)


def _record(p: MachinePoint, label: str, axis: str | None) -> dict[str, Any]:
    t = p.trial
    others = [f"{a} {t.axis_value(a)}" for a in AXIS_COLUMNS if a != axis] + [f"{k} {v}" for k, v in t.dims]
    lat, thr = p.latency_ms, p.throughput_ips
    return {
        "machine": label, "version": t.version, "series": " · ".join([label, t.version, *others]),
        "order": t.axis_value(axis) if axis else 0, "configuration": config_text(t), "label": t.config_label,
        "latency_ms": rounded(lat.value, 6), "latency_low": rounded(lat.low, 6),
        "latency_high": rounded(lat.high, 6), "throughput_ips": rounded(thr.value, 6),
        "throughput_low": rounded(thr.low, 6), "throughput_high": rounded(thr.high, 6),
        "processes": lat.processes,
    }


def _tooltip(percentile: str, unit: str) -> list[alt.Tooltip]:
    return [
        alt.Tooltip("machine:N", title="Machine"), alt.Tooltip("version:N", title="Version"),
        alt.Tooltip("configuration:N", title="Configuration"),
        alt.Tooltip("latency_ms:Q", title=f"Latency {percentile} (ms)", format=",.4~r"),
        alt.Tooltip("latency_low:Q", title="95 % interval from", format=",.4~r"),
        alt.Tooltip("latency_high:Q", title="to", format=",.4~r"),
        alt.Tooltip("throughput_ips:Q", title=f"Throughput ({unit})", format=",.4~r"),
        alt.Tooltip("throughput_low:Q", title="95 % interval from", format=",.4~r"),
        alt.Tooltip("throughput_high:Q", title="to", format=",.4~r"),
        alt.Tooltip("processes:Q", title="Measurement processes"),
    ]


def machines_chart(c: MachineComparison) -> alt.LayerChart:
    """Latency at the headline percentile against throughput, coloured by machine, shaped by version; click a
    machine in the legend to highlight it."""
    axis = line_axis([p.trial for p in c.points])
    records = [_record(p, c.label(p.env_id), axis) for p in c.points]
    labels = [m.label for m in c.machines]
    lat = [v for r in records for v in (r["latency_ms"], r["latency_low"], r["latency_high"])]
    thr = [v for r in records for v in (r["throughput_ips"], r["throughput_low"], r["throughput_high"])]
    x_scale, y_scale = _scale(thr), _scale(lat + ([c.threshold_ms] if c.threshold_ms else []))
    x_title, y_title = f"Throughput ({c.unit})", f"Latency {c.percentile} (ms)"
    x, y = alt.X("throughput_ips:Q", title=x_title, scale=x_scale), alt.Y("latency_ms:Q", title=y_title, scale=y_scale)
    # The interval bars share the axes: the same title and scale, or altair would join the field names.
    x_low, y_low = alt.X("throughput_low:Q", title=x_title, scale=x_scale), alt.Y("latency_low:Q", title=y_title,
                                                                                 scale=y_scale)
    # Labels carry the software a machine differs in (generator.analysis.machines): room for them in the legend.
    color = alt.Color("machine:N", title="Machine", scale=alt.Scale(domain=labels), sort=labels,
                      legend=alt.Legend(labelLimit=LEGEND_LABEL_PX))
    pick = alt.selection_point(name="machine_pick", fields=["machine"], bind="legend")
    faded = alt.OpacityValue(**alt.condition(pick, alt.value(1.0), alt.value(0.15)))  # a channel object: see charts.py
    base = Chart(inline_rows(records))
    layers = [
        base.mark_line(strokeWidth=1.2).encode(x=x, y=y, color=color, detail=alt.Detail("series:N"),
                                               order=alt.Order("order:Q"), opacity=faded).properties(name="lines"),
        base.mark_rule(strokeWidth=1, strokeOpacity=0.5).encode(x=x, y=y_low, y2=alt.Y2("latency_high:Q"), color=color,
                                             opacity=faded).properties(name="latency_intervals"),
        base.mark_rule(strokeWidth=1, strokeOpacity=0.5).encode(x=x_low, x2=alt.X2("throughput_high:Q"), y=y,
                                             color=color, opacity=faded).properties(name="throughput_intervals"),
        base.mark_point(filled=True, size=70).encode(
            x=x, y=y, color=color, opacity=faded, tooltip=_tooltip(c.percentile, c.unit),
            shape=alt.Shape("version:N", title="Version"),
        ).add_params(pick).properties(name="points"),
    ]
    if c.threshold_ms is not None:
        rule = Chart(inline_rows([{"latency_ms": c.threshold_ms}])).mark_rule(
            color=THRESHOLD_COLOR, strokeDash=[6, 4], clip=True).encode(y=y)
        layers.append(rule.properties(name="threshold"))
    return alt.layer(
        *layers, name="machines", width="container", height=380,
        title=alt.Title(f"Latency ({c.percentile}) vs throughput on each machine", anchor="start"),
    )
