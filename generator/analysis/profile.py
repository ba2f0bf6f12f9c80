"""The performance profile of one trial: measured time next to the static FLOPs and the machine's limits.

DataFrames in (columns of ``generator.results.schema``), frozen records out, no I/O, deterministic. The time
figures come from the profiled pass (``nodes``), the operation counts from the static analysis of the
version's model file (``layers``), the ceilings from the machine-limits probe (``environments``); the join
and the roofline are in :mod:`generator.analysis.roofline`, the Amdahl estimates in
:mod:`generator.analysis.whatif`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from generator.analysis.accounting import TimeAccounting
from generator.analysis.accounting import time_accounting as profiled_accounting
from generator.analysis.profile_times import ProcessTimes, node_times, summed
from generator.analysis.roofline import (
    LayerResult,
    Roofline,
    StaticTotals,
    layer_results,
    ratio,
    roofline,
    static_totals,
    top_level_nodes,
)
from generator.analysis.stats import own_interval, process_samples
from generator.analysis.summaries import TrialSummary
from generator.analysis.whatif import WhatIf, measured_factors, op_type_whatifs, whatif
from generator.cells import clean
from generator.results.by_trial import trial_rows


@dataclass(frozen=True)
class OpTypeTime:
    """Time of one operator type in a profiled inference (top-level nodes only)."""

    op_type: str
    nodes: int
    calls: int
    dur_us: float
    share: float  # of the summed top-level kernel time


def op_type_times(nodes: pd.DataFrame, trial_key: str) -> list[OpTypeTime]:
    """Mean time per inference by op type, largest first (ties by name), with its share of the total."""
    rows = top_level_nodes(nodes, trial_key)
    total = float(rows["dur_us"].sum())
    groups = rows.groupby(rows["op_type"].astype(str), sort=True)
    out = [OpTypeTime(str(op), len(g), int(g["calls"].fillna(1).sum()), float(g["dur_us"].sum()),
                      float(g["dur_us"].sum()) / total if total > 0 else 0.0) for op, g in groups]
    return sorted(out, key=lambda o: (-o.dur_us, o.op_type))


def op_type_process_times(nodes: pd.DataFrame, trial_key: str) -> dict[str, ProcessTimes]:
    """Time per inference by op type of the top-level nodes, with each profiling process's figure."""
    rows = top_level_nodes(nodes, trial_key)
    out: dict[str, list[ProcessTimes]] = {}
    for op, dur, per in zip(rows["op_type"].astype(str).tolist(), rows["dur_us"].tolist(),
                            rows["dur_process_us"].tolist(), strict=True):
        out.setdefault(op, []).append(node_times(dur, per))
    return {op: summed(parts) for op, parts in out.items()}


@dataclass(frozen=True)
class LayerTime:
    """One executed node of the profiled inference, with what it covers in the version's model file."""

    node_name: str
    op_type: str
    original_nodes: tuple[str, ...]
    weights: tuple[str, ...]
    precision: str | None
    dur_us: float
    share: float  # of the summed top-level kernel time


def top_layers(nodes: pd.DataFrame, trial_key: str, limit: int = 25) -> tuple[list[LayerTime], int]:
    """The `limit` slowest top-level executed nodes (ties by execution order), and how many there are."""
    rows = top_level_nodes(nodes, trial_key)
    rows = rows.sort_values(["dur_us", "exec_order"], ascending=[False, True])
    total = float(rows["dur_us"].sum())
    layers = [LayerTime(
        node_name=str(r["node_name"]), op_type=str(r["op_type"]),
        original_nodes=r["original_nodes"], weights=r["weights"],
        precision=clean(r.get("runtime_precision")), dur_us=float(r["dur_us"]),
        share=float(r["dur_us"]) / total if total > 0 else 0.0,
    ) for _, r in rows.head(limit).iterrows()]
    return layers, len(rows)


