"""Static analysis of a model file per original node: FLOPs, MACs, integer ops, parameters and bytes.

For each node of the model file (keyed as :mod:`generator.layers.graph_index` keys them, so that rows join
``nodes.original_nodes``), at the concrete input shapes of one trial:

- counts from the node's registered counter (:mod:`generator.flops.registry`); a node whose op type has
  no counter, or whose counter cannot count it, has ``counted=False`` and null counts: listed, not guessed;
- a node computed from weights alone (a weight's DequantizeLinear, a Transpose of a constant) runs once
  when onnxruntime folds it at load time: 0 per inference, and its weights are credited to the node that
  consumes its output, the layer that uses them;
- ``params``/``weight_bytes``: the initializers and Constant outputs the node consumes (through such
  folded nodes); ``input_bytes``/``output_bytes``: its activations (every other input, every output).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import onnx
from onnx import helper

from generator.flops import counters as _counters  # noqa: F401  (registers every counter)
from generator.flops.details import DetailTable, attributes_json, types_json
from generator.flops.registry import (
    DEFAULT_DOMAINS,
    INTEGER_DTYPES,
    ZERO,
    Counts,
    NodeContext,
    NotCountable,
    TensorInfo,
    find_counter,
)
from generator.flops.shapes import dtype_name, infer_concrete_shapes, iter_graphs, tensor_bytes
from generator.flops.weights import WeightTable, load_model_for_analysis, weight_table
from generator.layers.graph_index import GraphIndex, GraphNode, load_graph_index

_DEQUANTIZE = "DequantizeLinear"


@dataclass(frozen=True)
class LayerRow:
    """One node of the model file: a row of the ``layers`` table without its ``trial_key``."""

    node: str
    op_type: str
    domain: str
    position: int
    flops: float | None
    macs: float | None
    int_ops: float | None
    params: int
    weight_bytes: int
    input_bytes: int | None
    output_bytes: int | None
    input_shapes: str
    output_shapes: str
    counted: bool
    attributes: str = "{}"  # JSON object of display strings (generator.flops.details)
    input_types: str = "[]"  # JSON list of element types, as input_shapes
    output_types: str = "[]"
    weight_details: str = "[]"  # JSON list: name, shape, dtype, quantization parameters

    @property
    def moved_bytes(self) -> int | None:
        """Bytes the node reads and writes: weights, input and output activations (None if unknown)."""
        if self.input_bytes is None or self.output_bytes is None:
            return None
        return self.weight_bytes + self.input_bytes + self.output_bytes

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity: operations (FLOPs + integer ops) per byte moved; None when unknown or 0 bytes."""
        moved = self.moved_bytes
        if not self.counted or not moved:
            return None
        return ((self.flops or 0.0) + (self.int_ops or 0.0)) / moved

    def as_dict(self) -> dict[str, Any]:
        # Every field is a scalar or a JSON string: a shallow copy is what asdict's deep one gave, in a fraction
        # of its time (one per node: thousands in a large model's profiled pass).
        return {name: getattr(self, name) for name in _LAYER_ROW_FIELDS}


_LAYER_ROW_FIELDS = tuple(f.name for f in fields(LayerRow))



@dataclass(frozen=True)
class LayerAnalysis:
    """Rows of one model at one set of input shapes, and why some nodes were not counted."""

    rows: tuple[LayerRow, ...]
    notes: tuple[str, ...]  # shape inference failures, unknown op types, nodes a counter refused
    errors: tuple[str, ...]  # counters that raised: bugs in perfsite, reported, the node left uncounted
    unknown_op_types: tuple[str, ...]  # ``domain:op_type`` with no counter (``ai.onnx`` for the default)
    params: int  # distinct initializer and Constant elements of the model (shared weights once)
    weight_bytes: int


def analyze_model(
    model_path: Path, input_shapes: Mapping[str, tuple[int, ...]], input_dtypes: Mapping[str, str] | None = None
) -> list[LayerRow]:
    """One :class:`LayerRow` per node of the model file at ``input_shapes`` (see the module docstring)."""
    return list(analyze_model_report(model_path, input_shapes, input_dtypes).rows)


