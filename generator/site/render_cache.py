"""mkdocs hooks of `perfsite build` (its generated mkdocs.yml lists this file under `hooks:`): a page whose
Markdown, place, file set and configuration are unchanged is not converted to HTML and indexed for search again.

Converting the Markdown of the report pages (long tables) and indexing their HTML for search are most of the
time of `mkdocs build`. Both depend only on the page's Markdown source and path, on the names of the site's
files (links are resolved and checked against them), and on the configuration (Markdown extensions and their
settings, URL style, the search plugin's settings, mkdocs, Material, this file and the project's own hooks),
as long as every Markdown extension converts a page from its own text (SELF_CONTAINED; with pymdownx.snippets,
say, a page also depends on the files it includes, and nothing is cached). A hash of those names an
entry of the render cache (the folder in PERFSITE_RENDER_CACHE, set by generator.site.build): the HTML, table
of contents, title, anchors and links to other pages' anchors of the page, and its search index entries. On
a hit the page's Markdown is replaced by nothing before conversion and the stored results are put back, so
mkdocs renders the page's template, validates anchors and writes the search index as it would have. A page's
finished output (its template drawn around the HTML) is kept too, keyed by the render key, the navigation as
drawn, the page's front matter and the whole configuration: where none of them changed and nothing but the
search plugin takes part in a page's output, the page is written as stored (_build_page). Anchor checks, the
search index and every page whose output is not stored are made on every build.

mkdocs converts one page after another. So that a full build converts on every core, `on_nav` forks children
that convert and index shares of the pages (by size) into pending entries, which the build's own mkdocs
process then takes as hits; a page that warned in a child is left to mkdocs itself, which warns as usual.

An entry is written to `pending/` and moved into `entries/` by the build only when mkdocs succeeded: a page that
warned in a failed strict build is converted again (and warns again) next time. The names of the chooser's
data files (generator.site.chooser_page.DATA_FOLDER) are left out of the file set: pages load them from
scripts, never link them from Markdown, and their names change with the figures. The reports' data files are
hard-linked into the site rather than copied (`_link_or_copy_file`).
"""

from __future__ import annotations

import atexit
import gc
import hashlib
import json
import logging
import os
import pickle
from pathlib import Path
from typing import Any

import jinja2
import markdown as markdown_package
import mkdocs
from material.plugins.search.plugin import SearchIndex
from mkdocs import utils as mkdocs_utils
from mkdocs.commands import build as mkdocs_build
from mkdocs.structure.pages import Page

# The names the build shares with this file, also in generator.site.render_cache_files, which the build imports
# instead of this file (importing this file patches mkdocs; mkdocs loads it by path, and it imports nothing of
# perfsite's, whose package would import the whole generator); tests/test_site.py checks that they agree.
CACHE_ENV = "PERFSITE_RENDER_CACHE"
# generator.site.chooser_page.DATA_FOLDER and page_base.REPORTS_DIR (mkdocs loads this file, it imports neither)
DATA_FOLDER, REPORTS_DIR = "choose", "reports"
USED = "used.json"  # the entries this build used: the others are dropped when it succeeds
TEMPLATES = "templates"  # Jinja's compiled theme templates (on_env)
_state: dict[str, Any] = {"config": "", "files": "", "used": set(), "reaped": set()}
MAX_PROCESSES = 4  # converting pages at once (a forked child each but one)
_original_add_entry = SearchIndex.add_entry_from_context
# Markdown extensions that convert a page from its own text alone: Python-Markdown's, and PyMdown's but those
# that read other files (snippets includes them, b64 embeds images). With any other extension configured, a
# page's HTML may depend on files the cache cannot see (a changed snippet file left the page as it was), so
# pages are converted on every build (_self_contained).
SELF_CONTAINED = frozenset({
    "abbr", "admonition", "attr_list", "codehilite", "def_list", "extra", "fenced_code", "footnotes",
    "legacy_attrs", "legacy_em", "md_in_html", "meta", "nl2br", "sane_lists", "smarty", "tables", "toc",
    "wikilinks",
    *(f"pymdownx.{name}" for name in (
        "arithmatex", "betterem", "blocks.admonition", "blocks.caption", "blocks.definition", "blocks.details",
        "blocks.html", "blocks.tab", "caret", "critic", "details", "emoji", "escapeall", "extra", "fancylists",
        "highlight", "inlinehilite", "keys", "magiclink", "mark", "pathconverter", "progressbar", "quotes",
        "saneheaders", "smartsymbols", "striphtml", "superfences", "tabbed", "tasklist", "tilde")),
})


