"""Incremental builds: an experiment's pages are generated again only when what they are made of changed.

Reading an experiment's results and analysing them is most of a build, and an experiment's pages depend on
nothing but its own results, its place in the site (its slug) and perfsite itself. An experiment is its name:
its folders in every store the build reads (`--results A --results s3://bucket/x`, generator.results.stores)
are one experiment, merged into one and kept as one cache entry. So each experiment's generated files are kept
in a cache entry named by a hash of those inputs (`page_key`):

- every file of each of its folders, in the order the stores were given (the first store's copy of a trial
  stored twice is the one shown): the store, the file's path relative to the folder, its size and its change
  marker as the store gives it (generator.results.location `stamps`): a local file's modification time, inode
  change time and inode number (a file rewritten with the same size and its modification time set back still
  gets a new change time, which no user can set; no content is hashed), an object's ETag (else its
  modification time) from fsspec's `info()`, never a local stat call on a URL; the stored specs are files of
  the folder too;
- its slug (the slug follows the order of the names of all experiments);
- perfsite itself: its version, the content of every module of the `generator` package and of every template
  and asset in site_templates/, and the names of the page kinds (a new kind, a changed template or any code
  change invalidates every entry).

A store whose listing gives an object neither an ETag nor a modification time cannot key it: that experiment's
pages are generated without the cache on every build (correct, only slower), in an entry no later build reuses.

An entry is `<project>/.perfsite/cache/pages/<key>/`: `docs/` holds the experiment's generated files as they
go into the build's docs folder, and `entry.pickle` the page paths and titles (for the navigation), the
experiment's view without its results (for the reports index and the home page) and the warnings and notes
reading it gave (said again when the entry is reused). The cache is not part of any site; the build lock
(generator.site.publish.build_lock) keeps two builds from writing it at once. Entries are written under a
temporary name and renamed, so a killed build leaves no half entry; entries no build of the current results
used are removed at the end of each build.

Missing entries of experiments stored on this machine only are generated in a pool of worker processes (one
experiment each, at most MAX_WORKERS and the machine's CPU count), or in the build's own process when only one
is missing or all of them are too small to pay for starting the pool (POOL_FROM_BYTES). Each worker holds one
experiment's tables at a time, so the memory of a build grows with the workers, not with the store. An
experiment with a folder on an object store is generated in the build's own process: fsspec's backends take
their endpoint and credentials from the process's environment, and the workers are forks of a server started
with the environment of its first use, perhaps older than the build's.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import contextlib
import gc
import hashlib
import json
import multiprocessing
import os
import pickle
import shutil
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import generator
from generator import processes
from generator.errors import SiteError
from generator.results.location import StoreRoot, local_path, open_location, shown
from generator.results.store import ExperimentResults, load_experiment
from generator.results.stores import merge
from generator.site import pages as P
from generator.site.page_base import ExperimentView, Page

CACHE_FORMAT = 2  # bump when an entry's layout changes
MAX_WORKERS = 4  # each holds one experiment's tables (hundreds of MB for a thousand-node model's sweep)
# A pool pays for its start before it makes a page: its server is a fresh interpreter importing pandas, altair
# and the analyses (1.5 to 2 s on 2 cores). The build's own process generates an experiment of tests/support/
# results.py's size (0.36 MB stored) in about 1.1 s, its chooser in a forked child beside it; a pool of two
# workers took 3 to 5 s for two of them where the build's process takes about 2.2 s (2026-11-27, a loaded
# 2-core machine). From a few such experiments' worth on, the pool is sooner; a store of bench/site_scale.py
# (3.5 MB an experiment) always has one.
POOL_FROM_BYTES = 2_000_000
ENTRY = "entry.pickle"
UNCACHED = "uncached-"  # an entry of one build (page_key gave None); keys are hex digits
Parts = tuple[StoreRoot, ...]  # one experiment's folders, one per store holding it, in the order given


@dataclass(frozen=True)
class CachedExperiment:
    """One experiment's cache entry, as the build uses it."""

    folder: Path  # the entry; its docs/ holds the generated files
    pages: tuple[Page, ...]  # paths and titles only (markdown empty): the navigation's entries
    view: ExperimentView  # without its results (None): what the reports index and home page show
    warnings: tuple[str, ...]


