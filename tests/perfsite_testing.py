"""Helpers shared by test modules (imported by name: conftest modules are not importable across folders)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_spec(folder: Path, text: str, name: str = "spec.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def perfsite(*args: str, cwd: Path | None = None, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """Run the real `perfsite` command line in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "generator.cli", *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, **(env or {})}, **kw,
    )
