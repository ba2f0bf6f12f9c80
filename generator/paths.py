"""The project root and the safe resolution of file paths written in a spec.

A spec names model files, input files and calibration data relative to itself. Those paths must stay
inside the project (the git work tree holding the spec) so that anyone with a clone can re-run the
experiment; `--allow-outside` lifts the rule for local experiments, and `package:` names models shipped
inside an installed Python package. Symlinks are resolved before the check, so a link cannot escape.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import stat
import tempfile
from pathlib import Path

from generator.errors import SpecError

# The file a site perfsite built carries (generator.site.publish): results and models must never be written
# inside such a folder, because a later build replaces it.
SITE_MARKER = ".perfsite-site"
# One folder for every cache perfsite keeps when set: machine limits (generator.machine.probe) and derived models
# (quantized, FP16). CI points it at a folder its cache action keeps between runs; the tests at one folder for
# the whole session, so that a model is quantized once however many projects a test makes.
CACHE_ENV = "PERFSITE_CACHE_DIR"


def cache_root() -> Path:
    """$PERFSITE_CACHE_DIR, `~` expanded: CI files set it as `~/.cache/perfsite`, which no shell expands there,
    and a folder named `~` appeared in the checkout."""
    return Path(os.path.expanduser(os.environ[CACHE_ENV]))


def expand_home(args: list[str]) -> list[str]:
    """Command-line words with a leading `~` or `~user` expanded, alone or after `--option=`: the shell expands
    neither `--results=~/r` nor a quoted `'~/r'`, and perfsite made a folder named `~` in the current folder."""
    out = []
    for arg in args:
        option, sep, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if value.startswith("~") and (value == "~" or "/" in value):
            value = os.path.expanduser(value)
        out.append(f"{option}{sep}{value}")
    return out


def data_file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a data file (an input array, calibration data), in words for "PATH ...", or
    None for a regular file. A pipe, a device or a socket is refused by name: `is_file()` is False for them, and
    the messages said "does not exist" of a file that `ls` shows; reading /dev/zero would never end."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a device, a pipe or a socket)"
    return None


def models_cache_dir(project: Path) -> Path:
    """Where derived models are cached: $PERFSITE_CACHE_DIR/models when set, else <project>/.perfsite/models.
    Entries are named by the content hash of their source and options, so projects can share one folder."""
    if os.environ.get(CACHE_ENV):
        return cache_root() / "models"
    return Path(project) / ".perfsite" / "models"


def cache_problem(folder: Path) -> str | None:
    """Why `folder` cannot hold a cache, or None: it is created if missing and a file is written in it (the mode
    bits do not tell: root, ACLs, read-only mounts)."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return unusable_reason(folder, e)
    return None


def unusable_reason(folder: Path, error: OSError) -> str:
    """Why a folder could not be written, in words: mkdir's "File exists" for a file in its place says little."""
    return "it is a file, not a folder" if os.path.isfile(folder) else error.strerror or str(error)


def cache_warning(folder: Path, reason: str, what: str) -> str:
    """The one line that says a cache folder is unusable and perfsite goes on without it (docs/errors.md): a
    cache only saves time, so an unwritable one must not stop a measurement."""
    return (f"Warning: cannot use the cache folder {folder} ({reason}); {what} without caching. Set {CACHE_ENV} "
            "to a writable folder to keep the cache.")


def inside_built_site(path: Path) -> Path | None:
    """The perfsite-built site folder that holds `path` (or is it), if any."""
    path = Path(path).absolute()
    return next((p for p in (path, *path.parents) if (p / SITE_MARKER).is_file()), None)


# The folders of a project's .perfsite that every `perfsite build` empties: the pages it generates
# (generator.site.build removes `build` whole) and the page caches it prunes (generator.site.incremental).
EMPTIED_BY_BUILDS = ("build", "cache")


def replaced_by_builds(path: Path) -> str | None:
    """Why files written at `path` would not survive the next `perfsite build`, or None: `path` is inside a site
    perfsite built (built anew each time) or inside a `.perfsite/build` or `.perfsite/cache` folder."""
    path = Path(path).absolute()
    site = inside_built_site(path)
    if site is not None:
        return f"inside {site}, a site perfsite built ({site / SITE_MARKER} marks it), and sites are built anew"
    scratch = inside_scratch(path)
    if scratch is not None:
        return f"inside {scratch}, perfsite's own scratch folder, which every `perfsite build` empties"
    return None


def inside_scratch(path: Path) -> Path | None:
    """The `.perfsite/build` or `.perfsite/cache` folder that holds `path` (or is it), if any: every `perfsite
    build` empties the first and prunes the second, whatever else is in them."""
    # As written and with links resolved: `--out link` to .perfsite/build is emptied all the same.
    for where in dict.fromkeys((Path(path).absolute(), Path(os.path.realpath(path)))):
        found = next((p for p in (where, *where.parents)
                      if p.name in EMPTIED_BY_BUILDS and p.parent.name == ".perfsite"), None)
        if found is not None:
            return found
    return None


