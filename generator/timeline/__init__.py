"""One inference of a profiled trial in time: the timeline, its temporal statistics, layer details, the
Chrome/Perfetto trace and the charts (see docs/methodology-profile.md, "Timeline")."""

from typing import Any

from generator.timeline.model import (
    Timeline,
    TimelineEvent,
    median_run,
    timeline_from_table,
    timeline_rows,
)
from generator.timeline.stats import LayerDetail, TemporalStats, counted_events, layer_details, temporal_statistics
from generator.timeline.trace import chrome_trace, chrome_trace_json


def __getattr__(name: str) -> Any:
    # The chart builders import altair and the site's chart helpers: loaded on first use, so that the profiled
    # worker (which only captures rows) does not pay for them.
    if name in ("timeline_chart", "temporal_chart"):
        from generator.timeline import charts

        return getattr(charts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LayerDetail", "TemporalStats", "Timeline", "TimelineEvent", "chrome_trace", "chrome_trace_json",
    "counted_events", "layer_details", "median_run", "temporal_chart", "temporal_statistics",
    "timeline_chart", "timeline_from_table", "timeline_rows",
]