def time_accounting(tables: Any, trial: TrialSummary) -> TimeAccounting | None:
    """The trial's profiled kernels against its measured median (generator.analysis.accounting's rule, shared
    with the compare pages, the chooser and the one-shot profile), or None without profiled nodes. `tables`:
    an ExperimentResults-like record (nodes, processes, latencies)."""
    top = top_level_nodes(tables.nodes, trial.trial_key)
    if top.empty:
        return None
    kernels = summed(node_times(d, p) for d, p in zip(top["dur_us"].tolist(), top["dur_process_us"].tolist(),
                                                      strict=True))
    samples = process_samples(tables.processes, tables.latencies, trial.trial_key, trial.preemption_known)
    medians = [float(np.median(x)) for x in samples.latencies_ms if x.size]
    measured = trial.latency_p50_ms
    interval = own_interval(medians, measured) if measured and len(medians) >= 2 else None
    costs = [c for c in trial.profiler_cost_process_us if math.isfinite(c)]
    calls = int(pd.to_numeric(top["calls"], errors="coerce").fillna(1).sum())
    return profiled_accounting(kernels.value, kernels.interval(), measured, interval, trial.profiled_latency_us,
                               float(np.median(costs)) if costs else None, calls)


@dataclass(frozen=True)
class ProcessSpread:
    """Per-process medians of one trial: the spread between the processes its headline figures come from."""

    processes: int
    latency_median_min_ms: float
    latency_median_max_ms: float
    throughput_min_ips: float
    throughput_max_ips: float
    clean: bool  # each process's clean requests and clean throughput (else every request, raw throughput)


def process_spread(processes: pd.DataFrame, latencies: pd.DataFrame, trial: TrialSummary) -> ProcessSpread | None:
    """Min and max over the processes the trial's headline figures pool, or None when none was recorded.

    The processes and requests are the headline's own (generator.analysis.stats.process_samples): with
    preemption known, each usable process's clean requests and clean throughput; every request and the raw
    throughput of every process when none is usable or preemption is unknown. The stored per-process median
    counts every request and every process: beside a headline of clean requests from the usable processes it
    put the headline outside its own range on a busy machine. Without stored requests (a partial copy) the
    `processes` table's all-request medians are the only ones there are."""
    samples = process_samples(processes, latencies, trial.trial_key, trial.preemption_known)
    if not samples.processes:
        return _stored_spread(processes, trial.trial_key)
    medians = [float(np.median(lat)) for lat in samples.latencies_ms]
    thr = [x for x in samples.throughput_ips if math.isfinite(x)]
    return ProcessSpread(samples.processes, min(medians), max(medians), min(thr, default=math.nan),
                         max(thr, default=math.nan), samples.judged_clean)


def _stored_spread(processes: pd.DataFrame, trial_key: str) -> ProcessSpread | None:
    rows = trial_rows(processes, trial_key).dropna(subset=["latency_median_ms", "throughput_ips"])
    if not len(rows):
        return None
    thr, lat = rows["throughput_ips"].astype(float), rows["latency_median_ms"].astype(float)
    return ProcessSpread(len(rows), float(lat.min()), float(lat.max()), float(thr.min()), float(thr.max()), False)


@dataclass(frozen=True)
class ModelSummary:
    """The headline of a profile: configuration, measured speed, cold start, model size and work."""

    trial: TrialSummary
    isa: tuple[str, ...]
    model_bytes: int | None
    spread: ProcessSpread | None
    totals: StaticTotals | None
    achieved_gflops: float | None  # float operations per second of measured throughput, in G
    achieved_gops_int8: float | None
    peak_share_fp32: float | None  # of the machine's probed peak (whole machine, not scaled)
    peak_share_int8: float | None


