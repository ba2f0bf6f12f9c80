"""mkdocs hook of `perfsite build` (its generated mkdocs.yml lists this file under `hooks:`): faster paths
through the code that converts the pages to HTML and indexes them for search, each with the same output as the
code it stands in for, taken when mkdocs reads its configuration (on_config) where they apply.

Python-Markdown's inline processing tries on a text only the inline patterns that can match it. The report
pages are long tables, and most cells hold a number or a plain name; Markdown's InlineProcessor tries every
inline pattern on every text of the tree (14 patterns, each a regex search behind Python method calls): half of
the time of converting the report pages, most of it finding nothing. Each pattern's regex needs the text to
hold one of a few strings to match (PATTERNS: `&` for an entity, `[` for a link...), and a pattern that does not
match leaves the text as it was (InlineProcessor.__applyPattern returns it unchanged, with no other effect), so
passing over a pattern whose strings the text lacks changes nothing, and a text that holds none of them comes
out of the inline processing as it went in. Only while every inline pattern is one of those (class and regex:
Python-Markdown 3.11's own, and pymdownx.inlinehilite's code spans, which this project's mkdocs.yml uses; none
of the extensions perfsite itself configures adds one) and Markdown's inline loop is the one checked (the hash
of its treeprocessors module): a project's extension that adds a pattern (pymdownx.betterem, say), or another
Markdown release, gets Markdown's own code for every text.

Material's search plugin splits a page's HTML into sections with html.parser and handlers of its own. They ask
"is any open element one to skip?", "is a <pre> open?" and "is the section's heading open?" of the list of
open elements, element by element through Python-level __eq__ and __hash__ (Material's Element compares and
hashes as its tag), for each of a page's hundred thousand pieces of text: a third of the indexing time.
_Parser keeps a count of open elements by tag and gives the same answers, so the same index; only for
Material's search plugin as we know it (the hash of its file); other releases keep their own code.
After indexing, the plugin removes data-search-* attributes from the page with a regex that starts with an
optional space and so is tried at every character of the page; it is run only on a page that holds one.

tests/test_fast_paths.py checks that pages convert to the same HTML and the same search sections either way.
Loaded by mkdocs by path, so it imports nothing of perfsite's (whose package would import the whole generator).
"""

from __future__ import annotations

import hashlib
import re
import types
from typing import Any

from markdown import inlinepatterns, util
from markdown.treeprocessors import InlineProcessor
from material.plugins.search import plugin as search_plugin

try:
    from pymdownx import inlinehilite
except ImportError:  # PyMdown Extensions come with Material; without them, their pattern is simply unknown
    inlinehilite = None

# Markdown's inline patterns: name -> (class, regex, what a text needs to hold for the regex to match: one of
# these strings).
PATTERNS = {
    "backtick": (inlinepatterns.BacktickInlineProcessor, r"(?:(?<!\\)((?:\\{2})+)(?=`+)|(?<!\\)`)", ("`",)),
    "escape": (inlinepatterns.EscapeInlineProcessor, r"\\(.)", ("\\",)),
    "reference": (inlinepatterns.ReferenceInlineProcessor, r"(?<!\!)\[", ("[",)),
    "link": (inlinepatterns.LinkInlineProcessor, r"(?<!\!)\[", ("[",)),
    "image_link": (inlinepatterns.ImageInlineProcessor, r"\!\[", ("![",)),
    "image_reference": (inlinepatterns.ImageReferenceInlineProcessor, r"\!\[", ("![",)),
    "short_reference": (inlinepatterns.ShortReferenceInlineProcessor, r"(?<!\!)\[", ("[",)),
    "short_image_ref": (inlinepatterns.ShortImageReferenceInlineProcessor, r"\!\[", ("![",)),
    "autolink": (inlinepatterns.AutolinkInlineProcessor, r"<([A-Za-z][A-Za-z0-9+.-]*://[^<>]*)>", ("<",)),
    "automail": (inlinepatterns.AutomailInlineProcessor, r"<([^<> !]+@[^@<> ]+)>", ("<",)),
    "linebreak": (inlinepatterns.SubstituteTagInlineProcessor, r"  \n", ("  \n",)),
    "html": (inlinepatterns.HtmlInlineProcessor,
             r"""(<(\/?+[a-zA-Z][^\s"'<>@]*+(?:\s+[^\s"'=<>]++(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s"'=<>]++))?+)*+"""
             r"""\s*+/?|!--(?:(?!<!--|-->).)*--|[?](?:(?!<[?]|[?]>).)*[?]|!\[CDATA\[(?:(?!<!\[CDATA\[|\]\]>).)*\]\])>)""",
             ("<",)),
    "entity": (inlinepatterns.HtmlInlineProcessor, r"(&(?:\#[0-9]+|\#x[0-9a-fA-F]+|[a-zA-Z0-9]+);)", ("&",)),
    "em_strong": (getattr(inlinepatterns, "DelimiterProcessor", None), r"\*|_", ("*", "_")),
}
if inlinehilite is not None:  # pymdownx.inlinehilite's code spans (this project's mkdocs.yml): Markdown's regex
    PATTERNS["inlinehilite"] = (inlinehilite.InlineHilitePattern, inlinehilite.BACKTICK_CODE_RE, ("`",))
