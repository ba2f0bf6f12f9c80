"""Built sites compared file by file (two builds of the same results give the same site)."""

from __future__ import annotations

import gzip
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
