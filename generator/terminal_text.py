"""Untrusted text (node names, op types, error messages from models) on its way to a terminal.

A node name can hold escape sequences that clear the screen, move the cursor or retitle the window; printed raw
they would rewrite what perfsite reports. Every command prints such text through `safe`: control characters
become visible `\\xNN` escapes. One function for every command (compare, diff, run, profile).
"""

from __future__ import annotations

import re
from typing import Any

# Every control character but tab and newline, and the bidirectional overrides and isolates (U+202A-U+202E,
# U+2066-U+2069), which reorder how the rest of a line is displayed ("Trojan Source", CVE-2021-42574).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe(text: Any, width: int | None = None, lines: bool = False) -> str:
    """`text` with control characters escaped; newlines kept when `lines`, else joined with a space; cut to
    `width` with an ellipsis in the middle: names that share a long prefix (`/model/encoder/layers.11/…/MatMul`
    and `…/Add`) differ at their end, and cut at the end they printed as identical rows."""
    out = _CONTROL.sub(_escape, str(text))
    if not lines:
        out = out.replace("\n", " ")
    if width is None or len(out) <= width:
        return out
    head = (width - 1 + 1) // 2
    return out[:head] + "…" + out[len(out) - (width - 1 - head):] if width > 1 else "…"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
