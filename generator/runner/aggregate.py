"""Turn what the measurement processes of one trial reported into the rows of the results tables.

Statistics are pooled over every request of every process for the distribution figures (mean, percentiles),
but the *process* is the unit of repetition for everything that says how stable a figure is: throughput and
cores used are medians over processes, and the spread of per-process medians is a noise rule of its own. On
shared machines a process sometimes gets fewer cores than it asked for; that shows here instead of being
averaged in silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from generator.plan import Trial
from generator.runner.measure import latency_stats

# Thresholds of the noise rules (docs/methodology.md explains each).
NOISE_CV = 0.10
NOISE_SPREAD = 0.05
NOISE_CORES_SHARE = 0.8


@dataclass(frozen=True)
class ProcessOutcome:
    """What one measurement process reported (see generator.runner.worker, measure mode)."""

    process: int
    round: int
    iterations: int
    items: int
    wall_s: float
    cpu_s: float
    load_ms: float
    first_run_ms: float
    peak_rss_mb: float | None
    arena_mb: float | None
    latencies_ms: tuple[np.ndarray, ...] = field(repr=False)  # one array per stream

    @property
    def all_latencies_ms(self) -> np.ndarray:
        return np.concatenate(self.latencies_ms) if self.latencies_ms else np.empty(0)

    @property
    def cores_used(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else float("nan")

    @property
    def throughput_ips(self) -> float:
        return self.items / self.wall_s if self.wall_s > 0 else float("nan")

    def row(self, trial_key: str) -> dict[str, Any]:
        lat = self.all_latencies_ms
        return {
            "trial_key": trial_key,
            "process": self.process,
            "round": self.round,
            "iterations": self.iterations,
            "items": self.items,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "cores_used": self.cores_used,
            "latency_median_ms": float(np.median(lat)) if lat.size else None,
            "latency_mean_ms": float(np.mean(lat)) if lat.size else None,
            "throughput_ips": self.throughput_ips,
            "load_ms": self.load_ms,
            "first_run_ms": self.first_run_ms,
            "peak_rss_mb": self.peak_rss_mb,
            "arena_mb": self.arena_mb,
        }


def latency_table(trial_key: str, processes: Sequence[ProcessOutcome]) -> pa.Table:
    """Every timed request as Arrow columns (built from arrays: a trial can hold 100k requests)."""
    cols: dict[str, list[np.ndarray]] = {"process": [], "stream": [], "iteration": [], "latency_ms": []}
    for p in processes:
        for s, lat in enumerate(p.latencies_ms):
            n = len(lat)
            cols["process"].append(np.full(n, p.process, dtype=np.int64))
            cols["stream"].append(np.full(n, s, dtype=np.int64))
            cols["iteration"].append(np.arange(n, dtype=np.int64))
            cols["latency_ms"].append(np.asarray(lat, dtype=np.float64))
    arrays = {k: np.concatenate(v) if v else np.empty(0) for k, v in cols.items()}
    n = len(arrays["latency_ms"])
    return pa.table({"trial_key": pa.array([trial_key] * n, pa.string()), **arrays})


def noise_reasons(cv: float, spread: float, cores_used: float, cores_expected: float) -> list[str]:
    """The noise rules that fire; each is explained on the methodology page."""
    reasons = []
    if cv >= NOISE_CV:
        reasons.append(f"cv {cv:.0%} ≥ {NOISE_CV:.0%}")
    if spread > NOISE_SPREAD:
        reasons.append(f"process medians spread {spread:.0%} > {NOISE_SPREAD:.0%}")
    if cores_used < NOISE_CORES_SHARE * cores_expected:
        reasons.append(f"cores used {cores_used:.2f} < {NOISE_CORES_SHARE} × {cores_expected:g}")
    return reasons


def measurement_columns(
    processes: Sequence[ProcessOutcome], cores_expected: float, percentile: str
) -> dict[str, Any]:
    """Trial-level latency, throughput and noise figures from its processes."""
    lat = np.concatenate([p.all_latencies_ms for p in processes])
    stats = latency_stats(lat)
    medians = np.array([np.median(p.all_latencies_ms) for p in processes])
    spread = float((medians.max() - medians.min()) / np.median(medians)) if len(medians) > 1 else 0.0
    cores = float(np.median([p.cores_used for p in processes]))
    reasons = noise_reasons(stats["cv"], spread, cores, cores_expected)
    rss = [p.peak_rss_mb for p in processes if p.peak_rss_mb is not None]
    arena = [p.arena_mb for p in processes if p.arena_mb is not None]
    return {
        **{f"latency_{k}_ms": stats[k] for k in ("mean", "p50", "p90", "p95", "p99", "std", "min", "max")},
        "latency_headline_ms": stats[percentile] if stats[percentile] is not None else stats["p95"],
        "cv": stats["cv"],
        "throughput_ips": float(np.median([p.throughput_ips for p in processes])),
        "iterations": int(sum(p.iterations for p in processes)),
        "duration_s": float(sum(p.wall_s for p in processes)),
        "processes": len(processes),
        "process_median_spread": spread,
        "cores_used": cores,
        "cores_expected": cores_expected,
        "noisy": bool(reasons),
        "noise_reasons": "; ".join(reasons) or None,
        "load_ms": float(np.median([p.load_ms for p in processes])),
        "first_run_ms": float(np.median([p.first_run_ms for p in processes])),
        "peak_rss_mb": max(rss) if rss else None,
        "arena_mb": max(arena) if arena else None,
    }


def cores_expected(trial: Trial, logical_cores: int | None) -> float:
    """How many cores the configuration can keep busy: threads × concurrency, capped by the machine."""
    wanted = trial.config.threads * trial.config.concurrency
    return float(min(wanted, logical_cores or wanted))


def config_columns(trial: Trial) -> dict[str, Any]:
    c = trial.config
    return {
        "batch": c.batch,
        "threads": c.threads,
        "concurrency": c.concurrency,
        "optimization_level": c.optimization_level,
        "provider": c.provider,
        "spinning": c.spinning,
        "inter_op_threads": c.inter_op_threads,
        "dims": json.dumps(dict(c.dims), sort_keys=True),
        "config_label": c.label,
    }


def node_rows(trial_key: str, nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the `nodes` table from the profiled pass's node records (already mapped in the worker)."""
    from generator.results.schema import column_names

    names = set(column_names("nodes"))
    return [{**{k: v for k, v in n.items() if k in names}, "trial_key": trial_key} for n in nodes]
