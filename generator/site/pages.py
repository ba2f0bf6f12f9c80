"""Report pages: results -> view records -> Markdown from the Jinja templates in site_templates/.

Templates are rendered with autoescape off (they write Markdown, not HTML), so every interpolation of
untrusted text goes through the `md` filter (generator.site.escape.md_text); numbers go through the formatting
filters.
Page kinds are a registry (`PAGE_KINDS`): each turns one experiment into pages.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2

import generator
from generator.analysis import summaries as S
from generator.analysis.accounting import PROFILED_TIMES_RULE
from generator.analysis.limits import LimitOverruns, limit_overruns
from generator.analysis.profile import WHATIF_DEFAULT, TrialProfile, op_type_times, trial_profile
from generator.analysis.roofline import FAR_BELOW_EFFICIENCY, FAR_BELOW_MIN_SHARE
from generator.results.store import ExperimentResults
from generator.site import charts, charts_profile
from generator.site.escape import md_paragraphs, md_text
from generator.site.formatting import FILTERS
from generator.site.glossary import abbreviations
from generator.site.long_tables import page_long_tables
from generator.site.specview import SpecView, spec_view
from generator.timeline import chrome_trace_json, temporal_chart, timeline_chart
from generator.timeline.charts import TIMELINE_CALLS
from generator.timeline.view import TimelineView, timeline_view

REPORTS_DIR = "reports"
# A Perfetto trace above this many characters is written gzip-compressed: about 280 bytes per kernel call made
# 5.6 MB for a 20,000-node model, and no file of the site is to exceed 3 MB.
TRACE_GZIP_ABOVE = 1_000_000
MAX_SLUG = 48  # characters of a name kept in a file name


def templates_dir() -> Path:
    """site_templates/: beside the package in a source checkout or editable install, inside it in a wheel."""
    package = Path(generator.__file__).parent
    for candidate in (package / "site_templates", package.parent / "site_templates"):
        if (candidate / "mkdocs.base.yml").is_file():
            return candidate
    raise FileNotFoundError(f"site_templates not found beside or inside {package}: a broken installation")


@dataclass(frozen=True)
class Page:
    """One generated Markdown page, its path relative to the docs folder and its (escaped) title."""

    path: str
    title: str
    markdown: str
    # Other files written beside it: (path in the docs folder, text or bytes), e.g. a long table's data files.
    files: tuple[tuple[str, str | bytes], ...] = ()


def slugify(name: str, taken: set[str]) -> str:
    """A file-name-safe, unique slug for an experiment or version name (names are untrusted text)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", name)[:MAX_SLUG].strip(".-") or "x"
    slug, n = base, 2
    while slug.lower() in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug.lower())
    return slug


@dataclass(frozen=True)
class VersionView:
    info: S.VersionInfo
    source: str
    best: S.VersionBest
    profile_path: str  # relative to the experiment folder


@dataclass(frozen=True)
class ExperimentView:
    """Everything an experiment's pages show, computed once."""

    name: str
    slug: str
    spec: SpecView
    percentile: str
    trials: list[S.TrialSummary]
    versions: list[VersionView]
    environments: list[S.EnvironmentSummary]
    last_run: dict[str, Any] | None
    results: ExperimentResults  # its nodes and processes feed the profile pages

    @property
    def quick(self) -> bool:
        return any(t.quick for t in self.trials)

    @property
    def ok_trials(self) -> list[S.TrialSummary]:
        return [t for t in self.trials if t.ok]

    @property
    def failed(self) -> list[S.TrialSummary]:
        return [t for t in self.trials if t.status != "ok"]

    @property
    def noisy(self) -> list[S.TrialSummary]:
        return [t for t in self.trials if t.noisy and t.status == "ok"]

    @property
    def noisy_unpreempted(self) -> list[S.TrialSummary]:
        """Noisy trials whose processes disagree although hardly a request was preempted: the machine itself
        varied between processes (a virtual machine's host, CPU frequency, memory traffic), which run-delay
        cannot see and a larger budget does not cure."""
        return [t for t in self.noisy if t.preemption_known and (t.preempted_share or 0.0) < UNPREEMPTED_SHARE
                and any(r.startswith("process medians spread") for r in t.noise_reasons)]

    @property
    def oversubscribed(self) -> list[S.TrialSummary]:
        return [t for t in self.ok_trials if t.oversubscribed]

    @property
    def outputs_beyond_tolerance(self) -> tuple[Any, ...]:
        """Agreement rows (generator.analysis.compare) of versions whose outputs left the tolerance."""
        from generator.analysis.compare import outputs_beyond_tolerance

        return outputs_beyond_tolerance(self.results)

    @property
    def tolerance_default(self) -> bool:
        return self.results.spec.tolerance is None

    @property
    def out_of_budget(self) -> list[S.TrialSummary]:
        return [t for t in self.trials if t.budget_exhausted and t.status == "ok"]

    @property
    def sweet_spots(self) -> list[S.TrialSummary]:
        return [v.best.sweet_spot for v in self.versions if v.best.sweet_spot is not None]


