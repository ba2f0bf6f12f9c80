"""Where a built site goes, and how it gets there without losing anything.

mkdocs empties its site folder before writing. perfsite therefore never lets mkdocs write into the folder the
user named: it builds into a *staging* folder beside it (same file system) and, once the build is complete,
swaps the two (one `renameat2(RENAME_EXCHANGE)` where Linux has it, else two renames), then deletes the old
site. An interrupted build (Ctrl-C, `kill -9`, a failed mkdocs) leaves the previous site whole; its staging
folder is removed by the next build.

perfsite only ever replaces a folder it built: each site it builds carries a marker file (MARKER). A folder
without one is refused unless it is empty, or a site of an earlier perfsite release (an `index.html` beside
perfsite's own assets), which is accepted once and then carries the marker.

Inside a site it built, perfsite still deletes only what it wrote: the marker lists every file of the build
(its manifest), and whatever else the old site holds (a `.git` of a gh-pages clone, a `CNAME`, results a
`perfsite run --results` put there) is carried into the new site, hard-linked (same file system, instant, and
the old site keeps its copy until the swap), and the build names it. A marker without a manifest (an earlier
release) cannot tell: there, entries whose names start with a dot are kept as mkdocs itself does, and a
`CNAME` and anything holding results, models or specs (`.parquet`, `.onnx`, …), which no build writes; the
rest is taken for the old build's own. A file created in the old site while a build runs (between carrying
and the swap) is not carried: do not write into a site folder during a build. A carried entry whose path the new
build also writes is refused before anything is swapped.

One build per project at a time: the build folder `<project>/.perfsite/build` is shared, so a build holds an
`flock` on `<project>/.perfsite/build.lock` (the kernel drops it when its holder dies, even by SIGKILL) and a
second build waits for it.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from generator.errors import SiteError
from generator.paths import SITE_MARKER
from generator.processes import alive

MARKER = SITE_MARKER
# Files only a perfsite-built site has: a site of a release before the marker is recognised by them.
LEGACY_SIGNS = ("assets/perfsite/perfsite.css", "assets/perfsite/perfsite.js")
# In a site of an earlier release (no file list), what is kept besides dot-entries (a gh-pages custom domain).
LEGACY_KEPT = ("CNAME",)
_STAGING = re.compile(r"^\.(?P<name>.+)\.perfsite-(?:new|old)-(?P<pid>\d+)$")
_RENAME_EXCHANGE = 2


def check_target(site_dir: Path) -> None:
    """Refuse a site folder perfsite did not build (module docstring): mkdocs would delete its contents."""
    if site_dir.is_symlink():
        raise SiteError(f"The site folder {site_dir} is a symbolic link (to {os.readlink(site_dir)}); perfsite "
                        "replaces the site folder whole and does not follow a link to do so. Allowed: a real "
                        "folder, new, empty or built by perfsite. Pass the link's target with --site instead.")
    if not site_dir.is_dir() or not any(site_dir.iterdir()) or is_ours(site_dir):
        return
    raise SiteError(
        f"The site folder {site_dir} holds files perfsite did not write (no {MARKER} marker, and not a site an "
        "earlier perfsite built), and building would replace them all. Allowed: a new or empty folder, or a "
        "site perfsite built (it carries the marker). Choose another folder with --site, or empty this one "
        "yourself if it is meant for perfsite."
    )


def is_ours(site_dir: Path) -> bool:
    """Whether perfsite built this folder: its marker, or (sites from before the marker) an index.html beside
    perfsite's own assets."""
    if (site_dir / MARKER).is_file():
        return True
    return (site_dir / "index.html").is_file() and any((site_dir / sign).is_file() for sign in LEGACY_SIGNS)


# A site folder that is a mount point (a volume of a container, a bind mount, an NFS export) cannot be renamed,
# and a staging folder beside it is on another file system: the build is staged inside it, under this name,
# and its entries replace the old site's one by one (not in one swap: a kill midway leaves a site that mixes the
# two builds, which the next build replaces).
_MOUNT_STAGING = re.compile(r"^\.perfsite-mount-(?:new|old)-(?P<pid>\d+)$")


