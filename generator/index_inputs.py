"""Integer inputs that index a table (token ids, token types, positions), and the values the model accepts.

Random integers in [0, 100) gave `token_type_ids` values past the 2 rows of a BERT model's segment table, and
onnxruntime's Gather error said nothing of the input. An input that reaches a Gather's indices, directly or
through shape-only ops (Cast, Unsqueeze, Reshape, ...), takes values below the gathered table's size: the rows
of the constant it reads along the Gather's axis (the smallest, if it indexes several).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnx

# Ops that pass an input's values on unchanged (only the shape or the type changes): the input still indexes
# whatever their output indexes. Arithmetic (Add, Mul) changes the values: the walk stops there.
PASS_THROUGH = frozenset({"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand", "Transpose",
                          "Slice", "Concat", "Tile"})
# com.microsoft ops that gather from tables: input index -> the table's input index (rows along axis 0).
FUSED = {"EmbedLayerNormalization": {0: 2, 1: 4}}


class IndexTable(NamedTuple):
    """The table an integer input indexes: its rows, and the node that reads it (untrusted names)."""

    rows: int
    node: str
    op_type: str

    def note(self, input_name: str, high: int) -> str:
        return (f"{input_name}: random integers in [0, {high}), under the {self.rows} rows of the table that "
                f"{self.op_type} node {self.node!r} indexes")


def index_tables(model_path: Path) -> dict[str, IndexTable]:
    """The model's graph inputs that index a constant table, each with its smallest such table."""
    stat = Path(model_path).stat()
    return _cached(str(Path(model_path).resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _cached(path: str, _mtime_ns: int, _size: int) -> dict[str, IndexTable]:
    graph = onnx.load(path, load_external_data=False).graph
    shapes = {t.name: tuple(t.dims) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            if value is not None:
                shapes[node.output[0]] = tuple(value.dims)
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = defaultdict(list)
    for node in graph.node:
        for i, name in enumerate(node.input):
            consumers[name].append((node, i))
    found = {}
    for value in graph.input:
        if value.name not in shapes:
            table = _smallest(value.name, consumers, shapes)
            if table is not None:
                found[value.name] = table
    return found


def _smallest(name: str, consumers: dict[str, list[tuple[onnx.NodeProto, int]]],
              shapes: dict[str, tuple[int, ...]]) -> IndexTable | None:
    best, stack, seen = None, [name], set()
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        for node, i in consumers.get(value, ()):
            table = _table(node, i, shapes)
            if table is not None and (best is None or table.rows < best.rows):
                best = table
            elif node.op_type in PASS_THROUGH and (i == 0 or node.op_type == "Concat"):
                stack.extend(node.output)
    return best


def _table(node: onnx.NodeProto, i: int, shapes: dict[str, tuple[int, ...]]) -> IndexTable | None:
    if node.op_type == "Gather" and i == 1 and node.input[0] in shapes:
        dims = shapes[node.input[0]]
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        axis = axis + len(dims) if axis < 0 else axis
        rows = dims[axis] if 0 <= axis < len(dims) else None
    elif node.op_type in FUSED and i in FUSED[node.op_type] and len(node.input) > FUSED[node.op_type][i]:
        dims = shapes.get(node.input[FUSED[node.op_type][i]], ())
        rows = dims[0] if dims else None
    else:
        return None
    return IndexTable(int(rows), node.name or node.output[0], node.op_type) if rows else None


def index_problem(model_path: Path, name: str, array: np.ndarray) -> str | None:
    """Why the integer data `array` for input `name` would fail the Gather it feeds (a value past the table's
    rows), in words that follow "FILE ...", or None. Checked before measuring: onnxruntime's Gather error named
    neither the input nor the file, and came after the machine was probed or as a failed trial."""
    table = index_tables(model_path).get(name)
    if table is None or array.dtype.kind not in "iu" or array.size == 0:
        return None
    low, high = int(array.min()), int(array.max())
    if -table.rows <= low and high < table.rows:
        return None
    return (f"holds values from {low} to {high}, but the {table.op_type} node {table.node!r} indexes a table of "
            f"{table.rows} rows with this input: allowed are integers from 0 to {table.rows - 1} (or from "
            f"-{table.rows} counting from the end)")
