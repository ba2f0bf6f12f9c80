"""The thin command line over the library (typer): one module per command family, as asv's ``commands/``.

``app`` holds the typer application and the commands that are a few lines each; ``compare``, ``diff``,
``profile`` and ``count`` format their commands' output; ``terminal`` is the progress bar, run summaries and
output files shared by them. Only this package prints or exits.
"""

import os

from generator.processes import BLAS_THREADS

# Before numpy is imported: its BLAS starts a spinning thread per core at import (0.1-0.2 CPU-seconds of every
# command, see BLAS_THREADS), and no command multiplies matrices.
for _name, _value in BLAS_THREADS.items():
    os.environ.setdefault(_name, _value)

from generator.cli.app import app, main  # noqa: E402

__all__ = ["app", "main"]
