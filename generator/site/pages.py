"""Report pages: results -> view records (generator.site.page_base) -> Markdown from the Jinja templates in
site_templates/. Page kinds are a registry (`PAGE_KINDS`): each turns one experiment into pages; the overview
and profile kinds are here, the compare and chooser kinds in their own modules.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import jinja2

from generator.analysis import run_summaries as R
from generator.analysis import summaries as S
from generator.analysis.chooser import choosable
from generator.analysis.compare import agreement_by_trial
from generator.analysis.findings import OVERVIEW, cached_profile, profile_page, profile_sections
from generator.analysis.findings.choose import PAGE as CHOOSE_PAGE
from generator.analysis.generative import phase_finding_id
from generator.analysis.limits import LimitOverruns, limit_overruns
from generator.analysis.profile import WHATIF_DEFAULT, TrialProfile, op_type_times, trial_profile
from generator.analysis.roofline import FAR_BELOW_EFFICIENCY, FAR_BELOW_MIN_SHARE
from generator.analysis.side_by_side import side_by_side
from generator.results.store import ExperimentResults
from generator.site import (
    charts,
    charts_profile,
    chooser_page,
    compare_page,
    generative_compare,
    generative_profile,
    machine_reports,
    machines_page,
)
from generator.site import charts_generative as G
from generator.site.charts_timeline import TIMELINE_CALLS, temporal_chart, timeline_chart
from generator.site.page_base import (  # noqa: F401  (re-exported: the pages' common ground)
    MAX_SLUG,
    REPORTS_DIR,
    TRACE_GZIP_ABOVE,
    ExperimentView,
    Page,
    VersionView,
    experiment_view,
    front_matter,
    render,
    slugify,
    template_env,
    templates_dir,
)
from generator.timeline import chrome_trace_json
from generator.timeline.view import TimelineView, timeline_view


def experiment_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """The experiment's overview page: chart, best results, warnings, the sortable table of every trial."""
    if view.generative is not None:
        return [generative_page(env, view)]
    chart = charts.latency_throughput_chart(view.trials, [v.info.version for v in view.versions],
                                            view.headline_label, view.spec.latency_threshold_ms)
    block = charts.chart_block("chart-latency-throughput", chart) if view.ok_trials else ""
    versions = [v.info.version for v in view.versions]
    rows = side_by_side(view.trials, versions, [v.info for v in view.versions], agreement_by_trial(view.results))
    versions_block = charts.chart_block("chart-versions", charts.versions_chart(rows, versions, view.headline_label)) \
        if rows else ""
    page = render(env, "experiment.md.j2", f"{REPORTS_DIR}/{view.slug}/index.md", view.title, True, e=view,
                  chart=block, side=rows, versions_chart=versions_block, multi_env=len(view.environments) > 1,
                  multi_target=any(t.target_name for t in view.trials), line_axis=charts.line_axis(view.trials),
                  compares=compare_page.compare_links(view), chooser=view.chooser)
    if view.findings is not None:
        page = replace(page, files=page.files + ((f"{REPORTS_DIR}/{view.slug}/findings.json", findings_json(view)),))
    return [page]


def generative_page(env: jinja2.Environment, view: ExperimentView) -> Page:
    """A generative experiment's overview: the sweet spot under its limits, each compared pair judged in prefill
    and decode apart, the TTFT, decode-step and tokens/s charts, and every configuration's figures."""
    report = view.generative
    made = {"limits": G.limits_chart(report), "ttft": G.ttft_chart(report), "steps": G.steps_chart(report),
            "tokens": G.tokens_chart(report)}
    blocks = {name: charts.chart_block(f"chart-generative-{name}", chart) if report.rows else ""
              for name, chart in made.items()}
    links = generative_compare.pair_links(view)
    page = render(env, "generative.md.j2", f"{REPORTS_DIR}/{view.slug}/index.md", view.title, True, e=view,
                  charts=blocks, pairs=links, profiles=generative_profile.profile_links(view))
    data = report.findings.as_dict(view.name)
    # A phase verdict is stated on its pair's compare page.
    pages = {phase_finding_id(link.view.pair, c, v): link.path
             for link in links for c in link.view.pair.comparisons for v in c.phases}
    for f in data["findings"]:
        f["page"] = pages.get(f["id"], "index.md")
    text = json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    return replace(page, files=page.files + ((f"{REPORTS_DIR}/{view.slug}/findings.json", text),))


