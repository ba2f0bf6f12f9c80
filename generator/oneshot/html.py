"""``MODEL.perf.html``: one self-contained page (summary, temporal statistics, layer details, timeline).

Everything the page needs is inside it: the vendored Vega, Vega-Lite, vega-embed and Tablesort builds of the
site (site_templates/assets/vendor), the site's own chart script, the chart specs with their data, and the
Chrome trace. It makes no request of any kind, so it opens offline from ``file://`` and can be mailed.

Untrusted text (node names, op types, input names, the file name) is escaped by Jinja's autoescape in HTML,
control characters and bidirectional overrides printed as visible escapes (the site's rule,
generator.terminal_text.safe), and by ``inline_json`` in the JSON islands (``<``, ``>``, ``&`` as \\u escapes,
so no ``</script>``); the charts' data shows names as the page's text does (generator.site.escape.shown).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from generator.oneshot.text import num, preempted_text
from generator.site.charts import unvalidated
from generator.site.charts_timeline import temporal_chart, timeline_chart
from generator.site.escape import inline_json, shown_json
from generator.site.pages import templates_dir
from generator.site.vendor import OWN_SCRIPTS, SCRIPTS
from generator.terminal_text import safe
from generator.timeline import chrome_trace
from generator.timeline.view import TimelineView

TEMPLATE = "report.html.j2"
# Inside a <script> element only "</script" (any case) ends it; "<\/" means the same in JavaScript strings
# and regular expressions, which is where the minified libraries hold such text.
_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=_shown_text)
    env.filters["num"] = num
    env.filters["json_island"] = lambda value: Markup(inline_json(value))
    # Chart data is put on screen by Vega-Lite (tooltips, axis labels): strings as the tables show them.
    env.filters["chart_island"] = lambda value: Markup(shown_json(value, inline_json))
    env.filters["pct"] = lambda value: num(None if value is None else round(100 * value, 2))
    env.filters["mega"] = lambda value: num(None if value is None else float(f"{value / 1e6:.4g}"))
    env.filters["micro"] = lambda value: num(None if value is None else float(f"{value:.4g}"))
    return env


def _shown_text(value: Any) -> Any:
    """Every plain string the template prints, as the site's pages show it: a control character or a
    bidirectional override in a node name printed as a visible escape (autoescape makes it harmless, not
    readable: U+202E would reverse the rest of its cell). Markup (the JSON islands) is left whole."""
    return safe(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def inline_scripts() -> list[str]:
    """The vendored libraries and the site's chart script, in load order, safe to inline."""
    assets = templates_dir() / "assets"
    paths = [assets / "vendor" / f.name for f in SCRIPTS] + [assets / name for name in OWN_SCRIPTS]
    return [_SCRIPT_END.sub(r"<\\/\1", p.read_text(encoding="utf-8")) for p in paths]


def render_html(record: Mapping[str, Any], view: TimelineView) -> str:
    """The page for a one-shot profile record (generator.oneshot.record) and its trial's timeline view, with
    the charts the site's profile page draws of it (generator.site.pages)."""
    with unvalidated():  # as the site's pages: tests/test_charts_valid.py validates every chart kind
        charts = {
            "temporal": temporal_chart(view.stats, view.peak_gflops, view.bandwidth_gbs, integer=view.integer),
            "timeline": timeline_chart(view.timeline),
        }
    title = f"{record['model']['file']} profile"
    template = _environment().get_template(TEMPLATE)
    return template.render(
        r=record, s=record["summary"], title=title, charts=charts, trace=chrome_trace(view.timeline, title),
        scripts=[Markup(text) for text in inline_scripts()], preempted=preempted_text(record["summary"]["noise"]),
    )
