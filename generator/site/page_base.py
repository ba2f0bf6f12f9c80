"""What every page kind builds on: the view records of an experiment (computed once), the Jinja environment and
`render`, which turns a template into a Page (Markdown plus the data files of its long tables).

Templates are rendered with autoescape off (they write Markdown, not HTML), so every interpolation of
untrusted text goes through the `md` filter (generator.site.escape.md_text); numbers go through the formatting
filters. The page kinds (generator.site.pages, compare_page, chooser_page) import this module; it imports none
of them.
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2

import generator
from generator.analysis import run_summaries as R
from generator.analysis import summaries as S
from generator.analysis.accounting import PROFILED_TIMES_RULE
from generator.analysis.compare_choice import CompareContext, compare_context
from generator.analysis.findings import FindingSet, report_findings, uncertain_trials
from generator.analysis.generative import GenerativeReport, generative_report
from generator.results.headline import percentile_label, stand_in_mark
from generator.results.store import ExperimentResults
from generator.site.escape import md_paragraphs, md_text
from generator.site.formatting import FILTERS
from generator.site.glossary import abbreviations
from generator.site.long_tables import page_long_tables
from generator.site.specview import SpecView, spec_view

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

    @property
    def no_sweet_spot_text(self) -> str:
        """What the Best results tables say where the version has no sweet spot: a version whose every trial
        failed has nothing under (or over) the threshold, and saying "none under the threshold" hid the failure."""
        if self.info.trials_ok:
            return "none under the threshold"
        return f"no successful trial ({self.info.trials_failed} failed)"


@dataclass(frozen=True)
class ExperimentView:
    """Everything an experiment's pages show, computed once."""

    name: str
    slug: str
    spec: SpecView
    percentile: str
    trials: list[S.TrialSummary]
    versions: list[VersionView]
    environments: list[R.EnvironmentSummary]
    last_run: dict[str, Any] | None
    results: ExperimentResults  # its nodes and processes feed the profile pages
    chooser: bool = False  # whether the experiment gets a "choose A and B" page (has_chooser)
    # One comparison context for every page kind of the experiment (compare pages, chooser, machines): the
    # per-trial statistics, bootstraps, executed nodes and comparisons it caches are computed once, not once per
    # page kind. None in a view kept without its results (the page cache).
    context: CompareContext | None = None
    # Every claim of the experiment's pages, settled together (generator.analysis.findings); None in a view kept
    # without its results (the page cache).
    findings: FindingSet | None = None
    run_noise: R.RunNoise | None = None  # the machine's own noise in the latest run that measured it
    # The machine's label when the experiment was measured on several and this view holds one machine's results
    # (generator.analysis.per_machine; its slug is then "<experiment>/<machine>"); untrusted text.
    machine: str | None = None
    machine_count: int = 1  # machines of the whole experiment
    # A generative experiment's figures and phase comparisons (its overview page is generative.md.j2, and it has
    # no profile, compare or chooser pages yet); None for every other experiment.
    generative: GenerativeReport | None = None

    @property
    def title(self) -> str:
        """The overview page's title, plain text: the experiment's name, and the machine of a machine's view."""
        return self.name if self.machine is None else f"{self.name} on {self.machine}"

    @property
    def parent_slug(self) -> str:
        """The experiment's folder of a machine's view (its slug without the machine), else its own slug."""
        return self.slug.rsplit("/", 1)[0]

    @property
    def up(self) -> str:
        """The relative path from the view's pages to the reports folder (where the reports index is)."""
        return "../" * (self.slug.count("/") + 1)

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
    def uncertain(self) -> list[S.TrialSummary]:
        """Ok trials too uncertain to settle any finding they take part in (TrialSummary.uncertain)."""
        return [t for t in self.trials if t.uncertain and t.status == "ok"]

    def findings_on(self, page: str) -> tuple[Any, ...]:
        return self.findings.on(page) if self.findings is not None else ()

    def finding(self, finding_id: str) -> Any:
        return self.findings.get(finding_id) if self.findings is not None else None

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
    def headline_label(self) -> str:
        """The headline percentile as its columns and axes name it: saying where p95 stands in for p99."""
        return percentile_label(self.percentile, (self.reported_percentile(t) for t in self.ok_trials))

    def reported_percentile(self, t: S.TrialSummary) -> str:
        return t.headline_percentile or self.percentile

    def trial_headline_label(self, t: S.TrialSummary) -> str:
        """The headline percentile of one trial as its own pages name it (the profile page)."""
        return percentile_label(self.percentile, (self.reported_percentile(t),))

    def headline_mark(self, t: S.TrialSummary) -> str:
        """" (p95)" after a headline cell whose trial reports p95 for p99 when the column does not say so."""
        return stand_in_mark(self.percentile, self.reported_percentile(t), self.headline_label)

    @property
    def sweet_spots(self) -> list[S.TrialSummary]:
        return [v.best.sweet_spot for v in self.versions if v.best.sweet_spot is not None]


