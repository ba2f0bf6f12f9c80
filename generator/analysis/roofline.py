"""Layers on the roofline: the static FLOPs of the version's model file joined to the measured time of the
executed nodes, placed under the machine's measured ceilings. DataFrames in, frozen records out, no I/O.

Executed nodes and original nodes meet through ``nodes.original_nodes``; which executed node owns which
original node's operations is generator.layers.work's rule (shared with `perfsite run`'s limits check).
Operations are ``flops + int_ops``; a node whose integer operations outnumber its float ones is measured
against the INT8 peak. Only top-level executed nodes count: a control-flow node's time already includes its
sub-graph's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analysis.limits import unsettled_reason
from generator.analysis.profile_times import ProcessTimes, node_times
from generator.analysis.summaries import TrialSummary
from generator.cells import clean

# op_family is re-exported: the what-if estimates use it.
from generator.layers.work import (  # noqa: F401
    STATIC_SUMS,
    op_family,
    split_sums,
    traffic_bytes,
)
from generator.results.by_trial import trial_rows
from generator.results.profiled import ensured
from generator.results.records import records

# A layer is highlighted as a place where optimization pays when it runs below this share of its roofline
# and takes at least this share of the kernel time (a slow 10 µs Relu is not worth anyone's afternoon).
FAR_BELOW_EFFICIENCY = 0.25
FAR_BELOW_MIN_SHARE = 0.02


def as_float(value: Any) -> float | None:
    value = clean(value)
    return None if value is None else float(value)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator or denominator <= 0:
        return None
    return numerator / denominator


def top_level_nodes(nodes: pd.DataFrame, trial_key: str) -> pd.DataFrame:
    """The trial's executed nodes outside sub-graphs, in execution order: an If/Loop/Scan node's time already
    includes its sub-graph's nodes, so summing every node would count that time twice."""
    rows = ensured(trial_rows(nodes, trial_key))
    return rows[rows["parent"].isna()].sort_values("exec_order", kind="stable")


@dataclass(frozen=True)
class Roofline:
    """The measured ceilings of the machine a trial ran on, scaled to the trial's threads.

    The probe measures the compute peaks with every core; a configuration with fewer threads than physical
    cores can only reach its share of them (threads / physical cores). Bandwidth is not scaled: one core
    streams a large part of it on small machines, and scaling it would hide memory-bound layers.

    Limits whose probe did not settle (generator.analysis.limits.unsettled_reason) are not ceilings: every
    figure is None and `unsettled_reason` says why, so that nothing built on this record (layer efficiencies,
    "far below", peak shares, the timeline's bounds) sets anything against them.
    """

    env_id: str
    peak_gflops_fp32: float | None  # scaled
    peak_gops_int8: float | None  # scaled
    bandwidth_gbs: float | None
    machine_gflops_fp32: float | None  # as probed, whole machine
    machine_gops_int8: float | None
    thread_scale: float
    probed_at: str | None = None  # when the limits were probed (ISO 8601 UTC); None for older results
    quality: str | None = None  # the probe's quality in words (generator.machine.probe.MachineLimits.quality_text)
    unsettled_reason: str | None = None  # probed, but the limits cannot be believed: why (then no figures)

    @property
    def measured(self) -> bool:
        """Ceilings to set figures against: probed, and settled."""
        return self.peak_gflops_fp32 is not None and self.bandwidth_gbs is not None

    @property
    def roofline_drawn(self) -> bool:
        """Whether pages may draw the roofline chart: not over limits that did not settle (a chart without
        ceilings is drawn for a machine never probed, as before)."""
        return self.unsettled_reason is None

    def peak(self, integer: bool) -> float | None:
        return self.peak_gops_int8 if integer and self.peak_gops_int8 is not None else self.peak_gflops_fp32

    def attainable(self, intensity: float | None, integer: bool) -> float | None:
        """min(peak, intensity × bandwidth) in GOP/s; None without an intensity or measured limits."""
        peak = self.peak(integer)
        if intensity is None or peak is None or self.bandwidth_gbs is None:
            return None
        return min(peak, intensity * self.bandwidth_gbs)