def findings_json(view: ExperimentView) -> str:
    """findings.json (docs/findings.md): every finding of the experiment, each naming the page that states it."""
    pages = {OVERVIEW: "index.md", **{profile_page(v.info.version): v.profile_path for v in view.versions},
             **{f"compare:{i}": link.path for i, link in enumerate(compare_page.compare_links(view))},
             CHOOSE_PAGE: chooser_page.CHOOSER_PAGE}
    data = view.findings.as_dict(view.name)
    if view.machine is not None:  # one machine's findings (per_machine): say which
        data = {**{k: v for k, v in data.items() if k != "findings"}, "machine": view.machine,
                "env_id": view.environments[0].env_id if view.environments else None, "findings": data["findings"]}
    for f in data["findings"]:
        f["page"] = pages.get(f["page"], f["page"])
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def compare_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """One page per `compare:` pair of the spec: A vs B (generator.site.compare_page); a generative experiment's
    per compared pair of its report, prefill and decode apart (generator.site.generative_compare)."""
    if view.generative is not None:
        return generative_compare.generative_compare_pages(env, view)
    return compare_page.compare_pages(env, view)


def profile_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """One page per version: the full profile of each profiled configuration (the spec's `profile` entries,
    by default batch 1 at the most threads) and of the version's sweet spot; a generative experiment's, its
    prefill and decode step node by node at every configuration (generator.site.generative_profile)."""
    if view.generative is not None:
        return generative_profile.generative_profile_pages(env, view)
    pages = []
    for version in view.versions:
        name = version.info.version
        found = profile_sections(view.trials, name, view.spec.profile_entries, view.spec.first_values,
                                 version.best.sweet_spot)
        stem = version.profile_path.removesuffix(".md")
        sections = [_profile_section(view, s.target, i + 1, s.sweet_spot, stem) for i, s in enumerate(found)]
        path = f"{REPORTS_DIR}/{view.slug}/{version.profile_path}"
        title = f"{name} — profile"
        page = render(env, "profile.md.j2", path, title, True, e=view, v=version, sections=sections,
                      far_below=(FAR_BELOW_EFFICIENCY, FAR_BELOW_MIN_SHARE), whatif_factor=_plain(WHATIF_DEFAULT),
                      page_findings=view.findings_on(profile_page(name)))
        traces = tuple((f"{REPORTS_DIR}/{view.slug}/{s.trace_file}", s.trace_json) for s in sections if s.trace_file)
        pages.append(replace(page, files=traces + page.files))
    return pages


@dataclass(frozen=True)
class ProfileSection:
    """One configuration on a profile page: its profile (None without an ok trial) and chart blocks."""

    target: S.ProfileTarget
    sweet_spot: bool
    profile: TrialProfile | None
    op_time_chart: str = ""
    ops_time_chart: str = ""
    roofline_chart: str = ""
    roofline_combined: int = 0  # nodes drawn as one combined point (charts_profile.ROOFLINE_POINTS)
    timeline: TimelineView | None = None  # None: no `timeline` rows (older results, no profiled pass)
    timeline_chart: str = ""
    timeline_hidden: int = 0  # calls too short to be among the drawn ones (site.charts_timeline.TIMELINE_CALLS)
    temporal_chart: str = ""
    trace_file: str = ""  # the Perfetto trace, beside the page
    trace_json: str | bytes = ""  # bytes: gzip-compressed (TRACE_GZIP_ABOVE)
    overruns: LimitOverruns | None = None  # figures above a measured limit (generator.analysis.limits)


