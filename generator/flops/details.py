"""What a layer of the model file is, for its detail panel: attributes, element types, and weights with their
quantization parameters.

Recorded by `perfsite run` beside the FLOP counts (the ``layers`` table's ``attributes``, ``input_types``,
``output_types`` and ``weight_details`` columns), because `perfsite build` reads no model. Every value is a
display string, formatted here once, so that the JSON cells are deterministic and short:

- attributes: ``{"kernel_shape": "[3, 3]", "alpha": "0.1"}``; a tensor attribute as ``float32 [64]``, a
  sub-graph as ``graph 'then' (12 nodes)``; lists longer than ``MAX_LIST`` are cut and say how long they are;
- weights: ``[{"name", "shape", "dtype", "role"?, "scale"?, "zero_point"?, "axis"?}]``. A quantized weight
  carries the scale and zero point it is dequantized with (from the DequantizeLinear that reads it in a QDQ
  model, or from the input slots of a QOperator kernel such as QLinearConv), summarized as one value or as
  "per-channel, N values: min … max"; the scale and zero-point tensors themselves have a ``role``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from generator.flops.shapes import dtype_name, iter_graphs

MAX_LIST = 16  # attribute list elements shown before "…"
MAX_SUMMARIZED = 65_536  # scale / zero-point elements read to summarize them
DIGITS = 4  # significant digits of floats shown

# Where a QOperator kernel reads each quantized weight's scale and zero point: {op: ((weight, scale, zero), ...)}.
# ConvInteger and MatMulInteger have zero points only (dynamic quantization multiplies the scales afterwards).
QUANT_SLOTS: dict[str, tuple[tuple[int, int | None, int | None], ...]] = {
    "DequantizeLinear": ((0, 1, 2),),
    "QLinearConv": ((0, 1, 2), (3, 4, 5)),
    "QLinearMatMul": ((0, 1, 2), (3, 4, 5)),
    "ConvInteger": ((1, None, 3),),
    "MatMulInteger": ((1, None, 3),),
    "DynamicQuantizeLinear": (),
}
# Scales and zero points of activations, by input slot: {op: {slot: role}}.
ACTIVATION_SLOTS: dict[str, dict[int, str]] = {
    "QuantizeLinear": {1: "output scale", 2: "output zero point"},
    "DequantizeLinear": {1: "input scale", 2: "input zero point"},
    "QLinearConv": {1: "input scale", 2: "input zero point", 6: "output scale", 7: "output zero point"},
    "QLinearMatMul": {1: "input scale", 2: "input zero point", 6: "output scale", 7: "output zero point"},
    "ConvInteger": {2: "input zero point"},
    "MatMulInteger": {2: "input zero point"},
}


@dataclass(frozen=True)
class Quantization:
    """How one weight is dequantized."""

    scale: str | None
    zero_point: str | None
    axis: int | None
    scale_name: str | None
    zero_point_name: str | None


class DetailTable:
    """Display strings for the nodes and weights of one model, built once per model."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.tensors: dict[str, onnx.TensorProto] = {}
        for graph in iter_graphs(model.graph):
            self.tensors.update({t.name: t for t in graph.initializer})
            for node in graph.node:
                if node.op_type == "Constant" and not node.domain and node.output:
                    value = next((a.t for a in node.attribute if a.name == "value"), None)
                    if value is not None:
                        self.tensors[node.output[0]] = value
        self.quantization = _quantization_of(model, self)
        self.roles = _activation_roles(model)
        self.roles.update({role_of: role for q_weight, q in self.quantization.items()
                           for role_of, role in ((q.scale_name, f"scale of {q_weight}"),
                                                 (q.zero_point_name, f"zero point of {q_weight}")) if role_of})

    def summary(self, name: str | None) -> str | None:
        """One value, or "per-channel, N values: min … max"; None when the tensor is not at hand."""
        tensor = self.tensors.get(name) if name else None
        if tensor is None or tensor.data_location == onnx.TensorProto.EXTERNAL:
            return None
        numel = math.prod(tensor.dims)
        if numel > MAX_SUMMARIZED:
            return f"{numel:,} values"
        values = numpy_helper.to_array(tensor).reshape(-1)
        if values.size == 1:
            return _number(values[0])
        return f"per-channel, {values.size:,} values: {_number(values.min())} … {_number(values.max())}"

    def weights(self, names: Iterable[str], node: onnx.NodeProto | None = None) -> str:
        """JSON list of the weights' descriptions, in name order (scales and zero points last). A tensor's role
        is the one it has for ``node`` where it fills one of the node's quantization slots."""
        roles = {**self.roles, **(_node_roles(node) if node is not None else {})}
        rows = [self._weight(n, roles) for n in sorted(names, key=lambda n: (n in roles, n))]
        return json.dumps(rows, ensure_ascii=False, sort_keys=True)

    def _weight(self, name: str, roles: Mapping[str, str]) -> dict[str, Any]:
        tensor = self.tensors.get(name)
        row: dict[str, Any] = {"name": name}
        if tensor is not None:
            row["shape"] = "[" + ", ".join(str(d) for d in tensor.dims) + "]"
            row["dtype"] = dtype_name(tensor.data_type)
        if name in roles:
            row["role"] = roles[name]
            value = self.summary(name)
            if value is not None:
                row["value"] = value
        q = self.quantization.get(name)
        if q is not None:
            row.update({k: v for k, v in (("scale", q.scale), ("zero_point", q.zero_point), ("axis", q.axis))
                        if v is not None})
        return row


