"""The one-shot profile as one versioned JSON record: ``{"format": "perfsite.profile", "version": 1, ...}``.

The terminal summary and the HTML page are both formatted from this record, never from the measurements
directly, so that every figure they show is the figure the JSON holds. Summary figures are rounded once, here
(``SIGNIFICANT`` digits), and printed as they are stored; the per-layer, temporal and timeline sections keep
full precision.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

import generator
from generator.analysis.accounting import PROFILED_TIMES_RULE, time_accounting
from generator.analysis.limits import LIMIT_UNDERESTIMATED, above_limit, limit_overruns
from generator.machine.environment import Environment
from generator.numbers import rounded
from generator.oneshot.analysis import ProfileAnalysis
from generator.oneshot.measure import Measured, ProfileOptions, noise, scaled_peak_gflops, thread_scale
from generator.oneshot.shapes import ResolvedInputs
from generator.runner.measure import P99_MIN_SAMPLES, latency_stats

FORMAT = "perfsite.profile"
VERSION = 1
SIGNIFICANT = 4
SLOWEST_LAYERS = 10
LATENCY_FIGURES = ("mean", "p50", "p90", "p95", "p99", "std", "min", "max")


def sig(value: float | None, digits: int = SIGNIFICANT) -> float | None:
    """``value`` rounded to ``digits`` significant digits (generator.numbers.rounded)."""
    return rounded(value, digits)


def build_record(model_path: Path, resolved: ResolvedInputs, options: ProfileOptions, env: Environment,
                 measured: Measured, analysis: ProfileAnalysis) -> dict[str, Any]:
    """The whole record (see the module docstring); ``files`` is filled by the writer."""
    peak = scaled_peak_gflops(env, options.threads)
    summary = _summary(model_path, resolved, options, measured, analysis, peak)
    return {
        "format": FORMAT, "version": VERSION, "perfsite_version": generator.__version__,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": _model(model_path),
        "inputs": [{"name": i.name, "dtype": i.dtype, "declared": list(i.declared) if i.declared is not None else None,
                    "shape": list(i.shape)} for i in resolved.inputs],
        "dims": dict(resolved.dims), "defaulted_dims": list(resolved.defaulted),
        "settings": {**asdict(options), "batch": resolved.batch},
        "summary": summary,
        "environment": env.row(),
        "limits": {"peak_gflops_fp32": env.peak_gflops_fp32, "peak_gops_int8": env.peak_gops_int8,
                   "bandwidth_gbs": env.bandwidth_gbs, "peak_gflops_threads": peak,
                   "thread_scale": thread_scale(env, options.threads), "probed_at": env.limits_probed_at,
                   "quality": env.limits_quality, "note": _overrun_note(summary, analysis)},
        "latencies": _latencies(measured.latencies_ms),
        "layers": _layers(analysis),
        "temporal": _temporal(analysis),
        "timeline": {"model_run_us": analysis.timeline.model_run_us,
                     "kernel_sum_us": analysis.timeline.kernel_sum_us,
                     "events": [asdict(e) for e in analysis.timeline.events]},
        "notes": list(analysis.notes),
        "files": {},
    }


def _model(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return {"file": path.name, "path": str(path), "sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data)}


def _summary(model_path: Path, resolved: ResolvedInputs, options: ProfileOptions, measured: Measured,
             analysis: ProfileAnalysis, peak: float | None) -> dict[str, Any]:
    loop = measured.loop
    quiet = noise(measured, options.threads)
    # Headline figures from the clean requests (the sweep's rule); the histogram keeps every request.
    lat = {**latency_stats(measured.latencies_ms), **quiet["clean_latency_ms"]}
    ops = (analysis.total_flops or 0.0) + (analysis.total_int_ops or 0.0)
    achieved = ops / (lat["p50"] * 1e6) if ops > 0 and lat["p50"] > 0 else None  # per ms -> GOP/s
    top = [e for e in analysis.timeline.events if e.parent is None]
    return {
        "model": model_path.name, "provider": options.provider, "threads": options.threads,
        "optimization_level": options.optimization_level, "batch": resolved.batch, "quick": options.quick,
        "inputs": ", ".join(f"{i.name} {i.dtype}[{','.join(map(str, i.shape))}]" for i in resolved.inputs),
        "iterations": int(loop["iterations"]), "timed_s": sig(loop["wall_s"]),
        "cores_used": sig(loop["cores_used"], 3), "throughput_ips": sig(measured.process.clean_throughput_ips),
        "latency_ms": {k: sig(lat[k]) for k in ("mean", "p50", "p90", "p95", "p99")},
        "noise": {"noisy": quiet["noisy"], "reasons": quiet["reasons"],
                  "preemption_known": quiet["preemption_known"],
                  "preempted_share": sig(quiet["preempted_share"], 3)},
        "load_ms": sig(loop["load_ms"]), "first_run_ms": sig(loop["first_run_ms"]),
        "cold_start_ms": sig(float(loop["load_ms"]) + float(loop["first_run_ms"])),
        "peak_rss_mb": sig(loop.get("peak_rss_mb")),
        "total_gflop": sig(analysis.total_flops / 1e9) if analysis.total_flops is not None else None,
        "total_int_gop": sig(analysis.total_int_ops / 1e9) if analysis.total_int_ops else None,
        "achieved_gops": sig(achieved), "peak_gflops": sig(peak),
        "peak_share_pct": sig(100 * achieved / peak, 3) if achieved and peak else None,
        "profiled_model_run_us": sig(analysis.timeline.model_run_us),
        "profiled_kernel_sum_us": sig(analysis.timeline.kernel_sum_us),
        "profiled_nodes": len(top),
        "time_accounting": _accounting(measured.profile, lat["p50"]),
        "limits_exceeded": sum(above_limit(d.limit_share) for d in analysis.layers),
        "slowest_layers": _slowest(analysis),
    }


def _accounting(profile: dict[str, Any], p50_ms: float) -> dict[str, Any] | None:
    """The profiled time against the measured median, by generator.analysis.accounting's rule (the site's)."""
    a = time_accounting(profile.get("profiled_latency_us"), profile.get("model_run_us"),
                        profile.get("kernel_sum_us"), p50_ms)
    if a is None:
        return None
    return {"kernels_us": sig(a.kernel_sum_us), "outside_kernels_us": sig(a.unattributed_us),
            "profiled_latency_us": sig(a.profiled_latency_us), "profiler_overhead_us": sig(a.profiler_overhead_us),
            "measured_latency_us": sig(a.measured_latency_us), "rule": PROFILED_TIMES_RULE}


def _overrun_note(summary: dict[str, Any], analysis: ProfileAnalysis) -> str | None:
    """One sentence when a figure exceeds a measured limit (generator.analysis.limits), else None."""
    share = summary["peak_share_pct"] / 100 if summary["peak_share_pct"] is not None else None
    over = limit_overruns([("the model's rate", share), ("the peak memory traffic", _traffic_share(analysis)),
                           *((f"layer {d.node_name}", d.limit_share) for d in analysis.layers)])
    if over is None:
        return None
    return (f"{LIMIT_UNDERESTIMATED}: {over.count} figure{'s' if over.count != 1 else ''} above the measured limits "
            f"(the highest, {over.worst_what}, at {100 * over.worst_share:.0f} %); the probe measured too low, or "
            "the data came from the caches.")


def _traffic_share(analysis: ProfileAnalysis) -> float | None:
    bandwidth = analysis.bandwidth_gbs
    return analysis.temporal.peak_traffic_gbs / bandwidth if bandwidth else None


def _slowest(analysis: ProfileAnalysis) -> list[dict[str, Any]]:
    total = analysis.timeline.kernel_sum_us
    top = sorted((d for d in analysis.layers if d.parent is None), key=lambda d: (-d.dur_us, d.exec_order))
    return [{"node": d.node_name, "op_type": d.op_type, "dur_us": sig(d.dur_us),
             "share_pct": sig(100 * d.dur_us / total, 3) if total > 0 else None, "bound": d.bound}
            for d in top[:SLOWEST_LAYERS]]


def _latencies(latencies_ms: np.ndarray) -> dict[str, Any]:
    stats = latency_stats(latencies_ms)
    return {"unit": "ms", "count": int(latencies_ms.size), "p99_min_samples": P99_MIN_SAMPLES,
            **{k: stats[k] for k in LATENCY_FIGURES}, "cv": _finite(stats["cv"]),
            "samples_ms": [float(x) for x in latencies_ms]}


def _layers(analysis: ProfileAnalysis) -> list[dict[str, Any]]:
    total = analysis.timeline.kernel_sum_us
    rows = []
    for d in analysis.layers:
        row = asdict(d)
        row.update(achieved_gflops=d.achieved_gflops, limit_share=d.limit_share,
                   share=d.dur_us / total if total > 0 and d.parent is None else None,
                   original_nodes=list(analysis.original_nodes.get(d.node_name, ())))
        rows.append(row)
    return rows


def _temporal(analysis: ProfileAnalysis) -> dict[str, Any]:
    t = analysis.temporal
    return {**{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(t).items()},
            "peak_traffic_gbs": t.peak_traffic_gbs, "peak_compute_gflops": t.peak_compute_gflops,
            "mean_traffic_gbs": t.mean_traffic_gbs, "mean_compute_gflops": t.mean_compute_gflops}


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
