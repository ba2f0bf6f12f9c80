"""What a project's mkdocs.yml may not change: the settings that keep the built site offline and working from disk.

perfsite promises a site that makes no request outside itself and opens from ``file://``. A project's
mkdocs.yml is inherited by the build's configuration (generator.site.build), so without these settings a
project file with `theme: {name: material}` loaded Google Fonts and linked folders (`reports/x/`, a file
listing from disk), and one without `theme:` got mkdocs' own theme, which loads highlight.js from a CDN.

A setting the project leaves out is set here (`required_settings`). A setting the project gives another value is
refused, one paragraph naming the file, the key and what is allowed (`check_project_config`), rather than
overridden with a warning: the site would then differ from what the project's file says, a warning scrolls
past unread in CI, and an override can break the rest of the file (a readthedocs `custom_dir` under Material).
Removing or changing one line is the fix, and the file then says what the site is. Two Markdown extensions load
from a CDN by their defaults (pymdownx.emoji's images, Material's mermaid for diagram fences) and are refused
configured so. A setting a file of the INHERIT chain gives is named in that file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from generator.errors import SiteError

THEME = "material"
ADVICE = ("The site perfsite builds makes no request outside itself and opens from disk (file://); change or "
          "remove that setting (perfsite sets what is left out).")


@dataclass(frozen=True)
class Rule:
    key: str  # the setting's path in mkdocs.yml, dotted
    allowed: Callable[[Any], bool]  # whether a value the project gives keeps the promise
    harm: str  # why a value that is not allowed breaks the promise
    allowed_text: str  # what the error says is allowed


def _is_false(value: Any) -> bool:
    return value is False


def _never(_value: Any) -> bool:
    return False  # a key allowed only when left out


# A registry of the settings perfsite refuses other values of (the URL-valued resources are checked apart).
RULES: tuple[Rule, ...] = (
    Rule("theme.name", lambda v: v == THEME, "perfsite's pages are made for the Material theme (their layout, "
         "search from disk; mkdocs' own theme loads highlight.js from a CDN)",
         f"`{THEME}` (mkdocs-material), or leave it out"),
    Rule("theme.font", _is_false, "Material would load its fonts from Google Fonts on every page view",
         "`false` (the reader's system fonts), or leave it out"),
    Rule("repo_url", _never, "Material would fetch the repository's stars and forks from its host's API on every "
         "page view", "leave it out (link the repository from a page of your docs instead)"),
    Rule("extra.analytics", _never, "the pages would load an analytics script from the network on every page view",
         "leave it out"),
)
# Settings naming files the pages load: a URL there is a download on every page view.
RESOURCE_KEYS = ("extra_javascript", "extra_css", "extra.polyfills", "theme.logo", "theme.favicon")


def check_project_config(path: Path, config: dict[str, Any]) -> None:
    """Refuse a project mkdocs.yml whose settings would make the site load from the network or break from disk."""
    if isinstance(config.get("theme"), str):  # `theme: readthedocs`, mkdocs' short form of `theme: {name: ...}`
        config = {**config, "theme": {"name": config["theme"]}}
    for rule in RULES:
        found, value = _lookup(config, rule.key)
        if found and not rule.allowed(value):
            raise SiteError(f"{_where(path, rule.key)}: `{rule.key}: {_shown(value)}` cannot be used for perfsite's "
                            f"site: {rule.harm}. Allowed for {rule.key}: {rule.allowed_text}. {ADVICE}")
    for key in RESOURCE_KEYS:
        for url in _urls(_lookup(config, key)[1]):
            raise SiteError(f"{_where(path, key)}: `{key}` names {url}, which the built site would download on "
                            f"every page view. Allowed in {key}: files of the site (download it once into your docs "
                            f"folder and name it by its path there, e.g. assets/{_file_name(url)}). {ADVICE}")
    _check_extensions(path, config)


# Markdown extensions whose output loads files from a CDN unless told otherwise.
EMOJI, FENCES = "pymdownx.emoji", "pymdownx.superfences"


def _check_extensions(path: Path, config: dict[str, Any]) -> None:
    """pymdownx.emoji's images, and Material's mermaid script for diagram fences: both come from a CDN by
    default, on every page view of a page that uses them."""
    emoji = _extension_options(config, EMOJI)
    if emoji is not None and not _emoji_offline(emoji):
        raise SiteError(f"{_where(path, 'markdown_extensions')}: `markdown_extensions: {EMOJI}` as configured "
                        "makes every Unicode emoji a page uses (`:smile:`) an image loaded from a CDN (its "
                        "default image paths are another host's) on every page view; Material's icons "
                        "(`:material-check:`) are inlined and need nothing. Allowed for pymdownx.emoji: "
                        "`emoji_generator: !!python/name:pymdownx.emoji.to_alt` (the emoji as text), or "
                        "`options: {image_path: assets/emoji/, non_standard_image_path: assets/emoji/}` naming a "
                        f"folder of your docs that holds the images. {ADVICE}")
    fences = _extension_options(config, FENCES)
    if fences is not None and _mermaid_fences(fences) and not _local_mermaid(config):
        raise SiteError(f"{_where(path, 'markdown_extensions')}: `markdown_extensions: {FENCES}` has a mermaid "
                        "fence, and Material loads mermaid.min.js from a CDN on every page view of a page with a "
                        "diagram. Allowed: mermaid fences with mermaid.min.js as a file of the site (download it once "
                        "into your docs folder and list it in `extra_javascript`, e.g. assets/mermaid.min.js: "
                        f"Material then uses it), or no mermaid fence. {ADVICE}")


def _extension_options(config: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The options of a Markdown extension the config lists ({} without options); None when it is not listed."""
    entries = config.get("markdown_extensions") or []
    for entry in entries if isinstance(entries, list) else [entries]:
        if entry == name:
            return {}
        if isinstance(entry, dict) and name in entry:
            return entry[name] if isinstance(entry[name], dict) else {}
    return None