def roofline(environments: pd.DataFrame, trial: TrialSummary) -> Roofline:
    """The ceilings of the trial's environment: None figures where the environment was never probed, or where
    its limits did not settle (then with the reason)."""
    rows = environments[environments["env_id"].astype(str) == trial.env_id]
    row = rows.iloc[0] if len(rows) else pd.Series(dtype=object)
    cores = clean(row.get("physical_cores")) or clean(row.get("logical_cores")) or trial.threads
    scale = min(trial.threads, int(cores)) / int(cores)
    fp32, int8 = as_float(row.get("peak_gflops_fp32")), as_float(row.get("peak_gops_int8"))
    bandwidth, quality = as_float(row.get("bandwidth_gbs")), clean(row.get("limits_quality"))
    why = unsettled_reason(clean(row.get("limits_settled")), quality) if fp32 or bandwidth else None
    if why is not None:
        fp32 = int8 = bandwidth = None
    return Roofline(
        env_id=trial.env_id, peak_gflops_fp32=fp32 * scale if fp32 else None,
        peak_gops_int8=int8 * scale if int8 else None, bandwidth_gbs=bandwidth,
        machine_gflops_fp32=fp32, machine_gops_int8=int8, thread_scale=scale,
        probed_at=clean(row.get("limits_probed_at")), quality=quality, unsettled_reason=why,
    )


@dataclass(frozen=True)
class StaticTotals:
    """Sums of the static analysis over every node of the version's model file."""

    nodes: int
    flops: float
    macs: float
    int_ops: float
    params: int
    weight_bytes: int
    uncounted_op_types: tuple[str, ...]  # op types without a FLOP counter: listed, not guessed

    @property
    def ops(self) -> float:
        return self.flops + self.int_ops


def trial_layers(layers: pd.DataFrame, trial_key: str) -> pd.DataFrame:
    """The trial's static-analysis rows, indexed by original node key."""
    rows = trial_rows(layers, trial_key)
    return rows.drop_duplicates("node").set_index("node")


def static_totals(layers: pd.DataFrame, trial_key: str) -> StaticTotals | None:
    """Totals of the static analysis, or None when the trial has no `layers` rows."""
    rows = trial_layers(layers, trial_key)
    if not len(rows):
        return None
    sums = {c: float(pd.to_numeric(rows[c], errors="coerce").fillna(0).sum()) for c in STATIC_SUMS}
    uncounted = rows.loc[~rows["counted"].fillna(False).astype(bool), "op_type"].astype(str)
    return StaticTotals(
        nodes=len(rows), flops=sums["flops"], macs=sums["macs"], int_ops=sums["int_ops"],
        params=int(sums["params"]), weight_bytes=int(sums["weight_bytes"]),
        uncounted_op_types=tuple(sorted(set(uncounted))),
    )


@dataclass(frozen=True)
class LayerResult:
    """One top-level executed node: time, operations, traffic and its place on the roofline."""

    exec_order: int
    node_name: str
    op_type: str
    provider: str | None
    fallback: bool  # ran on another provider than the one asked for
    original_nodes: tuple[str, ...]
    weights: tuple[str, ...]
    input_shapes: tuple[tuple[Any, ...], ...]
    output_shapes: tuple[tuple[Any, ...], ...]
    precision: str | None
    calls: int
    dur_us: float  # generator.results.profiled: median over the profiling processes, profiler cost removed
    dur_profiled_us: float | None  # the median as profiled (before removing the profiler's cost)
    share: float  # of the summed top-level kernel time
    cumulative_share: float  # this node and every slower one
    analysed: bool  # at least one of its original nodes has a static-analysis row
    flops: float
    int_ops: float
    macs: float
    params: float
    bytes: float | None  # weights + activations read + written
    intensity: float | None  # operations per byte
    achieved_gops: float | None
    attainable_gops: float | None
    efficiency: float | None  # achieved / attainable
    far_below: bool
    pool_share: float | None
    weight_bytes: float = 0.0  # static (the timeline's traffic takes them from here too: module docstring)
    times: ProcessTimes | None = None  # dur_us with each profiling process's figure (its interval, rankings)

    @property
    def ops(self) -> float:
        return self.flops + self.int_ops

    @property
    def integer(self) -> bool:
        return self.int_ops > self.flops