# Below this share of preempted requests, a trial's spread is not the neighbours' doing (methodology page).
UNPREEMPTED_SHARE = 0.01


def experiment_view(results: ExperimentResults, slug: str) -> ExperimentView:
    """Summaries of one experiment's results, versions in spec order."""
    spec = spec_view(results.spec)
    versions = S.ordered_versions(results.trials, list(spec.versions))
    trials = S.trial_summaries(results.trials, versions)
    percentile = spec.percentile or _stored_percentile(results.trials)
    bests = S.version_bests(trials, versions, spec.latency_threshold_ms)
    infos = S.version_infos(results.trials, versions)
    taken: set[str] = set()
    views = [
        VersionView(info, info.source or spec.sources.get(info.version, "not in the current spec"), best,
                    f"profile-{slugify(info.version, taken)}.md")
        for info, best in zip(infos, bests, strict=True)
    ]
    return ExperimentView(
        name=results.name, slug=slug, spec=spec, percentile=percentile, trials=trials, versions=views,
        environments=S.environment_summaries(results.environments, results.trials),
        last_run=S.last_run(results.runs), results=results,
    )


def _stored_percentile(trials: Any) -> str:
    values = sorted(set(trials["percentile"].dropna().astype(str))) if len(trials) else []
    return values[-1] if values else "p50"


def template_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()), autoescape=False, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.filters.update(FILTERS, md=md_text, md_paragraphs=md_paragraphs)
    # One sentence for every page that shows per-layer times (generator.analysis.accounting).
    env.globals["profiled_times_rule"] = PROFILED_TIMES_RULE
    return env


def front_matter(title_html: str, wide: bool) -> str:
    """Front matter with an already escaped title: mkdocs themes print `page.meta.title` as raw HTML, and
    Material's fallback (`page.title | striptags`) would unescape entities inside <title>. Report pages keep
    their table of contents (a profile page can be 30,000 px tall): the build integrates it into the left
    navigation (theme feature `toc.integrate`), which leaves their tables the width of the page. `wide` is
    kept for the templates that pass it."""
    del wide
    return f"---\ntitle: {json.dumps(title_html, ensure_ascii=False)}\n---\n\n"


def render(env: jinja2.Environment, template: str, path: str, title: str, wide: bool = False,
           **context: Any) -> Page:
    title_html = md_text(title)
    body = env.get_template(template).render(title=title_html, **context)
    # One trailing newline whatever the template ends with: stable snapshots.
    body = body.rstrip() + "\n"
    terms = abbreviations(body)  # hover texts for the page's jargon (generator.site.glossary)
    markdown, data_files = page_long_tables(front_matter(title_html, wide) + body + (f"\n{terms}\n" if terms else ""),
                                            path)
    return Page(path, title_html, markdown, data_files)


def experiment_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """The experiment's overview page: chart, best results, warnings, the sortable table of every trial."""
    chart = charts.latency_throughput_chart(view.trials, [v.info.version for v in view.versions],
                                            view.percentile, view.spec.latency_threshold_ms)
    block = charts.chart_block("chart-latency-throughput", chart) if view.ok_trials else ""
    page = render(env, "experiment.md.j2", f"{REPORTS_DIR}/{view.slug}/index.md", view.name, True, e=view,
                  chart=block, multi_env=len(view.environments) > 1, line_axis=charts.line_axis(view.trials),
                  compares=_compare_page().compare_links(view), chooser=has_chooser(view))
    return [page]


def _compare_page() -> ModuleType:
    # Imported on use: generator.site.compare_page builds on this module (Page, render, ExperimentView).
    from generator.site import compare_page

    return compare_page


def compare_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """One page per `compare:` pair of the spec: A vs B (generator.site.compare_page)."""
    return _compare_page().compare_pages(env, view)


def profile_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """One page per version: the full profile of each profiled configuration (the spec's `profile` entries,
    by default batch 1 at the most threads) and of the version's sweet spot."""
    whatif = dict(view.results.spec_json.get("whatif") or {})  # the stored spec was validated when written
    pages = []
    for version in view.versions:
        name = version.info.version
        mine = [t for t in view.trials if t.version == name]
        targets = S.profile_targets(mine, list(view.spec.profile_entries), view.spec.first_values)
        sweet = version.best.sweet_spot
        if sweet is not None and all(t.trial is None or t.trial.trial_key != sweet.trial_key for t in targets):
            targets.append(S.ProfileTarget((), sweet))
        stem = version.profile_path.removesuffix(".md")
        sections = [_profile_section(view, target, i + 1, sweet, whatif, stem) for i, target in enumerate(targets)]
        path = f"{REPORTS_DIR}/{view.slug}/{version.profile_path}"
        title = f"{name} — profile"
        page = render(env, "profile.md.j2", path, title, True, e=view, v=version, sections=sections,
                      far_below=(FAR_BELOW_EFFICIENCY, FAR_BELOW_MIN_SHARE), whatif_factor=_plain(WHATIF_DEFAULT))
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
    timeline_hidden: int = 0  # calls too short to be among the drawn ones (timeline.charts.TIMELINE_CALLS)
    temporal_chart: str = ""
    trace_file: str = ""  # the Perfetto trace, beside the page
    trace_json: str | bytes = ""  # bytes: gzip-compressed (TRACE_GZIP_ABOVE)
    overruns: LimitOverruns | None = None  # figures above a measured limit (generator.analysis.limits)


