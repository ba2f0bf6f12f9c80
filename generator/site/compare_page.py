"""Compare pages: one page per `compare:` pair of an experiment's spec, from generator.analysis.compare.

The page answers "is B better than A, in which configuration, and where did the time move?": a verdict in
words (ratios with 95 % confidence intervals, output agreement), the interactive latency/throughput chart of
every version, the layer-type and kernel-level tables at one configuration both versions ran, and the Pareto
frontier, runtime precision and advice. This module turns a Comparison into the template's context; the words
for ratios live here too, so the terminal output of `perfsite compare` says exactly what the page says.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import jinja2

from generator.analysis.compare import effective_tolerance
from generator.analysis.findings import compare_prefix
from generator.analysis.records_compare import (
    Advice,
    AgreementRow,
    Comparison,
    KernelRow,
    LayerTypeRow,
    RatioCI,
)
from generator.errors import ResultsError
from generator.site import charts_compare as CC
from generator.site.charts import chart_block
from generator.site.formatting import wanted_text
from generator.site.page_base import REPORTS_DIR, ExperimentView, Page, render, slugify

MATCHED_WARN = 0.98  # below this share of matched time, the page warns that the kernel table is incomplete
FALLBACK_RULE = "provider_fallback"  # generator.analysis.advice's rule for nodes run on another provider


def times(value: float, decimals: int | None = None) -> str:
    """A factor as text: 1.8, 1.05, 12 (two decimals near 1, where one would hide the change)."""
    if decimals is None:
        decimals = factor_decimals(value)
    return f"{value:,.{decimals}f}"


def factor_decimals(value: float) -> int:
    return 2 if value < 1.5 else 1 if value < 10 else 0


def _interval(low: float, high: float, decimals: int) -> str:
    return f"95 % CI {times(low, decimals)}–{times(high, decimals)}"


def _note(ratio: RatioCI) -> str:
    return f"; {ratio.note}" if ratio.note else ""


def not_compared(ratio: RatioCI) -> str:
    """A ratio that must not be judged (RatioCI.unjudged), in `perfsite diff`'s words: the figure without its
    interval, which a fallback to preempted requests makes meaningless."""
    return f"not compared: {ratio.unjudged} (B / A {times(ratio.point)} from {ratio.unjudged_from})"


def latency_words(ratio: RatioCI | None) -> str:
    """B's latency against A's in words: "B is 1.8× faster (95 % CI 1.7–1.9)" or "no significant difference".

    The ratio is B / A, so a speed-up is its inverse, and so is its interval (with the ends swapped)."""
    if ratio is None:
        return "no latency comparison (a compared trial has no figures)"
    if ratio.unjudged:
        return not_compared(ratio)
    if not ratio.significant:
        return f"no significant difference in latency ({_interval(ratio.low, ratio.high, 2)} for B / A{_note(ratio)})"
    if ratio.point < 1:
        speedup, low, high = 1 / ratio.point, 1 / ratio.high, 1 / ratio.low
        d = factor_decimals(speedup)
        return f"B is {times(speedup, d)}× faster ({_interval(low, high, d)}{_note(ratio)})"
    d = factor_decimals(ratio.point)
    return f"B is {times(ratio.point, d)}× slower ({_interval(ratio.low, ratio.high, d)}{_note(ratio)})"


def throughput_words(ratio: RatioCI | None) -> str:
    """B's throughput against A's in words: "B has 1.8× A's throughput (95 % CI 1.7–1.9)"."""
    if ratio is None:
        return "no throughput comparison (a compared trial has no figures)"
    if ratio.unjudged:
        return not_compared(ratio)
    if not ratio.significant:
        interval = _interval(ratio.low, ratio.high, 2)
        return f"no significant difference in throughput ({interval} for B / A{_note(ratio)})"
    d = factor_decimals(ratio.point)
    return f"B has {times(ratio.point, d)}× A's throughput ({_interval(ratio.low, ratio.high, d)}{_note(ratio)})"


# From this ratio (or its inverse) on, a ratio whose interval holds 1 is shown with that interval, "too wide to
# tell", rather than as "no significant difference" (perfsite-choose.js keeps the same figure).
WIDE_RATIO = 1.5


def ratio_cell(ratio: RatioCI | None) -> tuple[str, str]:
    """(ratio, interval) table cells: ("0.55", "0.52–0.58"), ("0.98", "no significant difference"), or
    ("0.40", "not compared") for a pair shown without a verdict (RatioCI.unjudged)."""
    if ratio is None:
        return "—", "—"
    if ratio.unjudged:
        return f"{ratio.point:.2f}", "not compared"
    if not ratio.significant and not 1 / WIDE_RATIO < ratio.point < WIDE_RATIO:
        # A large change whose interval still holds 1 is not "no difference" (issue 34: an 11.74× Conv).
        return f"{ratio.point:.2f}", f"{ratio.low:.2f}–{ratio.high:.2f}, too wide to tell"
    if not ratio.significant:
        return f"{ratio.point:.2f}", "no significant difference"
    return f"{ratio.point:.2f}", f"{ratio.low:.2f}–{ratio.high:.2f}"


@dataclass(frozen=True)
class CompareLink:
    """A compare page as the experiment page links it (title: plain text, path: beside the experiment page)."""

    title: str
    path: str


def _pair_slug(pair: Any) -> str:
    config = "".join(f"-{k}-{v}" for k, v in sorted((pair.config or {}).items()))
    # No `_` (allowed in version names): the experiment page prints paths through the `md` filter, which
    # would turn it into a character reference that mkdocs cannot resolve as a link.
    return f"compare-{pair.a}-vs-{pair.b or 'best'}{config}".replace("_", "-")


def _pair_title(pair: Any) -> str:
    b = pair.b or "the best version under the latency threshold"
    config = wanted_text(tuple(sorted((pair.config or {}).items())))
    return f"{pair.a} vs {b}" + (f" at {config}" if config else "")


def compare_links(view: ExperimentView) -> list[CompareLink]:
    """The experiment's compare pages, one per spec pair, in spec order; file names depend on the spec
    only (an omitted B is `best`), so links stay valid when another version becomes the best."""
    taken: set[str] = set()
    pairs = view.results.spec.compare
    return [CompareLink(_pair_title(p), f"{slugify(_pair_slug(p), taken)}.md") for p in pairs]


def sweet_spot_version(c: Comparison) -> str | None:
    """The version of the overall sweet spot, from its trial when the record leaves the version out."""
    spot = c.overall_sweet_spot
    if spot is None or spot.trial_key is None:
        return None
    return spot.version or next((p.version for p in c.points if p.trial_key == spot.trial_key), None)


@dataclass(frozen=True)
class CompareView:
    """What one compare page shows: the Comparison, its verdict in words and its chart blocks."""

    c: Comparison
    sources: dict[str, str]  # version -> how it was made
    latency_text: str
    throughput_text: str
    tolerance_text: str  # the output tolerance as text (the spec's, or perfsite's default)
    disagreeing: tuple[AgreementRow, ...]  # agreement rows past the tolerance
    charts: dict[str, str]  # chart name -> HTML block, "" when there is nothing to draw
    line_axis: str | None  # the axis the results chart's lines follow
    layer_types: tuple[LayerTypeRow, ...]  # most time first
    kernels: tuple[KernelRow, ...]  # most time first
    overhead_ops: tuple[str, ...]  # op types of the quantization-overhead bucket, most time first
    config_why: str | None  # why the layer-level sections use this configuration, as a sentence
    fallback: tuple[Advice, ...]  # provider-fallback findings, shown as a note at the top of the page
    advice: tuple[Advice, ...]  # every other finding, in rule order
    chooser_link: str = ""  # the "choose A and B" page at this page's pair and configuration

    @property
    def sweet_spot_version(self) -> str | None:
        return sweet_spot_version(self.c)

    @property
    def coverage_low(self) -> bool:
        cov = self.c.coverage
        return cov is not None and min(cov.share_a, cov.share_b) < MATCHED_WARN


def _tolerance_text(spec: Any) -> str:
    """The tolerance outputs are judged by, as text; perfsite's default says so."""
    tolerance = effective_tolerance(spec)
    parts = [f"max abs ≤ {tolerance.max_abs:g}" if tolerance.max_abs is not None else None,
             f"cosine ≥ {tolerance.cosine_min:g}" if tolerance.cosine_min is not None else None]
    text = " and ".join(p for p in parts if p)
    return text if spec.tolerance is not None else f"{text}, perfsite's default: the spec sets no `tolerance:`"


