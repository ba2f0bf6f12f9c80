"""`perfsite build`: results -> Markdown pages beside the project's docs -> `mkdocs build --strict` -> site/.

The build folder (<project>/.perfsite/build) holds a generated mkdocs.yml that INHERITs the project's own
mkdocs.yml (or the packaged site_templates/mkdocs.base.yml) and adds the docs folder, the site folder, the
navigation and the site's scripts. The build never runs a model and never touches the network.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from generator import processes
from generator.analysis.findings import FindingSet
from generator.errors import SiteError
from generator.results.location import StoreRoot, is_url, local_path, shown
from generator.results.store import ResultsDir, find_experiments
from generator.results.stores import folder_key, store_roots
from generator.site import charts, incremental, mkdocs_runner, offline_settings, publish, render_cache_files, vendor
from generator.site.pages import (
    REPORTS_DIR,
    Page,
    home_page,
    reports_index,
    slugify,
    template_env,
    templates_dir,
)
from generator.site.stages import EXPERIMENT_PAGES, Stages

Progress = Callable[[str], None]
GETTING_STARTED = ("getting-started.md", "getting_started.md", "quickstart.md", "tutorial.md")
# The pages use these Markdown extensions; a project's mkdocs.yml that lacks one gets it added.
# md_in_html: tables inside <div markdown>; abbr: hover texts for jargon (generator.site.glossary); tabbed: the
# profile pages' what-if scenarios (the theme styles only the alternate style).
REQUIRED_EXTENSIONS = ("admonition", "tables", "toc", "md_in_html", "abbr", "pymdownx.superfences",
                       {"pymdownx.tabbed": {"alternate_style": True}})
# mkdocs-material's offline plugin: search works on a site opened from disk (file://), with vendor.POLYFILLS.
REQUIRED_PLUGINS = ("search", "offline")
REQUIRED_FEATURES = ("toc.integrate",)
# mkdocs hooks after the render cache's: links carrying the chooser's state are not anchors to check.
CHOICE_LINKS_HOOKS = Path(__file__).with_name("choice_links.py")
# mkdocs hooks that convert and index the pages faster, with the same output (generator.site.fast_paths).
FAST_PATHS_HOOKS = Path(__file__).with_name("fast_paths.py")
MKDOCS_OUTPUT_TAIL = 4000  # characters of mkdocs' output quoted in an error
MKDOCS_LEVEL = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) +-  ")  # how mkdocs starts a logged message
CONFIG_ERROR = "Aborted with a configuration error!"  # mkdocs' words when its configuration does not validate


def build_site(
    results_root: StoreRoot | Sequence[StoreRoot], site_dir: Path, project_root: Path,
    progress: Progress | None = None, baseline: str | None = None, trend: int | None = None,
) -> Path:
    """Render every experiment under results_root (one store, or several read as one:
    generator.results.stores) and the project's docs into a static site in site_dir; with `baseline` (a results
    folder or git:REF) a changes page, with `trend` N a trend page over the last N commits that changed the
    (first local) results folder (generator.site.changes_page)."""
    _refuse_in_a_worker()
    say = progress or (lambda _text: None)
    roots = store_roots(results_root)
    project_root, site_dir = Path(project_root).resolve(), _site_path(Path(site_dir))
    local = [local_path(r).resolve() for r in roots if local_path(r) is not None]
    for folder in local:
        _check_site_dir(site_dir, project_root, folder)
    for root in roots:
        if not find_experiments(root):  # also refuses a results root that is missing or a file
            say(f"Warning: no experiment under {shown(root)}: an experiment is a folder holding trials/ (the "
                "layout `perfsite run --results` writes); the site has the docs only")
    made = _missing_folders(site_dir)  # the checks below make them; removed again if the build fails
    try:
        with publish.build_lock(project_root, say):
            _check_and_publish(roots, site_dir, project_root, say, baseline, trend)
    except BaseException as e:
        _remove_if_empty(made)
        if _disk_full(e):
            raise SiteError(_full_disk_message(e, site_dir, project_root)) from None
        raise
    return site_dir


DISK_FULL = "No space left on device"


def _disk_full(error: BaseException) -> bool:
    """A full disk, however it came: an OSError, or shutil's Error that lists the copies that failed."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    return isinstance(error, shutil.Error | OSError) and DISK_FULL in str(error)


