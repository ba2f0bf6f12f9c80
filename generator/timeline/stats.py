"""Temporal statistics and layer details of one inference's timeline.

Estimates, not measurements: onnxruntime reports how many bytes each kernel's inputs, weights and outputs
hold, not how many bytes crossed the memory bus (caches absorb re-reads, and a fused kernel may read a tensor
more than once). The traffic figures are therefore the data each kernel had to handle, spread evenly over its
duration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from generator.timeline.model import Timeline, TimelineEvent

CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan"})


@dataclass(frozen=True)
class TemporalStats:
    """Estimated memory traffic and compute rate over one inference, in ``bins`` equal time bins.

    ``bytes_per_bin``/``flops_per_bin`` are amounts; ``traffic_gbs``/``compute_gflops`` the rates (amount ÷
    bin width). ``has_flops`` is False when no counted event has an operation count (the compute series is
    then all zeros and means nothing).
    """

    bin_us: float
    bin_start_us: tuple[float, ...]
    bytes_per_bin: tuple[float, ...]
    flops_per_bin: tuple[float, ...]
    traffic_gbs: tuple[float, ...]
    compute_gflops: tuple[float, ...]
    total_bytes: float  # the bytes of the counted events (== sum of bytes_per_bin)
    total_flops: float
    span_us: float
    has_flops: bool

    @property
    def peak_traffic_gbs(self) -> float:
        return max(self.traffic_gbs, default=0.0)

    @property
    def peak_compute_gflops(self) -> float:
        return max(self.compute_gflops, default=0.0)

    @property
    def mean_traffic_gbs(self) -> float:
        return self.total_bytes / self.span_us / 1e3 if self.span_us > 0 else 0.0

    @property
    def mean_compute_gflops(self) -> float:
        return self.total_flops / self.span_us / 1e3 if self.span_us > 0 else 0.0

    def peak_bin(self, series: str) -> int:
        """Index of the first bin holding the peak of ``traffic`` or ``compute``."""
        values = self.traffic_gbs if series == "traffic" else self.compute_gflops
        return int(np.argmax(values)) if values else 0


def counted_events(tl: Timeline) -> tuple[TimelineEvent, ...]:
    """The events whose bytes and operations are counted: every event except a control-flow call that has
    sub-graph calls in this inference (its body's calls carry the work; the parent's own sizes are its
    condition and loop-carried inputs, which its body reads again)."""
    parents = {e.parent for e in tl.events if e.parent is not None}
    return tuple(e for e in tl.events if not (e.op_type in CONTROL_FLOW_OPS and e.node_name in parents))


def _spread(starts: np.ndarray, ends: np.ndarray, amounts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each amount spread uniformly over [start, end], summed per bin; a zero-length event's whole amount
    goes to the bin that holds its start, so that nothing is lost."""
    out = np.zeros(len(edges) - 1)
    durs = ends - starts
    timed = durs > 0
    if timed.any():
        covered = np.clip(edges[None, :], starts[timed, None], ends[timed, None]) - starts[timed, None]
        fraction = np.diff(covered, axis=1) / durs[timed, None]
        out += (fraction * amounts[timed, None]).sum(axis=0)
    for start, amount in zip(starts[~timed], amounts[~timed], strict=True):
        out[min(max(int(np.searchsorted(edges, start, side="right")) - 1, 0), len(out) - 1)] += amount
    return out