# Generators that write no image URL: the emoji as text, or a class a style sheet of the site draws (sprites).
TEXT_EMOJI = ("to_alt", "to_png_sprite", "to_svg_sprite")


def _emoji_offline(options: dict[str, Any]) -> bool:
    """Any generator but TEXT_EMOJI writes images, whose default paths are a CDN: `image_path` must name the
    site's own, and so must `non_standard_image_path` for the gemoji index, the one that uses it."""
    if getattr(options.get("emoji_generator"), "__name__", None) in TEXT_EMOJI:
        return True
    paths = options.get("options") or {}
    if not isinstance(paths, dict):
        return False
    needed = ["image_path"] + (["non_standard_image_path"]
                               if getattr(options.get("emoji_index"), "__name__", None) == "gemoji" else [])
    given = [k for k in ("image_path", "non_standard_image_path") if k in paths]
    return all(k in paths for k in needed) and all(isinstance(paths[k], str) and not _urls(paths[k]) for k in given)


def _mermaid_fences(options: dict[str, Any]) -> bool:
    return any(isinstance(f, dict) and (f.get("name") == "mermaid" or f.get("class") == "mermaid")
               for f in options.get("custom_fences") or [])


def _local_mermaid(config: dict[str, Any]) -> bool:
    """A script of the site named like mermaid's bundle: Material loads a CDN's copy only when `mermaid` is
    undefined."""
    entries = config.get("extra_javascript") or []
    names = [e.get("path") if isinstance(e, dict) else e for e in (entries if isinstance(entries, list) else [entries])]
    return any(isinstance(n, str) and MERMAID_BUNDLE.fullmatch(n.rsplit("/", 1)[-1]) and not _urls(n) for n in names)


# mermaid's browser bundle, which defines the global `mermaid` (a `mermaid-init.js` or an ES module does not).
MERMAID_BUNDLE = re.compile(r"mermaid(\.min)?\.js", re.IGNORECASE)


def _where(path: Path, dotted: str) -> str:
    """The file that sets the key: `path`, or the file of its INHERIT chain the value comes from, named with
    the file that inherits it (the setting to change is not in the file the build was given)."""
    origin = _origin(path, dotted, depth=0)
    return str(path) if origin in (None, path) else f"{origin} (inherited by {path})"


def _origin(path: Path, dotted: str, depth: int) -> Path | None:
    """The nearest file of the INHERIT chain from `path` whose own text sets the key (a child's setting is what
    mkdocs keeps); None when it cannot be told (an unreadable file, a chain too deep: mkdocs said so first)."""
    try:
        own = yaml.load(path.read_text(encoding="utf-8"), Loader=_PlainLoader)
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(own, dict):
        return None
    if isinstance(own.get("theme"), str):
        own = {**own, "theme": {"name": own["theme"]}}
    if _lookup(own, dotted)[0]:
        return path
    parent = own.get("INHERIT")
    if not isinstance(parent, str) or depth > 20:
        return None
    return _origin((path.parent / parent).resolve(), dotted, depth + 1)


class _PlainLoader(yaml.SafeLoader):
    """mkdocs.yml as text: its tags (`!ENV`, `!relative`, Python names in extensions) read as plain values,
    since only which keys a file sets matters here."""


_PlainLoader.add_multi_constructor("", lambda loader, _suffix, node: None)


def required_settings(config: dict[str, Any], packaged: dict[str, Any]) -> dict[str, Any]:
    """The settings the build's configuration adds over the project's (`config`, checked): links to .html files,
    and the Material theme without web fonts, its `features` list as the project's file has it (the build adds
    to that list, which a child configuration replaces whole). A project without a theme gets the packaged one
    (`packaged`: site_templates/mkdocs.base.yml, parsed), palette and features included."""
    # Links to .html files, which work from disk, unless the project asks for directory URLs: a site it serves
    # over HTTP (GitHub Pages' pretty URLs), a choice perfsite supported before these checks and keeps
    # (without offline search, which would turn them off: serves_over_http).
    links = {} if serves_over_http(config) else {"use_directory_urls": False}
    theme = config.get("theme")
    if theme is None:
        packaged_theme = packaged["theme"]
        features = list(packaged_theme.get("features") or [])
        return {**links, "theme": {**packaged_theme, "features": features}}
    features = list(theme.get("features") or []) if isinstance(theme, dict) else []
    # `name` too: mkdocs merges a child's theme into the parent's only where both are mappings (`theme: material`).
    return {**links, "theme": {"name": THEME, "font": False, "features": features}}


def serves_over_http(config: dict[str, Any]) -> bool:
    """The project's mkdocs.yml asks for directory URLs (`use_directory_urls: true`): its pages link folders,
    which a web server answers and a browser opening the site from disk shows as a file listing."""
    return config.get("use_directory_urls") is True


def _lookup(config: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    value: Any = config
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _urls(value: Any) -> list[str]:
    """The entries of a resource setting (a path, a list of paths or of mappings with `path`) that are URLs of
    another host: http(s), or protocol-relative (`//cdn.example/x.js`)."""
    entries = value if isinstance(value, list) else [value]
    names = [e.get("path") if isinstance(e, dict) else e for e in entries]
    return [n for n in names if isinstance(n, str) and (urlsplit(n).scheme in ("http", "https") or n.startswith("//"))]


def _file_name(url: str) -> str:
    return urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1] or "file"


def _shown(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True).strip().removesuffix("...").strip()
