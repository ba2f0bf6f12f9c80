"""Untrusted text (node names, op types, error messages from models) on its way to a terminal.

A node name can hold escape sequences that clear the screen, move the cursor or retitle the window; printed raw
they would rewrite what perfsite reports. Every command prints such text through `safe`: control characters
become visible `\\xNN` escapes. One function for every command (compare, diff, run, profile).
"""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every control character but tab and newline


def safe(text: Any, width: int | None = None, lines: bool = False) -> str:
    """`text` with control characters escaped; newlines kept when `lines`, else joined with a space; cut to
    `width` with an ellipsis."""
    out = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    if not lines:
        out = out.replace("\n", " ")
    return out if width is None or len(out) <= width else out[: width - 1] + "…"
