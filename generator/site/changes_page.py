"""The "changes" page: this site's results (the candidate) against a baseline, side by side on the same charts.

`perfsite build --baseline DIR|git:REF` adds it at reports/_changes/ (an experiment's folder name starts with
a letter or digit, so the leading underscore never collides with one). It shows what `perfsite diff` says,
as a page: the verdict, every configuration's latency and throughput on both sides with their 95 %
intervals, and the layers of the configurations that changed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import altair as alt

from generator.diff.report import change_text, grouped_notes, signed_pct
from generator.diff.sources import load_side, open_source
from generator.diff.verdict import FASTER, SLOWER, DiffResult, TrialDiff, diff_experiments
from generator.results.location import shown
from generator.results.store import ExperimentResults
from generator.site.charts import _round, chart_block
from generator.site.page_base import REPORTS_DIR, Page, render, template_env

CHANGES_PATH = f"{REPORTS_DIR}/_changes/index.md"
SIDE_COLORS = alt.Scale(domain=["baseline", "candidate"], range=["#9e9e9e", "#3f51b5"])
MAX_LAYER_SECTIONS = 3  # configurations whose layers are charted: regressions first, then improvements


def baseline_changes_pages(baseline: str, results_root: Path, candidate: list[ExperimentResults]) -> list[Page]:
    """The changes page for `perfsite build --baseline BASELINE`: BASELINE is a results folder or `git:REF`
    (the `results_root` folder as committed at REF); `candidate` are the experiments the site renders."""
    with open_source(baseline, results_root) as source:
        return changes_pages(load_side(source), candidate, (source.short, "this site's results"))


def changes_pages(
    baseline_results: list[ExperimentResults],
    candidate_results: list[ExperimentResults],
    labels: tuple[str, str] = ("baseline", "candidate"),
) -> list[Page]:
    """The changes page of candidate_results against baseline_results (both lists of loaded experiments)."""
    result = diff_experiments(baseline_results, candidate_results, labels)
    ordered = _ordered(result)
    sections = [_layer_section(t, i) for i, t in enumerate(_layer_trials(ordered), start=1)]
    figures = [{"heading": heading, "chart": chart_block(f"chart-changes-{figure}", figure_chart(ordered, figure))}
               for figure, heading in (("latency", "Latency"), ("throughput", "Throughput")) if ordered]
    page = render(
        template_env(), "changes.md.j2", CHANGES_PATH, "Changes against the baseline", True, r=result,
        trials=ordered, sections=sections, figures=figures, change_text=change_text, signed_pct=signed_pct,
        grouped_notes=grouped_notes,
    )
    return [page]


def _ordered(result: DiffResult) -> list[TrialDiff]:
    rank = {SLOWER: 0, FASTER: 2}
    return sorted(result.trials, key=lambda t: (rank.get(t.verdict, 1), t.name))


def _layer_trials(trials: list[TrialDiff]) -> list[TrialDiff]:
    changed = [t for t in trials if t.verdict in (SLOWER, FASTER) and t.layers.all_layers]
    rest = [t for t in trials if t not in changed and t.layers.all_layers and
            (t.layers.changed or t.layers.added or t.layers.removed)]
    return (changed + rest)[:MAX_LAYER_SECTIONS]


def _layer_section(trial: TrialDiff, number: int) -> dict[str, Any]:
    return {"trial": trial, "chart": chart_block(f"chart-changes-layers-{number}", layer_chart(trial, number))}


def _side_records(t: TrialDiff, figure: str) -> list[dict[str, Any]]:
    if figure == "latency":
        values = ((t.latency_baseline_ms, t.latency_baseline_ci), (t.latency_candidate_ms, t.latency_candidate_ci))
    else:
        values = ((t.throughput_baseline_ips, t.throughput_baseline_ci),
                  (t.throughput_candidate_ips, t.throughput_candidate_ci))
    out = []
    for side, (value, ci) in zip(("baseline", "candidate"), values, strict=True):
        if value is None:
            continue
        low, high = ci if ci else (value, value)
        out.append({"configuration": t.name, "side": side, "value": _round(value), "low": _round(low),
                    "high": _round(high), "verdict": t.verdict})
    return out


def figure_chart(trials: list[TrialDiff], figure: str) -> alt.LayerChart:
    """One row per configuration, the baseline's and the candidate's bar side by side with a 95 % interval
    rule each; `figure` is "latency" (at each configuration's percentile) or "throughput"."""
    records = [r for t in trials for r in _side_records(t, figure)]
    title = "Latency (ms)" if figure == "latency" else "Throughput (items/s)"
    if figure == "latency" and trials:
        title = f"Latency {trials[0].percentile} (ms)"
    y = alt.Y("configuration:N", title=None, sort=[t.name for t in trials], axis=alt.Axis(labelLimit=320))
    offset = alt.YOffset("side:N", sort=["baseline", "candidate"])
    color = alt.Color("side:N", title="Side", scale=SIDE_COLORS)
    base = alt.Chart(alt.Data(values=records))
    tooltip = [alt.Tooltip("configuration:N", title="Configuration"), alt.Tooltip("side:N", title="Side"),
               alt.Tooltip("value:Q", title=title, format=",.4~r"),
               alt.Tooltip("low:Q", title="95% interval from", format=",.4~r"),
               alt.Tooltip("high:Q", title="95% interval to", format=",.4~r"),
               alt.Tooltip("verdict:N", title="Verdict")]
    bars = base.mark_bar().encode(x=alt.X("value:Q", title=title), y=y, yOffset=offset, color=color,
                                  tooltip=tooltip)
    rules = base.mark_rule(color="#212121").encode(x="low:Q", x2="high:Q", y=y, yOffset=offset)
    layers = [bars.properties(name=f"{figure}_bars"), rules.properties(name=f"{figure}_intervals")]
    return alt.layer(*layers).properties(name=f"changes_{figure}", width="container",
                                         height=alt.Step(14))


def layer_chart(trial: TrialDiff, number: int) -> alt.LayerChart:
    """Every layer of one configuration in execution order, baseline and candidate side by side (µs per
    inference, profiled times calibrated to the timed latency; see generator.diff.layers)."""
    records = []
    for c in trial.layers.all_layers:
        for side, value in (("baseline", c.baseline_us), ("candidate", c.candidate_us)):
            if value is not None:
                records.append({"layer": c.layer, "side": side, "time_us": _round(value), "status": c.status,
                                "op_type": c.op_type})
    order = [c.layer for c in trial.layers.all_layers]
    y = alt.Y("layer:N", title=None, sort=order, axis=alt.Axis(labelLimit=320))
    bars = alt.Chart(alt.Data(values=records)).mark_bar().encode(
        x=alt.X("time_us:Q", title="Time per inference (µs)"), y=y,
        yOffset=alt.YOffset("side:N", sort=["baseline", "candidate"]),
        color=alt.Color("side:N", title="Side", scale=SIDE_COLORS),
        tooltip=[alt.Tooltip("layer:N", title="Layer"), alt.Tooltip("op_type:N", title="Op type"),
                 alt.Tooltip("side:N", title="Side"),
                 alt.Tooltip("time_us:Q", title="Time per inference (µs)", format=",.4~r"),
                 alt.Tooltip("status:N", title="Change")],
    )
    return alt.layer(bars.properties(name=f"layers_{number}_bars")).properties(
        name=f"changes_layers_{number}", width="container", height=alt.Step(10),
    )


def history_pages(
    results_root: Path,
    experiments: list[ExperimentResults],
    baseline: str | None,
    trend: int | None,
    progress: Callable[[str], None],
) -> list[Page]:
    """The pages `perfsite build --baseline B --trend N` adds: the changes page and the trend page."""
    from generator.site.trend_page import trend_pages

    pages = []
    if baseline:
        progress(f"Comparing with the baseline {shown(baseline)}")
        pages += baseline_changes_pages(baseline, results_root, experiments)
    if trend:
        progress(f"Reading the results of the last {trend} commits that changed {results_root}")
        pages += trend_pages(results_root, trend)
    return pages