def experiment_holding(path: Path) -> Path | None:
    """The experiment results folder (it holds `trials/` and `specs/`) that `path` is inside, if any: a command
    that reads no store (`perfsite count`, `perfsite profile`, `perfsite diff git:A git:B`) must not write into
    one either."""
    return next((p for p in Path(os.path.realpath(path)).parents if (p / "trials").is_dir() and (p / "specs").is_dir()),
                None)


def _real(path: Path) -> Path:
    """The real absolute path (symlinks resolved); SpecError for paths the OS cannot even represent."""
    try:
        return Path(os.path.realpath(os.path.expanduser(path)))
    except (OSError, ValueError) as exc:  # ValueError: embedded NUL byte
        raise SpecError(f"The path `{path}` cannot be used: {exc}.") from None


def project_root(path: Path) -> Path:
    """The git top level holding `path`'s real location (a folder with `.git`), else the file's folder.

    `.git` may be a folder or, in worktrees and submodules, a file; both mark the top level. Git itself is
    not run: the answer must not depend on git being installed.
    """
    real = _real(path)
    start = real if real.is_dir() else real.parent
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _where(spec_file: Path | None, what: str, line: int | None) -> str:
    at_line = f", line {line}" if line else ""
    return f"Spec `{spec_file}`{at_line}, `{what}`" if spec_file else f"`{what}`"


def resolve_in_project(
    base_dir: Path,
    rel: str,
    root: Path,
    allow_outside: bool,
    what: str,
    spec_file: Path | None = None,
    *,
    must_exist: bool = False,
    line: int | None = None,
) -> Path:
    """Resolve `rel` (relative to `base_dir`, or absolute) to a real path inside `root`.

    Raises SpecError naming the spec file, the field `what` (e.g. `models.fp32.path`) and the path when
    the real path leaves `root` and `allow_outside` is false, or when `must_exist` and nothing is there.
    Absolute paths follow the same rule. Existence is not checked otherwise: the stage that reads the
    file reports a missing one.
    """
    where = _where(spec_file, what, line)
    if not rel or "\x00" in rel:
        raise SpecError(f"{where}: `{rel!r}` is not a usable file path.")
    candidate = Path(os.path.expanduser(rel))
    real = _real(candidate if candidate.is_absolute() else Path(base_dir) / candidate)
    real_root = _real(root)
    if not allow_outside and not real.is_relative_to(real_root):
        raise SpecError(
            f"{where}: `{rel}` resolves to `{real}`, outside the project root `{real_root}`. Spec paths stay "
            "inside the project so that a clone can re-run the experiment: move the file into the project, "
            "use `package:` for a model shipped in an installed Python package, or pass `--allow-outside`."
        )
    if must_exist and not os.path.exists(real):  # os.path answers False where Path.exists raises (3.11)
        raise SpecError(f"{where}: `{rel}` does not exist (looked for `{real}`).")
    return real


def resolve_package_path(
    package: str, rel: str, what: str, spec_file: Path | None = None, *, must_exist: bool = False
) -> Path:
    """Resolve `rel` inside the folder of the installed package `package`.

    A top-level package is found without being imported; a dotted name imports its parent packages.

    Raises SpecError when the package is not installed, is a single module rather than a package, or the
    path leaves the package folder (`..`, absolute paths, escaping symlinks).
    """
    where = _where(spec_file, what, None)
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:  # a parent package that is missing or broken
        raise SpecError(f"{where}: package `{package}` cannot be found ({exc}).") from None
    folders = list(found.submodule_search_locations or []) if found else []
    if not folders:
        state = "is not installed" if found is None else "is a module, not a package folder"
        raise SpecError(f"{where}: package `{package}` {state}; install it (pip install ...) or use a path.")
    base = _real(Path(folders[0]))
    real = _real(base / rel)
    if not real.is_relative_to(base) or Path(rel).is_absolute():
        raise SpecError(f"{where}: `{rel}` leaves the folder of package `{package}` ({base}).")
    if must_exist and not real.exists():
        raise SpecError(f"{where}: `{rel}` is not in package `{package}` (looked for `{real}`).")
    return real


@functools.cache
def _umask() -> int:
    # Read once: os.umask can only be read by setting it, and a second thread creating a file in between would
    # get the temporary 0.
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see either the old file or the whole new one, with the mode of a
    file the user creates (0666 less the umask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600: the results of a shared store (or a report) were readable by their
        # writer alone, whatever the umask, so a colleague's `perfsite build` could not read them.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
