"""The thin command line over the library (typer): one module per command family, as asv's ``commands/``.

``app`` holds the typer application and the commands that are a few lines each; ``compare``, ``diff``,
``profile`` and ``count`` format their commands' output; ``terminal`` is the progress bar, run summaries and
output files shared by them. Only this package prints or exits.
"""

from generator.cli.app import app, main

__all__ = ["app", "main"]
