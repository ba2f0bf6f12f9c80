"""The render cache's folder as the build sees it: where mkdocs' hooks (generator.site.render_cache) are, the
variable that tells them the folder, and the step that keeps or drops what they wrote once mkdocs has ended.

Separate from the hooks because importing the hooks patches mkdocs and Material for the process that imports
them: the build only starts mkdocs, in a process of its own, with the hooks listed in its configuration.
"""

from __future__ import annotations

import json
from pathlib import Path

CACHE_ENV = "PERFSITE_RENDER_CACHE"  # the same names as in generator.site.render_cache (which imports nothing)
USED = "used.json"
HOOKS = Path(__file__).with_name("render_cache.py")  # listed under `hooks:` in the generated mkdocs.yml


def commit(folder: Path, succeeded: bool) -> None:
    """After mkdocs: on success, move the pending entries into the cache and drop entries this build did not
    use; on failure, drop the pending ones."""
    pending, entries = folder / "pending", folder / "entries"
    entries.mkdir(parents=True, exist_ok=True)
    if succeeded:
        for entry in pending.iterdir() if pending.is_dir() else ():
            entry.replace(entries / entry.name)
        used = set(json.loads((folder / USED).read_text())) if (folder / USED).is_file() else set()
        for entry in entries.iterdir():
            if entry.name not in used:
                entry.unlink()
    for entry in pending.iterdir() if pending.is_dir() else ():
        entry.unlink()
    (folder / USED).unlink(missing_ok=True)