def analyze_model_report(
    model_path: Path, input_shapes: Mapping[str, tuple[int, ...]], input_dtypes: Mapping[str, str] | None = None
) -> LayerAnalysis:
    """:func:`analyze_model` with the notes on what could not be counted and the model's totals."""
    model, load_notes = load_model_for_analysis(Path(model_path))
    index = load_graph_index(model)
    shapes = infer_concrete_shapes(model, {k: tuple(v) for k, v in input_shapes.items()}, input_dtypes or {})
    weights = weight_table(model)
    builder = _RowBuilder(model, index, shapes.types, weights)
    rows = tuple(builder.row(node, proto) for node, proto in _paired_nodes(model, index))
    notes = (*load_notes, *shapes.notes, *builder.summary_notes())
    return LayerAnalysis(
        rows=rows, notes=notes, errors=tuple(builder.errors), unknown_op_types=tuple(sorted(builder.unknown)),
        params=sum(w.numel for w in weights.values()), weight_bytes=sum(w.nbytes for w in weights.values()),
    )


def _paired_nodes(model: onnx.ModelProto, index: GraphIndex) -> list[tuple[GraphNode, onnx.NodeProto]]:
    """Index nodes with their protos: the index lists non-Constant nodes in file order, bodies after
    their parent, which is the order walked here."""
    protos: list[onnx.NodeProto] = []

    def walk(graph: onnx.GraphProto) -> None:
        for proto in graph.node:
            if proto.op_type == "Constant" and not proto.domain:
                continue
            protos.append(proto)
            for attr in proto.attribute:
                for body in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs):
                    walk(body)

    walk(model.graph)
    pairs = list(zip(index.nodes, protos, strict=True))
    for node, proto in pairs:
        if node.op_type != proto.op_type or node.outputs != tuple(proto.output):
            raise RuntimeError(f"graph index and model disagree at node {node.key!r} ({proto.op_type})")
    return pairs