def code_fingerprint() -> str:
    """A hash of perfsite itself: version, every module of the package, every template and asset."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}\0{generator.__version__}\0{sorted(P.PAGE_KINDS)}\0".encode())
    package = Path(generator.__file__).parent
    for root in (package, P.templates_dir()):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and (root != package or path.suffix == ".py"):
                digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def page_key(parts: Sequence[StoreRoot], slug: str, code: str) -> str | None:
    """The hash of everything an experiment's pages are made of (module docstring), or None when a store
    gives a file no change marker (the experiment is then generated without the cache)."""
    digest = hashlib.sha256(json.dumps([code, slug]).encode())
    for part in parts:
        stamps = open_location(part).stamps()
        if stamps is None:
            return None
        digest.update(f"{_store_name(part)}\n".encode())
        for rel, size, marker in stamps:
            digest.update(f"{rel}\0{size}\0{marker}\n".encode())
    return digest.hexdigest()[:32]


def _store_name(part: StoreRoot) -> str:
    """A folder as the key names it: a local one's absolute path, a URL without credentials (they change who
    reads, not what is read)."""
    local = local_path(part)
    return str(local.resolve()) if local is not None else shown(str(part)).rstrip("/")


def experiment_pages(experiments: Sequence[Parts], slugs: list[str], cache: Path,
                     say: Callable[[str], None]) -> list[CachedExperiment]:
    """Every experiment's cache entry, in order: reused where its key is stored, generated otherwise."""
    cache.mkdir(parents=True, exist_ok=True)
    code = code_fingerprint()
    folders = [_entry_folder(cache, parts, slug, code) for parts, slug in zip(experiments, slugs, strict=True)]
    missing = [(parts, slug, folder) for parts, slug, folder in zip(experiments, slugs, folders, strict=True)
               if folder.name.startswith(UNCACHED) or not _whole(folder)]
    for _, _, folder in missing:
        shutil.rmtree(folder, ignore_errors=True)  # a damaged entry is generated again from scratch
    if len(experiments) > len(missing):
        say(f"Reusing the pages of {len(experiments) - len(missing)} unchanged experiment(s)")
    for parts, _, folder in missing:
        for part in parts:
            say(f"Reading results of {shown(part)}")
        if folder.name.startswith(UNCACHED):
            say(f"Note: {shown(parts[0])}: its store gives no ETag or modification time for its files, so its "
                "pages are generated again on every build (not cached)")
    _generate(missing)
    _prune(cache, set(folders))
    return [_read_entry(folder) for folder in folders]


def _entry_folder(cache: Path, parts: Parts, slug: str, code: str) -> Path:
    """The entry's folder: its key, or for an experiment that cannot be keyed a folder of this build only
    (regenerated by every build, removed by the next one's _prune when its slug is gone)."""
    key = page_key(parts, slug, code)
    return cache / (key if key is not None else f"{UNCACHED}{slug}")


BROKEN_WORKER = ("A worker process generating the experiments' pages ended before it finished: it was killed (out "
                 "of memory?), or, in a script that calls build_site, it imported the script and failed there (its "
                 "error is printed above; guard the call with `if __name__ == \"__main__\":`). Nothing was "
                 "published; the site is as it was.")


def _generate(missing: list[tuple[Parts, str, Path]]) -> None:
    # Experiments with a folder on an object store in this process (module docstring), the others in a pool.
    remote = [m for m in missing if any(local_path(p) is None for p in m[0])]
    local = [m for m in missing if m not in remote]
    for parts, slug, folder in remote:  # the chooser in a forked child too: it reads nothing, the view is read
        generate_entry(parts, slug, str(folder), os.cpu_count() or 1)
    sizes = {m[2]: _stored_bytes(m[0]) for m in local}
    workers = pool_workers(list(sizes.values()))
    if workers == 0:  # in this process, one after another, each one's chooser in a child beside it
        for parts, slug, folder in local:
            generate_entry(parts, slug, str(folder), os.cpu_count() or 1)
        return
    # forkserver: workers start from a process that has only imported, not from a fork of the build's, which
    # has read files, started mkdocs' process and used its libraries' thread pools (the server holds only the
    # idle threads numpy's BLAS starts at import, which handles fork). The server imports this module (pandas,
    # altair, the analyses) once, and each worker is a fork of it. As with
    # every start method but fork, a script that calls build_site must guard it with `if __name__ ==
    # "__main__":` (Python's multiprocessing rule): workers import the main module. The server also compiles
    # the page templates and imports what the pages import on first use (generator.site.worker_preload), once
    # rather than in each worker.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, "generator.site.worker_preload"])
    # The biggest experiments first: one left for last keeps a worker busy while the others idle.
    local = sorted(local, key=lambda m: -sizes[m[2]])
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(generate_entry, parts, slug, str(folder)) for parts, slug, folder in local]
        try:
            for future in futures:
                future.result()  # a worker's PerfsiteError (a damaged results file) reaches the CLI as raised
        except concurrent.futures.process.BrokenProcessPool as e:
            raise SiteError(BROKEN_WORKER) from e


