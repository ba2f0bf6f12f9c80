"""The command line and files around it: the repository root, the real `perfsite` in a child process, spec files,
snapshot checks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository


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


def json_keys(value, found: set | None = None) -> set:
    """Every key of every object in a JSON-like value (a chart spec must not name a data `url`, for one)."""
    found = set() if found is None else found
    if isinstance(value, dict):
        for k, v in value.items():
            found.add(k)
            json_keys(v, found)
    elif isinstance(value, list):
        for v in value:
            json_keys(v, found)
    return found


def check_snapshots(generated: dict[str, str], folder: Path) -> None:
    """Generated files (path relative to `folder` -> text) must equal the stored snapshots, no more, no fewer.
    With PERFSITE_UPDATE_SNAPSHOTS=1 the snapshots are rewritten first: review the diff before committing."""
    if os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1":
        for stale in folder.rglob("*.*"):
            stale.unlink()
        for name, text in generated.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
    stored = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in folder.rglob("*.*")}
    if not stored:
        pytest.fail(f"no snapshots in {folder}; create them with PERFSITE_UPDATE_SNAPSHOTS=1")
    assert sorted(stored) == sorted(generated), "pages, charts or files appeared or disappeared"
    for name, text in generated.items():
        assert text == stored[name], (f"{name} differs from its snapshot; if intended, regenerate with "
                                      "PERFSITE_UPDATE_SNAPSHOTS=1 and review the diff")
