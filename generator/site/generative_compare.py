"""A generative experiment's compare pages: one per compared pair of its report (the spec's `compare:` pairs, or
the first version against each other one), judging prefill and decode apart (site_templates/
generative_compare.md.j2). The overview page sums each pair up in a sentence per phase and links here. And its
choose-A-and-B page (generative_choose.md.j2, perfsite-choose-generative.js): any two versions, as judged
here."""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from generator.analysis.generative import GenerativePair
from generator.analysis.generative_pairs import PairView, choices, pair_view
from generator.numbers import fixed, num
from generator.site import charts_generative as G
from generator.site.charts import chart_block
from generator.site.chooser_page import CHOOSER_PAGE
from generator.site.escape import inline_json
from generator.site.formatting import interval
from generator.site.generative_profile import profile_links
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
    profiles = {link.layers.version: link.path for link in profile_links(view)}
    pages = []
    for i, link in enumerate(pair_links(view), start=1):
        # Numbered: a chart id allows [a-z0-9-] only, and version names may hold dots.
        chart = chart_block(f"chart-generative-pair-{i}", G.pair_chart(link.view)) \
            if any(r.ttft or r.tpot for r in link.view.rows) else ""
        pages.append(render(env, "generative_compare.md.j2", f"{REPORTS_DIR}/{view.slug}/{link.path}", link.title,
                            True, e=view, g=view.generative, p=link.view, chart=chart,
                            profiles=profiles))
    return pages


def generative_chooser_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """The choose-A-and-B page of a generative experiment: any two versions judged in prefill and decode apart,
    every figure and sentence computed and formatted here (the page's script only shows the chosen pair's)."""
    report = view.generative
    if report is None or len({r.version for r in report.rows}) < 2:
        return []
    data = choices(report, view.results.processes, view.results.spec.regression)
    for pair in data["pairs"].values():
        pair["rows"] = [{"config": r["config"], "phase": G.PHASE_NAMES[r["phase"]], "a": num(r["a_ms"]),
                         "b": num(r["b_ms"]), "ratio": fixed(r["ratio"], 3), "interval": interval((r["low"],
                                                                                                   r["high"])),
                         "verdict": r["verdict"], "reason": r["reason"]} for r in pair["rows"]]
    # The overview's first compared pair, else the first two versions.
    data["default"] = [report.pairs[0].a, report.pairs[0].b] if report.pairs else data["versions"][:2]
    return [render(env, "generative_choose.md.j2", f"{REPORTS_DIR}/{view.slug}/{CHOOSER_PAGE}", "Choose A and B",
                   True, e=view, data=inline_json(data))]
