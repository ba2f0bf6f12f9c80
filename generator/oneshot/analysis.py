"""The one trial of a one-shot profile, read from its results folder by the site's own analysis: the trial's
summary, its profile (generator.analysis.profile.trial_profile: limits, layers, time accounting, static totals)
and its timeline view (generator.timeline.view: the median profiled inference, its temporal statistics and
layer details against the peak of the model's precision), plus the few facts the report adds (every request
in order, the environment row, the original nodes of every executed node)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from generator.analysis.profile import TrialProfile, trial_profile
from generator.analysis.roofline import trial_layers
from generator.analysis.summaries import TrialSummary, trial_summary
from generator.cells import clean
from generator.errors import RunError
from generator.results.store import ExperimentResults
from generator.timeline.view import TimelineView, timeline_view


@dataclass(frozen=True)
class ProfileAnalysis:
    """What the JSON record and the page of a one-shot profile are made of."""

    trial: TrialSummary
    duration_s: float  # the timed phase's wall time
    model_sha256: str
    model_bytes: int
    profile: TrialProfile
    view: TimelineView
    latencies_ms: np.ndarray  # every timed request, in order
    original_nodes: dict[str, tuple[str, ...]]  # executed node name -> original node keys
    environment: dict[str, Any]  # the trial's `environments` row, plain values
    total_flops: float | None  # static analysis over the model's nodes (None: nothing could be counted)
    total_int_ops: float | None
    notes: tuple[str, ...]  # what the static analysis could not count


def analyse_trial(results: ExperimentResults, model_path: Path) -> ProfileAnalysis:
    """The analysis of the results folder's one (ok, profiled) trial; RunError when its profiled pass recorded
    no kernel call."""
    row = results.trials.iloc[-1]
    trial = trial_summary(row)
    profile = trial_profile(results, trial, {}, {})
    view = timeline_view(results.timeline, trial.trial_key, profile.layers, profile.limits)
    if view is None:
        raise RunError(f"{model_path}: the profiled runs recorded no kernel call; a model without nodes has no "
                       "profile to report.")
    static = trial_layers(results.layers, trial.trial_key)
    totals = profile.summary.totals
    uncounted = totals.uncounted_op_types if totals is not None else ()
    return ProfileAnalysis(
        trial=trial, duration_s=float(row["duration_s"]), model_sha256=str(row["model_sha256"]),
        model_bytes=int(row["model_bytes"]), profile=profile, view=view,
        latencies_ms=_latencies(results.latencies, trial.trial_key),
        original_nodes=_original_nodes(results.nodes, trial.trial_key),
        environment=_environment(results.environments, trial.env_id),
        total_flops=_total(static, "flops"), total_int_ops=_total(static, "int_ops"),
        notes=(f"Op types without a FLOP counter: {', '.join(uncounted)}: listed, not guessed. Their operations "
               "are not in the totals.",) if uncounted else (),
    )


def _latencies(latencies: pd.DataFrame, trial_key: str) -> np.ndarray:
    rows = latencies[latencies["trial_key"] == trial_key].sort_values(["process", "stream", "iteration"])
    return rows["latency_ms"].to_numpy(dtype=np.float64)


def _original_nodes(nodes: pd.DataFrame, trial_key: str) -> dict[str, tuple[str, ...]]:
    rows = nodes[nodes["trial_key"] == trial_key]  # list cells come decoded (generator.results.cells)
    return {str(name): tuple(value) for name, value in zip(rows["node_name"], rows["original_nodes"], strict=True)}


def _environment(environments: pd.DataFrame, env_id: str) -> dict[str, Any]:
    row = environments[environments["env_id"].astype(str) == env_id].iloc[0]
    return {str(k): _plain(v) for k, v in row.items()}


def _plain(value: Any) -> Any:
    """A cell as JSON-ready Python: lists for list cells, None for every kind of missing."""
    if isinstance(value, np.ndarray | list | tuple):
        return [_plain(v) for v in value]
    return clean(value)


def _total(static: pd.DataFrame, column: str) -> float | None:
    values = pd.to_numeric(static[column], errors="coerce").dropna()
    return float(values.sum()) if len(values) else None
