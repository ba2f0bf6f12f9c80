"""Making untrusted text inert in generated Markdown pages and in inline JSON.

Node names, op types, version names, error messages and spec descriptions come from model files and YAML
that someone else may have written. They can hold HTML (`<script>`, `<img onerror=...>`), Markdown
(`](javascript:...)`, a `|` that would split a table cell) or template syntax (`{{ ... }}`). Every
interpolation of such text in a page template goes through :func:`md_text`.

Special characters become HTML character references rather than backslash escapes: Python-Markdown never turns
a character reference into syntax, whichever extensions a project enables (a backslash only escapes the
characters the enabled extensions know about), and a reference cannot split a table cell.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from generator.numbers import json_safe
from generator.terminal_text import safe

# HTML specials, Markdown emphasis/link/code/table/heading/attribute syntax, and the characters that
# pymdown-extensions give meaning to (~ strikethrough, : emoji and definitions, = mark, ^ caret, $ math).
_SPECIAL = set("&<>\"'|[]()*_`\\{}#!~:=^$+")
_ENTITY = {ch: f"&#{ord(ch)};" for ch in _SPECIAL}
_ENTITIES = str.maketrans(_ENTITY)  # str.translate: one pass in C (pages hold hundreds of thousands of names)
# A line starting with "-" or "1." would become a list item, "-" alone a setext heading underline.
_LEADING_LIST = re.compile(r"^(\s*)(-|\d+\.)")
_NEWLINES = re.compile(r"[\r\n\u2028\u2029]+")


def md_text(value: Any) -> str:
    """Untrusted text as inert inline Markdown (also safe in a table cell and in HTML text or attributes).
    Not for the start of a line: use md_paragraphs there."""
    if value is None:
        return ""
    # A page repeats the same op types, node names and shapes thousands of times (a profile page's layer and
    # call tables): a text's escape is remembered.
    return _md_str(str(value))


@functools.lru_cache(maxsize=1 << 16)
def _md_str(text: str) -> str:
    # Control characters and bidirectional overrides shown as the terminal shows them (\x1b), not raw bytes
    # in the page: inert in HTML either way, but raw they hide in copied text and reorder a line's display.
    return safe(_NEWLINES.sub(" ", text)).translate(_ENTITIES)


def _escape_leading(match: re.Match[str]) -> str:
    marker = match.group(2)
    return match.group(1) + "".join(f"&#{ord(ch)};" for ch in marker)


def md_paragraphs(value: Any) -> list[str]:
    """Untrusted multi-line text as a list of inert paragraphs (split on blank lines)."""
    if value is None:
        return []
    paragraphs = re.split(r"\n\s*\n", str(value).strip())
    # A paragraph starts a line, where "-" or "1." would open a list and "-" alone underline a heading.
    return [_LEADING_LIST.sub(_escape_leading, md_text(p.strip())) for p in paragraphs if p.strip()]


# A JSON text (either `ensure_ascii` form) holding a character `shown` would change: a control character
# (written as an escape), a C1 control, a line or paragraph separator, a bidirectional override or isolate.
_UNSHOWN_JSON = re.compile(r"[\x7f-\x9f\u2028-\u202e\u2066-\u2069]"
                           r"|\\(?:[bfnr]|u00[01][0-9a-f]|u00[89][0-9a-f]|u007f|u202[89a-e]|u206[6-9])")


def shown(value: Any) -> Any:
    """A JSON-like value whose strings (values and keys) read as `md_text` shows them on a page: newlines as
    a space, control characters and bidirectional overrides as visible escapes.

    For data a page's script or chart library puts on screen (Vega-Lite tooltips, axis labels and legends,
    the chooser's tables): JSON.parse turns an escaped U+202E back into the raw character, which would reorder
    the rest of a label's display and disagree with the same name in the page's Markdown tables."""
    if isinstance(value, str):
        return safe(_NEWLINES.sub(" ", value))
    if isinstance(value, dict):
        return {shown(k): shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown(v) for v in value]
    return value


def shown_json(value: Any, dump: Callable[[Any], str]) -> str:
    """`dump(value)`, re-dumped through `shown` only when the text holds a character it would change (rare:
    walking every chart spec of a large site would cost more than this one scan of its text)."""
    text = dump(value)
    return dump(shown(value)) if shown_changes(text) else text


def shown_changes(text: str) -> bool:
    """Whether a JSON text holds a string `shown` would change (shown_json's test)."""
    # Nothing the pattern looks for (no backslash, DEL or non-ASCII character): scans in C, not the regex.
    if text.isascii() and "\\" not in text and "\x7f" not in text:
        return False
    return _UNSHOWN_JSON.search(text) is not None


def inline_json(value: Any) -> str:
    """JSON on one line, keys sorted, safe inside a `<script type="application/json">` element.

    `<`, `>` and `&` are written as \\u003c, \\u003e, \\u0026: JSON.parse reads them back unchanged, and no
    string in the data can close the script element (`</script>`) or open a comment (`<!--`).
    """
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:  # a NaN or infinite figure (a damaged file, 1e308 × a margin): shown as missing
        text = json.dumps(json_safe(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    # U+2028/2029 are legal in JSON but end a line in older JavaScript parsers; keep the element one line.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