def provider_name(provider: str | None) -> str:
    """`CPUExecutionProvider` and `cpu` both as `cpu`: the spec's short names against onnxruntime's."""
    text = (provider or "").strip()
    return text.removesuffix("ExecutionProvider").lower()


def layer_results(nodes: pd.DataFrame, layers: pd.DataFrame, trial: TrialSummary,
                  limits: Roofline) -> list[LayerResult]:
    """Every top-level executed node of the trial's profiled pass, slowest first (ties by execution order).

    Achieved GOP/s are the node's operations over its mean profiled time: the profiler's fixed cost per node
    (~17 µs here) makes tiny nodes look slower than they are. A node is `far_below` its roofline when its
    efficiency is under FAR_BELOW_EFFICIENCY and it takes at least FAR_BELOW_MIN_SHARE of the kernel time.
    """
    top = top_level_nodes(nodes, trial.trial_key)
    static = trial_layers(layers, trial.trial_key)
    total = float(top["dur_us"].sum())
    # Plain dicts, not iterrows' Series: building a Series per node and reading it by label was most of the
    # time of a large model's profile page (2,400 nodes). Sorted before the records are made: each is made
    # once, with its cumulative share (a dataclasses.replace per node after was a tenth of this function).
    pairs = sorted(zip(records(top), split_sums(top, static), strict=True),
                   key=lambda pair: (-float(pair[0]["dur_us"]), int(pair[0]["exec_order"])))
    out, running = [], 0.0
    for node, sums in pairs:
        out.append(_layer_result(node, sums, trial, limits, total, running))
        running += out[-1].share
    return out


def _layer_result(node: dict[str, Any], sums: dict[str, float] | None, trial: TrialSummary, limits: Roofline,
                  total_us: float, slower_share: float) -> LayerResult:
    """One node's record; `slower_share`: the summed share of the nodes slower than it."""
    dur = float(node["dur_us"])
    zero = dict.fromkeys(STATIC_SUMS, 0.0)
    counts = sums or zero
    ops = counts["flops"] + counts["int_ops"]
    traffic = traffic_bytes(node, counts) if sums else None
    intensity = ratio(ops, traffic) if ops > 0 else None
    achieved = ops / (dur * 1e3) if ops > 0 and dur > 0 else None  # ops per µs / 1e3 = GOP/s
    attainable = limits.attainable(intensity, counts["int_ops"] > counts["flops"])
    efficiency = ratio(achieved, attainable)
    share = dur / total_us if total_us > 0 else 0.0
    provider = clean(node.get("provider"))
    return LayerResult(
        exec_order=int(node["exec_order"]), node_name=str(node["node_name"]), op_type=str(node["op_type"]),
        provider=provider, fallback=provider is not None and provider_name(provider) != trial.provider,
        original_nodes=node["original_nodes"], weights=node["weights"],
        input_shapes=node["input_shapes"], output_shapes=node["output_shapes"],
        precision=clean(node.get("runtime_precision")), calls=int(clean(node.get("calls")) or 1),
        dur_us=dur, dur_profiled_us=as_float(node.get("dur_p50_us")), share=share,
        times=node_times(dur, node.get("dur_process_us")),
        cumulative_share=min(slower_share + share, 1.0),
        analysed=sums is not None, flops=counts["flops"], int_ops=counts["int_ops"], macs=counts["macs"],
        params=counts["params"], bytes=traffic, intensity=intensity, achieved_gops=achieved,
        attainable_gops=attainable, efficiency=efficiency,
        far_below=efficiency is not None and efficiency < FAR_BELOW_EFFICIENCY and share >= FAR_BELOW_MIN_SHARE,
        pool_share=as_float(node.get("pool_share")), weight_bytes=counts["weight_bytes"],
    )