def pool_workers(sizes: Sequence[int]) -> int:
    """How many page workers generate local experiments of these stored sizes (bytes): none (the build's own
    process generates them one after another) for one experiment, on one core, or when they hold less than
    POOL_FROM_BYTES in all; otherwise one per experiment, at most MAX_WORKERS and the machine's CPU count."""
    workers = min(len(sizes), MAX_WORKERS, os.cpu_count() or 1)
    return workers if workers > 1 and sum(sizes) >= POOL_FROM_BYTES else 0


def _stored_bytes(parts: Parts) -> int:
    """The size of an experiment's local folders: how long generating its pages takes, roughly."""
    return sum(entry.stat().st_size for part in parts if (folder := local_path(part)) is not None
               for entry in folder.rglob("*") if entry.is_file())


def load_merged(parts: Sequence[StoreRoot]) -> tuple[ExperimentResults, list[str]]:
    """One experiment read from its folders in every store holding it, merged (generator.results.stores), and
    the notes on trials stored in more than one."""
    return merge([load_experiment(part) for part in parts])


def generate_entry(parts: Parts, slug: str, folder: str, cores: int = 1) -> None:
    """Read one experiment, render its pages into a new cache entry at `folder` (in a worker process, or with
    `cores` 2 or more in the build's own process: its chooser page in a forked child meanwhile)."""
    # Local folders only: an object store's client (s3fs, aiohttp) makes cyclic garbage on a thread of its own
    # for as long as it reads, which a paused collector would keep.
    local = all(local_path(part) is not None for part in parts)
    with _collector_paused() if local else contextlib.nullcontext():
        _generate_entry(parts, slug, folder, cores)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while one experiment is generated. Its tables and records are
    millions of objects, all alive until its pages are written, and each full collection walked them all:
    three or four a 40-trial experiment of bench/site_scale.py, 0.3 to 0.4 CPU-s of its 3. The experiment
    leaves little cyclic garbage (1,600 objects), collected as usual once the collector runs again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _generate_entry(parts: Parts, slug: str, folder: str, cores: int) -> None:
    results, notes = load_merged(parts)
    view = P.site_view(results, slug)
    target = Path(folder)
    staging = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    made = _pages_apart(view, staging) if cores > 1 else _pages(view, staging / "docs", P.PAGE_KINDS)
    warnings = (*(f"Warning: {p}" for p in results.problems), *filter(None, [older_spec_note(results)]),
                *(f"Note: {n}" for n in notes))
    entry = CachedExperiment(target, tuple(made),
                             replace(view, results=None, context=None), warnings)
    (staging / ENTRY).write_bytes(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def _pages(view: ExperimentView, docs: Path, kinds: Iterable[str]) -> list[Page]:
    """The experiment's pages of these kinds, written into `docs`; their paths and titles."""
    made = P.view_pages(P.template_env(), view, kinds)
    for page in made:
        write_page(docs, page)
    return [Page(p.path, p.title, "") for p in made]


APART = "choose"  # the page kind a rebuild of one experiment generates in a child (the biggest: half the time)
# Kinds the child generates after the chooser page, so that both processes finish at about the same time: the
# build's process writes the chooser's layer details and then every other kind (a 40-trial experiment of
# bench/site_scale.py: 1.5 s here against 1.2 s in the child, before the machines pages moved).
ALSO_APART = ("machines",)


def _pages_apart(view: ExperimentView, staging: Path) -> list[Page]:
    """Every page of the experiment, the chooser page (and ALSO_APART) generated in a forked child meanwhile:
    an experiment generated in the build's own process (a rebuild after one changed) uses both cores. The
    child shares the results already read. This process writes the chooser's layer details first (they need
    no statistics: P.chooser_details), hands the child their chunks through a file and one byte on a pipe,
    then generates the other kinds; the child writes its pages and their paths and titles. Should the child
    fail, its pages are generated here, where an error is raised as usual."""
    docs, listing, chunks = staging / "docs", staging / f"{APART}.pickle", staging / "chunks.pickle"
    docs.mkdir(parents=True, exist_ok=True)
    read_end, write_end = os.pipe()
    apart_kinds = [k for k in (APART, *ALSO_APART) if k in P.PAGE_KINDS]

    def details() -> dict:
        if os.read(read_end, 1) != b"1":  # the build's process failed before it wrote them
            raise RuntimeError("no layer details")
        return pickle.loads(chunks.read_bytes())

    def apart() -> None:
        os.close(write_end)
        env = P.template_env()
        made = {APART: P.chooser_pages(env, view, details)}
        made.update((kind, P.view_pages(env, view, [kind])) for kind in apart_kinds[1:])
        for page in (page for pages in made.values() for page in pages):
            write_page(docs, page)
        listing.write_bytes(pickle.dumps({kind: [Page(p.path, p.title, "") for p in pages]
                                          for kind, pages in made.items()}, pickle.HIGHEST_PROTOCOL))

    pid = processes.fork_call(apart) if APART in P.PAGE_KINDS else None
    os.close(read_end)
    try:
        if pid is not None:
            files, chunks_of = P.chooser_details(view)
            write_files(docs, files)
            chunks.write_bytes(pickle.dumps(chunks_of, pickle.HIGHEST_PROTOCOL))
            with contextlib.suppress(BrokenPipeError):  # a child gone already: its pages are made below
                os.write(write_end, b"1")
        os.close(write_end)
        kinds = [k for k in P.PAGE_KINDS if k not in apart_kinds or pid is None]
        made = {kind: _pages(view, docs, [kind]) for kind in kinds}
    except BaseException:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            processes.forked_ok(pid)
        raise
    if pid is not None:
        made.update(pickle.loads(listing.read_bytes()) if processes.forked_ok(pid)
                    else {kind: _pages(view, docs, [kind]) for kind in apart_kinds})
        listing.unlink(missing_ok=True)
        chunks.unlink(missing_ok=True)
    return [page for kind in P.PAGE_KINDS for page in made[kind]]


def _whole(folder: Path) -> bool:
    """Whether a build can use the entry: its record reads and every page it lists is there. The cache is
    documented as safe to delete, in part too; a damaged or half-deleted entry is generated again, never used."""
    if not (folder / ENTRY).is_file():
        return False
    try:
        entry = _read_entry(folder)
    except Exception:  # damaged bytes make pickle raise almost anything: EOFError, UnpicklingError, ValueError
        return False
    return all((folder / "docs" / page.path).is_file() for page in entry.pages)


def _read_entry(folder: Path) -> CachedExperiment:
    entry = pickle.loads((folder / ENTRY).read_bytes())
    return replace(entry, folder=folder)


def _prune(cache: Path, used: set[Path]) -> None:
    """Remove entries this build does not use, and temporary ones of killed builds (the lock is held)."""
    for entry in cache.iterdir():
        if entry not in used:
            shutil.rmtree(entry, ignore_errors=True)


def write_page(docs_dir: Path, page: Page) -> None:
    """A page's Markdown and the files beside it (a profile page's traces, a chooser's data) into docs_dir."""
    target = docs_dir / page.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page.markdown, encoding="utf-8")
    write_files(docs_dir, page.files)


def write_files(docs_dir: Path, files: Iterable[tuple[str, str | bytes]]) -> None:
    for rel, content in files:
        (docs_dir / rel).parent.mkdir(parents=True, exist_ok=True)  # the chooser's data folder
        if isinstance(content, bytes):
            (docs_dir / rel).write_bytes(content)
        else:
            (docs_dir / rel).write_text(content, encoding="utf-8")


def link_tree(source: Path, target: Path) -> None:
    """Hard-link (copy where links fail) every file under `source` into `target`: an entry's files into the
    build's docs folder, which each build empties (the cache keeps its own links)."""
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True, copy_function=_link_or_copy)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def older_spec_note(experiment: ExperimentResults) -> str | None:
    """The pages follow the newest stored spec; a note naming the trials measured for versions it no longer
    has (renamed or removed since): they are still rendered, since nothing measured is thrown away."""
    current = set(experiment.spec.models)
    trials = experiment.trials
    gone = trials[~trials["version"].isin(current)]
    if gone.empty:
        return None
    names = ", ".join(sorted(set(gone["version"])))
    return (f"Note: {experiment.name}: {len(gone)} stored trial(s) are of versions no longer in its newest spec "
            f"({names}); they were measured with an older spec and are still shown.")