def _charts(c: Comparison) -> dict[str, str]:
    def block(name: str, chart: Any) -> str:
        return chart_block(f"chart-compare-{name}", chart)

    return {
        "results": block("results", CC.results_chart(c)) if c.points else "",
        "time": block("time", CC.inference_time_chart(c)) if c.timings else "",
        "layer_types": block("layer-types", CC.layer_type_chart(c)) if c.layer_types else "",
        "pareto": block("pareto", CC.pareto_chart(c)) if c.points else "",
        "precision": block("precision", CC.precision_chart(c)) if c.precision_share else "",
    }


def _config_why(c: Comparison, named_config: bool) -> str | None:
    if c.config_reason:
        return c.config_reason
    if named_config:
        return "It is the configuration the spec's compare entry names."
    spot_a = next((s for s in c.sweet_spots if s.version == c.a), None)
    if spot_a is not None and spot_a.trial_key is not None and spot_a.trial_key == c.a_trial_key:
        return "It is A's sweet spot, A's highest throughput within the latency threshold."
    return None


def compare_view(view: ExperimentView, c: Comparison, named_config: bool = False) -> CompareView:
    """The template's context for one comparison (tables sorted most time first, charts built)."""
    spec = view.results.spec
    return CompareView(
        c=c, sources={v.info.version: v.source for v in view.versions},
        latency_text=latency_words(c.latency_ratio), throughput_text=throughput_words(c.throughput_ratio),
        tolerance_text=_tolerance_text(spec), disagreeing=tuple(r for r in c.agreement if r.within_tolerance is False),
        charts=_charts(c), line_axis=CC.line_axis(list(c.points)),
        layer_types=tuple(sorted(c.layer_types, key=lambda r: (-max(r.time_a_us, r.time_b_us), r.op_type))),
        kernels=tuple(sorted(c.kernels, key=lambda k: (-max(k.time_a_us, k.time_b_us), k.layer))),
        overhead_ops=_overhead_ops(c), config_why=_config_why(c, named_config),
        fallback=tuple(a for a in c.advice if a.rule_id == FALLBACK_RULE),
        advice=tuple(a for a in c.advice if a.rule_id != FALLBACK_RULE),
        chooser_link=chooser_link(c) if view.chooser else "",
    )