def _profile_section(view: ExperimentView, target: S.ProfileTarget, number: int, is_sweet: bool,
                     stem: str = "profile") -> ProfileSection:
    trial = target.trial
    if trial is None or trial.status != "ok":
        return ProfileSection(target, is_sweet, None)
    profile = cached_profile(view.context, trial) if view.context is not None else \
        trial_profile(view.results, trial, dict(view.results.spec.whatif), {})
    op_times = op_type_times(view.results.nodes, trial.trial_key)
    blocks = {}
    if op_times:
        blocks["op_time_chart"] = charts.chart_block(
            f"chart-op-time-{number}", charts.op_time_chart(op_times, f"op_time_{number}"))
    if any(r.analysed for r in profile.layers):
        blocks["ops_time_chart"] = charts.chart_block(
            f"chart-ops-time-{number}", charts_profile.ops_time_chart(profile.op_types, f"ops_time_{number}"))
    if profile.limits.roofline_drawn and charts_profile.has_roofline_points(profile.layers):
        blocks["roofline_chart"] = charts.chart_block(
            f"chart-roofline-{number}",
            charts_profile.roofline_chart(profile.layers, profile.limits, f"roofline_{number}"))
        blocks["roofline_combined"] = charts_profile.roofline_combined(profile.layers)
    blocks.update(_timeline_blocks(view, trial, profile, number, stem))
    return ProfileSection(target, is_sweet, profile, **blocks, overruns=_overruns(profile, blocks.get("timeline")))


def _overruns(profile: TrialProfile, tv: TimelineView | None) -> LimitOverruns | None:
    """Every figure of the section that is a share of a measured limit, those above it gathered."""
    m = profile.summary
    figures = [("the model's FP32 rate", m.peak_share_fp32), ("the model's integer rate", m.peak_share_int8)]
    figures += [(f"layer {r.node_name}", r.efficiency) for r in profile.layers]
    if tv is not None:
        figures += [("the peak memory traffic", tv.traffic_share), ("the peak compute rate", tv.compute_share)]
        figures += [(f"call {d.node_name}", d.limit_share) for d in tv.details]
    return limit_overruns(figures)


def _timeline_blocks(view: ExperimentView, trial: S.TrialSummary, profile: TrialProfile, number: int,
                     stem: str) -> dict[str, Any]:
    """The timeline section's view, charts and Perfetto trace (file name: page stem, section number and a
    file-name-safe configuration label), or nothing when the trial has no `timeline` rows."""
    tv = timeline_view(view.results.timeline, trial.trial_key, profile.layers, profile.limits)
    if tv is None or not tv.timeline.events:
        return {}
    # Cut to MAX_SLUG, as names are: a placeholder name has no length limit, and `seq_len…` of 250 characters
    # made a file name the file system refused (ENAMETOOLONG), a traceback at every build. The section number
    # keeps the name unique; the label only helps a reader of the downloads folder.
    label = re.sub(r"[^A-Za-z0-9.]+", "-", trial.config_label)[:MAX_SLUG].strip(".-") or "trial"
    title = f"{view.name} · {trial.version} · {trial.config_label}"
    trace_file, trace = f"{stem}-{number}-{label}.trace.json", chrome_trace_json(tv.timeline, title)
    if len(trace) > TRACE_GZIP_ABOVE:
        # Perfetto and chrome://tracing open gzip-compressed traces; mtime=0 keeps the bytes the same per build.
        trace_file, trace = trace_file + ".gz", gzip.compress(trace.encode("utf-8"), mtime=0)
    return {
        "timeline": tv, "timeline_hidden": max(0, len(tv.timeline.events) - TIMELINE_CALLS),
        "trace_file": trace_file, "trace_json": trace,
        "timeline_chart": charts.chart_block(f"chart-timeline-{number}",
                                             timeline_chart(tv.timeline, f"timeline_{number}")),
        "temporal_chart": charts.chart_block(f"chart-temporal-{number}",
                                             temporal_chart(tv.stats, tv.peak_gflops, tv.bandwidth_gbs,
                                                            f"temporal_{number}", tv.integer)),
    }


