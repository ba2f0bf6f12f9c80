"""What a profile page shows of one trial's timeline: the timeline itself, its temporal statistics against the
machine's measured limits, and the layer details. DataFrames and analysis records in, a frozen record out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from generator.analysis.roofline import LayerResult, Roofline
from generator.results.by_trial import trial_rows
from generator.timeline.model import Timeline, timeline_from_table
from generator.timeline.stats import LayerDetail, TemporalStats, layer_details, temporal_statistics

TEMPORAL_BINS = 100


def compute_rate_title(integer: bool) -> str:
    """The compute rate's name and unit, on the temporal chart and in the table beside it alike: a mostly-integer
    model's operations are integer operations, measured against the INT8 peak, not FLOPs."""
    return "Compute rate (INT8 GOP/s)" if integer else "Compute rate (GFLOP/s)"


@dataclass(frozen=True)
class TimelineView:
    """One trial's median profiled inference, ready for a page."""

    timeline: Timeline
    stats: TemporalStats
    details: list[LayerDetail]
    run_index: int | None  # which kept profiled inference it is (0 = first after warmup)
    threads_seen: int  # threads that ran calls (lanes)
    peak_gflops: float | None  # the compute limit used: FP32 peak, or INT8 for a mostly-integer model
    peak_label: str  # "FP32" or "INT8"
    bandwidth_gbs: float | None

    @property
    def integer(self) -> bool:
        """Mostly integer operations: the compute rate is in INT8 GOP/s, against the INT8 peak."""
        return self.peak_label == "INT8"

    @property
    def compute_title(self) -> str:
        return compute_rate_title(self.integer)

    @property
    def traffic_share(self) -> float | None:
        """Peak estimated traffic over the measured bandwidth."""
        if not self.bandwidth_gbs:
            return None
        return self.stats.peak_traffic_gbs / self.bandwidth_gbs

    @property
    def compute_share(self) -> float | None:
        if not self.peak_gflops or not self.stats.has_flops:
            return None
        return self.stats.peak_compute_gflops / self.peak_gflops

    @property
    def bound_counts(self) -> dict[str, int]:
        counts = {"compute": 0, "memory": 0, "unknown": 0}
        for d in self.details:
            counts[d.bound] += 1
        return counts


def timeline_view(timeline: pd.DataFrame, trial_key: str, layers: Sequence[LayerResult],
                  limits: Roofline) -> TimelineView | None:
    """The view of one trial from the ``timeline`` table, or None when it has no rows (results written
    before the table existed, or a failed profiled pass). Operations and weight bytes per executed node come
    from the profile's layer results (top-level nodes with a static analysis); the compute limit is the INT8 peak when
    those nodes do more integer than float operations, else the FP32 peak (both scaled to the trial's
    threads)."""
    rows = trial_rows(timeline, trial_key)
    if rows.empty:
        return None
    flops = {r.node_name: r.ops for r in layers if r.analysed}
    tl = timeline_from_table(rows, flops, {r.node_name: r.weight_bytes for r in layers if r.analysed})
    integer = sum(r.int_ops for r in layers) > sum(r.flops for r in layers)
    peak = limits.peak(integer)
    bandwidth = limits.bandwidth_gbs
    run_index = rows["run_index"].dropna()
    return TimelineView(
        timeline=tl, stats=temporal_statistics(tl, TEMPORAL_BINS), details=layer_details(tl, peak, bandwidth),
        run_index=int(run_index.iloc[0]) if len(run_index) else None,
        threads_seen=len({e.thread_id for e in tl.events}), peak_gflops=peak,
        peak_label="INT8" if integer else "FP32", bandwidth_gbs=bandwidth,
    )
