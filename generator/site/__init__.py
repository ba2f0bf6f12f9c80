"""The site generator: results -> Markdown pages with inline Vega-Lite charts -> mkdocs-material static site.

`build_site` is the entry point (see generator.site.build); `serve` previews a built site on 127.0.0.1.
"""

from generator.site.build import build_site
from generator.site.serve import serve

__all__ = ["build_site", "serve"]
