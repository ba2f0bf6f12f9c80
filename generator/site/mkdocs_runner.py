"""`mkdocs build`, started before its configuration exists: run as a script (``python mkdocs_runner.py``), it
imports mkdocs, the theme's plugins and the Markdown extensions the pages use, then waits for one line on
standard input, a JSON object ``{"cwd": FOLDER, "args": [...]}``, and runs mkdocs' command line with those
arguments in that folder (its exit status is mkdocs'). End of input instead of a line: the build gave up before
mkdocs' turn, and the runner leaves with status 0 without a word.

Why: `perfsite build` starts it first, so that Python's start and these imports (a third of a second, a
fifteenth of a one-experiment rebuild) happen on the core the build's own imports and reading leave idle, not
after the pages are written. Run by path, not as a module of the package: importing `generator.site` would
import pandas and altair, which mkdocs does not need.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

# What every perfsite build loads (generator.site.build: REQUIRED_PLUGINS, REQUIRED_EXTENSIONS and the theme).
# A project's own plugins and extensions are imported by mkdocs as usual, when it reads the configuration.
PRELOAD = (
    "mkdocs.__main__", "mkdocs.commands.build", "mkdocs.config.defaults", "mkdocs.theme", "mkdocs.structure.pages",
    "material.plugins.search.plugin", "material.plugins.offline.plugin", "markdown.extensions.admonition",
    "markdown.extensions.tables", "markdown.extensions.toc", "markdown.extensions.md_in_html",
    "markdown.extensions.abbr", "pymdownx.superfences", "pymdownx.tabbed",
)


def main() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # a release without it: mkdocs imports what the configuration names, or says why
            pass
    line = sys.stdin.readline()
    if not line.strip():
        sys.exit(0)
    job = json.loads(line)
    os.chdir(job["cwd"])
    from mkdocs.__main__ import cli

    cli.main(args=job["args"], prog_name="mkdocs")


if __name__ == "__main__":
    main()
