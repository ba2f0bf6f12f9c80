"""The site's vendored JavaScript: which files, where they come from, how they are refreshed and copied.

The built site must work offline and from ``file://``, so Vega, Vega-Lite, vega-embed and Tablesort are
shipped as committed UMD builds under ``site_templates/assets/vendor/``, never loaded from the network.
Committed files (rather than ``vl_convert.javascript_bundle()`` at build time) keep the exact bytes reviewable
in git, pin the versions in one README, and make ``perfsite build`` independent of vl-convert's bundling.
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class VendoredFile:
    package: str  # npm package name
    member: str  # path inside the npm tarball (after `package/`)
    name: str  # file name under assets/vendor/


# Load order matters: vega-lite's UMD build reads the `vega` global, vega-embed reads both, the number sort
# plugin extends the `Tablesort` global.
SCRIPTS: tuple[VendoredFile, ...] = (
    VendoredFile("vega", "build/vega.min.js", "vega.min.js"),
    VendoredFile("vega-lite", "build/vega-lite.min.js", "vega-lite.min.js"),
    VendoredFile("vega-embed", "build/vega-embed.min.js", "vega-embed.min.js"),
    VendoredFile("tablesort", "dist/tablesort.min.js", "tablesort.min.js"),
    VendoredFile("tablesort", "dist/sorts/tablesort.number.min.js", "tablesort.number.min.js"),
)
# Loaded in the page's head (mkdocs-material's `extra.polyfills`): with the theme's offline plugin, search runs
# in a web worker that pages opened from disk (file://) cannot start; the shim runs it in an iframe. The plugin
# would otherwise load the shim from a package host on the internet; a polyfill whose URL names
# iframe-worker keeps it from doing so.
POLYFILLS: tuple[VendoredFile, ...] = (
    VendoredFile("iframe-worker", "shim/index.js", "iframe-worker-shim.js"),
)
LICENSES: tuple[VendoredFile, ...] = (
    VendoredFile("vega", "LICENSE", "LICENSE.vega"),
    VendoredFile("vega-lite", "LICENSE", "LICENSE.vega-lite"),
    VendoredFile("vega-embed", "LICENSE", "LICENSE.vega-embed"),
    VendoredFile("tablesort", "LICENCE", "LICENSE.tablesort"),
    VendoredFile("iframe-worker", "LICENSE", "LICENSE.iframe-worker"),
)

# Pages reference assets under this folder of the docs dir (mkdocs copies it into the site).
ASSETS_PREFIX = "assets/perfsite"
# The site's own script and style sheet, after the vendored scripts they use.
OWN_SCRIPTS = ("perfsite-tables.js", "perfsite.js", "perfsite-choose.js", "perfsite-choose-generative.js")
OWN_STYLES = ("perfsite.css",)
# The site's own polyfill, after the vendored ones (it wraps the Worker the iframe-worker shim may have set):
# the search index loaded when the reader searches (its comment says how).
OWN_POLYFILLS = ("perfsite-search.js",)

# A trailing source-map comment makes browser dev tools request a .map file we do not ship (a 404 on
# every page); the map is only useful to debug the libraries themselves.
_SOURCE_MAP_RE = re.compile(rb"\n?//# sourceMappingURL=\S+\s*$")


# The chart library (about 830 KB) is not on every page: perfsite.js loads these, in this order, only on pages
# that hold a chart (docs pages and tables-only pages never fetch them).
CHART_LIBRARY = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")


def extra_javascript() -> list[str]:
    """Script paths (relative to the docs dir) in load order, for mkdocs' `extra_javascript`: every vendored
    script but the chart library (see CHART_LIBRARY), then the site's own."""
    vendored = [f"{ASSETS_PREFIX}/vendor/{f.name}" for f in SCRIPTS if f.name not in CHART_LIBRARY]
    return vendored + [f"{ASSETS_PREFIX}/{name}" for name in OWN_SCRIPTS]


def polyfills() -> list[str]:
    """Script paths (relative to the docs dir) for mkdocs-material's `extra.polyfills`."""
    return ([f"{ASSETS_PREFIX}/vendor/{f.name}" for f in POLYFILLS]
            + [f"{ASSETS_PREFIX}/{name}" for name in OWN_POLYFILLS])


def extra_css() -> list[str]:
    """Style sheet paths (relative to the docs dir), for mkdocs' `extra_css`."""
    return [f"{ASSETS_PREFIX}/{name}" for name in OWN_STYLES]


def copy_assets(templates: Path, docs_dir: Path) -> Path:
    """Copy site_templates/assets (own script, style, vendored files) into docs_dir/assets/perfsite."""
    dest = docs_dir / ASSETS_PREFIX
    if dest.exists():
        shutil.rmtree(dest)
    # README.md (how to refresh the vendored files) is for maintainers; mkdocs would turn it into a page.
    shutil.copytree(templates / "assets", dest, ignore=shutil.ignore_patterns("*.md", ".*"))
    return dest


def refresh_vendor(tarball_dir: Path, dest: Path) -> list[Path]:
    """Extract the vendored files from `npm pack` tarballs in tarball_dir into dest (maintainers only)."""
    written = []
    for item in SCRIPTS + POLYFILLS + LICENSES:
        tarball = _single_tarball(tarball_dir, item.package)
        with tarfile.open(tarball) as tar:
            member = tar.extractfile(f"package/{item.member}")
            if member is None:
                raise FileNotFoundError(f"{tarball} has no package/{item.member}")
            data = member.read()
        if item.name.endswith(".js"):
            data = _SOURCE_MAP_RE.sub(b"\n", data)
        (dest / item.name).write_bytes(data)
        written.append(dest / item.name)
    return written


def _single_tarball(tarball_dir: Path, package: str) -> Path:
    # npm pack names tarballs <package>-<version>.tgz; `vega-` alone would also match vega-lite.
    pattern = re.compile(rf"{re.escape(package)}-\d[^-]*\.tgz")
    matches = [p for p in tarball_dir.glob(f"{package}-*.tgz") if pattern.fullmatch(p.name)]
    if len(matches) != 1:
        found = len(matches)
        raise FileNotFoundError(f"expected one {package}-<version>.tgz in {tarball_dir}, found {found}")
    return matches[0]


if __name__ == "__main__":  # maintainer entry point, see site_templates/assets/vendor/README.md
    refresh_vendor(Path(sys.argv[1]), Path(sys.argv[2]))
