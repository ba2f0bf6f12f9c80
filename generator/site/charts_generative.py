"""A generative experiment's charts (generator.analysis.generative): time to first token against prompt length,
each decode step's time against the context the KV cache holds, output tokens/s against batch, and the sweet
spot under the TTFT and TPOT limits with a slider for each. Pure functions of the report: the same results give
the same JSON.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt

from generator.analysis.generative import GenerativeReport, GenerativeRow
from generator.analysis.generative_pairs import PairView
from generator.numbers import rounded
from generator.site.chart_spec import Chart, inline_rows
from generator.site.charts import THRESHOLD_COLOR

HEIGHT = 300
PHASE_NAMES = {"ttft": "prefill (TTFT)", "tpot": "decode (TPOT)"}


def _record(r: GenerativeRow) -> dict[str, Any]:
    return {
        "version": r.version, "configuration": r.config_label, "batch": r.batch, "threads": r.threads,
        "prompt_tokens": r.prompt_tokens, "new_tokens": r.new_tokens,
        "series": f"{r.version} · b{r.batch} t{r.threads} new={r.new_tokens}",
        "lengths": f"{r.version} · prompt={r.prompt_tokens} new={r.new_tokens} t{r.threads}",
        "workload": f"prompt={r.prompt_tokens} new={r.new_tokens}",
        "ttft_ms": rounded(r.ttft_ms, 6), "ttft_p50_ms": rounded(r.ttft_p50_ms, 6),
        "ttft_p90_ms": rounded(r.ttft_p90_ms, 6), "tpot_ms": rounded(r.tpot_ms or 0.0, 6),
        "tpot_p50_ms": rounded(r.tpot_p50_ms, 6) if r.tpot_p50_ms is not None else None,
        "tokens_per_s": rounded(r.tokens_per_s, 6),
    }


def _color(versions: list[str]) -> alt.Color:
    return alt.Color("version:N", title="Version", scale=alt.Scale(domain=versions), sort=versions,
                     legend=alt.Legend(orient="bottom"))


def _tooltip(percentile: str) -> list[alt.Tooltip]:
    return [alt.Tooltip("version:N", title="Version"), alt.Tooltip("configuration:N", title="Configuration"),
            alt.Tooltip("ttft_ms:Q", title=f"TTFT {percentile} (ms)", format=",.4~r"),
            alt.Tooltip("ttft_p50_ms:Q", title="TTFT p50 (ms)", format=",.4~r"),
            alt.Tooltip("tpot_ms:Q", title=f"TPOT {percentile} (ms)", format=",.4~r"),
            alt.Tooltip("tokens_per_s:Q", title="Output tokens/s", format=",.4~r")]


def _versions(report: GenerativeReport) -> list[str]:
    return list(dict.fromkeys(r.version for r in report.rows))


def ttft_chart(report: GenerativeReport) -> alt.LayerChart:
    """TTFT at the percentile against prompt length: one line per version and batch (the prefill's cost)."""
    return _lines_and_points(report, ("prompt_tokens", "Prompt length (tokens)"),
                             ("ttft_ms", f"Time to first token, {report.percentile} (ms)"), "series", "ttft",
                             "Prefill: time to first token against prompt length")


def steps_chart(report: GenerativeReport) -> alt.LayerChart:
    """Each decode step's median time against the positions the KV cache holds: one line per trial."""
    records = [{"version": s.version, "configuration": s.config_label, "context_tokens": s.context_tokens,
                "step_ms": rounded(s.median_ms, 6)} for s in report.steps]
    base = Chart(inline_rows(records))
    x = alt.X("context_tokens:Q", title="Context (tokens in the KV cache)", scale=alt.Scale(zero=False))
    y = alt.Y("step_ms:Q", title="Decode step, median (ms)", scale=alt.Scale(zero=False))
    tooltip = [alt.Tooltip("version:N", title="Version"), alt.Tooltip("configuration:N", title="Configuration"),
               alt.Tooltip("context_tokens:Q", title="Context (tokens)"),
               alt.Tooltip("step_ms:Q", title="Step median (ms)", format=",.4~r")]
    return alt.layer(
        base.mark_line(strokeWidth=1.2, point=alt.OverlayMarkDef(size=14)).encode(
            x=x, y=y, color=_color(_versions(report)), detail=alt.Detail("configuration:N"),
            order=alt.Order("context_tokens:Q"), tooltip=tooltip).properties(name="steps"),
        name="decode_steps", width="container", height=HEIGHT,
        title=alt.Title("Decode: each step's time as the KV cache grows", anchor="start"),
    )


def tokens_chart(report: GenerativeReport) -> alt.LayerChart:
    """Output tokens/s against batch: one line per version and lengths."""
    return _lines_and_points(report, ("batch", "Batch (sequences generated together)"),
                             ("tokens_per_s", "Output tokens/s"), "lengths", "tokens", "Output tokens/s against batch")


def _lines_and_points(report: GenerativeReport, x_axis: tuple[str, str], y_axis: tuple[str, str], line: str,
                      name: str, title: str) -> alt.LayerChart:
    """Every configuration's point, coloured by version, joined along the x axis by `line` (a record field)."""
    base = Chart(inline_rows([_record(r) for r in report.rows]))
    x = alt.X(f"{x_axis[0]}:Q", title=x_axis[1], scale=alt.Scale(zero=False))
    y = alt.Y(f"{y_axis[0]}:Q", title=y_axis[1], scale=alt.Scale(zero=False))
    color = _color(_versions(report))
    return alt.layer(
        base.mark_line(strokeWidth=1.4).encode(x=x, y=y, color=color, detail=alt.Detail(f"{line}:N"),
                                               order=alt.Order(f"{x_axis[0]}:Q")).properties(name="lines"),
        base.mark_point(filled=True, size=60).encode(x=x, y=y, color=color, tooltip=_tooltip(report.percentile))
        .properties(name="points"),
        name=name, width="container", height=HEIGHT, title=alt.Title(title, anchor="start"),
    )


def limits_chart(report: GenerativeReport) -> alt.LayerChart:
    """Output tokens/s against TPOT for every configuration; two sliders set the TTFT and TPOT limits (the
    spec's at first): configurations beyond either fade, and a ring marks the most tokens/s within both."""
    records = [_record(r) for r in report.rows]
    top_ttft = max((r["ttft_ms"] for r in records), default=1.0)
    top_tpot = max((r["tpot_ms"] for r in records), default=1.0)
    ttft = _slider("ttft_limit", "TTFT limit (ms) ", report.ttft_limit_ms, top_ttft)
    tpot = _slider("tpot_limit", "TPOT limit (ms) ", report.tpot_limit_ms, top_tpot)
    within = "datum.ttft_ms <= ttft_limit && datum.tpot_ms <= tpot_limit"
    base = Chart(inline_rows(records)).transform_calculate(within=within)
    x = alt.X("tpot_ms:Q", title=f"Time per output token, {report.percentile} (ms)", scale=alt.Scale(zero=False))
    y = alt.Y("tokens_per_s:Q", title="Output tokens/s", scale=alt.Scale(zero=False))
    color = _color(_versions(report))
    points = base.mark_point(size=70, filled=True).encode(
        x=x, y=y, color=color, tooltip=_tooltip(report.percentile),
        shape=alt.Shape("workload:N", title="Workload", legend=alt.Legend(orient="bottom")),
        opacity=alt.condition("datum.within", alt.value(1.0), alt.value(0.2)),
    ).add_params(ttft, tpot).properties(name="points")
    best = base.transform_filter("datum.within").transform_window(
        rank="row_number()", sort=[alt.SortField("tokens_per_s", order="descending")],
        groupby=["prompt_tokens", "new_tokens"],
    ).transform_filter("datum.rank == 1").mark_point(size=420, strokeWidth=2.5, color=THRESHOLD_COLOR).encode(
        x=x, y=y, tooltip=_tooltip(report.percentile)).properties(name="sweet_spot")
    return alt.layer(points, best, name="limits", width="container", height=HEIGHT,
                     title=alt.Title("Sweet spots: each workload's most tokens/s within the TTFT and TPOT limits "
                                     "(rings)", anchor="start"))


def _slider(name: str, label: str, limit: float | None, top: float) -> alt.Parameter:
    """A limit's slider from 0 past the largest figure (and the spec's limit), starting at the spec's limit, or
    above every figure without one."""
    start = limit if limit is not None else top * 1.05
    end = max(top * 1.5, start * 1.2)
    return alt.param(name=name, value=rounded(start, 4),
                     bind=alt.binding_range(min=0, max=rounded(end, 3), step=rounded(end / 300, 3), name=label))


def pair_chart(view: PairView) -> alt.LayerChart:
    """B / A of each phase at each configuration of a compared pair, with its 95 % interval, on a log axis
    around 1: prefill and decode apart, as the page's verdicts judge them."""
    records = []
    for row in view.rows:
        for v in (row.ttft, row.tpot):
            if v is None or not math.isfinite(v.ratio):
                continue
            finite = math.isfinite(v.low) and math.isfinite(v.high) and v.low > 0
            records.append({"configuration": row.config_label, "phase": PHASE_NAMES[v.phase],
                            "label": f"{row.config_label} · {PHASE_NAMES[v.phase]}", "ratio": rounded(v.ratio, 6),
                            "low": rounded(v.low, 6) if finite else None,
                            "high": rounded(v.high, 6) if finite else None, "verdict": v.verdict})
    labels = [r["label"] for r in records]
    base = Chart(inline_rows(records))
    y = alt.Y("label:N", title=None, sort=labels, axis=alt.Axis(labelLimit=260))
    x_scale = alt.Scale(type="log", zero=False)
    color = alt.Color("phase:N", title="Phase", scale=alt.Scale(domain=list(PHASE_NAMES.values())),
                      legend=alt.Legend(orient="bottom"))
    tooltip = [alt.Tooltip("configuration:N", title="Configuration"), alt.Tooltip("phase:N", title="Phase"),
               alt.Tooltip("ratio:Q", title="B / A", format=".3~r"), alt.Tooltip("low:Q", title="95 % low",
                                                                            format=".3~r"),
               alt.Tooltip("high:Q", title="95 % high", format=".3~r"), alt.Tooltip("verdict:N", title="Verdict")]
    one = Chart(inline_rows([{"one": 1}])).mark_rule(color=THRESHOLD_COLOR, strokeDash=[4, 3]).encode(
        x=alt.X("one:Q", scale=x_scale)).properties(name="one")
    return alt.layer(
        one,
        base.transform_filter("datum.low != null").mark_rule(strokeWidth=2).encode(
            x=alt.X("low:Q", title=f"{view.pair.b} / {view.pair.a} (log scale; left of 1: B faster)", scale=x_scale),
            x2="high:Q", y=y, color=color, tooltip=tooltip).properties(name="intervals"),
        base.mark_point(filled=True, size=70).encode(
            x=alt.X("ratio:Q", scale=x_scale), y=y, color=color, tooltip=tooltip,
            shape=alt.Shape("verdict:N", title="Verdict", legend=alt.Legend(orient="bottom")),
        ).properties(name="ratios"),
        name="pair", width="container", height=max(120, 26 * len(records)),
        title=alt.Title(f"{view.pair.b} against {view.pair.a}: each phase's B / A with its 95 % interval",
                        anchor="start"),
    )