def _full_disk_message(error: BaseException, site_dir: Path, project_root: Path) -> str:
    """One paragraph for a full disk during a build: a 40-line traceback (the site's disk) or a bare
    shutil.Error (the project's, copying the site's assets) said neither which folder nor that nothing was lost."""
    where = error.filename if isinstance(error, OSError) and not isinstance(error, shutil.Error) else None
    if isinstance(error, shutil.Error) and error.args and isinstance(error.args[0], list) and error.args[0]:
        where = error.args[0][0][1]  # (source, target, why) of the first copy that failed
    writing = f" (writing {where})" if where else ""
    return (f"The disk is full ({DISK_FULL}){writing}: a build writes its pages into {project_root / '.perfsite'} "
            f"and the site beside or inside {site_dir} before it replaces the old one. Nothing was published: the "
            "previous site, if any, is as it was, and no result was touched. Free space on that disk (`df -h` "
            "names it), or build onto another disk with --site DIR.")


def _refuse_in_a_worker() -> None:
    """A script calling build_site without `if __name__ == "__main__":` is imported again by each of the build's
    page workers (multiprocessing runs the main module as `__mp_main__` in every start method but fork), which
    called build_site again and waited for the build lock the script holds: the build hung for good. Refused
    when the call comes from that import, the script's top level; a call from a function in any worker is
    anyone's business."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            raise SiteError(f"build_site was called while a page worker of a build imported the script "
                            f"{frame.f_globals.get('__file__') or '(unknown)'}: the call runs again in every worker. "
                            "Allowed: a call guarded by `if __name__ == \"__main__\":`, as for any use of Python's "
                            "multiprocessing.")
        frame = frame.f_back


def _check_and_publish(roots: Sequence[StoreRoot], site_dir: Path, project_root: Path, say: Progress,
                       baseline: str | None, trend: int | None) -> None:
    """Under the build lock: the site's folders checked, the site built into a staging folder and published."""
    publish.check_target(site_dir)  # again under the lock: another build may have just written it
    _check_writable(site_dir, "the site", "Choose a writable folder with --site DIR")
    if not os.path.ismount(site_dir):  # a mount point is staged inside itself (publish.staging_dir)
        _check_writable(site_dir.parent, "the site's staging folder beside it", "Choose a --site DIR in a "
                        "writable folder")
    _check_writable(project_root / ".perfsite", "the build folder", "Run `perfsite build` from a writable "
                    "project")
    staging = publish.staging_dir(site_dir)
    stages = Stages()
    try:
        _build_into(staging, roots, project_root, say, baseline, trend, stages)
        with stages.stage("publishing"):
            kept = publish.publish(staging, site_dir)
        say(stages.summary())
        if kept:
            say(f"Kept {len(kept)} entr{'y' if len(kept) == 1 else 'ies'} of {site_dir} that perfsite did not "
                f"write: {', '.join(kept[:8])}{' …' if len(kept) > 8 else ''}")
    finally:
        publish.discard(staging)


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and its ancestors that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_if_empty(folders: list[Path]) -> None:
    """Undo the folders a failed build made for its site (deepest first), stopping at one that holds anything:
    a first build that fails leaves no empty site folder behind to look like a built one."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _site_path(site_dir: Path) -> Path:
    """The site folder, resolved through its parents' links but not through its own name: a link named as the
    site is refused (publish.check_target) rather than followed to whatever it points at. `.` and `..` are
    folded first: `Path(".").name` is empty, and `--site .` was the parent of the current folder."""
    folded = Path(os.path.abspath(site_dir))
    return folded.parent.resolve() / folded.name


def _build_into(staging: Path, roots: tuple[StoreRoot, ...], project_root: Path, say: Progress,
                baseline: str | None, trend: int | None, stages: Stages) -> None:
    """Pages into <project>/.perfsite/build (each experiment's from the page cache where it is unchanged,
    generator.site.incremental; an experiment in several stores is one), then mkdocs into `staging`."""
    with _mkdocs_started(project_root / ".perfsite" / "cache" / "render") as mkdocs:
        _pages_then_mkdocs(mkdocs, staging, roots, project_root, say, baseline, trend, stages)


def _pages_then_mkdocs(mkdocs: subprocess.Popen, staging: Path, roots: tuple[StoreRoot, ...], project_root: Path,
                       say: Progress, baseline: str | None, trend: int | None, stages: Stages) -> None:
    found = _experiment_folders(roots, say)
    parent = _parent_config(project_root)
    parent_config = _read_config(parent)
    offline_settings.check_project_config(parent, parent_config)
    build_dir = project_root / ".perfsite" / "build"
    if build_dir.exists():
        shutil.rmtree(build_dir)
    docs_source = _docs_source(project_root, parent, parent_config)
    taken: set[str] = {"index"}
    slugs = [slugify(ResultsDir(parts[0]).name, taken) for parts in found]
    with stages.stage(EXPERIMENT_PAGES):
        cached = incremental.experiment_pages(found, slugs, project_root / ".perfsite" / "cache" / "pages", say)
    stages.generated = sum(entry.generated for entry in cached)
    stages.reused = len(cached) - stages.generated
    for entry in cached:
        for warning in entry.warnings:
            say(warning)
        for view in entry.views:
            findings = view.findings if view.generative is None else view.generative.findings
            if findings is not None:
                say(findings_line(view.title, findings))
    extra = []
    if baseline or trend:  # the changes and trend pages read every experiment's results themselves
        from generator.site.changes_page import history_pages

        with stages.stage("history pages"), charts.unvalidated():
            experiments = [incremental.load_merged(parts)[0] for parts in found]
            extra = history_pages(_history_root(roots, baseline, trend), experiments, baseline, trend, say)
    with stages.stage("writing pages"):
        pages, docs = _write_pages(cached, docs_source, build_dir / "docs", extra)
    say(f"Rendered {len(pages)} pages for {len(found)} experiment(s); running mkdocs build")
    config = _write_config(build_dir, staging, parent, parent_config, _nav(docs, pages, parent_config.get("nav")))
    with stages.stage("mkdocs build"):
        _run_mkdocs(mkdocs, config, parent, project_root, project_root / ".perfsite" / "cache" / "render")


def findings_line(name: str, findings: FindingSet) -> str:
    """What `perfsite build` says of an experiment's findings (generator.analysis.findings)."""
    count = len(findings.findings)
    return (f"{name}: {findings.settled} of {count} finding{'s' if count != 1 else ''} settled "
            f"(the others are marked unsettled on its pages, with the reason; all in findings.json)")