def _profile_section(view: ExperimentView, target: S.ProfileTarget, number: int, sweet: S.TrialSummary | None,
                     whatif: dict[str, float], stem: str = "profile") -> ProfileSection:
    trial = target.trial
    is_sweet = trial is not None and sweet is not None and trial.trial_key == sweet.trial_key
    if trial is None or trial.status != "ok":
        return ProfileSection(target, is_sweet, None)
    profile = trial_profile(view.results, trial, whatif, _compared_times(view, trial))
    op_times = op_type_times(view.results.nodes, trial.trial_key)
    blocks = {}
    if op_times:
        blocks["op_time_chart"] = charts.chart_block(
            f"chart-op-time-{number}", charts.op_time_chart(op_times, f"op_time_{number}"))
    if any(r.analysed for r in profile.layers):
        blocks["ops_time_chart"] = charts.chart_block(
            f"chart-ops-time-{number}", charts_profile.ops_time_chart(profile.op_types, f"ops_time_{number}"))
    if charts_profile.has_roofline_points(profile.layers):
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
    label = re.sub(r"[^A-Za-z0-9.]+", "-", trial.config_label).strip(".-") or "trial"
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
                                                            f"temporal_{number}")),
    }


def _compared_times(view: ExperimentView, trial: S.TrialSummary) -> dict[str, dict[str, float]]:
    """Time per op type (µs per inference) of each version the spec's `compare` pairs this one with, at the
    same configuration, when that version has a profiled ok trial there (a pair's `config` restricts the
    comparison page, not this estimate)."""
    others = []
    for pair in view.results.spec_json.get("compare") or []:
        a, b = pair.get("a"), pair.get("b")
        other = b if a == trial.version else a if b == trial.version else None
        if other and other not in others:
            others.append(other)
    out = {}
    for other in others:
        match = next((t for t in view.trials if t.version == other and t.ok and t.profiled
                      and t.sort_key() == trial.sort_key()), None)
        if match is not None:
            out[other] = {o.op_type: o.dur_mean_us for o in op_type_times(view.results.nodes, match.trial_key)}
    return out


def has_chooser(view: ExperimentView) -> bool:
    """Whether the experiment gets a chooser page (bench/chooser_cost.py builds sites without the kind)."""
    from generator.analysis.chooser import choosable
    from generator.analysis.compare_choice import compare_context

    return "choose" in PAGE_KINDS and len(choosable(compare_context(view.results))) >= 2


def chooser_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """The page where a reader chooses A and B (generator.site.chooser_page)."""
    from generator.site import chooser_page  # builds on this module, as compare_page does

    return chooser_page.chooser_pages(env, view)


PageKind = Callable[[jinja2.Environment, ExperimentView], list[Page]]
PAGE_KINDS: dict[str, PageKind] = {"overview": experiment_pages, "profiles": profile_pages,
                                 "compare": compare_pages, "choose": chooser_pages}


def render_pages(experiments: list[ExperimentResults]) -> tuple[list[Page], list[ExperimentView]]:
    """Every page for these experiments (ExperimentResults, in order): the reports index, then each
    experiment's pages of every kind."""
    env = template_env()
    taken: set[str] = {"index"}
    views = [experiment_view(results, slugify(results.name, taken)) for results in experiments]
    pages = [render(env, "reports_index.md.j2", f"{REPORTS_DIR}/index.md", "Reports", True, experiments=views,
                    environments=_all_environments(views))]
    for view in views:
        for kind in PAGE_KINDS.values():
            pages += kind(env, view)
    return pages, views


def home_page(views: list[ExperimentView]) -> Page:
    """A home page for projects without docs/index.md: what the site holds, with links to every report."""
    return render(template_env(), "home.md.j2", "index.md", "Performance reports", experiments=views)


def _all_environments(views: list[ExperimentView]) -> list[tuple[S.EnvironmentSummary, list[str]]]:
    """Environments across experiments (by env_id), each with the experiments measured on it."""
    found: dict[str, tuple[S.EnvironmentSummary, list[str]]] = {}
    for view in views:
        for env in view.environments:
            found.setdefault(env.env_id, (env, []))[1].append(view.name)
    return [found[k] for k in sorted(found)]


def _plain(value: float) -> float | int:
    """A whole factor as an int, so that pages say 2×, not 2.00×."""
    return int(value) if float(value).is_integer() else value
