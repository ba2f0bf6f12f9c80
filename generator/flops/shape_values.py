"""Values of small tensors computed from shapes (Shape -> Gather -> Slice/Concat/Range ... chains), folded
into constants so that ONNX's shape inference gives concrete shapes to the ops that read them.

Exporters compute sequence lengths and position ranges at run time from ``Shape``; ONNX's data propagation
follows such chains into Reshape but not into Slice, Range, Expand or ConstantOfShape, so a transformer's
position-embedding Slice is left without a shape. At the trial's concrete input shapes these values are
known: each round, nodes whose inputs are all known small values (or, for Shape and Size, whose input has a
known shape) are evaluated here with numpy and replaced by initializers in the analysis copy of the model.
Only the main graph is folded, and only tensors of at most ``MAX_ELEMENTS`` elements: weights are never
evaluated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

MAX_ELEMENTS = 4096
Values = dict[str, np.ndarray]
Evaluate = Callable[[onnx.NodeProto, list[np.ndarray | None], dict], np.ndarray]


def _axes(node_inputs: list[np.ndarray | None], attrs: dict, index: int) -> list[int]:
    """Axes from input ``index`` (opset >= 13) or the ``axes`` attribute (before)."""
    if len(node_inputs) > index and node_inputs[index] is not None:
        return [int(a) for a in node_inputs[index]]
    return [int(a) for a in attrs.get("axes", [])]


def _unsqueeze(x: np.ndarray, axes: list[int]) -> np.ndarray:
    rank = x.ndim + len(axes)
    for axis in sorted(a % rank for a in axes):
        x = np.expand_dims(x, axis)
    return x


def _slice(ins: list[np.ndarray | None], attrs: dict) -> np.ndarray:
    data, starts, ends = ins[0], ins[1], ins[2]
    axes = list(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
    steps = list(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        # numpy clamps out-of-range bounds as ONNX does (INT64_MAX ends included).
        index[int(axis) % data.ndim] = slice(int(start), int(end), int(step))
    return data[tuple(index)]


def _reshape(data: np.ndarray, shape: np.ndarray, attrs: dict) -> np.ndarray:
    target = [int(d) for d in shape]
    if not attrs.get("allowzero", 0):
        target = [data.shape[i] if d == 0 else d for i, d in enumerate(target)]
    return data.reshape(target)


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ONNX integer division truncates toward zero (numpy's // floors)."""
    if np.issubdtype(a.dtype, np.integer):
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype)
    return a / b


def _constant_of_shape(shape: np.ndarray, attrs: dict) -> np.ndarray:
    value = attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(-1)[0] if value is not None else np.float32(0)
    return np.full([int(d) for d in shape], fill, dtype=np.asarray(fill).dtype)


EVALUATORS: dict[str, Evaluate] = {
    "Identity": lambda n, i, a: i[0],
    "Cast": lambda n, i, a: i[0].astype(helper.tensor_dtype_to_np_dtype(int(a["to"]))),
    "Gather": lambda n, i, a: np.take(i[0], i[1].astype(np.int64), axis=int(a.get("axis", 0))),
    "Concat": lambda n, i, a: np.concatenate([x for x in i if x is not None], axis=int(a["axis"])),
    "Unsqueeze": lambda n, i, a: _unsqueeze(i[0], _axes(i, a, 1)),
    "Squeeze": lambda n, i, a: np.squeeze(i[0], axis=tuple(_axes(i, a, 1)) or None),
    "Slice": lambda n, i, a: _slice(i, a),
    "Reshape": lambda n, i, a: _reshape(i[0], i[1], a),
    "Transpose": lambda n, i, a: np.transpose(i[0], a.get("perm")),
    "Range": lambda n, i, a: np.arange(i[0], i[1], i[2]).astype(i[0].dtype),
    "ConstantOfShape": lambda n, i, a: _constant_of_shape(i[0], a),
    "Expand": lambda n, i, a: np.broadcast_to(i[0], np.broadcast_shapes(i[0].shape, tuple(int(d) for d in i[1]))),
    "Add": lambda n, i, a: np.add(i[0], i[1]),
    "Sub": lambda n, i, a: np.subtract(i[0], i[1]),
    "Mul": lambda n, i, a: np.multiply(i[0], i[1]),
    "Div": lambda n, i, a: _int_div(i[0], i[1]),
    "Neg": lambda n, i, a: np.negative(i[0]),
    "Abs": lambda n, i, a: np.abs(i[0]),
    "Max": lambda n, i, a: np.maximum.reduce([x for x in i if x is not None]),
    "Min": lambda n, i, a: np.minimum.reduce([x for x in i if x is not None]),
    "Equal": lambda n, i, a: np.equal(i[0], i[1]),
    "Less": lambda n, i, a: np.less(i[0], i[1]),
    "Greater": lambda n, i, a: np.greater(i[0], i[1]),
    "Not": lambda n, i, a: np.logical_not(i[0]),
    "Where": lambda n, i, a: np.where(i[0], i[1], i[2]),
}


def small_initializer_values(graph: onnx.GraphProto) -> Values:
    """Values of the graph's initializers and Constant outputs small enough to take part in shape chains."""
    values: Values = {}
    tensors = [(t.name, t) for t in graph.initializer]
    tensors += [(n.output[0], a.t) for n in graph.node if n.op_type == "Constant" and not n.domain
                for a in n.attribute if a.name == "value"]
    for name, tensor in tensors:
        if math.prod(tensor.dims) <= MAX_ELEMENTS and tensor.data_location != onnx.TensorProto.EXTERNAL:
            values[name] = numpy_helper.to_array(tensor)
    return values


def fold_shape_values(
    graph: onnx.GraphProto, shapes: Mapping[str, tuple[int, ...] | None], values: Values
) -> bool:
    """Evaluate what can be evaluated (updating ``values``), replace those nodes by initializers in
    ``graph``; True if any node was folded."""
    folded: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or any(o in values for o in node.output if o):
            continue
        result = _evaluate(node, shapes, values)
        if result is not None and result.size <= MAX_ELEMENTS:
            values[node.output[0]] = result
            folded.append(node)
    for node in folded:
        graph.node.remove(node)
        graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(values[node.output[0]]), node.output[0]))
    return bool(folded)


def _evaluate(node: onnx.NodeProto, shapes: Mapping[str, tuple[int, ...] | None], values: Values) -> np.ndarray | None:
    if len(node.output) != 1:
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type in ("Shape", "Size"):
        shape = shapes.get(node.input[0])
        if shape is None:
            return None
        if node.op_type == "Size":
            return np.array(math.prod(shape), dtype=np.int64)
        return np.array(shape[slice(attrs.get("start", 0), attrs.get("end"))], dtype=np.int64)
    evaluate = EVALUATORS.get(node.op_type)
    names = list(node.input)
    if evaluate is None or any(n and n not in values for n in names):
        return None
    inputs = [values[n] if n else None for n in names]
    if sum(x.size for x in inputs if x is not None) > MAX_ELEMENTS:
        return None
    try:
        return np.asarray(evaluate(node, inputs, attrs))
    except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError):
        return None  # malformed chain: leave it to shape inference
