"""Incremental builds: an experiment's pages are generated again only when what they are made of changed.

Reading an experiment's results and analysing them is most of a build, and an experiment's pages depend on
nothing but its own results folder, its place in the site (its slug) and perfsite itself. So each experiment's
generated files are kept in a cache entry named by a hash of those inputs (`page_key`):

- every file of its results folder: relative path, size and modification time (the writer replaces files by
  rename, so a re-measured trial always changes them; the stored specs are files of the folder too);
- its name, absolute folder and slug (the slug follows the order of the names of all experiments);
- perfsite itself: its version, the content of every module of the `generator` package and of every template
  and asset in site_templates/, and the names of the page kinds (a new kind, a changed template or any code
  change invalidates every entry).

An entry is `<project>/.perfsite/cache/pages/<key>/`: `docs/` holds the experiment's generated files as they
go into the build's docs folder, and `entry.pickle` the page paths and titles (for the navigation), the
experiment's view without its results (for the reports index and the home page) and the warnings reading it
gave (said again when the entry is reused). The cache is not part of any site; the build lock
(generator.site.publish.build_lock) keeps two builds from writing it at once. Entries are written under a
temporary name and renamed, so a killed build leaves no half entry; entries no build of the current results
used are removed at the end of each build.

Missing entries are generated in a pool of worker processes (one experiment each, at most MAX_WORKERS and the
machine's CPU count), or in the build's own process when only one is missing. Each worker holds one
experiment's tables at a time, so the memory of a build grows with the workers, not with the store.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import pickle
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import generator
from generator.results.store import ExperimentResults, load_experiment
from generator.site import pages as P
from generator.site.page_base import ExperimentView, Page

CACHE_FORMAT = 1  # bump when an entry's layout changes
MAX_WORKERS = 4  # each holds one experiment's tables (hundreds of MB for a thousand-node model's sweep)
ENTRY = "entry.pickle"


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


def page_key(experiment: Path, slug: str, code: str) -> str:
    """The hash of everything an experiment's pages are made of (module docstring)."""
    digest = hashlib.sha256(json.dumps([code, experiment.name, str(experiment.resolve()), slug]).encode())
    for path in sorted(experiment.rglob("*")):
        rel = path.relative_to(experiment)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue  # a writer's temporary file is not a result yet (generator.results.store)
        stat = path.stat()
        digest.update(f"{rel.as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def experiment_pages(experiments: list[Path], slugs: list[str], cache: Path,
                     say: Callable[[str], None]) -> list[CachedExperiment]:
    """Every experiment's cache entry, in order: reused where its key is stored, generated otherwise."""
    cache.mkdir(parents=True, exist_ok=True)
    code = code_fingerprint()
    folders = [cache / page_key(path, slug, code) for path, slug in zip(experiments, slugs, strict=True)]
    missing = [(path, slug, folder) for path, slug, folder in zip(experiments, slugs, folders, strict=True)
               if not (folder / ENTRY).is_file()]
    if len(experiments) > len(missing):
        say(f"Reusing the pages of {len(experiments) - len(missing)} unchanged experiment(s)")
    for path, _, _ in missing:
        say(f"Reading results of {path.name}")
    _generate(missing)
    _prune(cache, set(folders))
    return [_read_entry(folder) for folder in folders]


def _generate(missing: list[tuple[Path, str, Path]]) -> None:
    workers = min(len(missing), MAX_WORKERS, os.cpu_count() or 1)
    if workers <= 1:
        for path, slug, folder in missing:
            generate_entry(str(path), slug, str(folder))
        return
    # forkserver: workers start from a clean process, not a fork of one whose libraries hold threads. The
    # server imports this module (pandas, altair, the analyses) once, and each worker is a fork of it. As with
    # every start method but fork, a script that calls build_site must guard it with `if __name__ ==
    # "__main__":` (Python's multiprocessing rule): workers import the main module.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(generate_entry, str(path), slug, str(folder)) for path, slug, folder in missing]
        for future in futures:
            future.result()  # a worker's PerfsiteError (a damaged results file) reaches the CLI as raised


def generate_entry(experiment: str, slug: str, folder: str) -> None:
    """Read one experiment, render its pages into a new cache entry at `folder` (in a worker process)."""
    results = load_experiment(Path(experiment))
    view = P.site_view(results, slug)
    made = P.view_pages(P.template_env(), view)
    target = Path(folder)
    staging = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    for page in made:
        write_page(staging / "docs", page)
    warnings = (*(f"Warning: {p}" for p in results.problems), *filter(None, [older_spec_note(results)]))
    entry = CachedExperiment(target, tuple(Page(p.path, p.title, "") for p in made), replace(view, results=None),
                             warnings)
    (staging / ENTRY).write_bytes(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


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
    for rel, content in page.files:
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