def experiment_view(results: ExperimentResults, slug: str, chooser: bool = True, claims: bool = True,
                    machine: str | None = None, machine_count: int = 1) -> ExperimentView:
    """Summaries of one experiment's results, versions in spec order; `chooser` False: the site has no chooser
    page, and the findings none of its claims. `claims` False: no findings at all, for the view of an experiment
    measured on several machines that only its machines page reads (its claims are each machine's view's)."""
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
    context = compare_context(results)
    generative = generative_report(results.spec, results.trials, results.processes, results.decode_steps,
                                   results.environments, results.agreement)
    # A generative experiment's claims are its phase verdicts (generative.md.j2): the findings of latency and
    # layers, made for one inference per request, do not apply to it yet.
    # Its chooser page is its own (generator.site.generative_compare), any two versions' phases.
    generative_chooser = (claims and chooser and generative is not None
                          and len({r.version for r in generative.rows}) >= 2)
    claims = claims and generative is None
    chooser = (claims and chooser and has_chooser(context)) or generative_chooser
    findings = None
    if claims:
        findings = report_findings(context, trials, versions, spec.profile_entries, spec.first_values,
                                   {v.info.version: v.best.sweet_spot for v in views}, chooser)
        flags = uncertain_trials(findings, {t.trial_key: _halfwidth(t) for t in trials if t.ok})
        trials = [replace(t, uncertain=flags.get(t.trial_key)) for t in trials]
        bests = S.version_bests(trials, versions, spec.latency_threshold_ms)  # with the flags, as pages show them
        views = [replace(v, best=best) for v, best in zip(views, bests, strict=True)]
    return ExperimentView(
        name=results.name, slug=slug, spec=spec, percentile=percentile, trials=trials, versions=views,
        environments=R.environment_summaries(results.environments, results.trials),
        last_run=R.last_run(results.runs), results=results, chooser=chooser, context=context,
        findings=findings, run_noise=R.run_noise(results.runs), machine=machine, machine_count=machine_count,
        generative=generative,
    )


def _halfwidth(t: S.TrialSummary) -> float | None:
    """A trial's relative half-width as uncertain_trials reads it: infinite for a confidence sequence that
    could not bound it yet, None when no interval was recorded (older results)."""
    if t.ci_halfwidth is None and t.ci_sequential:
        return math.inf
    return t.ci_halfwidth


def has_chooser(context: CompareContext) -> bool:
    """Whether the experiment gets a chooser page: two versions or more that a reader can choose between."""
    from generator.analysis.chooser import choosable

    return len(choosable(context)) >= 2


def _stored_percentile(trials: Any) -> str:
    values = sorted(set(trials["percentile"].dropna().astype(str))) if len(trials) else []
    return values[-1] if values else "p50"


@functools.cache
def template_env() -> jinja2.Environment:
    """One environment per process, never changed after this: jinja2 keeps each compiled template in it, and
    compiling the page templates took a third of a second per experiment (a build's worker renders many)."""
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