def model_summary(trials: pd.DataFrame, processes: pd.DataFrame, latencies: pd.DataFrame, layers: pd.DataFrame,
                  environments: pd.DataFrame, trial: TrialSummary) -> ModelSummary:
    """The model summary of one trial.

    Achieved rates are the static operation counts per request times the measured requests per second
    (throughput / batch): at concurrency 1 that is operations / latency; at higher concurrency it counts the
    overlapping requests too, which is what the machine did.
    """
    row = trial_rows(trials, trial.trial_key)
    model_bytes = clean(row["model_bytes"].iloc[0]) if len(row) else None
    env = environments[environments["env_id"].astype(str) == trial.env_id]
    isa = clean(env["isa"].iloc[0]) if len(env) else None
    totals = static_totals(layers, trial.trial_key)
    limits = roofline(environments, trial)
    per_s = trial.throughput_ips / trial.batch if trial.throughput_ips else None
    fp32 = totals.flops * per_s / 1e9 if totals and per_s else None
    int8 = totals.int_ops * per_s / 1e9 if totals and per_s and totals.int_ops else None
    return ModelSummary(
        trial=trial, isa=tuple(map(str, isa)) if isa is not None else (),
        model_bytes=int(model_bytes) if model_bytes is not None else None,
        spread=process_spread(processes, latencies, trial), totals=totals, achieved_gflops=fp32,
        achieved_gops_int8=int8, peak_share_fp32=ratio(fp32, limits.machine_gflops_fp32),
        peak_share_int8=ratio(int8, limits.machine_gops_int8),
    )


@dataclass(frozen=True)
class OpTypeProfile:
    """One executed op type: its share of the time next to its share of the operations."""

    op_type: str
    nodes: int
    calls: int  # kernel calls per inference
    dur_us: float
    time_share: float  # of the summed top-level kernel time
    ops: float  # flops + int_ops attributed to these executed nodes
    ops_share: float | None  # of the operations of every executed node; None without static analysis
    achieved_gops: float | None
    pool_share: float | None  # time-weighted mean share of work run on the pool's other threads
    far_below: int | None  # nodes of this type far below their roofline; None without ceilings to judge by
    times: ProcessTimes | None = None  # dur_us with each profiling process's figure


def op_type_profiles(results: list[LayerResult], judged: bool = True) -> list[OpTypeProfile]:
    """Per executed op type, largest time first (ties by name); shares over every executed node. `judged`:
    whether the layers were set against ceilings (Roofline.measured), so that "far below" counts mean anything."""
    total_ops = sum(r.ops for r in results)
    analysed = any(r.analysed for r in results)
    groups: dict[str, list[LayerResult]] = {}
    for r in results:
        groups.setdefault(r.op_type, []).append(r)
    out = []
    for op, rows in groups.items():
        dur, ops = sum(r.dur_us for r in rows), sum(r.ops for r in rows)
        out.append(OpTypeProfile(
            op_type=op, nodes=len(rows), calls=sum(r.calls for r in rows), dur_us=dur,
            time_share=sum(r.share for r in rows), ops=ops,
            ops_share=(ops / total_ops if total_ops > 0 else 0.0) if analysed else None,
            achieved_gops=ops / (dur * 1e3) if ops > 0 and dur > 0 else None,
            pool_share=_weighted_pool_share(rows), far_below=sum(r.far_below for r in rows) if judged else None,
            times=summed(r.times for r in rows if r.times is not None),
        ))
    return sorted(out, key=lambda o: (-o.dur_us, o.op_type))


def _weighted_pool_share(rows: list[LayerResult]) -> float | None:
    """Mean pool share weighted by time: a 2 ms Conv that runs on one thread matters, a 5 µs Relu not."""
    known = [r for r in rows if r.pool_share is not None]
    weight = sum(r.dur_us for r in known)
    if not known:
        return None
    if weight <= 0:
        return sum(r.pool_share for r in known) / len(known)
    return sum(r.pool_share * r.dur_us for r in known) / weight


@dataclass(frozen=True)
class PoolEfficiency:
    """How much of an op type's work the intra-op pool's other threads ran, against the even split."""

    op_type: str
    dur_us: float
    time_share: float
    pool_share: float
    ideal_share: float  # (threads - 1) / threads: every thread took an equal part
    efficiency: float  # pool_share / ideal_share


