"""An index of one ONNX graph: nodes with stable keys, tensor producers and consumers, weights.

The same index is built for the model file that ran (the *original*) and for the graph onnxruntime saved
after optimization (the *saved* graph), so that mapping code can walk both with one vocabulary.

Node keys
---------
A node's key is its name when the name is non-empty and unique. An unnamed node (or one whose name is used
twice) is keyed ``<op_type>_<n>``, where ``n`` is its position among the graph's non-``Constant`` nodes in
file order: the name onnxruntime itself gives such a node in a profile recorded without graph optimization
(``Relu_6``). If that text is already some other node's name, ``#<file position>`` is appended. Nodes of
sub-graphs (``If``/``Loop``/``Scan`` bodies) are keyed ``<parent key>::<attribute>::<key within the body>``
(``/model/If::then_branch::/model/Squeeze``): names often contain ``/`` already.

``Constant`` nodes are not nodes of the index: their outputs are weights, like initializers, because
onnxruntime turns them into initializers when it loads the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

# Ops whose output depends only on the *shape* of their data input: a chain that starts there is metadata
# that onnxruntime folds into constants, not computation on the tensor's values.
SHAPE_OPS = frozenset({"Shape", "Size"})
_GRAPH_ATTRIBUTES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
# Largest constant onnxruntime's ConstantSharing merges with equal ones (MAX_SIZE_PER_VALUE).
_MAX_SHARED_ELEMENTS = 8


@dataclass(frozen=True)
class GraphNode:
    """One node of an indexed graph (``Constant`` nodes excluded)."""

    key: str
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    position: int  # order of the node in the flattened file order (sub-graph nodes follow their parent)
    top_index: int | None  # position among top-level non-Constant nodes; None inside sub-graphs
    channels_last: bool = False
    has_subgraphs: bool = False  # If/Loop/Scan: reads outer tensors its inputs do not list
    parent_key: str | None = None  # the If/Loop/Scan node whose body holds this node
    body: str | None = None  # that body: ``<parent key>::<attribute>``


@dataclass(frozen=True)
class GraphIndex:
    """Nodes, tensors and weights of one model, with lookups used by the mapping."""

    nodes: tuple[GraphNode, ...]
    by_key: dict[str, GraphNode]
    by_name: dict[str, GraphNode]  # non-empty unique names, plus the ``<op>_<n>`` keys of unnamed top nodes
    by_parent_name: dict[tuple[str, str], tuple[GraphNode, ...]]  # (parent key, name) -> nodes, all bodies
    top_level: tuple[GraphNode, ...]  # top-level non-Constant nodes in file order (onnxruntime's node_index)
    producer: dict[str, GraphNode]
    consumers: dict[str, tuple[GraphNode, ...]]
    weights: frozenset[str]  # initializer names and Constant outputs
    distinctive_weights: frozenset[str]  # weights with >1 element, not all equal: their name identifies them
    graph_inputs: frozenset[str]
    tensors: frozenset[str]  # every tensor name that appears (inputs, outputs, weights)
    static: frozenset[str]  # tensors computable without the model's input values (weights, shape chains)
    constant: frozenset[str]  # tensors computable from the weights alone (a weight's DequantizeLinear)

    def data_inputs(self, node: GraphNode) -> tuple[str, ...]:
        """Inputs of ``node`` that carry values computed at run time (not weights, not shape metadata)."""
        return tuple(t for t in node.inputs if t and t not in self.static)

    def is_activation(self, tensor: str) -> bool:
        """True for a tensor computed by a node of this graph at run time."""
        return tensor in self.producer and tensor not in self.static


def load_graph_index(model: onnx.ModelProto) -> GraphIndex:
    """Index ``model``'s main graph and its sub-graphs (weights stored outside the file are not read)."""
    builder = _Builder()
    builder.add_graph(model.graph, prefix="", parent=None)
    return builder.finish(model.graph)


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[GraphNode] = []
        self.weights: set[str] = set()
        self.distinctive: set[str] = set()
        self.top_level: list[GraphNode] = []

    def add_graph(self, graph: onnx.GraphProto, prefix: str, parent: str | None) -> None:
        """Add a graph's weights and nodes; ``prefix`` is ``<parent key>::<attribute>::`` for a body."""
        for init in graph.initializer:
            self._add_weight(init.name, init)
        for sparse in graph.sparse_initializer:
            self.weights.add(sparse.values.name)
        keys = _node_keys(graph)
        for proto, key in zip(graph.node, keys, strict=True):
            if proto.op_type == "Constant" and not proto.domain:
                self._add_constant(proto)
                continue
            node = self._make_node(proto, prefix + key, parent)
            self.nodes.append(node)
            if parent is None:
                self.top_level.append(node)
            for attr in proto.attribute:
                for body in _attribute_graphs(attr):
                    self.add_graph(body, prefix=f"{node.key}::{attr.name}::", parent=node.key)

    def _make_node(self, proto: onnx.NodeProto, key: str, parent: str | None) -> GraphNode:
        attrs = {a.name: a for a in proto.attribute}
        channels_last = "channels_last" in attrs and attrs["channels_last"].i == 1
        return GraphNode(
            key=key,
            name=proto.name,
            op_type=proto.op_type,
            domain=proto.domain,
            inputs=tuple(proto.input),
            outputs=tuple(proto.output),
            position=len(self.nodes),
            top_index=len(self.top_level) if parent is None else None,
            channels_last=channels_last,
            has_subgraphs=any(a.type in _GRAPH_ATTRIBUTES for a in proto.attribute),
            parent_key=parent,
            body=key.rsplit("::", 1)[0] if parent is not None else None,
        )

    def _add_constant(self, proto: onnx.NodeProto) -> None:
        value = next((a for a in proto.attribute if a.name == "value"), None)
        for name in proto.output:
            self._add_weight(name, value.t if value is not None else None)

    def _add_weight(self, name: str, tensor: onnx.TensorProto | None) -> None:
        self.weights.add(name)
        if tensor is not None and _is_distinctive(tensor):
            self.distinctive.add(name)

    def finish(self, graph: onnx.GraphProto) -> GraphIndex:
        producer: dict[str, GraphNode] = {}
        consumers: dict[str, list[GraphNode]] = defaultdict(list)
        for node in self.nodes:
            for out in node.outputs:
                if out:
                    producer.setdefault(out, node)
            for inp in dict.fromkeys(node.inputs):
                if inp:
                    consumers[inp].append(node)
        graph_inputs = frozenset(i.name for i in graph.input) - self.weights
        tensors = set(producer) | set(consumers) | graph_inputs | self.weights
        tensors |= {o.name for o in graph.output}
        return GraphIndex(
            nodes=tuple(self.nodes),
            by_key={n.key: n for n in self.nodes},
            by_name=_name_lookup(self.nodes),
            by_parent_name=_by_parent_name(self.nodes),
            top_level=tuple(self.top_level),
            producer=producer,
            consumers={t: tuple(ns) for t, ns in consumers.items()},
            weights=frozenset(self.weights),
            distinctive_weights=frozenset(self.distinctive),
            graph_inputs=graph_inputs,
            tensors=frozenset(tensors),
            static=frozenset(_static_tensors(self.nodes, self.weights, SHAPE_OPS)),
            constant=frozenset(_static_tensors(self.nodes, self.weights, frozenset())),
        )