def _config_error(parent: Path, config: Path, output: str) -> str:
    """One paragraph for a configuration mkdocs refused (a plugin that is not installed, a theme setting):
    the project's mkdocs.yml named, mkdocs' own error lines quoted."""
    said = [" ".join(line.split()).removeprefix("ERROR - ").removeprefix("ERROR -")
            for line in output.splitlines() if line.lstrip().startswith("ERROR")]
    return (f"mkdocs refused the site's configuration: {'; '.join(said) or output.strip()}. perfsite's build "
            f"configuration ({config}) inherits {parent}: fix the setting there (a plugin or Markdown extension "
            "must be installed in the environment perfsite runs in, e.g. with pip). Nothing was rendered into the "
            "site; the previous site, if any, is as it was.")


def _docs_source(project_root: Path, parent: Path, parent_config: dict[str, Any]) -> Path:
    """The hand-written docs: the project's mkdocs.yml `docs_dir` (relative to that file), else docs/."""
    if parent.parent == project_root and parent_config.get("docs_dir"):
        return (parent.parent / str(parent_config["docs_dir"])).resolve()
    return project_root / "docs"


def _write_pages(cached: list[incremental.CachedExperiment], docs_source: Path, docs_dir: Path,
                 extra: list[Page] | None = None) -> tuple[list[Page], list[str]]:
    """The project's docs, the reports index, each experiment's generated files (linked from the page cache),
    `extra` pages (changes, trend), a home page unless the docs have one, and the assets."""
    docs = _copy_docs(docs_source, docs_dir)
    env = template_env()
    views = [view for entry in cached for view in entry.views]
    pages = [reports_index(env, views)]
    for entry in cached:
        incremental.link_tree(entry.folder / "docs", docs_dir)
        pages += entry.pages
    pages += extra or []
    if "index.md" not in docs:
        pages.append(home_page(views))
    for page in [pages[0], *pages[1 + sum(len(e.pages) for e in cached):]]:
        incremental.write_page(docs_dir, page)
    vendor.copy_assets(templates_dir(), docs_dir)
    return pages, docs


