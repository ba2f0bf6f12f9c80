"""List and shape cells, decoded once when an experiment is loaded (generator.results.store.load_experiment).

The `nodes` and `layers` tables store shapes, element types, attributes and weight details as JSON text, and
original nodes and weights as Arrow lists (numpy arrays in pandas). Readers get plain Python values instead and
decode nothing:

- shapes: a tuple of shapes, each a tuple of dimensions (None for a tensor whose shape is unknown);
- names and element types: a tuple of strings;
- what a table of an older schema version lacks (`layers` before version 3: attributes, element types, weight
  details) is None, "not recorded", not empty.

A damaged cell decodes as empty or not recorded: the page says so, and the build goes on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd


def _json(value: Any) -> Any:
    if isinstance(value, (tuple, list, dict)):  # decoded already: decoding twice changes nothing
        return list(value) if isinstance(value, tuple) else value
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return None


def shapes(value: Any) -> tuple:
    """A JSON list of shapes as a tuple of tuples; () when missing or damaged."""
    parsed = _json(value)
    if not isinstance(parsed, list):
        return ()
    return tuple(tuple(s) if isinstance(s, list) else s for s in parsed)


def names(value: Any) -> tuple[str, ...]:
    """An Arrow list of strings (a numpy array in pandas) as a tuple; () when null."""
    if value is None or isinstance(value, float):
        return ()
    items = tuple(value.tolist() if isinstance(value, np.ndarray) else value)  # tolist: one C call per cell
    return items if all(type(v) is str for v in items) else tuple(v if isinstance(v, str) else str(v) for v in items)


def json_list(value: Any) -> tuple:
    """A JSON list as a tuple; () when missing or damaged."""
    parsed = _json(value)
    return tuple(parsed) if isinstance(parsed, list) else ()


def recorded_list(value: Any) -> tuple | None:
    """A JSON list as a tuple; None when not recorded (older schema) or damaged."""
    parsed = _json(value)
    return tuple(parsed) if isinstance(parsed, list) else None


def recorded_object(value: Any) -> dict | None:
    """A JSON object; None when not recorded (older schema) or damaged."""
    parsed = _json(value)
    return parsed if isinstance(parsed, dict) else None


DECODERS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "nodes": {"input_shapes": shapes, "output_shapes": shapes, "input_types": json_list, "output_types": json_list,
              "original_nodes": names, "weights": names},
    "layers": {"input_shapes": shapes, "output_shapes": shapes, "input_types": recorded_list,
               "output_types": recorded_list, "attributes": recorded_object, "weight_details": recorded_list},
}
# The `timeline` table's shapes stay text: a timeline event carries them as the text its chart and the one-shot
# report's published JSON show (generator.timeline.model.TimelineEvent).


def decoded(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """`df`, rows of `table` as stored, with its list and shape cells decoded (see the module docstring)."""
    columns = {c: _decoded_column(decode, df[c]) for c, decode in DECODERS.get(table, {}).items() if c in df.columns}
    return df.assign(**columns) if columns else df


def _decoded_column(decode: Callable[[Any], Any], values: pd.Series) -> pd.Series:
    """A column's cells decoded, every distinct stored value once: the trials of one version repeat the same
    shapes, types, attributes and node names node for node (40 trials of a 1,000-node model: 40,000 cells, a
    few thousand values). Cells with the same value share one decoded value; readers never change them."""
    if values.dtype == object or not pd.api.types.is_string_dtype(values.dtype):
        return pd.Series(_decode_each(decode, values), index=values.index, dtype=object)
    # A text column (JSON cells): pandas numbers its distinct texts in C, missing cells -1, which picks the
    # last entry (the missing value's decoding, as for a None cell).
    codes, texts = pd.factorize(values)
    distinct = _object_array([decode(text) for text in texts.tolist()] + [decode(None)])
    return pd.Series(distinct[codes], index=values.index, dtype=object)


def _object_array(items: list[Any]) -> np.ndarray:
    """`items` as a 1-d object array, each item one element (np.array would nest tuples into a 2-d array)."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def _decode_each(decode: Callable[[Any], Any], values: pd.Series) -> list[Any]:
    """Each cell of an object column decoded, once per distinct value: a text, or an Arrow list (a numpy array
    in pandas, unhashable: its items as a tuple stand for it)."""
    memo: dict[Any, Any] = {}
    out = []
    for value in values.tolist():  # plain Python values: iterating a column cell by cell is slow
        if isinstance(value, np.ndarray):
            key = tuple(value.tolist())  # a list of strings (the schema's only list type): hashable
        elif isinstance(value, str):
            key = value
        else:
            out.append(decode(value))
            continue
        if key in memo:
            out.append(memo[key])
        else:
            out.append(memo.setdefault(key, decode(key)))
    return out