def _node_keys(graph: onnx.GraphProto) -> list[str]:
    """Keys of a graph's nodes in file order (see the module docstring)."""
    names = [n.name for n in graph.node]
    counts: dict[str, int] = defaultdict(int)
    for name in names:
        counts[name] += 1
    taken = {n for n in names if n}
    keys: list[str] = []
    non_constant = 0
    for position, proto in enumerate(graph.node):
        if proto.name and counts[proto.name] == 1:
            keys.append(proto.name)
        else:
            key = f"{proto.op_type}_{non_constant}"
            keys.append(key if key not in taken else f"{key}#{position}")
        if not (proto.op_type == "Constant" and not proto.domain):
            non_constant += 1
    return keys


def _by_parent_name(nodes: list[GraphNode]) -> dict[tuple[str, str], tuple[GraphNode, ...]]:
    found: dict[tuple[str, str], list[GraphNode]] = defaultdict(list)
    for node in nodes:
        if node.parent_key is not None:
            found[(node.parent_key, node.name or node.key.rsplit("::", 1)[-1])].append(node)
    return {key: tuple(ns) for key, ns in found.items()}


def _name_lookup(nodes: list[GraphNode]) -> dict[str, GraphNode]:
    """Names an executed node may carry: real names, and the keys of unnamed top-level nodes."""
    lookup: dict[str, GraphNode] = {}
    for node in nodes:
        if node.name and node.key.endswith(node.name):
            lookup.setdefault(node.name, node)
    for node in nodes:
        if node.top_index is not None and node.key not in lookup:
            lookup[node.key] = node
    return lookup


def _attribute_graphs(attr: onnx.AttributeProto) -> Iterator[onnx.GraphProto]:
    if attr.type == onnx.AttributeProto.GRAPH:
        yield attr.g
    elif attr.type == onnx.AttributeProto.GRAPHS:
        yield from attr.graphs


def _is_distinctive(tensor: onnx.TensorProto) -> bool:
    """A weight whose name can identify a layer: more elements than onnxruntime shares, not all equal.

    From ``ORT_ENABLE_BASIC`` on, onnxruntime gives nodes one shared copy of equal small constants (its
    ConstantSharing pass takes up to 8 elements), so a scale, a zero point or a Resize's ``[1, 1, 2, 2]``
    may reach a node that never consumed that name in the original file.
    """
    if int(np.prod(tensor.dims, dtype=np.int64)) <= _MAX_SHARED_ELEMENTS:
        return False
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        return True
    try:
        values = numpy_helper.to_array(tensor)
    except (ValueError, TypeError):
        return False
    flat = values.reshape(-1)
    return bool(np.any(flat != flat[0]))


def _static_tensors(nodes: list[GraphNode], weights: set[str], sources: frozenset[str]) -> set[str]:
    """Weights, outputs of ``sources`` ops, and outputs of nodes whose inputs are all static (fixpoint).

    A node with a sub-graph is never static: its body reads tensors its input list does not name.
    """
    static = set(weights)
    changed = True
    while changed:
        changed = False
        for node in nodes:
            if node.has_subgraphs or all(o in static for o in node.outputs if o):
                continue
            inputs = [t for t in node.inputs if t]
            if node.op_type in sources or (inputs and all(t in static for t in inputs)):
                new = {o for o in node.outputs if o} - static
                if new:
                    static |= new
                    changed = True
    return static
