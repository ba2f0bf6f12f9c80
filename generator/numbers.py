"""Numbers as people read them, one module for every output (pages, `perfsite diff`, the terminal, the
one-shot report): three significant digits (a latency of 0.0421 ms and one of 1,234 ms are both read at a
glance), thousands separators (the sortable tables' number sorter strips them again), "—" when missing.
Plain text, no Markdown or HTML specials.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "—"


def num(value: float | int | None, sig: int = 3) -> str:
    """A figure with `sig` significant digits, thousands separators for large values, "—" when missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, int) or abs(value) >= 10 ** (sig - 1):
        return f"{value:,.0f}"  # counts, and whole numbers: 1,163 items/s, not 1,160
    value = float(f"{value:.{sig}g}")  # round first: 9.996 becomes 10.0, whose magnitude sets the decimals
    if value == 0:
        return "0"
    if abs(value) < 1e-4:
        return f"{value:.{sig - 1}e}"
    # Trailing zeros are significant digits here (1.90 ms, not 1.9): columns then line up.
    return f"{value:.{sig - 1 - math.floor(math.log10(abs(value)))}f}"


def counted(n: int, word: str) -> str:
    """A count and its noun, plural unless the count is one: "1 version", "2 trials"."""
    return f"{n} {word}{'s' * (n != 1)}"


def pct(share: float | None, decimals: int = 1) -> str:
    """A ratio (0.123) as a percentage ("12.3%")."""
    if share is None or not math.isfinite(share):
        return MISSING
    return f"{share * 100:.{decimals}f}%"


def share_above(share: float, limit: float) -> str:
    """A share known to exceed `limit`, as a percentage with the fewest decimals (up to 3) that show it above
    `limit` shown whole: 0.052 over 0.05 is "5.2%", not "5%", which read "spread 5% > 5%" (a false comparison)."""
    decimals = next((d for d in range(3) if round(share * 100, d) > round(limit * 100)), 3)
    return f"{share * 100:.{decimals}f}%"


def fixed(value: float | None, decimals: int = 2) -> str:
    """A figure with a fixed number of decimals (ratios, cores)."""
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:.{decimals}f}"


def mib(size_bytes: int | None) -> str:
    """A byte count in MiB, three significant digits."""
    return MISSING if size_bytes is None else num(size_bytes / 2**20)


def short_sha(sha256: str | None) -> str:
    """The first 12 hex digits, enough to tell model files apart."""
    return MISSING if not sha256 else str(sha256)[:12]


def rounded(value: float | None, digits: int) -> float | None:
    """`value` rounded to `digits` significant digits, for data files and JSON (None, NaN and infinities as
    None): keeps them short without changing what a reader can see."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(f"{float(value):.{digits}g}")


def json_safe(value: Any) -> Any:
    """`value` (dicts, lists and tuples nested) with every NaN or infinite float replaced by None: JSON has no
    such numbers, and a reader takes null as missing."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