def staging_dir(site_dir: Path) -> Path:
    """The folder mkdocs writes into for this build: beside the site, so that the swap is a rename; inside it
    when the site folder is a mount point."""
    if os.path.ismount(site_dir):
        _clean_stale_in_mount(site_dir)
        return site_dir / f".perfsite-mount-new-{os.getpid()}"
    clean_stale(site_dir.parent)
    return site_dir.parent / f".{site_dir.name}.perfsite-new-{os.getpid()}"


def publish(staging: Path, site_dir: Path) -> list[str]:
    """Mark the complete build in `staging` and put it in place of `site_dir`; the old site, if any, is deleted
    only after the new one is in place. Returns the old site's entries perfsite did not write, which the new
    site keeps (module docstring)."""
    written = sorted(staging.rglob("*"))
    files = [p.relative_to(staging).as_posix() for p in written if not p.is_dir()]
    folders = [p.relative_to(staging).as_posix() for p in written if p.is_dir()]
    kept = _carry_foreign(site_dir, staging) if site_dir.is_dir() else []
    marker = {"built_by": "perfsite", "built_at": time.time(), "files": files, "folders": folders}
    (staging / MARKER).write_text(json.dumps(marker) + "\n")
    if staging.parent == site_dir:
        _replace_entries(staging, site_dir)
        return kept
    if not site_dir.exists():
        staging.rename(site_dir)
        return kept
    old = site_dir.parent / f".{site_dir.name}.perfsite-old-{os.getpid()}"
    if _exchange(staging, site_dir):
        staging.rename(old)  # staging now holds the old site
    else:
        _swap_by_renames(staging, site_dir, old)
    shutil.rmtree(old, ignore_errors=True)
    return kept


def _replace_entries(staging: Path, site_dir: Path) -> None:
    """Publish a build staged inside a mount point: the old site's entries into a folder beside the staging one
    (renames, on the mount's file system), the new build's entries into the site, then the old ones deleted."""
    old = site_dir / f".perfsite-mount-old-{os.getpid()}"
    old.mkdir()
    for entry in site_dir.iterdir():
        if not _MOUNT_STAGING.match(entry.name):
            entry.rename(old / entry.name)
    for entry in staging.iterdir():
        entry.rename(site_dir / entry.name)
    staging.rmdir()
    shutil.rmtree(old, ignore_errors=True)


def _clean_stale_in_mount(site_dir: Path) -> None:
    for entry in site_dir.iterdir():
        match = _MOUNT_STAGING.match(entry.name)
        if match and entry.is_dir() and not entry.is_symlink() and not alive(int(match["pid"])):
            shutil.rmtree(entry, ignore_errors=True)


def _swap_by_renames(staging: Path, site_dir: Path, old: Path) -> None:
    """Where the system cannot exchange two paths: two renames, and the old site put back if anything (a
    Ctrl-C, an error) comes between them. After a kill -9 there, clean_stale puts it back."""
    site_dir.rename(old)
    try:
        staging.rename(site_dir)
    except BaseException:
        if not os.path.lexists(site_dir):
            old.rename(site_dir)
        raise


def _manifest(site_dir: Path) -> tuple[set[str], set[str]] | None:
    """The files and folders the last build wrote, from its marker; None for a marker without a list (or no
    marker)."""
    try:
        data = json.loads((site_dir / MARKER).read_text())
        files, folders = data.get("files"), data.get("folders", [])
    except (OSError, ValueError, AttributeError):
        return None
    if not all(isinstance(v, list) and all(isinstance(f, str) for f in v) for v in (files, folders)):
        return None
    return set(files), set(folders)


def foreign_entries(site_dir: Path, staging: Path) -> list[str]:
    """Paths in the old site (relative, posix) that perfsite did not write: whole folders where none of their
    files is perfsite's, else single files."""
    listed = _manifest(site_dir)
    if listed is None:  # an earlier release's site: keep what mkdocs keeps (dot-entries), a CNAME, and data
        return sorted(e.name for e in site_dir.iterdir() if e.name != MARKER and not os.path.lexists(staging / e.name)
                      and not _MOUNT_STAGING.match(e.name)
                      and (e.name.startswith(".") or e.name in LEGACY_KEPT or _holds_data(e)))
    manifest, folders = listed
    ours = folders | {parent.as_posix() for f in manifest for parent in Path(f).parents}
    found: list[str] = []
    for root, dirs, names in os.walk(site_dir):
        rel = Path(root).relative_to(site_dir)
        for d in list(dirs):
            if rel == Path(".") and _MOUNT_STAGING.match(d):
                dirs.remove(d)  # this build's staging folder, inside a site folder that is a mount point
            elif (rel / d).as_posix() not in ours:
                found.append((rel / d).as_posix())
                dirs.remove(d)  # the whole folder is foreign: carried as one entry
        found.extend(p for n in names if (p := (rel / n).as_posix()) not in manifest and p != MARKER)
    return sorted(found)


