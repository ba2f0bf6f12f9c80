"""Figures above a measured machine limit: said out loud, never a silent 106 %.

A layer cannot run faster than the machine's peak, so a figure above a probed limit means the limit is too
low: the probe ran while another process held the machine (generator.machine.probe detects some of that and
`perfsite run` re-probes once when a layer exceeds the cached limits). Memory traffic has a second cause: the
bytes a kernel handles are counted as if they crossed the memory bus, and data served from the caches moves
faster than the measured bandwidth. Either way every page marks such a figure LIMIT_UNDERESTIMATED and gathers
them in one warning (``limit_overruns``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

LIMIT_UNDERESTIMATED = "limit underestimated"


def above_limit(share: float | None) -> bool:
    """A share of a limit above 1 (achieved ÷ limit): the limit is lower than what was achieved."""
    return share is not None and share > 1.0


@dataclass(frozen=True)
class LimitOverruns:
    """The figures of a page that exceed a limit: how many, and the largest with what it is."""

    count: int
    worst_share: float
    worst_what: str


def limit_overruns(figures: Iterable[tuple[str, float | None]]) -> LimitOverruns | None:
    """From (what, share of its limit) pairs, those above the limit, or None when none is (ties: first)."""
    over = [(what, share) for what, share in figures if share is not None and above_limit(share)]
    if not over:
        return None
    what, share = max(over, key=lambda f: f[1])
    return LimitOverruns(len(over), share, what)
