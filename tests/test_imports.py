"""The import graph of the package: no circles between modules or between sub-packages, and no import from a
stage to a later one in the order docs/architecture.md gives (issue 16). Read over `ast`, imports inside
functions included; only `if TYPE_CHECKING:` blocks are exempt."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from support.cli import ROOT

PACKAGE = ROOT / "generator"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    exempt: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING":
            exempt.update(id(n) for n in ast.walk(node))
    return exempt


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt, out = _type_checking_nodes(tree), set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
    return {m for m in out if m in modules and m != name}


@functools.cache  # four tests read the one graph: parsing the package is most of their time
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative enough for this size)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _stages() -> dict[str, int]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Stage order", 1)[1].split("\n## ", 1)[0]
    stages = {}
    for number, line in re.findall(r"^(\d+)\. (.*)$", section, re.M):
        for package in re.findall(r"`(generator(?:\.\w+)?)`", line):
            stages[package] = int(number)
    return stages


def test_no_module_imports_itself_back():
    assert _cycles(_graph()) == []


def test_no_circle_between_sub_packages():
    packages: dict[str, set[str]] = {}
    for module, imported in _graph().items():
        packages.setdefault(_package(module), set()).update(
            _package(m) for m in imported if _package(m) != _package(module))
    assert _cycles(packages) == []


def test_every_import_goes_to_the_same_or_an_earlier_stage():
    stages = _stages()
    graph = _graph()
    unplaced = sorted({_package(m) for m in graph} - set(stages))
    assert not unplaced, f"packages missing from the stage order in docs/architecture.md: {unplaced}"
    later = sorted(f"{module} imports {target}" for module, imported in graph.items() for target in imported
                   if stages[_package(target)] > stages[_package(module)])
    assert not later, later


def _test_modules() -> set[str]:
    return {p.stem for p in (ROOT / "tests").rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py"}


def test_no_test_module_imports_another():
    """Shared helpers live in tests/support/ (plain functions and constants) and fixtures in conftest.py files: a
    test module imported by another runs its tests' module-level code twice and hides what is shared."""
    test_modules = _test_modules()
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {name}" for name in names
                      if set(name.split(".")) & test_modules]
    assert not found, found


def test_the_mkdocs_hooks_are_imported_by_mkdocs_alone_and_share_their_names_with_the_build():
    """generator.site.render_cache patches mkdocs and Material when imported: only mkdocs loads it (by path, in
    its own process). It imports nothing of perfsite's, so the two names the build shares with it are written
    twice, in it and in generator.site.render_cache_files: the same values."""
    from generator.site import render_cache_files

    graph = _graph()
    assert not sorted(m for m, imported in graph.items() if "generator.site.render_cache" in imported)
    assert not graph["generator.site.render_cache"]
    tree = ast.parse((PACKAGE / "site" / "render_cache.py").read_text(encoding="utf-8"))
    values = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    assert values["CACHE_ENV"] == render_cache_files.CACHE_ENV and values["USED"] == render_cache_files.USED
    assert render_cache_files.HOOKS.is_file()
    # generator.site.choice_links, mkdocs' other hook, imports nothing either; its names are the pages'.
    from generator.site import build, choice_links, chooser_page, page_base

    assert not graph["generator.site.choice_links"]
    assert not sorted(m for m, imported in graph.items() if "generator.site.choice_links" in imported)
    assert (choice_links.REPORTS_DIR, choice_links.CHOOSER_PAGE) == (page_base.REPORTS_DIR, chooser_page.CHOOSER_PAGE)
    assert build.CHOICE_LINKS_HOOKS == Path(choice_links.__file__)
    # generator.site.fast_paths, the third, patches Markdown and Material when mkdocs reads its configuration.
    from generator.site import fast_paths

    assert not graph["generator.site.fast_paths"]
    assert not sorted(m for m, imported in graph.items() if "generator.site.fast_paths" in imported)
    assert build.FAST_PATHS_HOOKS == Path(fast_paths.__file__)
