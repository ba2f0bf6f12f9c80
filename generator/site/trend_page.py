"""Trend over history: each key figure over the last N commits that changed the committed results.

`perfsite build --trend N` reads `git log` of the results folder, materializes the folder as committed at each
of those revisions (generator.diff.sources, never touching the working tree), and takes, per commit, the
newest ok trial of every (experiment, version, configuration): its latency at the spec's percentile and its
throughput. A slow drift that no single pull request's diff flags (+2 % here, +3 % there) shows as a slope.
Uncommitted results are not part of the history.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import altair as alt

from generator.analysis.per_machine import machine_names
from generator.cells import clean
from generator.diff.report import signed_pct
from generator.diff.sources import (
    Commit,
    ResultsSource,
    SourceError,
    commits_changing,
    git_location,
    is_shallow,
    load_side,
    materialize,
)
from generator.errors import PerfsiteError
from generator.results.headline import percentile_label, stored_percentile
from generator.results.store import ExperimentResults
from generator.site.charts import _round, chart_block
from generator.site.charts_compare import PALETTE
from generator.site.page_base import REPORTS_DIR, Page, render, template_env

TREND_PATH = f"{REPORTS_DIR}/_trend/index.md"


@dataclass(frozen=True)
class TrendPoint:
    """One configuration's key figures as committed at one revision."""

    commit: str
    committed_at: str
    subject: str
    position: int  # 0 for the oldest commit of the window
    experiment: str
    version: str
    config_label: str
    percentile: str  # the spec's
    latency_ms: float
    throughput_ips: float | None
    noisy: bool
    quick: bool = False  # measured in quick mode (a preview): the page says so
    # What latency_ms reports when it is not `percentile`: p95 standing in for p99 (headline.stored_percentile)
    stand_in: str | None = None
    # The machine that measured it (per_machine.machine_names) when the trend holds several: each machine is a
    # series of its own, never compared with another. Empty: one machine.
    machine: str = ""

    @property
    def reported(self) -> str:
        return self.stand_in or self.percentile

    @property
    def series(self) -> str:
        on = f" · on {self.machine}" if self.machine else ""
        return f"{self.version} · {self.config_label}{on}"


@dataclass(frozen=True)
class SeriesChange:
    """A configuration's first and last figures over the window."""

    experiment: str
    series: str
    first: TrendPoint
    last: TrendPoint
    points: int

    @property
    def comparable(self) -> bool:
        """Both ends report the same percentile: a trial with too few requests for p99 reports p95 instead."""
        return self.first.reported == self.last.reported

    @property
    def latency_ratio(self) -> float:
        if not self.comparable or not self.first.latency_ms:
            return float("nan")
        return self.last.latency_ms / self.first.latency_ms


@dataclass(frozen=True)
class Trend:
    """What `--trend N` found in git: the commits (oldest first) among the last N that changed the results folder
    and still hold results, every configuration's figures at each, the commits skipped because their results
    could not be read (a damaged file committed once must not fail every later build) with why, and whether the
    clone's history is cut (a shallow clone shows fewer commits than were measured)."""

    commits: list[Commit]
    points: list[TrendPoint]
    skipped: list[tuple[Commit, str]]
    shallow: bool = False


def collect_trend(results_root: Path, last: int) -> Trend:
    """The trend of the results folder over the last `last` commits that changed it (Trend)."""
    repo, rel = git_location(results_root, "--trend follows the results folder {path} through git history",
                             "Commit the results in a git repository, or build without --trend.")
    commits, points, skipped = [], [], []
    for commit in commits_changing(repo, rel, last):
        with tempfile.TemporaryDirectory(prefix="perfsite-trend-") as tmp:
            try:
                folder = materialize(repo, commit.commit, rel, Path(tmp), commit.commit[:12])
                experiments = load_side(ResultsSource(commit.commit[:12], folder, commit.commit))
            except SourceError:
                continue  # the folder was deleted at this commit, or held no finished trial yet
            except PerfsiteError as e:  # damaged or unreadable results in that revision
                skipped.append((commit, str(e).replace(str(folder), rel)))
                continue
            points += trend_points(experiments, commit, len(commits))
            commits.append(commit)
    if len({p.machine for p in points}) == 1:
        points = [replace(p, machine="") for p in points]
    return Trend(commits, points, skipped, is_shallow(repo))


def trend_points(experiments: list[ExperimentResults], commit: Commit, position: int) -> list[TrendPoint]:
    """The newest ok trial of every (experiment, machine, version, configuration label) at one commit."""
    out = []
    for exp in experiments:
        trials = exp.trials.assign(machine=machine_names(exp.trials, exp.environments))
        ok = trials[(trials["status"] == "ok") & trials["latency_headline_ms"].notna()]
        keys = ["machine", "version", "config_label"]
        newest = ok.sort_values(["finished_at", "trial_key"]).groupby(keys).tail(1)
        for _, row in newest.sort_values(keys).iterrows():
            percentile = str(clean(row.get("percentile")) or "p90")
            out.append(TrendPoint(
                commit=commit.commit, committed_at=commit.committed_at, subject=commit.subject,
                position=position, experiment=exp.name, version=str(row["version"]),
                config_label=str(row["config_label"]), percentile=percentile,
                latency_ms=float(row["latency_headline_ms"]), throughput_ips=clean(row.get("throughput_ips")),
                noisy=bool(clean(row.get("noisy"))), quick=bool(clean(row.get("quick"))),
                stand_in=_stand_in(percentile, clean(row.get("latency_p99_ms"))), machine=str(row["machine"]),
            ))
    return out