def attributes_json(node: onnx.NodeProto) -> str:
    """JSON object of the node's attributes as display strings, in name order."""
    return json.dumps({a.name: _attribute(a) for a in sorted(node.attribute, key=lambda a: a.name)},
                      ensure_ascii=False, sort_keys=True)


@functools.cache
def attribute_defaults(op_type: str, domain: str = "") -> dict[str, str]:
    """The display strings of the op's attributes that have a default in its ONNX schema (auto_pad NOTSET,
    group 1, ...): a node that leaves one out has that value, and two versions that differ only in writing it
    out run the same attribute. Empty for an op without a known schema (a contrib op this onnx lacks)."""
    try:
        schema = onnx.defs.get_schema(op_type, domain=domain or "")
    except onnx.defs.SchemaError:
        return {}
    return {name: _attribute(a.default_value) for name, a in schema.attributes.items()
            if a.default_value.type != onnx.AttributeProto.UNDEFINED}


def types_json(names: Iterable[str], types: Mapping[str, tuple[int, Any]]) -> str:
    """JSON list of the tensors' element types (null where unknown)."""
    return json.dumps([dtype_name(types.get(n, (0, None))[0]) for n in names])


def _attribute(attr: onnx.AttributeProto) -> str:
    value = helper.get_attribute_value(attr)
    if attr.type == onnx.AttributeProto.GRAPH:
        return _graph(value)
    if attr.type == onnx.AttributeProto.GRAPHS:
        return _listed([_graph(g) for g in value])
    if attr.type == onnx.AttributeProto.TENSOR:
        return _tensor(value)
    if attr.type == onnx.AttributeProto.TENSORS:
        return _listed([_tensor(t) for t in value])
    if attr.type == onnx.AttributeProto.SPARSE_TENSOR:
        return f"sparse {_tensor(value.values)}"
    if isinstance(value, list):
        return _listed([_scalar(v) for v in value])
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, float):
        return _number(value)
    return str(value)


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LIST])
    more = f", … ({len(items):,} values)" if len(items) > MAX_LIST else ""
    return f"[{shown}{more}]"


def _graph(graph: onnx.GraphProto) -> str:
    return f"graph '{graph.name}' ({len(graph.node)} node{'s' if len(graph.node) != 1 else ''})"


def _tensor(tensor: onnx.TensorProto) -> str:
    return f"{dtype_name(tensor.data_type)} [{', '.join(str(d) for d in tensor.dims)}]"


def _number(value: Any) -> str:
    """A float with DIGITS significant digits (float32 noise such as 0.10000000149 hidden); integers whole."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    number = float(value)
    if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.{DIGITS}g}"


def _quantization_of(model: onnx.ModelProto, table: DetailTable) -> dict[str, Quantization]:
    """Each quantized weight's scale and zero point, from the nodes that read it in a quantized slot."""
    found: dict[str, Quantization] = {}
    for graph in iter_graphs(model.graph):
        for node in graph.node:
            axis = next((a.i for a in node.attribute if a.name == "axis"), None)
            for weight, scale, zero in QUANT_SLOTS.get(node.op_type, ()):
                name = _slot(node, weight)
                if name is None or name not in table.tensors or name in found:
                    continue
                scale_name, zero_name = _slot(node, scale), _slot(node, zero)
                found[name] = Quantization(table.summary(scale_name), table.summary(zero_name),
                                           axis if node.op_type == "DequantizeLinear" else None,
                                           scale_name, zero_name)
    return found


def _activation_roles(model: onnx.ModelProto) -> dict[str, str]:
    """Scale and zero-point tensors of activations (a DequantizeLinear of a weight is in QUANT_SLOTS too; the
    weight's own role, set after this, wins)."""
    roles: dict[str, str] = {}
    for graph in iter_graphs(model.graph):
        for node in graph.node:
            for name, role in _node_roles(node).items():
                roles.setdefault(name, role)
    return roles


def _node_roles(node: onnx.NodeProto) -> dict[str, str]:
    slots = ((_slot(node, i), role) for i, role in ACTIVATION_SLOTS.get(node.op_type, {}).items())
    return {name: role for name, role in slots if name is not None}


def _slot(node: onnx.NodeProto, index: int | None) -> str | None:
    if index is None or index >= len(node.input) or not node.input[index]:
        return None
    return node.input[index]
