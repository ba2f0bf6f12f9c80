"""Label formatting for pages (Jinja filters), over the numbers of generator.numbers. Every output here is
plain text without Markdown or HTML specials, except where a function says it returns escaped text.
"""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime
from typing import Any

from generator.analysis.limits import LIMIT_UNDERESTIMATED, above_limit
from generator.analysis.summaries import TrialSummary
from generator.numbers import MISSING, fixed, mib, num, pct, short_sha  # noqa: F401  (filters)
from generator.site.escape import md_text


def of_limit(share: float | None, decimals: int = 1) -> str:
    """A share of a measured limit as a percentage, marked when above 100 % (generator.analysis.limits)."""
    text = pct(share, decimals)
    return f"{text} ({LIMIT_UNDERESTIMATED})" if above_limit(share) else text


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
    """Where a best result was measured: the configuration label (escaped), flagged when too uncertain to settle
    anything (generator.analysis.findings.uncertain_trials)."""
    if trial is None:
        return missing
    return md_text(trial.config_label) + (" (uncertain)" if trial.uncertain else "")


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


@functools.lru_cache(maxsize=4096)  # a few dozen distinct names, asked for once per kernel row and page
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


def shapes(value: Any) -> str:
    """Tensor shapes as `1×3×224×224, 64`: `shapes | map("join", "×") | join(", ")` in one call (a profile
    page's layer table has a row per executed node). A scalar (shape []) is "scalar", not an empty entry
    (a quantized node's scale and zero point read "1×64×64×3, , , 48")."""
    return ", ".join(_shape(shape) for shape in value)


def _shape(shape: Any) -> str:
    if shape is None:
        return "?"
    return "×".join(map(str, shape)) if len(shape) else "scalar"


def url(value: str) -> str:
    """A relative link target printed as is in a Markdown link: every character outside a URL's own
    punctuation percent-encoded, so that nothing in it can end the link or start markup."""
    from urllib.parse import quote

    return quote(value, safe="/#&=%.-_~")


def answer(value: Any) -> str:
    """A finding's answer as a page shows it: a number as `num` rounds it, text escaped."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return num(value)
    return md_text(value)


def band(figure: Any) -> str:
    """A finding's figure as `value (low–high)`, its 95 % interval; a dash without one."""
    if figure is None or getattr(figure, "value", None) is None:
        return MISSING
    if figure.low is None or figure.high is None:
        return num(figure.value)
    return f"{num(figure.value)} ({num(figure.low)}–{num(figure.high)})"


def interval(bounds: Any) -> str:
    """A 95 % interval as `low–high`; a dash without one; "unbounded" for a confidence sequence that could not
    bound it yet (too few figures)."""
    if not bounds or bounds[0] is None or bounds[1] is None or math.isnan(bounds[0]) or math.isnan(bounds[1]):
        return MISSING
    if math.isinf(bounds[1]) or bounds[0] <= 0:
        return "unbounded"
    return f"{num(bounds[0])}–{num(bounds[1])}"


def times_band(times: Any) -> str:
    """A profiled time over the processes (analysis.profile_times.ProcessTimes) as `value (low–high)`."""
    if times is None:
        return MISSING
    bounds = times.interval()
    return num(times.value) + (f" ({interval(bounds)})" if bounds else "")


def first_upper(text: str) -> str:
    """The text with its first letter upper-cased and the rest as written (jinja2's `capitalize` lowers the
    rest: a version named "INT8" or a node "Conv_0" in a reason came out "int8", "conv_0")."""
    return text[:1].upper() + text[1:]


def plain(value: float) -> str:
    """A number as Python's `g` format writes it: how finding ids name a threshold (`20ms`)."""
    return f"{float(value):g}"


FILTERS = {
    "num": num, "pct": pct, "of_limit": of_limit, "fixed": fixed, "mib": mib, "short_sha": short_sha, "on_off": on_off,
    "when": when, "at": at, "config_text": config_text, "wanted_text": wanted_text, "url": url,
    "op_name": op_name, "shapes": shapes, "answer": answer, "band": band, "plain": plain,
    "interval": interval, "times_band": times_band, "first_upper": first_upper,
}
