"""The one-shot profile as one versioned JSON record: ``{"format": "perfsite.profile", "version": 1, ...}``.

The terminal summary and the HTML page are both formatted from this record, never from the measurements
directly, so that every figure they show is the figure the JSON holds. Summary figures are rounded once, here
(``SIGNIFICANT`` digits), and printed as they are stored; the per-layer, temporal and timeline sections keep
full precision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

import generator
from generator.analysis.accounting import PROFILED_TIMES_RULE
from generator.analysis.limits import LIMIT_UNDERESTIMATED, above_limit, limit_overruns
from generator.numbers import rounded
from generator.oneshot.analysis import ProfileAnalysis
from generator.oneshot.shapes import ResolvedInputs
from generator.runner.measure import P99_MIN_SAMPLES, latency_stats
from generator.timeline.view import TimelineView

FORMAT = "perfsite.profile"
VERSION = 1
SIGNIFICANT = 4
SLOWEST_LAYERS = 10
LATENCY_FIGURES = ("mean", "p50", "p90", "p95", "p99", "std", "min", "max")


def sig(value: float | None, digits: int = SIGNIFICANT) -> float | None:
    """``value`` rounded to ``digits`` significant digits (generator.numbers.rounded)."""
    return rounded(value, digits)


def build_record(model_path: Path, resolved: ResolvedInputs, settings: Mapping[str, Any],
                 analysis: ProfileAnalysis) -> dict[str, Any]:
    """The whole record (see the module docstring); ``settings`` are the command's options as measured (quick
    caps applied); ``files`` is filled by the writer."""
    summary = _summary(model_path, resolved, analysis)
    limits, view = analysis.profile.limits, analysis.view
    return {
        "format": FORMAT, "version": VERSION, "perfsite_version": generator.__version__,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"file": model_path.name, "path": str(model_path), "sha256": analysis.model_sha256,
                  "size_bytes": analysis.model_bytes},
        "inputs": [{"name": i.name, "dtype": i.dtype, "declared": list(i.declared) if i.declared is not None else None,
                    "shape": list(i.shape)} for i in resolved.inputs],
        "dims": dict(resolved.dims), "defaulted_dims": list(resolved.defaulted),
        "settings": {**settings, "batch": resolved.batch},
        "summary": summary,
        "environment": analysis.environment,
        "limits": {"peak_gflops_fp32": limits.machine_gflops_fp32, "peak_gops_int8": limits.machine_gops_int8,
                   "bandwidth_gbs": limits.bandwidth_gbs, "peak_gflops_threads": view.peak_gflops,
                   "peak_precision": view.peak_label, "thread_scale": limits.thread_scale,
                   "probed_at": limits.probed_at, "quality": limits.quality,
                   "note": _overrun_note(summary, view), "settled": limits.measured,
                   "unsettled_reason": limits.unsettled_reason},
        "latencies": _latencies(analysis.latencies_ms),
        "layers": _layers(analysis),
        "temporal": _temporal(analysis),
        "timeline": {"model_run_us": view.timeline.model_run_us, "kernel_sum_us": view.timeline.kernel_sum_us,
                     "events": [asdict(e) for e in view.timeline.events]},
        "notes": list(analysis.notes),
        "files": {},
    }


def _summary(model_path: Path, resolved: ResolvedInputs, analysis: ProfileAnalysis) -> dict[str, Any]:
    t, view = analysis.trial, analysis.view
    # Headline figures from the clean requests (the sweep's rule, in the trial row); the histogram keeps every
    # request.
    lat = {"mean": t.latency_mean_ms, **{p: value for p, value in t.percentiles_ms}}
    ops = (analysis.total_flops or 0.0) + (analysis.total_int_ops or 0.0)
    p50 = lat["p50"] or 0.0
    achieved = ops / (p50 * 1e6) if ops > 0 and p50 > 0 else None  # per ms -> GOP/s
    # The compute limit of the model's precision (INT8 for a mostly-integer model), scaled to its threads: the
    # peak the site's profile page sets the timeline against (generator.timeline.view).
    peak = view.peak_gflops
    return {
        "model": model_path.name, "provider": t.provider, "threads": t.threads,
        "optimization_level": t.optimization_level, "batch": resolved.batch, "quick": t.quick,
        "inputs": ", ".join(f"{i.name} {i.dtype}[{','.join(map(str, i.shape))}]" for i in resolved.inputs),
        "iterations": int(t.iterations or 0), "timed_s": sig(analysis.duration_s),
        "cores_used": sig(t.cores_used, 3), "throughput_ips": sig(t.throughput_ips),
        "latency_ms": {k: sig(lat[k]) for k in ("mean", "p50", "p90", "p95", "p99")},
        "noise": {"noisy": t.noisy, "reasons": list(t.noise_reasons), "preemption_known": t.preemption_known,
                  "preempted_share": sig(t.preempted_share, 3), "clean_figures": t.clean_figures},
        "load_ms": sig(t.load_ms), "first_run_ms": sig(t.first_run_ms),
        "cold_start_ms": sig((t.load_ms or 0.0) + (t.first_run_ms or 0.0)),
        "peak_rss_mb": sig(t.peak_rss_mb),
        "total_gflop": sig(analysis.total_flops / 1e9) if analysis.total_flops is not None else None,
        "total_int_gop": sig(analysis.total_int_ops / 1e9) if analysis.total_int_ops else None,
        "achieved_gops": sig(achieved), "peak_gflops": sig(peak),
        "peak_share_pct": sig(100 * achieved / peak, 3) if achieved and peak else None,
        "profiled_model_run_us": sig(view.timeline.model_run_us),
        "profiled_kernel_sum_us": sig(view.timeline.kernel_sum_us),
        "profiled_nodes": len(view.timeline.top_level),
        "time_accounting": _accounting(analysis),
        "limits_exceeded": sum(above_limit(d.limit_share) for d in view.details),
        "slowest_layers": _slowest(analysis),
    }


def _accounting(analysis: ProfileAnalysis) -> dict[str, Any] | None:
    """The profiled time against the measured median, by generator.analysis.accounting's rule (the site's)."""
    a = analysis.profile.accounting
    if a is None:
        return None
    return {"kernels_us": sig(a.kernel_sum_us), "outside_kernels_us": sig(a.outside_us),
            "profiled_latency_us": sig(a.profiled_latency_us), "profiler_overhead_us": sig(a.profiler_overhead_us),
            "profiler_cost_per_call_us": sig(a.profiler_cost_us), "measured_latency_us": sig(a.measured_latency_us),
            "adds_up": a.consistent, "rule": PROFILED_TIMES_RULE}


def _overrun_note(summary: dict[str, Any], view: TimelineView) -> str | None:
    """One sentence when a figure exceeds a measured limit (generator.analysis.limits), else None."""
    share = summary["peak_share_pct"] / 100 if summary["peak_share_pct"] is not None else None
    over = limit_overruns([("the model's rate", share), ("the peak memory traffic", view.traffic_share),
                           *((f"layer {d.node_name}", d.limit_share) for d in view.details)])
    if over is None:
        return None
    return (f"{LIMIT_UNDERESTIMATED}: {over.count} figure{'s' if over.count != 1 else ''} above the measured limits "
            f"(the highest, {over.worst_what}, at {100 * over.worst_share:.0f} %); the probe measured too low, or "
            "the data came from the caches.")


def _slowest(analysis: ProfileAnalysis) -> list[dict[str, Any]]:
    total = analysis.view.timeline.kernel_sum_us
    top = sorted((d for d in analysis.view.details if d.parent is None), key=lambda d: (-d.dur_us, d.exec_order))
    return [{"node": d.node_name, "op_type": d.op_type, "dur_us": sig(d.dur_us),
             "share_pct": sig(100 * d.dur_us / total, 3) if total > 0 else None, "bound": d.bound}
            for d in top[:SLOWEST_LAYERS]]


def _latencies(latencies_ms: np.ndarray) -> dict[str, Any]:
    stats = latency_stats(latencies_ms)
    return {"unit": "ms", "count": int(latencies_ms.size), "p99_min_samples": P99_MIN_SAMPLES,
            **{k: stats[k] for k in LATENCY_FIGURES}, "cv": _finite(stats["cv"]),
            "samples_ms": [float(x) for x in latencies_ms]}


def _layers(analysis: ProfileAnalysis) -> list[dict[str, Any]]:
    total = analysis.view.timeline.kernel_sum_us
    rows = []
    for d in analysis.view.details:
        row = asdict(d)
        row.update(achieved_gflops=d.achieved_gflops, limit_share=d.limit_share,
                   share=d.dur_us / total if total > 0 and d.parent is None else None,
                   original_nodes=list(analysis.original_nodes.get(d.node_name, ())))
        rows.append(row)
    return rows


def _temporal(analysis: ProfileAnalysis) -> dict[str, Any]:
    t = analysis.view.stats
    return {**{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(t).items()},
            "peak_traffic_gbs": t.peak_traffic_gbs, "peak_compute_gflops": t.peak_compute_gflops,
            "mean_traffic_gbs": t.mean_traffic_gbs, "mean_compute_gflops": t.mean_compute_gflops}


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
