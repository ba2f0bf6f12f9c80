"""The headline percentile a trial reports, and how pages, `perfsite compare` and `perfsite diff` name it.

A spec chooses its headline percentile (`measure.percentile`). p99 needs `P99_MIN_SAMPLES` requests: below that
fewer than ~5 requests lie above the 99th percentile and the figure is mostly the luck of one slow request, so
`latency_p99_ms` is stored null and p95 stands in for the headline (`latency_headline_ms`). The runner applies the
rule when it stores a trial; every reader takes the stored decision (a null p99) from here, so the same trial
shows one value under one label everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

P99_MIN_SAMPLES = 460
STAND_IN = "p95"  # what stands in for p99 below P99_MIN_SAMPLES requests


def stored_percentile(percentile: str, latency_p99_ms: float | None) -> str:
    """The percentile a stored trial's `latency_headline_ms` reports: its p99 is null when it had too few
    requests (the runner's percentile_for), and then p95 stands in."""
    return STAND_IN if percentile == "p99" and latency_p99_ms is None else percentile


def compared_percentile(percentile: str, reported: Iterable[str | None]) -> str:
    """The percentile two trials are compared at: the spec's, or p95 where either one's stored headline reports
    p95 for p99 (`reported`: each trial's stored_percentile), the figure their pages show."""
    return STAND_IN if percentile == "p99" and STAND_IN in set(reported) else percentile


def percentile_label(percentile: str, reported: Iterable[str] = ()) -> str:
    """How a headline column, axis or row names its figure, given the spec's `percentile` and the percentiles
    its trials report: "p99"; "p95 (p99 needs 460 requests)" when p95 stands in for every one; "p99 (p95 below
    460 requests)" when it stands in for some (their cells say "(p95)", see stand_in_mark)."""
    found = set(reported) or {percentile}
    if found == {percentile}:
        return percentile
    if found == {STAND_IN}:
        return f"{STAND_IN} ({percentile} needs {P99_MIN_SAMPLES} requests)"
    return f"{percentile} ({STAND_IN} below {P99_MIN_SAMPLES} requests)"


def stand_in_mark(percentile: str, reported: str, label: str) -> str:
    """The note a trial's headline cell carries under a column `label`: " (p95)" where p95 stands in for it
    and the label does not already say so."""
    return f" ({reported})" if reported != percentile and not label.startswith(reported) else ""
