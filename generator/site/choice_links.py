"""mkdocs hook of `perfsite build` (its generated mkdocs.yml lists this file under `hooks:`): links to an
experiment's "choose A and B" page that carry a choice are not reported as links to missing anchors.

A compare page links the chooser at its own pair, `choose.md#a=fp32&ac=b1%20t1%20c1&b=int8&bc=…`
(generator.site.compare_page.chooser_link). That fragment is the chooser's state, read by its script
(perfsite-choose.js), not the id of an element, so mkdocs' anchor check (`validation: anchors`, `info` by
default) said of every compare page that the chooser "does not contain an anchor": lines quoted in the error of
a failed build as if they were a second problem, and a failed strict build for a project that asks for
`validation: {anchors: warn}`. Those links are dropped from the page's links to check once the page is
converted; every other anchor, the project's own pages' included, is checked as mkdocs does.

Loaded by mkdocs by path, so it imports nothing of perfsite's (whose package would import the whole generator).
"""

from __future__ import annotations

from typing import Any

# generator.site.page_base.REPORTS_DIR and generator.site.chooser_page.CHOOSER_PAGE (tests check they agree)
REPORTS_DIR, CHOOSER_PAGE = "reports", "choose.md"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Runs after the render cache's hook, which stores or restores a page's links as mkdocs found them."""
    links = page.links_to_anchors
    for target in list(links or ()):
        if _is_chooser(target.src_uri):
            kept = {anchor: link for anchor, link in links[target].items() if not _is_choice(anchor)}
            if kept:
                links[target] = kept
            else:
                del links[target]
    return html


def _is_chooser(src_uri: str) -> bool:
    parts = src_uri.split("/")
    return len(parts) == 3 and parts[0] == REPORTS_DIR and parts[2] == CHOOSER_PAGE


def _is_choice(anchor: str) -> bool:
    """A choice is `key=value` pairs joined by `&`; a heading's id never holds `=` (mkdocs' slugs drop it)."""
    return "=" in anchor
