"""A generative experiment's compare pages: one per compared pair of its report (the spec's `compare:` pairs, or
the first version against each other one), judging prefill and decode apart (site_templates/
generative_compare.md.j2). The overview page sums each pair up in a sentence per phase and links here."""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from generator.analysis.generative import GenerativePair
from generator.analysis.generative_pairs import PairView, pair_view
from generator.site import charts_generative as G
from generator.site.charts import chart_block
from generator.site.page_base import REPORTS_DIR, ExperimentView, Page, render, slugify


@dataclass(frozen=True)
class PairLink:
    view: PairView
    title: str
    path: str  # relative to the experiment's folder


def pair_links(view: ExperimentView) -> list[PairLink]:
    """Every compared pair of the report with its page's title and file name (from the version names only, so
    that links stay valid as figures change)."""
    report = view.generative
    if report is None:
        return []
    taken: set[str] = {"index", "choose", "findings"}
    return [PairLink(pair_view(report, pair, view.results.phase_ops), _title(pair),
                     f"{slugify(f'compare-{pair.a}-vs-{pair.b}'.replace('_', '-'), taken)}.md")
            for pair in report.pairs]


def _title(pair: GenerativePair) -> str:
    return f"{pair.a} vs {pair.b}"


def generative_compare_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    pages = []
    for i, link in enumerate(pair_links(view), start=1):
        # Numbered: a chart id allows [a-z0-9-] only, and version names may hold dots.
        chart = chart_block(f"chart-generative-pair-{i}", G.pair_chart(link.view)) \
            if any(r.ttft or r.tpot for r in link.view.rows) else ""
        pages.append(render(env, "generative_compare.md.j2", f"{REPORTS_DIR}/{view.slug}/{link.path}", link.title,
                            True, e=view, g=view.generative, p=link.view, chart=chart))
    return pages