def _folder() -> Path | None:
    folder = os.environ.get(CACHE_ENV)
    return Path(os.path.expanduser(folder)) if folder else None


def on_config(config: Any) -> Any:
    _state["generated"] = os.path.join(config["docs_dir"], REPORTS_DIR, "")
    search = next((p for name, p in config.plugins.items() if name.endswith("search")), None)
    signature = {
        "extensions": [str(e) for e in config["markdown_extensions"]],
        "mdx_configs": json.dumps(config["mdx_configs"], sort_keys=True, default=str),
        "directory_urls": config["use_directory_urls"],
        "search": json.dumps(dict(search.config) if search else {}, sort_keys=True, default=str),
        "versions": [mkdocs.__version__, markdown_package.__version__, _material_version()],
        # This file and the project's own hooks (a page's HTML passes through their on_page_content).
        "hooks": [_file_hash(Path(__file__)), *(_file_hash(getattr(module, "__file__", None))
                                               for module in (config["hooks"] or {}).values())],
    }
    enabled = search is not None and search.config.get("enabled", True)
    _state.update(config=json.dumps(signature, sort_keys=True), used=set(), reaped=set(), search_plugin=search,
                  search=search if enabled else None, self_contained=_self_contained(config))
    _state.update(renders_alone=_renders_alone(config), site=_site_signature(config))
    _state.pop("nav", None)
    return config


def _file_hash(path: str | Path | None) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else "unknown"
    except OSError:
        return "unreadable"


def _self_contained(config: Any) -> bool:
    """Whether every Markdown extension converts a page from its text alone (SELF_CONTAINED)."""
    return all(isinstance(e, str) and e.removeprefix("markdown.extensions.") in SELF_CONTAINED
               for e in config["markdown_extensions"])


def _material_version() -> str:
    from material import __version__

    return __version__


def on_files(files: Any, config: Any) -> Any:
    names = sorted(f.src_uri for f in files if DATA_FOLDER not in f.src_uri.split("/")[:-1])
    _state["files"] = hashlib.sha256("\n".join(names).encode()).hexdigest()
    return files


def on_nav(nav: Any, config: Any, files: Any) -> Any:
    """Convert the pages in several processes: forked children take shares of the pages (by size, the last
    ones first) and leave their results as pending entries, which this process then uses as cache hits; it
    converts the first share itself and waits for a child before the first page of that child's share. A page
    that warned in a child is left to this process, which warns (and fails a strict build) as it would have.
    mkdocs converts one page after another, and converting and indexing are most of a big site's build."""
    processes = min(os.cpu_count() or 1, MAX_PROCESSES)
    if _folder() is None or not _state.get("self_contained") or processes < 2 or not hasattr(os, "fork"):
        return nav
    shares = _shares([f.page for f in files.documentation_pages() if f.page is not None], processes)
    for share in shares[1:]:
        pid = os.fork()
        if pid == 0:
            _convert_in_child(share, config, files)  # never returns
        for page in share:
            page.perfsite_render_child = pid
    return nav


