"""mkdocs hook of `perfsite build` (its generated mkdocs.yml lists this file under `hooks:`): faster paths
through the code that converts the pages to HTML, each with the same output as the code it stands in for, taken
when mkdocs reads its configuration (on_config) where they apply.

Python-Markdown's inline processing returns at once a text that none of its inline patterns can match. The
report pages are long tables, and most cells hold a number or a plain name; Markdown's InlineProcessor tries
every inline pattern on every text of the tree (14 patterns, each a regex search behind Python method calls):
half of the time of converting the report pages, most of it finding nothing. Each pattern's regex needs one of
a few characters to match (PATTERNS, TRIGGERS), and a pattern that does not match leaves the text as it was
(InlineProcessor.__applyPattern returns it unchanged, with no other effect), so a text without any of those
characters comes out of the inline processing as it went in. Only while every inline pattern is one of those
(class and regex: Python-Markdown 3.11's own; none of the extensions perfsite configures adds one): a project's
extension that adds a pattern (pymdownx.betterem, say), or a Markdown release whose patterns differ, gets
Markdown's own code for every text.

tests/test_fast_paths.py checks that pages convert to the same HTML either way.
Loaded by mkdocs by path, so it imports nothing of perfsite's (whose package would import the whole generator).
"""

from __future__ import annotations

import re
from typing import Any

from markdown import inlinepatterns, util
from markdown.treeprocessors import InlineProcessor

# Markdown's inline patterns: name -> (class, regex). Each regex needs one of TRIGGERS to match:
# ` or \ (backtick, escape), [ (links, references, images: `![`), < (autolink, automail, html), a line break
# (linebreak: two spaces and one), & (entity), * or _ (em_strong's delimiters).
PATTERNS = {
    "backtick": (inlinepatterns.BacktickInlineProcessor, r"(?:(?<!\\)((?:\\{2})+)(?=`+)|(?<!\\)`)"),
    "escape": (inlinepatterns.EscapeInlineProcessor, r"\\(.)"),
    "reference": (inlinepatterns.ReferenceInlineProcessor, r"(?<!\!)\["),
    "link": (inlinepatterns.LinkInlineProcessor, r"(?<!\!)\["),
    "image_link": (inlinepatterns.ImageInlineProcessor, r"\!\["),
    "image_reference": (inlinepatterns.ImageReferenceInlineProcessor, r"\!\["),
    "short_reference": (inlinepatterns.ShortReferenceInlineProcessor, r"(?<!\!)\["),
    "short_image_ref": (inlinepatterns.ShortImageReferenceInlineProcessor, r"\!\["),
    "autolink": (inlinepatterns.AutolinkInlineProcessor, r"<([A-Za-z][A-Za-z0-9+.-]*://[^<>]*)>"),
    "automail": (inlinepatterns.AutomailInlineProcessor, r"<([^<> !]+@[^@<> ]+)>"),
    "linebreak": (inlinepatterns.SubstituteTagInlineProcessor, r"  \n"),
    "html": (inlinepatterns.HtmlInlineProcessor,
             r"""(<(\/?+[a-zA-Z][^\s"'<>@]*+(?:\s+[^\s"'=<>]++(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s"'=<>]++))?+)*+"""
             r"""\s*+/?|!--(?:(?!<!--|-->).)*--|[?](?:(?!<[?]|[?]>).)*[?]|!\[CDATA\[(?:(?!<!\[CDATA\[|\]\]>).)*\]\])>)"""),
    "entity": (inlinepatterns.HtmlInlineProcessor, r"(&(?:\#[0-9]+|\#x[0-9a-fA-F]+|[a-zA-Z0-9]+);)"),
    "em_strong": (getattr(inlinepatterns, "DelimiterProcessor", None), r"\*|_"),
}
# STX too: a text holding an inline placeholder (util.INLINE_PLACEHOLDER_PREFIX) is Markdown's to take apart.
TRIGGERS = re.compile(r"[`\\\[<\n&*_" + util.STX + "]")


def _released(value: Any) -> Any:
    """The released code behind `value`: mkdocs executes a hook file again for each configuration it loads
    (`mkdocs serve`), when the previous run of this file has already replaced it."""
    return getattr(value, "perfsite_released", value)


_original_run = _released(InlineProcessor.run)
_original_handle_inline = _released(InlineProcessor._InlineProcessor__handleInline)


def only_known_patterns(patterns: Any) -> bool:
    """Whether every pattern of the registry `patterns` is one of PATTERNS (class and regex)."""
    known = set(PATTERNS.values())
    return all((type(p), getattr(getattr(p, "compiled_re", None), "pattern", None)) in known for p in patterns)


def _run(self: InlineProcessor, tree: Any, ancestors: list[str] | None = None) -> Any:
    """Markdown's InlineProcessor.run, told whether the fast path applies (the patterns are known when a page
    is converted, not when the processor is made: extensions register theirs after it)."""
    self.perfsite_triggers = TRIGGERS.search if only_known_patterns(self.inlinePatterns) else None
    return _original_run(self, tree, ancestors)


def _handle_inline(self: InlineProcessor, data: str, patternIndex: int = 0) -> str:  # noqa: N803 (Markdown's name)
    """Markdown's InlineProcessor.__handleInline, returning a text no pattern can match as it is."""
    triggers = getattr(self, "perfsite_triggers", None)
    if triggers is not None and triggers(data) is None:
        return data
    return _original_handle_inline(self, data, patternIndex)


_run.perfsite_released, _handle_inline.perfsite_released = _original_run, _original_handle_inline


def fast_paths() -> list[tuple[Any, str, Any]]:
    """Each fast path for the installed releases: (object, attribute, faster value)."""
    return [(InlineProcessor, "run", _run), (InlineProcessor, "_InlineProcessor__handleInline", _handle_inline)]


def on_config(config: Any) -> Any:
    """Take the fast paths (in mkdocs' process, before any page is converted or a child forked to convert)."""
    for owner, name, value in fast_paths():
        setattr(owner, name, value)
    return config
