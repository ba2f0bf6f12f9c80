"""The git commit of the experiments, recorded with each run (not with the environment)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the repository at `root`, or (None, None) outside git or without a git binary."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10,
        )
        return commit.stdout.strip(), bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None