NEEDS = {(kind, regex): needs for kind, regex, needs in PATTERNS.values()}
TRIGGERS = re.compile(r"[`\\\[<\n&*_]")  # a character of every string in NEEDS


def _released(value: Any) -> Any:
    """The released code behind `value`: mkdocs executes a hook file again for each configuration it loads
    (`mkdocs serve`), when the previous run of this file has already replaced it."""
    return getattr(value, "perfsite_released", value)


_original_run = _released(InlineProcessor.run)
_original_handle_inline = _released(InlineProcessor._InlineProcessor__handleInline)


def pattern_needs(patterns: Any) -> list[tuple[str, ...]] | None:
    """What a text needs to hold for each pattern of the registry `patterns` (in its order) to match, or None
    when one of them is not in PATTERNS (class and regex)."""
    needs = [NEEDS.get((type(p), getattr(getattr(p, "compiled_re", None), "pattern", None))) for p in patterns]
    return None if None in needs else needs


def _run(self: InlineProcessor, tree: Any, ancestors: list[str] | None = None) -> Any:
    """Markdown's InlineProcessor.run, told what each pattern needs (the patterns are known when a page is
    converted, not when the processor is made: extensions register theirs after it)."""
    self.perfsite_needs = pattern_needs(self.inlinePatterns)
    return _original_run(self, tree, ancestors)


def _handle_inline(self: InlineProcessor, data: str, patternIndex: int = 0) -> str:  # noqa: N803 (Markdown's name)
    """Markdown's InlineProcessor.__handleInline (each pattern in turn, again from where its last match ended
    while it matches), trying only the patterns whose needs the text holds: one that cannot match is passed
    over as Markdown passes over one that did not match, and a text that holds none is returned at once."""
    needs = getattr(self, "perfsite_needs", None)
    if needs is None or isinstance(data, util.AtomicString):
        return _original_handle_inline(self, data, patternIndex)
    if TRIGGERS.search(data) is None:
        return data
    apply, start = self._InlineProcessor__applyPattern, 0
    while patternIndex < len(needs):
        if any(need in data for need in needs[patternIndex]):
            data, matched, start = apply(self.inlinePatterns[patternIndex], data, patternIndex, start)
            if matched:
                continue
        patternIndex, start = patternIndex + 1, 0
    return data


_run.perfsite_released, _handle_inline.perfsite_released = _original_run, _original_handle_inline


# sha256 of Material's search plugin module (mkdocs-material 9.8.2: its Parser, Element, Section and
# SearchPlugin.on_page_context, which _Parser and _on_page_context stand in for): another file (another
# release) keeps Material's own code.
KNOWN_SEARCH_PLUGIN = "cc8a3ac0a8862662d11e87fefcdaa4a42d9ebd70a7943fa921c1c80e2661730b"
# sha256 of Python-Markdown's treeprocessors module (Markdown 3.11.3: InlineProcessor.run and __handleInline,
# which _run and _handle_inline follow): another release, whose inline loop may differ even where its patterns
# do not, keeps Markdown's own code.
KNOWN_TREEPROCESSORS = "bf575e7cb994079e4d9466565dc31ea102d852b1be3c5c922eea4a708c08dd48"
HEADINGS = frozenset(f"h{level}" for level in range(1, 7))
ALWAYS_SKIPPED = ("script", "style", "object")  # Material never takes these off its skip list
_ReleasedParser = _released(search_plugin.Parser)


def known_search_plugin() -> bool:
    """Whether Material's search plugin is the one _Parser and _on_page_context were checked against: the hash
    of its file (inspect.getsource of the classes and method concerned took 60 ms of every build)."""
    return _file_hash(search_plugin.__file__) == KNOWN_SEARCH_PLUGIN


def known_inline_loop() -> bool:
    """Whether Markdown's inline processing is the code _run and _handle_inline were checked against."""
    from markdown import treeprocessors

    return _file_hash(treeprocessors.__file__) == KNOWN_TREEPROCESSORS


def _file_hash(path: str | None) -> str | None:
    if path is None:  # a frozen install
        return None
    try:
        with open(path, "rb") as module:
            return hashlib.sha256(module.read()).hexdigest()
    except OSError:
        return None