# Files no build writes, which an earlier release let users put into a site (`run --results site/x`).
DATA_SUFFIXES = (".parquet", ".onnx", ".npy", ".npz", ".yaml", ".yml")


def _holds_data(entry: Path) -> bool:
    """Whether an entry of an earlier release's site is (or holds) results, models or specs, never written by
    a build."""
    if entry.is_symlink() or entry.is_file():
        return entry.suffix in DATA_SUFFIXES or entry.is_symlink()
    return any(p.suffix in DATA_SUFFIXES for p in entry.rglob("*"))


def _carry_foreign(site_dir: Path, staging: Path) -> list[str]:
    """Link the old site's foreign entries into the new one; refuse (SiteError) where the build writes the
    same path."""
    entries = foreign_entries(site_dir, staging)
    clashes = [e for e in entries if os.path.lexists(staging / e)]
    if clashes:
        raise SiteError(
            f"The site folder {site_dir} holds files perfsite did not write at paths the new build writes: "
            f"{', '.join(clashes[:5])}{' …' if len(clashes) > 5 else ''}. perfsite keeps files it did not write "
            "but will not overwrite them. Move them out of the site folder, then build again.")
    for entry in entries:
        source, target = site_dir / entry, staging / entry
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(source, target)
    return entries


def _link_or_copy(source: str | Path, target: str | Path) -> None:
    if Path(source).is_symlink():
        os.symlink(os.readlink(source), target)
        return
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def clean_stale(parent: Path) -> None:
    """Remove staging folders of builds whose process is gone (killed mid-build): only names perfsite makes."""
    if not parent.is_dir():
        return
    for entry in parent.iterdir():
        match = _STAGING.match(entry.name)
        if match and entry.is_dir() and not entry.is_symlink() and not alive(int(match["pid"])):
            site = parent / match["name"]
            if entry.name.endswith(f"-old-{match['pid']}") and not os.path.lexists(site):
                entry.rename(site)  # killed between the two renames of _swap_by_renames: the old site, back
            else:
                shutil.rmtree(entry, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    done = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


@contextlib.contextmanager
def build_lock(project_root: Path, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the project's build lock (module docstring) for the duration; wait, saying so, if another build
    holds it."""
    folder = project_root / ".perfsite"
    check_scratch(folder)
    fd = os.open(folder / "build.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"Waiting for another `perfsite build` of {project_root} to finish (it holds "
                f"{folder / 'build.lock'})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def check_scratch(folder: Path) -> None:
    """SiteError unless the project's `.perfsite` is a folder the build can write, whose `build` (which every build
    removes whole) is absent or a plain folder and whose `cache` is absent or a folder: a file there, or a link as
    `build`, ended the build in a traceback, from mkdir or from rmtree, which does not follow a link."""
    allowed = (f"Allowed: a folder perfsite can create and write at {folder}, where it keeps the pages it generates "
               "and its caches (safe to delete: the next build makes them again).")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f".write-probe-{os.getpid()}").touch()
        (folder / f".write-probe-{os.getpid()}").unlink()
    except OSError as e:
        reason = "it is a file, not a folder" if folder.is_file() else e.strerror or str(e)
        raise SiteError(f"Cannot build the site: {folder} cannot be used ({reason}). {allowed}") from e
    for name in ("build", "cache"):
        inner = folder / name
        if (name == "build" and inner.is_symlink()) or (inner.exists() and not inner.is_dir()):
            what = f"a symbolic link (to {os.readlink(inner)})" if inner.is_symlink() else "a file, not a folder"
            raise SiteError(f"Cannot build the site: {inner} is {what}, and every build empties that folder; "
                            f"perfsite does not follow a link or remove a file of yours to do so. Remove it. {allowed}")
