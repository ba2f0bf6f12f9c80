"""What each layer of a trial is, for the layer detail panel: its executed kernels and the nodes of the model file
they compute, with attributes, shapes, element types and weights (quantization parameters included).

Pure: the trial's ``nodes`` and ``layers`` rows in, records out. Results written before the ``layers`` table held
attributes and weights (schema version 3) give ``recorded=False``: the panel says "not recorded" for those
parts instead of showing empty cells.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analysis.layer_match import executed_rows
from generator.analysis.summaries import clean


@dataclass(frozen=True)
class KernelDetail:
    """One top-level executed node of the profiled pass."""

    name: str
    op_type: str
    provider: str | None
    precision: str | None
    input_shapes: tuple
    input_types: tuple
    output_shapes: tuple
    output_types: tuple
    original_nodes: tuple[str, ...]
    mapping_method: str | None


@dataclass(frozen=True)
class LayerDetail:
    """One node of the version's model file, at the trial's input shapes."""

    node: str
    op_type: str
    domain: str
    position: int | None
    attributes: dict[str, str] | None  # None: not recorded (results of schema version 2 or older)
    input_shapes: tuple
    input_types: tuple | None
    output_shapes: tuple
    output_types: tuple | None
    weights: tuple[dict[str, Any], ...] | None
    flops: float | None
    int_ops: float | None


@dataclass(frozen=True)
class TrialDetails:
    trial_key: str
    recorded: bool  # the layers table holds attributes and weights
    kernels: tuple[KernelDetail, ...]  # in execution order
    layers: dict[str, LayerDetail]


def trial_details(trial_key: str, nodes: pd.DataFrame, layers: pd.DataFrame,
                  memo: dict[tuple, Any] | None = None) -> TrialDetails:
    """The trial's executed kernels and the model-file nodes they cover (rows of other trials are ignored).

    `memo` (a dict the caller keeps for one experiment) parses each distinct row once: the trials of a version
    at the same shapes (other threads, concurrency) have the same rows but their trial key, and a sweep of a
    thousand-node model has tens of thousands of them."""
    memo = {} if memo is None else memo
    kernels = tuple(_memo(memo, tuple((k, _strings(r.get(k)) if k == "original_nodes" else r.get(k))
                                      for k in KERNEL_FIELDS), _kernel)
                    for r in executed_rows(nodes[nodes["trial_key"] == trial_key]))
    mine = layers[layers["trial_key"] == trial_key].drop(columns="trial_key")
    rows = mine.to_dict("records")
    details = {str(r["node"]): _memo(memo, tuple(r.items()), _layer) for r in rows}
    recorded = bool(rows) and all(d.attributes is not None for d in details.values())
    return TrialDetails(trial_key, recorded, kernels, details)


KERNEL_FIELDS = ("node_name", "op_type", "provider", "runtime_precision", "input_shapes", "input_types",
                 "output_shapes", "output_types", "original_nodes", "mapping_method")


def _memo(memo: dict[tuple, Any], items: tuple[tuple[str, Any], ...], parse: Any) -> Any:
    key = (parse.__name__, items)
    if key not in memo:
        memo[key] = parse(dict(items))
    return memo[key]


def _kernel(row: dict[str, Any]) -> KernelDetail:
    return KernelDetail(
        name=str(row["node_name"]), op_type=str(row["op_type"]), provider=_text(row.get("provider")),
        precision=_text(row.get("runtime_precision")),
        input_shapes=_json_list(row.get("input_shapes")), input_types=_json_list(row.get("input_types")),
        output_shapes=_json_list(row.get("output_shapes")), output_types=_json_list(row.get("output_types")),
        original_nodes=_strings(row.get("original_nodes")), mapping_method=_text(row.get("mapping_method")),
    )


def _layer(row: dict[str, Any]) -> LayerDetail:
    attributes = _json(row.get("attributes"))
    weights = _json(row.get("weight_details"))
    position = _number(row.get("position"))
    return LayerDetail(
        node=str(row["node"]), op_type=str(row["op_type"]), domain=_text(row.get("domain")) or "",
        position=int(position) if position is not None else None,
        attributes=attributes if isinstance(attributes, dict) else None,
        input_shapes=_json_list(row.get("input_shapes")), output_shapes=_json_list(row.get("output_shapes")),
        input_types=_json_list(row.get("input_types")) if _text(row.get("input_types")) else None,
        output_types=_json_list(row.get("output_types")) if _text(row.get("output_types")) else None,
        weights=tuple(weights) if isinstance(weights, list) else None, flops=_number(row.get("flops")),
        int_ops=_number(row.get("int_ops")),
    )


def _text(value: Any) -> str | None:
    value = clean(value)
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    try:
        number = float(clean(value))
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _json(value: Any) -> Any:
    text = _text(value)
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:  # a damaged cell shows as "not recorded", it does not stop the build
        return None


def _json_list(value: Any) -> tuple:
    parsed = _json(value)
    return tuple(parsed) if isinstance(parsed, list) else ()


def _strings(value: Any) -> tuple[str, ...]:
    if value is None or isinstance(value, float):
        return ()
    return tuple(str(v) for v in (value.tolist() if hasattr(value, "tolist") else value))