def _stand_in(percentile: str, latency_p99_ms: float | None) -> str | None:
    reported = stored_percentile(percentile, latency_p99_ms)
    return reported if reported != percentile else None


def series_changes(points: list[TrendPoint]) -> list[SeriesChange]:
    """Per (experiment, configuration): first and last point of the window, largest latency change first."""
    grouped: dict[tuple[str, str], list[TrendPoint]] = {}
    for p in points:
        grouped.setdefault((p.experiment, p.series), []).append(p)
    changes = [SeriesChange(exp, series, ps[0], ps[-1], len(ps)) for (exp, series), ps in grouped.items()]
    return sorted(changes, key=lambda c: (not c.comparable, -abs(c.latency_ratio - 1.0) if c.comparable else 0.0,
                                          c.experiment, c.series))


def trend_chart(points: list[TrendPoint], figure: str, name: str) -> alt.LayerChart:
    """A line per configuration over the commits (oldest left); `figure` is "latency" or "throughput"."""
    reported, specs = {p.reported for p in points}, {p.percentile for p in points}
    label = percentile_label(points[0].percentile, reported) if len(specs) == 1 else "at each point's percentile"
    field, title = ("latency_ms", f"Latency {label} (ms)") \
        if figure == "latency" else (
        "throughput_ips", "Throughput (items/s)")
    records = [_record(p) for p in points if getattr(p, field) is not None]
    labels = {p.position: p.commit[:8] for p in points}
    x = alt.X("position:O", title="Commit (oldest left)", axis=alt.Axis(
        labelExpr=_label_expr(labels), labelAngle=0))
    y = alt.Y(f"{field}:Q", title=title, scale=alt.Scale(zero=False, padding=8))
    # A colour per version (a handful, all in the legend), a line per configuration: 36 configurations cannot
    # have 36 distinct colours, and a legend of 36 entries was cut off after 16. A selector picks one
    # configuration to highlight; the tooltip names each line.
    versions = sorted({r["version"] for r in records})
    color = alt.Color("version:N", title="Version", sort=versions, legend=alt.Legend(symbolLimit=0),
                      scale=alt.Scale(domain=versions, range=[PALETTE[i % len(PALETTE)] for i in range(len(versions))]))
    series = sorted({r["series"] for r in records})
    pick = alt.param(name=f"{name}_series", value="every configuration", bind=alt.binding_select(
        options=["every configuration", *series], name="Highlight "))
    faded = alt.condition(f"{name}_series == 'every configuration' || datum.series == {name}_series",
                          alt.value(1.0), alt.value(0.12))
    base = alt.Chart(alt.Data(values=records))
    tooltip = [alt.Tooltip("series:N", title="Configuration"), alt.Tooltip("commit:N", title="Commit"),
               alt.Tooltip("date:N", title="Committed"), alt.Tooltip("subject:N", title="Subject"),
               alt.Tooltip(f"{field}:Q", title=title, format=",.4~r")]
    if figure == "latency" and len(reported) > 1:  # which points report p95 for p99
        tooltip.append(alt.Tooltip("percentile:N", title="Percentile"))
    # A line joins the points of one percentile: p95 standing in for p99 is not the same figure.
    detail = "line:N" if figure == "latency" else "series:N"
    lines = base.mark_line(point=True).encode(x=x, y=y, color=color, detail=detail, opacity=faded,
                                              tooltip=tooltip).add_params(pick)
    return alt.layer(lines.properties(name=f"{name}_lines")).properties(name=name, width="container", height=260)


def _record(p: TrendPoint) -> dict[str, Any]:
    return {"position": p.position, "commit": p.commit[:12], "date": p.committed_at, "subject": p.subject,
            "series": p.series, "version": p.version, "percentile": p.reported, "line": f"{p.series} · {p.reported}",
            "latency_ms": _round(p.latency_ms), "throughput_ips": _round(p.throughput_ips)}


def _label_expr(labels: dict[int, str]) -> str:
    # Commit ids are hex digits: safe inside the expression's string literals.
    cases = " : ".join(f"datum.value == {k} ? '{v}'" for k, v in sorted(labels.items()))
    return f"{cases} : ''" if cases else "''"


def trend_pages(results_root: Path, last: int) -> list[Page]:
    """The trend page for `perfsite build --trend N`."""
    trend = collect_trend(results_root, last)
    return [trend_page(trend.commits, trend.points, last, trend.skipped, trend.shallow)]


def trend_page(commits: list[Commit], points: list[TrendPoint], last: int,
               skipped: list[tuple[Commit, str]] = (), shallow: bool = False) -> Page:
    """The page from collected points: per experiment, latency and throughput over commits, then a table."""
    experiments = sorted({p.experiment for p in points})
    sections = []
    for i, exp in enumerate(experiments, start=1):
        mine = [p for p in points if p.experiment == exp]
        charts = [{"chart": chart_block(f"chart-trend-{figure}-{i}", trend_chart(mine, figure, f"trend_{figure}_{i}"))}
                  for figure in ("latency", "throughput")]
        sections.append({"experiment": exp, "charts": charts})
    return render(template_env(), "trend.md.j2", TREND_PATH, "Trend over commits", True, commits=commits,
                  sections=sections, changes=series_changes(points), last=last, signed_pct=signed_pct,
                  skipped=list(skipped), quick=sum(p.quick for p in points), total=len(points),
                  shallow=shallow, machines=sorted({p.machine for p in points if p.machine}))
