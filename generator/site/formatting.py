"""Number and label formatting for pages (Jinja filters). Every output here is plain text without Markdown
or HTML specials, except where a function says it returns escaped text.

Numbers keep three significant digits (a latency of 0.0421 ms and one of 1,234 ms are both read at a glance)
and use thousands separators; the sortable tables' number sorter strips the separators again.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from generator.analysis.limits import LIMIT_UNDERESTIMATED, above_limit
from generator.analysis.summaries import TrialSummary
from generator.site.escape import md_text

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


def pct(share: float | None, decimals: int = 1) -> str:
    """A ratio (0.123) as a percentage ("12.3%")."""
    if share is None or not math.isfinite(share):
        return MISSING
    return f"{share * 100:.{decimals}f}%"


def of_limit(share: float | None, decimals: int = 1) -> str:
    """A share of a measured limit as a percentage, marked when above 100 % (generator.analysis.limits)."""
    text = pct(share, decimals)
    return f"{text} ({LIMIT_UNDERESTIMATED})" if above_limit(share) else text


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


def when(iso: str | None) -> str:
    """An ISO 8601 UTC time as `2026-01-05 10:00 UTC` (as given, escaped, when it does not parse)."""
    if not iso:
        return MISSING
    try:
        moment = datetime.fromisoformat(str(iso).replace("Z", "+00:00"))
    except ValueError:
        return md_text(iso)
    # The schema stores UTC; a time without an offset is UTC too, not the reader's local time.
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def on_off(value: bool | None) -> str:
    return MISSING if value is None else ("on" if value else "off")


def at(trial: TrialSummary | None, missing: str = MISSING) -> str:
    """Where a best result was measured: the configuration label (escaped), flagged when noisy."""
    if trial is None:
        return missing
    return md_text(trial.config_label) + (" (noisy)" if trial.noisy else "")


def config_text(trial: TrialSummary) -> str:
    """Every axis of a trial's configuration, for tooltips and headings (untrusted: placeholder names)."""
    parts = [
        f"batch {trial.batch}", f"threads {trial.threads}", f"concurrency {trial.concurrency}",
        f"optimization {trial.optimization_level}", f"provider {trial.provider}",
        f"spinning {on_off(trial.spinning)}", f"inter-op threads {trial.inter_op_threads}",
    ]
    return " · ".join(parts + [f"{k} {v}" for k, v in trial.dims])


def wanted_text(wanted: tuple[tuple[str, Any], ...]) -> str:
    """A profile entry (axis -> value) as text: `batch 1 · threads 2`."""
    return " · ".join(f"{k} {on_off(v) if isinstance(v, bool) else v}" for k, v in wanted)


def op_name(op_type: str, ops_a: tuple[str, ...] = (), ops_b: tuple[str, ...] | None = None) -> str:
    """An op type in the words of both pages: the standard op the model names, then the kernels onnxruntime
    ran where they are called otherwise. Profile pages (one version): `Conv (QLinearConv)` for an executed
    QLinearConv; compare pages: `Conv (A: FusedConv · B: QLinearConv)`. Untrusted: escape the result."""
    from generator.layers.anchors import base_op

    if ops_b is None:  # one executed op type, a profile page's
        standard = base_op(op_type)
        return op_type if standard == op_type else f"{standard} ({op_type})"
    sides = [(side, [o for o in ops if o != op_type]) for side, ops in (("A", ops_a), ("B", ops_b))]
    shown = [f"{side}: {', '.join(others)}" for side, others in sides if others]
    return op_type if not shown else f"{op_type} ({' · '.join(shown)})"


def url(value: str) -> str:
    """A relative link target printed as is in a Markdown link: every character outside a URL's own
    punctuation percent-encoded, so that nothing in it can end the link or start markup."""
    from urllib.parse import quote

    return quote(value, safe="/#&=%.-_~")


FILTERS = {
    "num": num, "pct": pct, "of_limit": of_limit, "fixed": fixed, "mib": mib, "short_sha": short_sha, "on_off": on_off,
    "when": when, "at": at, "config_text": config_text, "wanted_text": wanted_text, "url": url,
    "op_name": op_name,
}