def _check_site_dir(site_dir: Path, project_root: Path, results_root: Path) -> None:
    # The site folder is replaced whole: never let it be, or hold, the project, its docs or its results.
    parent = _parent_config(project_root)
    docs = _docs_source(project_root, parent, _read_config(parent))
    precious = [project_root, results_root, project_root / "docs", docs, project_root / ".perfsite",
                Path.home().resolve(), Path(site_dir.anchor)]
    if any(site_dir == p or site_dir in p.parents for p in precious):
        raise SiteError(
            f"The site folder {site_dir} would contain the project, its docs or its results (or be the home "
            "or root folder), and building replaces the site folder whole. Choose a separate folder with --site "
            "(default: <project>/site)."
        )
    # Nor live inside them: in the docs every build would copy the last site into the next one's pages, in
    # the results its files would be read as results, in .perfsite the build folder is emptied first.
    for folder, what in ((docs, "the docs folder"), (results_root, "the results folder"),
                         (project_root / ".perfsite", "perfsite's build folder")):
        if folder in site_dir.parents:
            raise SiteError(
                f"The site folder {site_dir} is inside {what} {folder}: every build would read the last site "
                "back in. Choose a folder outside it with --site (default: <project>/site)."
            )
    publish.check_target(site_dir)


def _check_writable(folder: Path, what: str, fix: str) -> None:
    """Refuse early, with the folder named, what mkdocs would otherwise report as a traceback."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        reason = "it is a file, not a folder" if folder.is_file() else e.strerror or str(e)
        raise SiteError(
            f"Cannot write {what} to {folder}: {reason}. Allowed: a folder perfsite can create and write (not "
            f"a file, not read-only). {fix}, or fix the folder's permissions."
        ) from e


def _history_root(roots: tuple[StoreRoot, ...], baseline: str | None, trend: int | None) -> Path:
    """The results folder whose git history --trend and --baseline git:REF follow: the first local one."""
    local = [local_path(r) for r in roots if local_path(r) is not None]
    if local:
        return local[0]
    if trend or (baseline and baseline.startswith("git:")):
        raise SiteError(f"--trend and --baseline git:REF follow a results folder through git history, but every "
                        f"--results is on object storage ({', '.join(shown(r) for r in roots)}). Allowed: add the "
                        "local results folder that is committed in git as one of the --results.")
    return Path(str(roots[0])) if not is_url(roots[0]) else Path(".")


def _experiment_folders(roots: tuple[StoreRoot, ...], say: Progress) -> list[incremental.Parts]:
    """The experiments to render, in the order their names first appear in the stores (as
    generator.results.stores.merge_by_name orders them): each as its folders with a finished trial, one per
    store holding it, in the order the stores were given. A folder reached twice (`--results r1 --results
    r1/tiny`: a store and one of its experiments) is read once: its trials were noted as "stored both in r1/tiny
    and in r1/tiny"."""
    found: dict[str, list[StoreRoot]] = {}
    seen: set[str] = set()
    for root in roots:
        for path in find_experiments(root):
            if folder_key(path) in seen:
                continue
            seen.add(folder_key(path))
            folder = ResultsDir(path)
            if not folder.stored_trial_keys():
                say(f"Skipping {shown(path)}: no finished trial yet")
                continue
            found.setdefault(folder.name, []).append(path)
    return [tuple(parts) for parts in found.values()]


