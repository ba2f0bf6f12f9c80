"""One inference of a profiled trial in time: the timeline, its temporal statistics, layer details and the
Chrome/Perfetto trace (see docs/methodology-profile.md, "Timeline"). Its charts are the site's
(generator.site.charts_timeline)."""

from generator.timeline.model import (
    Timeline,
    TimelineEvent,
    median_run,
    timeline_from_table,
    timeline_rows,
)
from generator.timeline.stats import LayerDetail, TemporalStats, counted_events, layer_details, temporal_statistics
from generator.timeline.trace import chrome_trace, chrome_trace_json

__all__ = [
    "LayerDetail", "TemporalStats", "Timeline", "TimelineEvent", "chrome_trace", "chrome_trace_json",
    "counted_events", "layer_details", "median_run", "temporal_statistics", "timeline_from_table", "timeline_rows",
]