def chooser_pages(env: jinja2.Environment, view: ExperimentView,
                  details: Callable[[], chooser_page.ChunksOf] | None = None) -> list[Page]:
    """The page where a reader chooses A and B (generator.site.chooser_page); `details`: its layer details were
    written by chooser_details in another process, which gives their chunks."""
    if view.generative is not None:
        return generative_compare.generative_chooser_pages(env, view) if view.chooser else []
    return chooser_page.chooser_pages(env, view, details) if view.chooser else []


def chooser_details(view: ExperimentView) -> tuple[list[tuple[str, str]], chooser_page.ChunksOf]:
    """The chooser page's layer-detail files and chunks (chooser_page.detail_files), which need no statistics:
    none without a chooser page."""
    keys = [t.trial_key for t in choosable(view.context)] if view.chooser else []
    return chooser_page.detail_files(view, keys) if len(keys) >= 2 else ([], {})


PageKind = Callable[[jinja2.Environment, ExperimentView], list[Page]]
PAGE_KINDS: dict[str, PageKind] = {"overview": experiment_pages, "profiles": profile_pages,
                                 "compare": compare_pages, "choose": chooser_pages,
                                 "machines": machines_page.machines_pages}


def render_pages(experiments: list[ExperimentResults]) -> tuple[list[Page], list[ExperimentView]]:
    """Every page for these experiments (ExperimentResults, in order): the reports index, then each
    experiment's pages of every kind."""
    env = template_env()
    taken: set[str] = {"index"}
    pages, views = [], []
    for results in experiments:
        slug = slugify(results.name, taken)
        split = machine_reports.machine_views(results, slug, site_view)
        if split is not None:
            pages += machine_reports.machine_pages(env, split[0], split[1], findings_json)
        for view in split[1] if split is not None else [site_view(results, slug)]:
            pages += view_pages(env, view)
            views.append(view)
    return [reports_index(env, views), *pages], views


def site_view(results: ExperimentResults, slug: str, **machine: Any) -> ExperimentView:
    """The experiment's view as the site shows it (its pages, the reports index and the home page); `machine`:
    experiment_view's machine and machine_count, for one machine's results (generator.site.machine_reports)."""
    # bench/chooser_cost.py builds sites without the kind: no links to it, and none of its findings.
    return experiment_view(results, slug, chooser="choose" in PAGE_KINDS, **machine)


def view_pages(env: jinja2.Environment, view: ExperimentView, kinds: Iterable[str] | None = None) -> list[Page]:
    """One experiment's pages, of every kind (or of `kinds`), in the registry's order."""
    pages = []
    wanted = set(PAGE_KINDS if kinds is None else kinds)
    with charts.unvalidated():
        for name, kind in PAGE_KINDS.items():
            if name in wanted:
                pages += kind(env, view)
    return pages


def reports_index(env: jinja2.Environment, views: list[ExperimentView]) -> Page:
    """The "All reports" page: every experiment's summary and the environments they were measured on."""
    return render(env, "reports_index.md.j2", f"{REPORTS_DIR}/index.md", "Reports", True, experiments=views,
                  environments=_all_environments(views))


def home_page(views: list[ExperimentView]) -> Page:
    """A home page for projects without docs/index.md: what the site holds, with links to every report."""
    return render(template_env(), "home.md.j2", "index.md", "Performance reports", experiments=views)


def _all_environments(views: list[ExperimentView]) -> list[tuple[R.EnvironmentSummary, list[str]]]:
    """Environments across experiments (by env_id), each with the experiments measured on it."""
    found: dict[str, tuple[R.EnvironmentSummary, list[str]]] = {}
    for view in views:
        for env in view.environments:
            found.setdefault(env.env_id, (env, []))[1].append(view.title)
    return [found[k] for k in sorted(found)]


def _plain(value: float) -> float | int:
    """A whole factor as an int, so that pages say 2×, not 2.00×."""
    return int(value) if float(value).is_integer() else value
