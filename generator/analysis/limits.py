"""Which machine limits pages may use, and figures above a measured limit: said out loud, never a silent 106 %.

Limits you can believe, or none: a page sets a figure against the machine's limits only when their probe
settled (two undisturbed probes agreed, generator.machine.probe). ``unsettled_reason`` is the one rule every
page and the one-shot report follow; where it gives a reason, they show no roofline, no share of a limit and
no "far below the roofline" list, and say why instead.

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
from typing import Any

LIMIT_UNDERESTIMATED = "limit underestimated"
# Said of results written before probes had to agree (limits_settled null): even a "clean (1 probe)" there was
# one probe that no second one checked, so those limits count as unsettled.
UNCHECKED = "these results come from an earlier perfsite, which took its limits from a probe no second one checked"


def unsettled_reason(settled: Any, quality: str | None) -> str | None:
    """Why an environment's probed limits cannot be used, in words, or None when they can: its
    `limits_settled` (True, False, or None in older results) and `limits_quality` words."""
    if settled is True:
        return None
    if settled is False:
        # The words are generator.machine.probe.MachineLimits.quality_text's: "unsettled: <why>".
        return quality.removeprefix("unsettled: ") if quality else "its probes did not agree"
    return f"{UNCHECKED} ({quality})" if quality else UNCHECKED


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