class _Parser(_ReleasedParser):
    """Material's search Parser with the same sections from cheaper questions. Material's Element is equal to
    any element or string of the same tag and hashes as its tag, so its skip set is in effect a set of tags
    (`skip_tags`), "any open element in the skip set" is "a tag of the skip set open" (`skipping`, updated when
    the open elements or the skip set change), and "the section's heading is open" or "a <pre> is open" are
    "that tag is open" (`open_tags`, open elements counted by tag). html.parser's line and column of the
    current position, which nothing reads, are not counted either (updatepos)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.skip_tags = {str(s) for s in self.skip}
        self.open_tags: dict[str, int] = {}
        self.skipping = False

    def updatepos(self, i: int, j: int) -> int:
        return j

    def _open(self, tag: str) -> bool:
        return bool(self.open_tags.get(tag))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attrs = dict(attrs)
        if tag in search_plugin.void:
            return
        el = search_plugin.Element(tag, attrs)
        self.context.append(el)
        self.open_tags[tag] = self.open_tags.get(tag, 0) + 1
        self.skipping = self.skipping or tag in self.skip_tags
        if tag in HEADINGS and "id" in attrs:
            self._start_section(el, attrs)
        if not self.section:
            self.section = search_plugin.Section(search_plugin.Element("hx"))
            self.data.append(self.section)
        if "data-search-exclude" in attrs or attrs.get("class") == "linenodiv":
            self.skip_tags.add(tag)
            self.skipping = True
            return
        if not self.skipping and tag in self.keep:
            self._markup().append(f"<{tag}>")

    def _start_section(self, el: Any, attrs: dict[str, str | None]) -> None:
        depth = len(self.context)
        if el.tag != "h1" and not self.data:  # ensure a top-level section
            self.section = search_plugin.Section(search_plugin.Element("hx"), depth)
            self.data.append(self.section)
        self.section = search_plugin.Section(el, depth)
        if self.data:
            self.section.id = attrs["id"]
        self.data.append(self.section)

    def _markup(self) -> list[str]:
        """Where a kept tag goes: the section's title while its heading is open, else its text."""
        section = self.section
        return section.title if self._open(section.el.tag) else section.text

    def handle_endtag(self, tag: str) -> None:
        context = self.context
        if not context or context[-1].tag != tag:
            return
        if self.section.depth > len(context):  # leaving a heading nested in another element
            for section in reversed(self.data):
                if section.depth <= len(context):
                    self.section.depth = float("inf")
                    self.section = section
                    break
        el = context.pop()
        self.open_tags[tag] -= 1
        if tag in self.skip_tags:
            if tag not in ALWAYS_SKIPPED:
                self.skip_tags.remove(tag)
            self.skipping = any(self.open_tags.get(t) for t in self.skip_tags)
            return
        if not self.skipping and tag in self.keep:
            self._close(self._markup(), el.tag)

    @staticmethod
    def _close(data: list[str], tag: str) -> None:
        """The closing tag after its opening one, or both dropped when only whitespace is between them."""
        index = data.index(f"<{tag}>")
        for i in range(index + 1, len(data)):
            if not data[i].isspace():
                index = len(data)
                break
        if len(data) > index:
            del data[index:]
        else:
            data.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        open_tags = self.open_tags
        in_pre = open_tags.get("pre")
        if not in_pre:
            data = " " if data.isspace() else data.replace("\n", " ")
        if not self.section:
            self.section = search_plugin.Section(search_plugin.Element("hx"))
            self.data.append(self.section)
        section = self.section
        if open_tags.get(section.el.tag):
            if not any(el.tag == "a" and el.attrs.get("class") == "headerlink" for el in self.context):
                section.title.append(search_plugin.escape(data, quote=False))
        elif data.isspace():
            if not section.text or not section.text[-1].isspace() or in_pre:
                section.text.append(data)
        else:
            section.text.append(search_plugin.escape(data, quote=False))


_Parser.perfsite_released = _ReleasedParser


SEARCH_ATTRIBUTES = re.compile(r"\s?data-search-\w+=\"[^\"]+\"")  # Material's, what on_page_context removes


def _on_page_context(self: Any, context: Any, *, page: Any, config: Any, nav: Any) -> None:
    """Material's SearchPlugin.on_page_context (index the page, then drop its data-search-* attributes), its
    regex run only on a page that holds one: starting with an optional space, the regex is tried at every
    character of the page's HTML (about 0.1 CPU-s for the 34 pages of 4 experiments)."""
    if not self.config.enabled:
        return
    self.search_index.add_entry_from_context(page)
    if "data-search-" in page.content:
        page.content = SEARCH_ATTRIBUTES.sub("", page.content)


def _faster_page_context(config: Any) -> None:
    """The search plugin's on_page_context, already registered for the event when hooks are loaded, replaced
    by _on_page_context where it is Material's as we know it."""
    events = config.plugins.events["page_context"]
    for index, method in enumerate(events):
        released = getattr(method, "__func__", None)
        if released is getattr(search_plugin.SearchPlugin, "on_page_context", None) and known_search_plugin():
            events[index] = types.MethodType(_on_page_context, method.__self__)


def fast_paths() -> list[tuple[Any, str, Any]]:
    """Each fast path for the installed releases: (object, attribute, faster value)."""
    found = []
    if known_inline_loop():
        found += [(InlineProcessor, "run", _run), (InlineProcessor, "_InlineProcessor__handleInline", _handle_inline)]
    if known_search_plugin():
        found.append((search_plugin, "Parser", _Parser))
    return found


def on_config(config: Any) -> Any:
    """Take the fast paths (in mkdocs' process, before any page is converted or a child forked to convert)."""
    for owner, name, value in fast_paths():
        setattr(owner, name, value)
    _faster_page_context(config)
    return config
