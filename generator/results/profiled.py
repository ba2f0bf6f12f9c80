"""Profiled node times as every reader uses them: added to the `nodes` table when an experiment is loaded.

- ``dur_process_us``: per profiling process, the node's median time per inference less the profiler's own
  cost inside each of its kernel calls, as that process measured it (``trials.profiler_cost_process_us``,
  generator.machine.profiler_cost.profiler_cost_us), never below 0; a tuple in process order.
- ``dur_us``: the median of those: the node's figure that pages rank, share, sum and compare;
- ``dur_process_std_us``: their standard deviation, the spread a layer ratio's interval takes from the
  processes (generator.analysis.layer_match.member_time); with one process (results before schema 5, a trial
  measured in one process) the spread of its inferences (``dur_std_us``), over its ``profile_iterations``
  (spread_count): an interval of request-to-request variation only, as one process's timed figures have.

The correction subtracts a measured fixed cost per call; it does not rescale. Where a process's cost is unknown
(results written before schema 5, a calibration that failed) the trial's median known cost stands in, and with
none known nothing is subtracted (the accounting says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


def with_profiled_times(nodes: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """`nodes` with ``dur_us`` and ``dur_process_us`` (see the module docstring)."""
    if nodes.empty:
        return nodes.assign(dur_us=pd.Series(dtype="float64"), dur_process_us=pd.Series(dtype=object),
                            dur_process_std_us=pd.Series(dtype="float64"))
    costs = {str(k): trial_costs(v) for k, v in zip(trials["trial_key"], _column(trials, "profiler_cost_process_us"),
                                                      strict=True)}
    calls = pd.to_numeric(nodes["calls"], errors="coerce") if "calls" in nodes.columns else pd.Series(1.0, nodes.index)
    calls = calls.fillna(1).clip(lower=1).to_numpy(dtype=np.float64)
    per_process = [
        _corrected(_values(medians, p50, mean), costs.get(str(key), ()), n)
        for key, medians, p50, mean, n in zip(nodes["trial_key"].tolist(), _column(nodes, "dur_process_p50_us"),
                                              _column(nodes, "dur_p50_us"), _column(nodes, "dur_mean_us"),
                                              calls.tolist(), strict=True)
    ]
    known = [tuple(x for x in p if math.isfinite(x)) for p in per_process]
    figure = [float(np.median(v)) if v else math.nan for v in known]
    within = _column(nodes, "dur_std_us")
    spread = [float(np.std(v, ddof=1)) if len(v) > 1 else _finite(w) for v, w in zip(known, within, strict=True)]
    return nodes.assign(dur_us=figure, dur_process_us=per_process, dur_process_std_us=spread)


def spread_count(profile_processes: Any, profile_iterations: Any) -> int:
    """What a node's ``dur_process_std_us`` is a spread over: its profiling processes, or with one process, its
    profiled inferences; 1 when unknown (the widest interval)."""
    processes = _int(profile_processes)
    if processes >= 2:
        return processes
    return max(_int(profile_iterations), 1)


def _int(x: Any) -> int:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return 0
    return int(value) if math.isfinite(value) else 0


def _finite(x: Any) -> float:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def trial_costs(values: Any) -> tuple[float, ...]:
    """A trial's per-process profiler costs, unknown ones (NaN) replaced by the median of the known ones;
    empty when none is known."""
    raw = [float(v) for v in (values.tolist() if isinstance(values, np.ndarray) else values or ())
           if v is not None]
    known = [v for v in raw if math.isfinite(v)]
    if not known:
        return ()
    fill = float(np.median(known))
    return tuple(v if math.isfinite(v) else fill for v in raw)


def _column(df: pd.DataFrame, name: str) -> list[Any]:
    return df[name].tolist() if name in df.columns else [None] * len(df)


def _values(medians: Any, p50: Any, mean: Any) -> tuple[float, ...]:
    """The stored per-process medians; the node's one median (its mean, in records that lack it) where none
    were stored."""
    if isinstance(medians, np.ndarray | list | tuple) and len(medians):
        return tuple(float(v) if v is not None else math.nan for v in medians)
    for value in (p50, mean):
        if value is not None and not pd.isna(value):
            return (float(value),)
    return ()


def _corrected(medians: Sequence[float], costs: Sequence[float], calls: float) -> tuple[float, ...]:
    if not costs:
        return tuple(medians)
    fill = float(np.median(costs))
    return tuple(max(0.0, m - calls * (costs[i] if i < len(costs) else fill)) if math.isfinite(m) else m
                 for i, m in enumerate(medians))


def ensured(nodes: pd.DataFrame) -> pd.DataFrame:
    """`nodes` with the derived columns, computed without the profiler's cost (unknown here) when a caller gave
    rows that were not loaded through ExperimentResults (which adds them with the costs)."""
    if "dur_us" in nodes.columns:
        return nodes
    return with_profiled_times(nodes, pd.DataFrame({"trial_key": pd.Series(dtype=object)}))