def _copy_docs(source: Path, docs_dir: Path) -> list[str]:
    """Copy the project's hand-written docs; returns their Markdown pages (posix paths, sorted)."""
    if source.is_dir():
        if (source / REPORTS_DIR).exists():
            raise SiteError(
                f"{source / REPORTS_DIR} exists, but `{REPORTS_DIR}/` in the docs folder is where perfsite "
                "writes the generated reports. Rename that folder in your docs."
            )
        try:
            shutil.copytree(source, docs_dir, ignore=_docs_ignore(source), ignore_dangling_symlinks=True)
        except shutil.Error as e:  # every file that failed, with its reason
            first = e.args[0][0] if e.args and isinstance(e.args[0], list) and e.args[0] else e
            raise SiteError(f"The docs folder {source} cannot be copied into the site: {first}. Fix or remove "
                            "that file (a link to a file that is gone, or one perfsite may not read).") from e
    else:
        docs_dir.mkdir(parents=True)
    return sorted(p.relative_to(docs_dir).as_posix() for p in docs_dir.rglob("*.md"))


def _docs_ignore(source: Path) -> Callable[[str, list[str]], set[str]]:
    """Hidden files, and links to a folder that holds the docs (`docs/self -> ..`): copying through one would
    copy the project into itself, level after level, until the path is too long."""
    hidden = shutil.ignore_patterns(".*")
    root = source.resolve()

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(hidden(folder, names))
        here = Path(folder).resolve()
        for name in names:
            path = Path(folder) / name
            if not (path.is_symlink() and path.is_dir()):
                continue
            target = path.resolve()
            if target in (root, here) or target in root.parents or target in here.parents:
                skipped.add(name)
        return skipped

    return ignore


def _nav(docs: list[str], pages: list[Page], own_nav: Any = None) -> list[Any]:
    """Home, Getting started, Reports (index, then per experiment: overview and profiles), Documentation.

    A project whose mkdocs.yml has a `nav` orders its own docs: that nav is kept as written and the Reports
    section goes after its first entry (the home page, as a rule)."""
    if isinstance(own_nav, list) and own_nav:
        return [own_nav[0], {"Reports": _reports_nav(pages)}, *own_nav[1:]]
    nav: list[Any] = [{"Home": "index.md"}]
    started = next((d for d in GETTING_STARTED if d in docs), None)
    if started:
        nav.append({"Getting started": started})
    nav.append({"Reports": _reports_nav(pages)})
    others = [d for d in docs if d not in ("index.md", started)]
    if others:
        nav.append({"Documentation": others})
    return nav


def _reports_nav(pages: list[Page]) -> list[Any]:
    """All reports, the changes and trend pages, then per experiment its overview and its other pages."""
    reports: list[Any] = [{"All reports": f"{REPORTS_DIR}/index.md"}]
    by_folder: dict[str, list[Page]] = {}
    for page in pages:
        folder = page.path.rsplit("/", 1)[0]
        if folder.startswith(f"{REPORTS_DIR}/_"):
            reports.append({page.title: page.path})  # changes and trend pages: not an experiment's folder
        elif folder.startswith(f"{REPORTS_DIR}/") and page.path != f"{REPORTS_DIR}/index.md":
            by_folder.setdefault(folder, []).append(page)
    for folder_pages in by_folder.values():
        overview, profiles = folder_pages[0], folder_pages[1:]
        # Titles are already escaped (md_text): themes print nav titles as raw HTML.
        entries = [{"Overview": overview.path}] + [{p.title: p.path} for p in profiles]
        reports.append({overview.title: entries})
    return reports


