"""Summaries of the machines and runs behind an experiment's results, for the report pages: the environments
trials ran on, the most recent run, and the machine's own noise as a run measured it. DataFrames in, frozen
records out, no I/O (as generator.analysis.summaries, which holds the trials' own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analysis.summaries import optional_float, optional_int
from generator.cells import clean


@dataclass(frozen=True)
class EnvironmentSummary:
    """A machine and software stack the trials ran on."""

    env_id: str
    cpu_model: str | None
    physical_cores: int | None
    logical_cores: int | None
    isa: tuple[str, ...]
    memory_gb: float | None
    os: str | None
    python: str | None
    onnxruntime: str | None
    onnx: str | None
    numpy: str | None
    trials: int


def environment_summaries(environments: pd.DataFrame, trials: pd.DataFrame) -> list[EnvironmentSummary]:
    """The environments that trials reference, by env_id, with the number of trials measured on each."""
    counts = trials["env_id"].astype(str).value_counts().to_dict() if len(trials) else {}
    rows = environments.drop_duplicates("env_id").sort_values("env_id")
    return [environment_summary(row, int(counts[str(row["env_id"])])) for _, row in rows.iterrows()
            if str(row["env_id"]) in counts]


def environment_summary(row: pd.Series, trials: int) -> EnvironmentSummary:
    """One `environments` row as a record, with the number of trials measured on it."""
    isa = clean(row.get("isa"))
    return EnvironmentSummary(
        env_id=str(row["env_id"]), cpu_model=clean(row.get("cpu_model")),
        physical_cores=optional_int(row.get("physical_cores")), logical_cores=optional_int(row.get("logical_cores")),
        isa=tuple(str(x) for x in isa) if isa is not None else (), memory_gb=optional_float(row.get("memory_gb")),
        os=clean(row.get("os")), python=clean(row.get("python")),
        onnxruntime=clean(row.get("onnxruntime")), onnx=clean(row.get("onnx")),
        numpy=clean(row.get("numpy")), trials=trials,
    )


def last_run(runs: pd.DataFrame) -> dict[str, Any] | None:
    """The most recent `perfsite run` (by started_at, then run_id) as a plain dict, or None."""
    if runs is None or not len(runs):
        return None
    row = runs.sort_values(["started_at", "run_id"], na_position="first").iloc[-1]
    return {key: clean(row.get(key)) for key in ("run_id", "started_at", "git_commit", "git_dirty",
                                                   "perfsite_version", "quick", "command")}


@dataclass(frozen=True)
class RunNoise:
    """The machine's own noise as a run measured it before measuring (generator.machine.host_noise): how long
    one loop of fixed work took in the fastest and the slowest window, and the spread of the window medians."""

    run_id: str
    started_at: str | None
    window_s: float
    windows: int
    fastest_ms: float
    slowest_ms: float
    spread: float | None  # 2 σ / median of the window medians

    @property
    def apart(self) -> float:
        """How much slower the slowest window was than the fastest, (slowest - fastest) / fastest."""
        return self.slowest_ms / self.fastest_ms - 1 if self.fastest_ms > 0 else 0.0


def run_noise(runs: pd.DataFrame | None) -> RunNoise | None:
    """The machine's noise of the most recent run that measured it (by started_at, then run_id), or None:
    results written before runs measured it, or only by runs that did not (Ray runs, runs that measured
    nothing)."""
    if runs is None or "host_noise_fastest_ms" not in runs:
        return None
    measured = runs.dropna(subset=["host_noise_fastest_ms", "host_noise_slowest_ms"])
    if not len(measured):
        return None
    row = measured.sort_values(["started_at", "run_id"], na_position="first").iloc[-1]
    return RunNoise(run_id=str(row["run_id"]), started_at=clean(row.get("started_at")),
                    window_s=float(clean(row.get("host_noise_window_s")) or 0.0),
                    windows=optional_int(row.get("host_noise_windows")) or 0,
                    fastest_ms=float(row["host_noise_fastest_ms"]), slowest_ms=float(row["host_noise_slowest_ms"]),
                    spread=optional_float(row.get("host_noise_spread")))