def pool_efficiency(profiles: list[OpTypeProfile], threads: int) -> list[PoolEfficiency]:
    """Op types with thread-scheduling statistics, in the order given; empty with a single thread (no pool
    threads, and onnxruntime writes no statistics)."""
    if threads <= 1:
        return []
    ideal = (threads - 1) / threads
    return [PoolEfficiency(p.op_type, p.dur_us, p.time_share, p.pool_share, ideal, p.pool_share / ideal)
            for p in profiles if p.pool_share is not None]


@dataclass(frozen=True)
class ProviderTime:
    """Time on one execution provider; `fallback` when it is not the provider the configuration asked for."""

    provider: str
    nodes: int
    dur_us: float
    share: float
    fallback: bool
    fallback_nodes: tuple[str, ...]  # executed node names, slowest first


def provider_times(results: list[LayerResult]) -> list[ProviderTime]:
    """Time per provider (unknown when the profile did not say), largest first, ties by name."""
    groups: dict[str, list[LayerResult]] = {}
    for r in results:
        groups.setdefault(r.provider or "unknown", []).append(r)
    out = [ProviderTime(
        provider=name, nodes=len(rows), dur_us=sum(r.dur_us for r in rows),
        share=sum(r.share for r in rows), fallback=any(r.fallback for r in rows),
        fallback_nodes=tuple(r.node_name for r in rows if r.fallback),
    ) for name, rows in groups.items()]
    return sorted(out, key=lambda p: (-p.dur_us, p.provider))


@dataclass(frozen=True)
class TrialProfile:
    """Everything a profile page shows for one trial."""

    summary: ModelSummary
    limits: Roofline
    layers: list[LayerResult]
    op_types: list[OpTypeProfile]
    providers: list[ProviderTime]
    pool: list[PoolEfficiency]
    accounting: TimeAccounting | None
    whatifs: list[WhatIf]  # the spec's factors, then each measured comparison
    op_whatifs: list[WhatIf]  # each op type alone, WHATIF_DEFAULT times faster

    @property
    def far_below(self) -> list[LayerResult]:
        return [r for r in self.layers if r.far_below]

    @property
    def unexecuted_ops(self) -> float | None:
        """Operations of the model file that no executed node covers (folded at session creation)."""
        totals = self.summary.totals
        return None if totals is None else max(totals.ops - sum(r.ops for r in self.layers), 0.0)


WHATIF_DEFAULT = 2.0


def trial_profile(tables: Any, trial: TrialSummary, spec_whatif: Mapping[str, float],
                  others: Mapping[str, Mapping[str, float | ProcessTimes]]) -> TrialProfile:
    """The profile of one trial from an ExperimentResults-like `tables` (trials, processes, nodes, layers,
    environments DataFrames). `spec_whatif` is the spec's `whatif` mapping; `others` maps another version's
    name to its time per op type (µs per inference, each with its profiling processes' figures:
    :func:`op_type_process_times`) at the same configuration, for a what-if at that version's measured speeds."""
    limits = roofline(tables.environments, trial)
    results = layer_results(tables.nodes, tables.layers, trial, limits)
    op_types = op_type_profiles(results, limits.measured)
    whatifs = [whatif(results, trial, dict(spec_whatif), "spec", "whatif")] if spec_whatif else []
    mine = {p.op_type: p.times or ProcessTimes(p.dur_us, (p.dur_us,)) for p in op_types}
    for name, times in others.items():
        factors, left_out, per_process = measured_factors(mine, times)
        whatifs.append(whatif(results, trial, factors, "measured", name, left_out,
                              factors_per_process=per_process))
    return TrialProfile(
        summary=model_summary(tables.trials, tables.processes, tables.latencies, tables.layers, tables.environments,
                              trial),
        limits=limits, layers=results, op_types=op_types, providers=provider_times(results),
        pool=pool_efficiency(op_types, trial.threads), accounting=time_accounting(tables, trial),
        whatifs=[w for w in whatifs if w is not None], op_whatifs=op_type_whatifs(results, trial, WHATIF_DEFAULT),
    )