def _parent_config(project_root: Path) -> Path:
    own = project_root / "mkdocs.yml"
    return own if own.is_file() else templates_dir() / "mkdocs.base.yml"


def _read_config(path: Path) -> dict[str, Any]:
    """The parent config as mkdocs reads it (INHERIT chains and !ENV tags resolved)."""
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.utils.yaml import get_yaml_loader, yaml_load

    try:
        with open(path, "rb") as f:
            return yaml_load(f, get_yaml_loader(config=MkDocsConfig(config_file_path=str(path))))
    except Exception as e:  # mkdocs raises ConfigurationError, PyYAML several types
        raise SiteError(f"The mkdocs configuration {path} cannot be read: {e}") from e


def _required_plugins(parent_config: dict[str, Any]) -> list[str]:
    """Search, and offline search where pages link .html files (opened from disk): not for a project that asks
    for directory URLs, whose site is served over HTTP, and which the offline plugin would turn off."""
    if offline_settings.serves_over_http(parent_config):
        return [p for p in REQUIRED_PLUGINS if p != "offline"]
    return list(REQUIRED_PLUGINS)


def _write_config(
    build_dir: Path, site_dir: Path, parent: Path, parent_config: dict[str, Any], nav: list[Any]
) -> Path:
    config: dict[str, Any] = {
        "INHERIT": str(parent), "docs_dir": str(build_dir / "docs"), "site_dir": str(site_dir), "nav": nav,
    }
    for key, required in (("extra_javascript", vendor.extra_javascript()), ("extra_css", vendor.extra_css()),
                          ("markdown_extensions", list(REQUIRED_EXTENSIONS)),
                          ("plugins", _required_plugins(parent_config))):
        merged = _merged_list(parent_config.get(key) or [], required, parent, key)
        if merged is not None:
            config[key] = merged
    # Links to .html files and the Material theme without web fonts, whatever the project's file leaves out
    # (generator.site.offline_settings has refused other values).
    packaged = _read_config(templates_dir() / "mkdocs.base.yml")
    config.update(offline_settings.required_settings(parent_config, packaged))
    theme, own_theme = config["theme"], parent_config.get("theme")
    # Report pages are long and their tables wide: the table of contents goes into the left navigation.
    theme["features"] += [f for f in REQUIRED_FEATURES if f not in theme["features"]]
    # A theme's custom_dir is relative to the project's mkdocs.yml; mkdocs would read it beside this file.
    if isinstance(own_theme, dict) and isinstance(own_theme.get("custom_dir"), str):
        theme["custom_dir"] = str((parent.parent / own_theme["custom_dir"]).resolve())
    # The render cache's hooks after the project's own (a child config replaces the list: paths made absolute).
    own_hooks = [str((parent.parent / str(h)).resolve()) for h in parent_config.get("hooks") or []]
    config["hooks"] = own_hooks + [str(render_cache_files.HOOKS), str(CHOICE_LINKS_HOOKS), str(FAST_PATHS_HOOKS)]
    # Search from a site opened from disk: the offline plugin inlines the index, the vendored shim runs the
    # search worker (mkdocs merges `extra` dicts from INHERIT, but a list is replaced: keep the parent's).
    polyfills = list((parent_config.get("extra") or {}).get("polyfills") or [])
    config["extra"] = {"polyfills": polyfills + [p for p in vendor.polyfills() if p not in polyfills]}
    path = build_dir / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _entry_name(item: Any) -> Any:
    """A config list entry's name: the string itself, or a mapping's `path` or single key."""
    return item if isinstance(item, str) else (item.get("path") or next(iter(item), None))


