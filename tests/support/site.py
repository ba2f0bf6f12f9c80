"""Built sites compared file by file (two builds of the same results give the same site)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from generator.site.publish import MARKER


def site_files(site: Path) -> dict[str, bytes]:
    """Every file of a site, but the marker (it holds the build's time); the sitemap's dates are the build's."""
    out = {}
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        if path.is_file() and rel != MARKER:
            data = path.read_bytes()
            out[rel] = gzip.decompress(data) if rel.endswith(".gz") and rel.startswith("sitemap") else data
    return out


# URLs a page may hold that load nothing: Vega-Lite's `$schema`, an identifier vega-embed reads for the version,
# and XML namespaces (the theme's inline SVG icons).
NOT_FETCHED = ("https://vega.github.io/schema/", "http://www.w3.org/")
# An absolute URL (http, https) or a protocol-relative one (`//host/…` after a quote, `(` or `=`).
_URL = re.compile(r"""https?://[^\s"'<>)\\]+|(?<=["'(=])//[\w-]+(?:\.[\w-]+)+[^\s"'<>)\\]*""")
_ANCHOR_TAG = re.compile(r"<a\s[^>]*>", re.I)  # a link the reader follows: not a resource the page loads
_LOCAL_HREF = re.compile(r"""\bhref=["']([^"'#:?]*)["'#?]""")


def network_references(html: str) -> list[str]:
    """Every URL of another host a page could load, anywhere in its HTML (script and style sheet tags, images,
    inline styles and scripts), but in an <a> tag (a link to follow) and the URLs of NOT_FETCHED."""
    urls = _URL.findall(_ANCHOR_TAG.sub("", html))
    return sorted({u for u in urls if not u.startswith(NOT_FETCHED)})


# What an HTML page loads by itself: the source of an element, a style sheet or icon link, a CSS url() or @import.
_LOADED = re.compile(r"""<(?:script|img|iframe|source|video|audio|embed|track|input)\b[^>]*?\ssrc=["']([^"']+)"""
                     r"""|<link\b[^>]*?\shref=["']([^"']+)|url\(\s*["']?([^"')\s]+)|@import\s+["']([^"']+)""", re.I)


def loaded_from_elsewhere(html: str) -> list[str]:
    """The resources a page loads by its tags and styles from another host (absolute or protocol-relative
    URLs): narrower than network_references, for prose pages that quote URLs as text (docs/errors.md names
    a CDN script a project's config is refused for)."""
    found = {next(g for g in m.groups() if g) for m in _LOADED.finditer(html)}
    return sorted(u for u in found if u.startswith(("http://", "https://", "//")) and not u.startswith(NOT_FETCHED))


def folder_links(html: str) -> list[str]:
    """The page's links to a folder of the site (`reports/x/`, `.`) rather than a file: opened from disk, a
    browser shows a file listing there. Links within the page (`#…`) and to other hosts are not looked at."""
    hrefs = _LOCAL_HREF.findall(html)
    return sorted({h for h in hrefs if h and (h.endswith("/") or h.rsplit("/", 1)[-1] in (".", ".."))})
