"""Files of an older results schema version, read in today's schema: the rules docs/results.md lists under
"Schema versions" (generator.results.schema.SCHEMA_HISTORY), applied in memory when a file is read. Nothing is
rewritten on disk: a results folder stays what the perfsite that measured it wrote, and a store may hold
experiments of several versions side by side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from generator.results.schema import arrow_schema

# The runner of schema versions 1-3 capped the profiled pass at this many inferences in quick mode
# (generator.runner.orchestrate.measure_settings); the spec's value otherwise.
QUICK_PROFILE_ITERATIONS_BEFORE_V4 = 3

# A stored spec by its sha256 (specs/<sha>.json as a dict), or None when the folder lacks it.
SpecLookup = Callable[[str], Mapping[str, Any] | None]


def migrated(data: pa.Table, table: str, version: int, specs: SpecLookup) -> pa.Table:
    """`data`, read from a `table` file of schema `version` (older than today's), in today's schema."""
    data = with_every_column(data, table)
    if table == "trials" and version < 4:
        data = _with_profile_iterations(data, specs)
    if table == "trials" and version < 5:
        data = _one_profiling_process(data)
    if table == "nodes" and version < 5:
        data = _set(data, "dur_process_p50_us", _singletons(data.column("dur_p50_us")))
    if table == "trials" and version < 9:  # perfsite's own decode loop was the one engine
        generative = [v is not None for v in data.column("prompt_tokens").to_pylist()]
        data = _set(data, "engine", pa.array(["onnxruntime" if g else None for g in generative], pa.string()))
    return data


def _one_profiling_process(data: pa.Table) -> pa.Table:
    """Before version 5 a trial's profile came from one separate process: its figures are that process's."""
    profiled = [bool(x) for x in data.column("profiled").to_pylist()]
    data = _set(data, "profile_processes", pa.array([1 if p else 0 for p in profiled], pa.int64()))
    data = _set(data, "profiled_latency_process_us", _singletons(data.column("profiled_latency_us")))
    data = _set(data, "model_run_process_us", _singletons(data.column("model_run_us")))
    return _set(data, "profiler_cost_process_us", pa.array([[math.nan] if p else None for p in profiled],
                                                            pa.list_(pa.float64())))


def _singletons(column: pa.ChunkedArray) -> pa.Array:
    """Each value as a list of one (null stays null)."""
    return pa.array([None if v is None else [float(v)] for v in column.to_pylist()], pa.list_(pa.float64()))


def _set(data: pa.Table, name: str, values: pa.Array) -> pa.Table:
    index = data.schema.get_field_index(name)
    return data.set_column(index, data.schema.field(index), values)


def with_every_column(data: pa.Table, table: str) -> pa.Table:
    """`data` in today's column order and types: every column it lacks (added since, see
    schema.SCHEMA_HISTORY) is null, which the readers take as "not recorded" (v1: no run-delay, so every
    request counts as clean and preemption_known is null)."""
    schema = arrow_schema(table)
    columns = [data.column(f.name).cast(f.type, safe=False) if f.name in data.column_names
               else pa.nulls(data.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _with_profile_iterations(data: pa.Table, specs: SpecLookup) -> pa.Table:
    """Version 4 stores the profiled pass's inferences per trial; before, readers rebuilt them from the
    trial's spec as the runner had chosen them (schema.PROFILE_ITERATIONS_RULE)."""
    rows = data.select(["spec_sha256", "quick", "profiled"]).to_pylist()
    values = pa.array([profile_iterations_before_v4(r, specs) for r in rows], pa.int64())
    index = data.schema.get_field_index("profile_iterations")
    return data.set_column(index, data.schema.field(index), values)


def profile_iterations_before_v4(row: Mapping[str, Any], specs: SpecLookup) -> int | None:
    """The profiled inferences of a trial row written before version 4 (schema.PROFILE_ITERATIONS_RULE)."""
    spec = specs(str(row["spec_sha256"])) if row["profiled"] else None
    wanted = ((spec or {}).get("measure") or {}).get("profile_iterations")
    if wanted is None:
        return None  # no profiled pass, or its spec is lost: the count is unknown
    return min(int(wanted), QUICK_PROFILE_ITERATIONS_BEFORE_V4) if row["quick"] else int(wanted)