def _merged_list(items: list[Any], required: list[Any], parent: Path, key: str) -> list[Any] | None:
    """The parent's list plus the required entries it lacks, or None when it lacks none (keep it as is).

    A child config replaces a parent's list, so the merged list must be written out whole; that is only
    possible when every entry is plain data (not a Python object from a `!!python/name` tag)."""
    names = {_entry_name(i) for i in items if i}
    missing = [r for r in required if _entry_name(r) not in names]
    if not missing:
        return None
    try:
        yaml.safe_dump(items)
    except yaml.YAMLError as e:
        raise SiteError(
            f"{parent}: `{key}` must include {', '.join(map(str, map(_entry_name, missing)))} for perfsite's "
            "pages; add "
            f"{'them' if len(missing) > 1 else 'it'} to that list (perfsite cannot rewrite a list holding "
            "Python objects)."
        ) from e
    return list(items) + missing


@contextlib.contextmanager
def _mkdocs_started(render_cache: Path) -> Iterator[subprocess.Popen]:
    """mkdocs' process, started now and waiting for its configuration (generator.site.mkdocs_runner), with
    perfsite's render cache (generator.site.render_cache) for unchanged pages; killed if the build ends first.
    It waits in the render cache's folder and builds in the project's (_run_mkdocs)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", render_cache_files.CACHE_ENV: str(render_cache)}
    render_cache.mkdir(parents=True, exist_ok=True)
    # -P: the script's folder (generator/site, whose modules have names such as pages and charts) stays off
    # sys.path.
    proc = processes.start([sys.executable, "-P", str(Path(mkdocs_runner.__file__))], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=render_cache, env=env, text=True)
    with proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _run_mkdocs(mkdocs: subprocess.Popen, config: Path, parent: Path, project_root: Path,
                render_cache: Path) -> None:
    """mkdocs build --strict of `config`, in the process _mkdocs_started started, in the project's folder, as a
    user runs mkdocs: paths Markdown extensions resolve from the working folder (pymdownx.snippets'
    base_path, say) are the project's, not the build folder's."""
    job = {"cwd": str(project_root), "args": ["build", "--strict", "--config-file", str(config)]}
    stdout, stderr = mkdocs.communicate(json.dumps(job) + "\n")
    render_cache_files.commit(render_cache, mkdocs.returncode == 0)
    if mkdocs.returncode != 0:
        # mkdocs logs to stderr and prints its last word ("Aborted with 1 warnings in strict mode!") to stdout.
        output = _without_info(stderr + "\n" + stdout).strip()[-MKDOCS_OUTPUT_TAIL:]
        if CONFIG_ERROR in output:
            raise SiteError(_config_error(parent, config, output))
        if DISK_FULL in output:  # mkdocs writes the site: the staging folder's disk
            raise OSError(errno.ENOSPC, DISK_FULL, str(_read_config(config).get("site_dir", config.parent)))
        raise SiteError(
            f"mkdocs build --strict failed (exit status {mkdocs.returncode}) for {config}. Broken links or "
            f"other warnings in the project's docs/ or mkdocs.yml fail the build; mkdocs said:\n{output}"
        )


def _without_info(output: str) -> str:
    """mkdocs' output without its INFO messages (each a line `INFO    -  …` and the lines that continue it): they
    never fail a build, and quoted in the error they read as more problems to fix ("Cleaning site directory",
    the staging folder it builds into, notes on pages). Warnings, errors and anything else (a plugin's
    traceback) are kept."""
    kept, in_info = [], False
    for line in output.splitlines():
        level = MKDOCS_LEVEL.match(line)
        if level:
            in_info = level.group(1) in ("DEBUG", "INFO")
        elif line[:1].strip():  # a line of its own, not indented under a message
            in_info = False
        if not in_info:
            kept.append(line)
    return "\n".join(line for line in kept if line.strip())  # blank lines too: mkdocs' last word starts with one