def _shares(pages: list[Any], count: int) -> list[list[Any]]:
    """`pages` cut into `count` runs of about the same Markdown size, in order."""
    sizes = [os.path.getsize(p.file.abs_src_path) for p in pages]
    total, shares, done = sum(sizes) or 1, [[] for _ in range(count)], 0
    for page, size in zip(pages, sizes, strict=True):
        shares[min(count - 1, done * count // total)].append(page)
        done += size
    return shares


def _convert_in_child(pages: list[Any], config: Any, files: Any) -> None:
    """A forked child: convert and index `pages` into pending entries, silently, then exit."""
    from mkdocs.commands.build import _populate_page

    status = 1
    try:
        warnings = _Warnings()
        logger = logging.getLogger("mkdocs")
        logger.handlers, logger.propagate = [warnings], False  # the parent reports what a page says
        search = next((p for name, p in config.plugins.items() if name.endswith("search")), None)
        folder = _folder()
        for page in pages:
            warnings.count = 0
            _populate_page(page, config, files)
            if search is not None and search.config.get("enabled", True):
                SearchIndex(**search.config).add_entry_from_context(page)
            key = getattr(page, "perfsite_render_key", None)
            if warnings.count and key is not None and folder is not None:
                (folder / "pending" / key).unlink(missing_ok=True)
        status = 0
    finally:
        os._exit(status)


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _wait_for_child(page: Any) -> None:
    pid = getattr(page, "perfsite_render_child", None)
    if pid is not None and pid not in _state["reaped"]:
        os.waitpid(pid, 0)
        _state["reaped"].add(pid)


def on_env(env: Any, config: Any, files: Any) -> Any:
    """The theme's templates compiled once, not on every build: Jinja keeps their compiled code in the render
    cache's `templates/` (a template whose source changed is compiled again: Jinja keys the code by the
    source's checksum). Compiling Material's templates was a fifth of a rebuild's mkdocs time."""
    folder = _folder()
    if folder is not None:
        (folder / TEMPLATES).mkdir(parents=True, exist_ok=True)
        env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(folder / TEMPLATES))
    return env


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    folder = _folder()
    if folder is None or not _state.get("self_contained"):
        return markdown
    text = "\0".join((_state["config"], _state["files"], page.file.src_uri, markdown))
    key = hashlib.sha256(text.encode()).hexdigest()
    page.perfsite_render_key = key
    _state["used"].add(key)
    _wait_for_child(page)
    for entry in (folder / "entries" / key, folder / "pending" / key):  # pending: converted by a child
        hit = _read(entry)
        if hit is not None:
            page.perfsite_render_hit = hit
            return ""  # nothing to convert: on_page_content puts the stored HTML back
    return markdown


def _read(entry: Path) -> dict[str, Any] | None:
    """A stored entry, or None when there is none or it cannot be read (a child killed while writing it):
    the page is then converted as if it were new."""
    try:
        return pickle.loads(entry.read_bytes())
    except Exception:  # no such file, or damaged bytes (pickle raises almost anything)
        return None


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    hit = getattr(page, "perfsite_render_hit", None)
    if hit is not None:
        page.toc, page._title_from_render = hit["toc"], hit["title"]
        page.present_anchor_ids = set(hit["anchors"])
        links = hit["links"]
        page.links_to_anchors = None if links is None else {files.get_file_from_path(k): v for k, v in links.items()}
        return hit["content"]
    key, folder = getattr(page, "perfsite_render_key", None), _folder()
    if key is not None and folder is not None:
        links = page.links_to_anchors
        _pending(folder, key, {
            "content": html, "toc": page.toc, "title": page._title_from_render,
            "anchors": sorted(page.present_anchor_ids or ()), "search": None,
            "links": None if links is None else {f.src_uri: v for f, v in links.items()}})
    return html


def _add_entry_from_context(self: SearchIndex, page: Any) -> None:
    """Material's search indexing of a page, replayed from the render cache on a hit."""
    hit = getattr(page, "perfsite_render_hit", None)
    if hit is not None and hit["search"] is not None:
        self.entries.extend(hit["search"])
        return
    before = len(self.entries)
    _original_add_entry(self, page)
    key, folder = getattr(page, "perfsite_render_key", None), _folder()
    if hit is None and key is not None and folder is not None and (folder / "pending" / key).is_file():
        entry = pickle.loads((folder / "pending" / key).read_bytes())
        _pending(folder, key, {**entry, "search": self.entries[before:]})


SearchIndex.add_entry_from_context = _add_entry_from_context


def _build_page(page: Any, config: Any, doc_files: Any, nav: Any, env: Any, dirty: bool = False,
                excluded: bool = False) -> None:
    """mkdocs' _build_page (the page's template rendered around its HTML, then written), its output taken from
    the render cache when the page, the navigation and the configuration are those of a stored output: an
    unchanged page of a rebuild is written again as it was, without drawing the theme's template (navigation,
    header, table of contents) and without the search plugin's pass over its whole HTML. Both were most of a
    rebuild's mkdocs time (190 pages: 1.7 of 2.4 s drawing templates, 0.6 in the search plugin's regex).
    Only where nothing else takes part in building a page: the search plugin alone handles `on_page_context`,
    nothing handles `on_post_page`, and the theme has no custom templates (_renders_alone)."""
    key = _output_key(page, config, nav) if not (dirty or excluded) else None
    hit = _read(_folder() / "entries" / key) if key is not None else None
    if key is None or hit is None:
        _original_build_page(page, config, doc_files, nav, env, dirty=dirty, excluded=excluded)
        if key is not None and os.path.isfile(page.file.abs_dest_path):
            with open(page.file.abs_dest_path, "rb") as f:
                _pending(_folder(), key, {"page": f.read()})
        return
    config._current_page, page.active = page, True
    try:
        search = _state.get("search")
        if search is not None:
            search.search_index.add_entry_from_context(page)  # the stored entries, on a render-cache hit
        mkdocs_utils.write_file(hit["page"], page.file.abs_dest_path)
    finally:
        config._current_page, page.active = None, False


def _output_key(page: Any, config: Any, nav: Any) -> str | None:
    """The key of a page's output: its render key (Markdown, place, file set, Markdown configuration), its
    front matter, the whole configuration and the navigation as drawn (every entry's title and address); None
    when the page's output is not cached (no render key, or other plugins or templates take part)."""
    render_key = getattr(page, "perfsite_render_key", None)
    if render_key is None or not _state.get("renders_alone"):
        return None
    if "nav" not in _state:  # the same for every page of a build: titles are known once pages are read
        _state["nav"] = hashlib.sha256(json.dumps(_nav_items(nav.items)).encode()).hexdigest()
    # The page's front matter (its description, title, template...) is drawn by the template, not converted.
    meta = json.dumps(page.meta, sort_keys=True, default=str)
    text = "\0".join(("output", _state["site"], _state["nav"], render_key, meta))
    key = hashlib.sha256(text.encode()).hexdigest()
    _state["used"].add(key)
    return key


def _nav_items(items: Any) -> list[Any]:
    return [[type(i).__name__, str(i.title), getattr(i, "url", None), _nav_items(getattr(i, "children", None) or [])]
            for i in items]


def _renders_alone(config: Any) -> bool:
    """Whether a page's output depends on nothing but its HTML, the navigation and the configuration: the
    search plugin alone runs on a page's context, no plugin on its output, and the theme's templates are its
    own (no custom_dir, whose files a project edits)."""
    search = _state.get("search_plugin")
    events = config.plugins.events
    context_only_search = all(getattr(m, "__self__", None) is search for m in events.get("page_context", []))
    return context_only_search and not events.get("post_page") and config.theme.custom_dir is None


def _site_signature(config: Any) -> str:
    """Everything of the configuration a page's template may show: every setting but the site folder (a new
    staging folder per build, never shown) and the plugins' and hooks' objects (their settings instead)."""
    skip = {"site_dir", "plugins", "hooks", "theme", "nav", "watch"}
    settings = {k: v for k, v in config.items() if k not in skip}
    theme = {"name": config.theme.name, "dirs": config.theme.dirs, "settings": dict(config.theme.items())}
    plugins = {name: dict(getattr(p, "config", None) or {}) for name, p in config.plugins.items()}
    return json.dumps([settings, theme, plugins, jinja2.__version__], sort_keys=True, default=str)


def _link_or_copy_file(source_path: str, output_path: str) -> None:
    """mkdocs' copy of a file into the site, as a hard link for the generated reports' data files (hundreds of
    MB of chooser figures in a big site): nothing writes them in place, the build folder and the page cache
    (generator.site.incremental) hold the same bytes."""
    if not source_path.startswith(_state.get("generated") or "\0") or os.path.isdir(output_path):
        _original_copy_file(source_path, output_path)
        return
    os.makedirs(os.path.dirname(output_path), exist_ok=True)
    try:
        if os.path.lexists(output_path):
            os.unlink(output_path)
        os.link(source_path, output_path)
    except OSError:  # another file system, or one without hard links
        _original_copy_file(source_path, output_path)


# mkdocs' process need not collect its pages, navigation and search index at exit (see generator.cli.app.main).
atexit.register(gc.freeze)
_original_copy_file = mkdocs_utils.copy_file
mkdocs_utils.copy_file = _link_or_copy_file
_original_build_page = mkdocs_build._build_page
mkdocs_build._build_page = _build_page


def _render(page: Any, config: Any, files: Any) -> None:
    """mkdocs' Page.render (Markdown to HTML), skipped for a page the render cache holds: on_page_markdown
    emptied its Markdown and on_page_content puts the stored HTML, table of contents, title and anchors back,
    so setting up a Markdown converter with every extension for it (a tenth of a rebuild's mkdocs time) is
    work for nothing."""
    if getattr(page, "perfsite_render_hit", None) is not None:
        page.content = ""
        return
    _original_render(page, config, files)


_original_render = Page.render
Page.render = _render


def _pending(folder: Path, key: str, entry: dict[str, Any]) -> None:
    """Write an entry to pending/, whole or not at all (a temporary name, then a rename): a child converting
    pages may be killed while it writes."""
    (folder / "pending").mkdir(parents=True, exist_ok=True)
    temporary = folder / "pending" / f".{key}.{os.getpid()}"
    temporary.write_bytes(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL))
    temporary.replace(folder / "pending" / key)


def on_post_build(config: Any) -> None:
    folder = _folder()
    if folder is not None:
        (folder / USED).write_text(json.dumps(sorted(_state["used"])))