class _RowBuilder:
    def __init__(
        self, model: onnx.ModelProto, index: GraphIndex, types: Mapping[str, tuple[int, Any]], weights: WeightTable
    ) -> None:
        self.index, self.types, self.weights = index, types, weights
        self.details = DetailTable(model)
        self.opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version for o in model.opset_import}
        self.dequantized_integers = _dequantized_integer_tensors(model, types)
        self.problems: dict[str, list[str]] = defaultdict(list)
        self.unknown: set[str] = set()
        self.errors: list[str] = []
        self._weight_sources: dict[str, frozenset[str]] = {}

    def row(self, node: GraphNode, proto: onnx.NodeProto) -> LayerRow:
        counts, reason = self._count(node, proto)
        if reason is not None:
            self.problems[reason].append(node.key)
        used = self._node_weights(node)
        inputs = [t for t in dict.fromkeys(node.inputs) if t]
        outputs = [t for t in node.outputs if t]
        # A folded node reads and writes nothing per inference; its consumer reads the weights.
        activations = [t for t in inputs if t not in self.index.constant]
        moved = [] if self._folded(node) else outputs
        return LayerRow(
            node=node.key, op_type=node.op_type, domain="" if node.domain in DEFAULT_DOMAINS else node.domain,
            position=node.position,
            flops=float(counts.flops) if counts else None, macs=float(counts.macs) if counts else None,
            int_ops=float(counts.int_ops) if counts else None,
            params=sum(self.weights[w].numel for w in used), weight_bytes=sum(self.weights[w].nbytes for w in used),
            input_bytes=self._bytes(activations), output_bytes=self._bytes(moved),
            input_shapes=self._shapes_json(t for t in node.inputs if t),
            output_shapes=self._shapes_json(outputs), counted=counts is not None,
            attributes=attributes_json(proto), input_types=types_json((t for t in node.inputs if t), self.types),
            output_types=types_json(outputs, self.types), weight_details=self.details.weights(used, proto),
        )

    def _count(self, node: GraphNode, proto: onnx.NodeProto) -> tuple[Counts | None, str | None]:
        """The node's counts, or None and the reason it is not counted."""
        if self._folded(node):
            return ZERO, None
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        count = find_counter(domain, node.op_type)
        if count is None:
            self.unknown.add(f"{domain or 'ai.onnx'}:{node.op_type}")
            return None, f"no counter for {domain or 'ai.onnx'}:{node.op_type}: listed, not counted"
        try:
            return count(self._context(node, proto)), None
        except NotCountable as e:
            return None, f"{node.op_type}: {e}"
        except Exception as e:  # a bug in a counter: one odd node must not lose the whole table
            self.errors.append(f"{node.key} ({node.op_type}): {type(e).__name__}: {e}")
            return None, f"{node.op_type}: the counter failed (see layers_error)"

    def _folded(self, node: GraphNode) -> bool:
        """Computed from weights alone: onnxruntime folds it when it loads the model."""
        outputs = [o for o in node.outputs if o]
        return bool(outputs) and not node.has_subgraphs and all(o in self.index.constant for o in outputs)

    def _context(self, node: GraphNode, proto: onnx.NodeProto) -> NodeContext:
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        return NodeContext(
            key=node.key, op_type=node.op_type, domain=domain, opset=self.opsets.get(domain, 1),
            attrs={a.name: helper.get_attribute_value(a) for a in proto.attribute},
            inputs=tuple(self._tensor(t) for t in node.inputs),
            outputs=tuple(self._tensor(t) for t in node.outputs),
            quantized=self._qdq_quantized(node),
        )

    def _qdq_quantized(self, node: GraphNode) -> bool:
        """A QDQ node: every input comes from a DequantizeLinear of an integer tensor (the Q/DQ nodes
        themselves excepted); onnxruntime runs it as the integer kernel."""
        if node.op_type in ("QuantizeLinear", _DEQUANTIZE):
            return False
        inputs = [t for t in node.inputs if t]
        return bool(inputs) and all(t in self.dequantized_integers for t in inputs)

    def _tensor(self, name: str) -> TensorInfo | None:
        if not name:
            return None
        elem, shape = self.types.get(name, (0, None))
        return TensorInfo(name=name, shape=shape, dtype=dtype_name(elem))

    def _node_weights(self, node: GraphNode) -> frozenset[str]:
        """Weights the node reads, through folded producers; none for a folded node (its consumer has them)."""
        if self._folded(node):
            return frozenset()
        return frozenset().union(*(self._weights_behind(t) for t in node.inputs if t))

    def _weights_behind(self, tensor: str) -> frozenset[str]:
        """The weights a constant tensor is computed from (itself, for a weight)."""
        if tensor in self.weights:
            return frozenset({tensor})
        if tensor not in self.index.constant or tensor not in self.index.producer:
            return frozenset()
        if tensor not in self._weight_sources:
            producer = self.index.producer[tensor]
            self._weight_sources[tensor] = frozenset().union(*(self._weights_behind(t) for t in producer.inputs if t))
        return self._weight_sources[tensor]

    def _bytes(self, tensors: list[str]) -> int | None:
        total = 0
        for name in tensors:
            elem, shape = self.types.get(name, (0, None))
            size = tensor_bytes(math.prod(shape), dtype_name(elem)) if shape is not None else None
            if size is None:
                return None
            total += size
        return total

    def _shapes_json(self, tensors) -> str:
        shapes = [self.types.get(t, (0, None))[1] for t in tensors]
        return json.dumps([list(s) if s is not None else None for s in shapes])

    def summary_notes(self) -> list[str]:
        notes = []
        for reason, keys in sorted(self.problems.items()):
            first = ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")
            notes.append(f"{reason} ({len(keys)} node{'s' if len(keys) > 1 else ''}: {first})")
        return notes


def _dequantized_integer_tensors(model: onnx.ModelProto, types: Mapping[str, tuple[int, Any]]) -> frozenset[str]:
    """Outputs of DequantizeLinear nodes whose input is an integer tensor (QDQ models)."""
    found = set()
    for graph in iter_graphs(model.graph):
        for node in graph.node:
            if node.op_type == _DEQUANTIZE and node.input and node.output:
                elem, _ = types.get(node.input[0], (0, None))
                if dtype_name(elem) in INTEGER_DTYPES:
                    found.add(node.output[0])
    return frozenset(found)

