"""What each layer of a trial is, for the layer detail panel: its executed kernels and the nodes of the model file
they compute, with attributes, shapes, element types and weights (quantization parameters included).

Pure: the trial's ``nodes`` and ``layers`` rows in (list and shape cells decoded at load,
generator.results.cells), records out. Results written before the ``layers`` table held
attributes and weights (schema version 3) give ``recorded=False``: the panel says "not recorded" for those
parts instead of showing empty cells.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from generator.analysis.frozen_records import built
from generator.analysis.layer_match import executed_columns, top_level_positions
from generator.cells import clean
from generator.results.by_trial import trial_rows


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


def trial_details(trial_key: str, nodes: pd.DataFrame, layers: pd.DataFrame) -> TrialDetails:
    """The trial's executed kernels and the model-file nodes they cover (rows of other trials are ignored).

    The trials of a version at the same shapes (other threads, concurrency) have the same details: a caller
    asks once per group of them (details_fingerprints)."""
    details = _layers(trial_rows(layers, trial_key))
    kernels = tuple(_kernel(*values) for values in zip(
        *executed_columns(trial_rows(nodes, trial_key), KERNEL_FIELDS), strict=True))
    recorded = bool(details) and all(d.attributes is not None for d in details.values())
    return TrialDetails(trial_key, recorded, kernels, details)


def details_fingerprints(nodes: pd.DataFrame, layers: pd.DataFrame) -> dict[str, tuple[bytes | None, ...]]:
    """Trial key -> a fingerprint of everything trial_details reads for the trial: trials with equal fingerprints
    have equal details, so a caller computes them once per fingerprint. Fingerprints of one call compare with
    each other only (decoded cells enter as numbers of this call's, see _repr_codes).

    Details hold no time, so the trials of a version at the same shapes (other threads, concurrency) share
    them; whether they do is read from the rows themselves, not guessed from the configuration (an optimization
    level or a provider changes the kernels too). Each row is hashed column by column in one vectorized pass
    (decoded cells by the number of their repr, which tells None from "None" and a tuple from a list), and a
    trial's rows are combined in execution order (kernels) or stored order (model-file nodes)."""
    kernel_columns = ["trial_key", *(c for c in KERNEL_FIELDS if c in nodes.columns)]
    rows = nodes[kernel_columns].take(top_level_positions(nodes))  # only the columns hashed
    kernels = _fingerprints(rows, kernel_columns[1:])
    model = _fingerprints(layers, [c for c in layers.columns if c != "trial_key"])
    return {key: (kernels.get(key), model.get(key)) for key in kernels.keys() | model.keys()}


def _fingerprints(rows: pd.DataFrame, columns: list[str]) -> dict[str, bytes]:
    """Trial key -> SHA-256 of its rows' `columns`, in the rows' order."""
    if rows.empty:
        return {}
    cells = pd.DataFrame({c: _repr_codes(rows[c]) if rows[c].dtype == object else rows[c] for c in columns})
    hashes = pd.util.hash_pandas_object(cells, index=False).to_numpy()
    positions = rows.reset_index(drop=True).groupby("trial_key", sort=False).indices
    return {str(key): hashlib.sha256(hashes[at].tobytes()).digest() for key, at in positions.items()}


def _repr_codes(column: pd.Series) -> np.ndarray:
    """Each cell's repr as a number, equal for equal reprs (within the column and this call). Each repr is
    made once per distinct object: decoded cells of the same stored value are one object
    (generator.results.cells), and a thousand-node sweep repeats the same shapes node for node. The objects
    are numbered by identity in C (pd.factorize of their ids): a Python loop over a sweep's cells cost more
    than the reprs. Numbers, not the reprs themselves: hashing a sweep's texts row by row cost more than
    numbering the few thousand distinct ones."""
    values = column.tolist()
    ids = np.fromiter(map(id, values), dtype=np.uint64, count=len(values))
    codes, _ = pd.factorize(ids)
    first = np.unique(codes, return_index=True)[1]  # codes number the objects in order of first appearance
    texts = np.empty(len(first), dtype=object)
    texts[:] = [repr(values[i]) for i in first]  # strings: one element each, never nested
    numbers, _ = pd.factorize(texts)  # objects with the same repr (equal values stored twice): one number
    return numbers[codes]


KERNEL_FIELDS = ("node_name", "op_type", "provider", "runtime_precision", "input_shapes", "input_types",
                 "output_shapes", "output_types", "original_nodes", "mapping_method")
LAYER_FIELDS = ("node", "op_type", "domain", "position", "attributes", "input_shapes", "output_shapes",
                "input_types", "output_types", "weight_details", "flops", "int_ops")  # _layer's arguments


def _kernel(name: Any, op_type: Any, provider: Any, precision: Any, input_shapes: tuple, input_types: tuple,
            output_shapes: tuple, output_types: tuple, original_nodes: tuple[str, ...], method: Any) -> KernelDetail:
    """A KernelDetail of one row's KERNEL_FIELDS, in their order."""
    return built(KernelDetail, {
        "name": str(name), "op_type": str(op_type), "provider": _text(provider), "precision": _text(precision),
        "input_shapes": input_shapes, "input_types": input_types, "output_shapes": output_shapes,
        "output_types": output_types, "original_nodes": original_nodes, "mapping_method": _text(method)})


# What _layers reads of every row, so that a damaged file lacking one is named (the other fields may be missing).
_LAYER_NEEDS = ("node", "op_type", "attributes", "input_shapes", "output_shapes", "input_types", "output_types",
                "weight_details")


def _layers(rows: pd.DataFrame) -> dict[str, LayerDetail]:
    """Model-file node -> its LayerDetail, from one trial's `layers` rows, column by column."""
    columns = {c: rows[c].tolist() for c in LAYER_FIELDS if c in rows.columns}
    missing = [c for c in _LAYER_NEEDS if c not in columns]
    if missing and len(rows):
        raise KeyError(missing[0])
    none = [None] * len(rows)
    details = {}
    for values in zip(*(columns.get(c, none) for c in LAYER_FIELDS), strict=True):
        layer = _layer(*values)
        details[layer.node] = layer
    return details


def _layer(node: Any, op_type: Any, domain: Any, position: Any, attributes: dict[str, str] | None,
           input_shapes: tuple, output_shapes: tuple, input_types: tuple | None, output_types: tuple | None,
           weights: tuple[dict[str, Any], ...] | None, flops: Any, int_ops: Any) -> LayerDetail:
    """A LayerDetail of one row's LAYER_FIELDS, in their order."""
    position = _number(position)
    return built(LayerDetail, {
        "node": str(node), "op_type": str(op_type), "domain": _text(domain) or "",
        "position": int(position) if position is not None else None, "attributes": attributes,
        "input_shapes": input_shapes, "input_types": input_types, "output_shapes": output_shapes,
        "output_types": output_types, "weights": weights, "flops": _number(flops), "int_ops": _number(int_ops)})


def _text(value: Any) -> str | None:
    if type(value) is str:  # most cells: clean keeps a string as it is
        return value
    value = clean(value)
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    try:
        number = float(clean(value))
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