def temporal_statistics(tl: Timeline, bins: int = 100) -> TemporalStats:
    """Bytes read + written and operations of each counted event (see :func:`counted_events`) spread
    uniformly over its duration and summed in ``bins`` equal bins over [0, span]; rates are amount ÷ bin width
    (bytes/µs ÷ 1000 = GB/s). Events on different threads that overlap add up. Events without a reported size
    or operation count add nothing to that series. Conservation: the bins sum to ``total_bytes`` and
    ``total_flops``."""
    bins = max(1, int(bins))
    span = tl.span_us if tl.events else 0.0
    width = span / bins if span > 0 else 1.0
    edges = np.linspace(0.0, width * bins, bins + 1)
    events = counted_events(tl)
    starts = np.array([e.start_us for e in events], dtype=float)
    ends = np.array([e.end_us for e in events], dtype=float)
    moved = np.array([e.moved_bytes or 0 for e in events], dtype=float)
    flops = np.array([e.flops or 0.0 for e in events], dtype=float)
    per_bin_bytes = _spread(starts, ends, moved, edges)
    per_bin_flops = _spread(starts, ends, flops, edges)
    return TemporalStats(
        bin_us=width, bin_start_us=tuple(float(x) for x in edges[:-1]),
        bytes_per_bin=tuple(map(float, per_bin_bytes)), flops_per_bin=tuple(map(float, per_bin_flops)),
        traffic_gbs=tuple(float(x) for x in per_bin_bytes / width / 1e3),
        compute_gflops=tuple(float(x) for x in per_bin_flops / width / 1e3),
        total_bytes=float(moved.sum()), total_flops=float(flops.sum()), span_us=span,
        has_flops=any(e.flops is not None for e in events),
    )


@dataclass(frozen=True)
class LayerDetail:
    """One kernel call of the timeline: what it computed, how long it took, and what bounds it."""

    exec_order: int
    node_name: str
    op_type: str
    parent: str | None
    dur_us: float  # measured
    flops: float | None  # operations (FLOPs + integer operations), static analysis
    moved_bytes: int | None  # read + written: onnxruntime's activation sizes and the static weight bytes
    data_time_us: float | None  # moved_bytes ÷ measured bandwidth
    compute_time_us: float | None  # flops ÷ measured peak
    bound: str  # "compute", "memory" or "unknown"

    @property
    def achieved_gflops(self) -> float | None:
        return self.flops / self.dur_us / 1e3 if self.flops is not None and self.dur_us > 0 else None

    @property
    def limit_share(self) -> float | None:
        """The larger estimate over the measured time: how close the call came to its ceiling (1 = at it)."""
        known = [t for t in (self.data_time_us, self.compute_time_us) if t is not None]
        return max(known) / self.dur_us if known and self.dur_us > 0 else None


def layer_details(tl: Timeline, peak_gflops: float | None, bandwidth_gbs: float | None) -> list[LayerDetail]:
    """Per event, in execution order: measured duration, operations, bytes moved, and two estimates — the
    data-handling time (bytes ÷ bandwidth) and the compute time (operations ÷ peak).

    ``bound`` is the roofline's verdict: ``"compute"`` when the compute time is at least the data time (the
    call's operations per byte are at or above the machine's ridge point, peak ÷ bandwidth), ``"memory"``
    when it is below. It is ``"unknown"`` when either estimate is missing (no operation count, no reported
    size, the machine not probed) or both are zero, and for an If/Loop/Scan call whose body ran in this
    inference: its own figures are those of its condition and loop inputs, its work is its body's calls.
    """
    counted = {id(e) for e in counted_events(tl)}
    out = []
    for e in tl.events:
        moved = e.moved_bytes
        data = moved / (bandwidth_gbs * 1e3) if moved is not None and bandwidth_gbs and bandwidth_gbs > 0 else None
        compute = e.flops / (peak_gflops * 1e3) if e.flops is not None and peak_gflops and peak_gflops > 0 else None
        bound = _bound(compute, data) if id(e) in counted else "unknown"
        out.append(LayerDetail(e.exec_order, e.node_name, e.op_type, e.parent, e.dur_us, e.flops, moved, data,
                               compute, bound))
    return out


def _bound(compute_us: float | None, data_us: float | None) -> str:
    if compute_us is None or data_us is None or (compute_us == 0 and data_us == 0):
        return "unknown"
    return "compute" if compute_us >= data_us else "memory"