def chooser_link(c: Comparison) -> str:
    """The chooser page (generator.site.chooser_page) opened at this comparison's pair: the address holds the
    choice, percent-encoded, so no character of a name can leave the link."""
    if c.config_label is None:
        return "choose.md"
    choice = {"a": c.a, "ac": c.config_label, "b": c.b, "bc": c.config_label}
    return "choose.md#" + "&".join(f"{k}={quote(v, safe='')}" for k, v in choice.items())


def _overhead_ops(c: Comparison) -> tuple[str, ...]:
    if c.overhead is None:
        return ()
    largest: dict[str, float] = {}
    for by_op in (c.overhead.by_op, c.overhead.by_op_a):
        for op, us in by_op.items():
            largest[op] = max(largest.get(op, 0.0), us)
    return tuple(sorted(largest, key=lambda op: (-largest[op], op)))


def compare_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """One page per `compare:` pair of the experiment's spec (none without pairs). A pair that cannot be
    compared (a version without a successful trial, a configuration neither ran) gets a page saying why, so
    that one pair never breaks the whole site."""
    links = compare_links(view)
    if not links:
        return []
    from generator.analysis.compare import compare_versions  # the analysis is only needed when there are pairs

    pages = []
    for i, (pair, link) in enumerate(zip(view.results.spec.compare, links, strict=True)):
        config = dict(pair.config) if pair.config else None
        try:
            c = compare_versions(view.results, pair.a, pair.b, config, ctx=view.context)
        except ResultsError as e:
            # Written for the terminal, the reason names the results folder by its path on the machine that
            # built the site: a published page (and its search index) says "this experiment's results" instead.
            reason = str(e).replace(str(view.results.path), f"the results of {view.results.name}")
            pages.append(render(env, "compare_failed.md.j2", f"{REPORTS_DIR}/{view.slug}/{link.path}",
                                link.title, e=view, reason=reason))
            continue
        pages.append(compare_page(env, view, c, link, bool(pair.config), f"compare:{i}", compare_prefix(pair)))
    return pages


def compare_page(env: jinja2.Environment, view: ExperimentView, c: Comparison, link: CompareLink,
                 named_config: bool = False, page_key: str = "", prefix: str = "") -> Page:
    """The page of one comparison; its title names the configuration when the pair did. `page_key` and
    `prefix`: where its findings are (generator.analysis.findings)."""
    best = "the best, " if c.b_was_default else ""  # tells this page from a pair naming the same B
    title = f"{c.a} vs {best}{c.b}" + (f" at {c.config_label}" if named_config and c.config_label else "")
    flagged = {t.trial_key for t in view.uncertain}
    c = replace(c, points=tuple(replace(p, uncertain=p.trial_key in flagged) for p in c.points))
    return render(env, "compare.md.j2", f"{REPORTS_DIR}/{view.slug}/{link.path}", title, True, e=view,
                  v=compare_view(view, c, named_config), c=c, fn=TEMPLATE_FUNCTIONS,
                  page_findings=view.findings_on(page_key), prefix=prefix)


def precision_counts(counts: dict[str, int]) -> str:
    """Executed nodes per runtime precision: `FP32 1, INT8 3` (known precisions first, in a fixed order)."""
    order = {p: i for i, p in enumerate(CC.PRECISIONS)}
    items = sorted((k for k, n in counts.items() if n), key=lambda k: (order.get(k, len(order)), k))
    return ", ".join(f"{k} {counts[k]}" for k in items) or "—"


def executed_title(k: KernelRow) -> str:
    """The executed nodes whose time a kernel row counts, for the row's tooltip."""
    a = ", ".join(k.executed_a) or "none"
    b = ", ".join(k.executed_b) or "none"
    return f"executed in A: {a}; in B: {b}"


def kernel_note(k: KernelRow) -> str:
    """The row's note, or which version it ran in when the analysis gave no note."""
    if k.note:
        return k.note
    return {"a": "only in A", "b": "only in B"}.get(k.only_in or "", "—")


# Formatting helpers the compare template calls (`fn.ratio_cell(...)`); their text is escaped there.
TEMPLATE_FUNCTIONS = {
    "ratio_cell": ratio_cell, "precision_counts": precision_counts, "config_items": CC.config_text,
    "executed_title": executed_title, "kernel_note": kernel_note,
}
