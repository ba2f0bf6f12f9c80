"""The profiled inferences of one trial, from every process that profiled them, as rows of the results tables.

A trial's inferences are profiled in several processes (the measurement processes of its first rounds, each
after its timed loop; a separate profiled pass only when none could), so that per-layer figures have an
interval across processes like the timed figures, and one preempted inference cannot make a layer's figure:
each process contributes its **median** per node, and the trial's figure is the median of those
(`nodes.dur_p50_us`). The process that profiled first with `profile_full` also mapped the nodes to the model
file; its node list gives the rows, the others' medians are matched to them by (parent, node name), which
onnxruntime's graph transforms make the same in every session of one model and configuration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from generator.results import clean

NodeKey = tuple[str | None, str]


@dataclass(frozen=True)
class ProfiledProcess:
    """What one process profiled (generator.runner.worker.profile_pass), per inference after its warm-up."""

    node_keys: tuple[NodeKey, ...]
    node_runs_us: tuple[np.ndarray, ...]  # per node (same order), its time in each inference
    latency_runs_us: np.ndarray  # session.run under the profiler
    model_run_runs_us: np.ndarray
    profiler_cost_us: float | None  # inside each kernel call's recorded time (machine.profiler_cost.profiler_cost_us)
    # The inferences its figures are taken over: the clean ones (generator.results.clean) when enough were,
    # else every one; all when the run-delay was not read.
    kept: np.ndarray | None = None
    round: int = -1  # the measurement round it ran in; -1: a separate profiled pass

    @classmethod
    def from_output(cls, output: Mapping[str, Any], rnd: int = -1) -> ProfiledProcess:
        nodes = output.get("nodes", [])
        runs = output.get("node_runs_us") or [[n.get("dur_mean_us", math.nan)] for n in nodes]
        cost = output.get("profiler_cost_us")
        latency = np.asarray(output.get("latency_runs_us") or [output.get("profiled_latency_us")], dtype=np.float64)
        return cls(
            node_keys=tuple((n.get("parent"), str(n["node_name"])) for n in nodes),
            node_runs_us=tuple(np.asarray(r, dtype=np.float64) for r in runs),
            latency_runs_us=latency,
            model_run_runs_us=np.asarray(output.get("model_run_runs_us") or [output.get("model_run_us")],
                                         dtype=np.float64),
            profiler_cost_us=float(cost) if cost is not None and math.isfinite(cost) else None,
            kept=_clean_runs(latency, output.get("run_delays_us")),
            round=rnd,
        )

    @property
    def runs(self) -> int:
        return len(self.latency_runs_us)

    def node_runs(self) -> dict[NodeKey, np.ndarray]:
        """Each node's time in the kept inferences."""
        return {k: self._kept(r) for k, r in zip(self.node_keys, self.node_runs_us, strict=True)}

    def _kept(self, values: np.ndarray) -> np.ndarray:
        return values[self.kept] if self.kept is not None and len(values) == len(self.kept) else values

    def median_latency_us(self) -> float:
        return float(np.median(self._kept(self.latency_runs_us)))

    def median_model_run_us(self) -> float:
        return float(np.median(self._kept(self.model_run_runs_us)))


def _clean_runs(latency_us: np.ndarray, delays_us: Any) -> np.ndarray | None:
    """The inferences no neighbour preempted, when enough of them were (clean.usable); None: keep all."""
    if delays_us is None or len(delays_us) != len(latency_us):
        return None
    preempted = clean.preempted_mask(latency_us / 1e3, np.asarray(delays_us, dtype=np.float64) / 1e3)
    kept = ~preempted
    return kept if clean.usable(int(kept.sum()), len(kept)) else None


def node_rows(trial_key: str, nodes: Sequence[Mapping[str, Any]], profiled: Sequence[ProfiledProcess],
              columns: set[str]) -> list[dict[str, Any]]:
    """Rows of the `nodes` table: the mapped node records of the full profile (`nodes`), their time figures
    taken over every profiling process (`profiled`, in process order). Keys of a record that are not table
    `columns` are dropped."""
    by_process = [p.node_runs() for p in profiled]
    rows = []
    for n in nodes:
        key = (n.get("parent"), str(n["node_name"]))
        runs = [p[key] for p in by_process if key in p]
        medians = [float(np.median(p[key])) if key in p and len(p[key]) else math.nan for p in by_process]
        rows.append({**{k: v for k, v in n.items() if k in columns}, **_times(runs, medians), "trial_key": trial_key})
    return rows


def _times(runs: list[np.ndarray], medians: list[float]) -> dict[str, Any]:
    pooled = np.concatenate(runs) if runs else np.empty(0)
    known = [m for m in medians if math.isfinite(m)]
    if not pooled.size:
        return {"dur_process_p50_us": medians}
    return {
        "dur_mean_us": float(pooled.mean()), "dur_p50_us": float(np.median(known)) if known else math.nan,
        "dur_min_us": float(pooled.min()), "dur_max_us": float(pooled.max()),
        "dur_std_us": float(pooled.std(ddof=1)) if pooled.size > 1 else 0.0, "dur_process_p50_us": medians,
    }


def trial_columns(profiled: Sequence[ProfiledProcess], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The trial's profile columns: medians over the profiling processes of each one's medians, their
    per-process lists, and the kernel sum as the sum of the top-level nodes' figures (so that shares of it add
    up to one)."""
    if not profiled:
        return {"profile_processes": 0}
    latency = [p.median_latency_us() for p in profiled]
    model_run = [p.median_model_run_us() for p in profiled]
    cost = [p.profiler_cost_us if p.profiler_cost_us is not None else math.nan for p in profiled]
    kernels = sum(float(r["dur_p50_us"]) for r in rows
                  if r.get("parent") is None and math.isfinite(float(r.get("dur_p50_us", math.nan))))
    return {
        "profile_processes": len(profiled), "profiled_latency_us": float(np.median(latency)),
        "model_run_us": float(np.median(model_run)), "kernel_sum_us": kernels,
        "profile_iterations": profiled[0].runs, "profiled_latency_process_us": latency,
        "model_run_process_us": model_run, "profiler_cost_process_us": cost,
        "profile_rounds": [p.round for p in profiled],
    }
