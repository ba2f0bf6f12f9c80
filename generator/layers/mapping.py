"""Map the nodes onnxruntime executed (as profiled) back to the nodes and weights of the model file that ran.

The worker calls :func:`map_executed_nodes` in the child process right after the profiled pass, with the
graph onnxruntime saved through ``SessionOptions.optimized_model_filepath``. The algorithm (join to the
saved graph, anchors, region growth, neighbours) is described for users in docs/methodology-mapping.md;
node keys are defined in :mod:`generator.layers.graph_index`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import onnx
from google.protobuf.message import DecodeError

from generator.errors import ModelError
from generator.layers.anchors import find_anchor
from generator.layers.graph_index import GraphIndex, GraphNode, load_graph_index
from generator.layers.join import body_nodes, join_saved_nodes
from generator.layers.regions import RegionBuilder, Slot


@dataclass(frozen=True)
class ExecutedNode:
    """One node of the profiled pass, as onnxruntime reported it.

    ``name`` is the event name without ``_kernel_time`` (``layer1.0.conv2_out_nchwc``; ``Conv_12`` for a
    node saved without a name), ``node_index`` the profile's ``node_index`` argument (onnxruntime's
    in-memory node index), ``exec_order`` the node's position in the profiled inference, ``parent`` the
    enclosing control-flow node when the profile nests the node in one (names repeat across sub-graphs).
    """

    name: str
    op_type: str
    node_index: int | None
    exec_order: int
    input_shapes: tuple[tuple[int, ...], ...] | None = None
    output_shapes: tuple[tuple[int, ...], ...] | None = None
    parent: str | None = None  # enclosing If/Loop/Scan node's executed name, for nodes of a sub-graph


@dataclass(frozen=True)
class NodeMapping:
    """The original nodes (keys, file order) an executed node covers, their weights, and how it was found.

    ``method`` is the strongest rule that anchored the node: ``exact`` (same name), ``index`` (same
    in-memory index and op), ``stripped`` (name with onnxruntime's suffixes removed, or a known prefix),
    ``tensor`` (writes a tensor of the original graph), ``weight`` (computes with a weight only one original
    node uses), ``structure`` (the only unclaimed node of its op it can compute), ``neighbour`` (a layout
    conversion or helper node, given the nodes of the node it serves), or ``none``.
    """

    original_nodes: tuple[str, ...]
    weights: tuple[str, ...]
    method: str


class ProfiledNode(Protocol):
    """A node's statistics from a profile (generator.machine.profiling.NodeStat): shapes as JSON lists."""

    node_name: str
    op_type: str
    node_index: int | None
    exec_order: int
    parent: str | None
    input_shapes: str
    output_shapes: str


def mapped_columns(original_path: str | Path, optimized_path: Path | None,
                   stats: Sequence[ProfiledNode]) -> list[dict[str, Any]]:
    """Each profiled node's `original_nodes`, `weights` and `mapping_method` (the nodes table's columns), in the
    order given."""
    executed = [ExecutedNode(name=s.node_name, op_type=s.op_type, node_index=s.node_index, exec_order=s.exec_order,
                             parent=s.parent, input_shapes=_shapes(s.input_shapes),
                             output_shapes=_shapes(s.output_shapes)) for s in stats]
    return [{"original_nodes": list(m.original_nodes), "weights": list(m.weights), "mapping_method": m.method}
            for m in map_executed_nodes(Path(original_path), optimized_path, executed)]


def _shapes(shapes_json: str) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(shape) for shape in json.loads(shapes_json))


def map_executed_nodes(
    original_path: Path, optimized_path: Path | None, executed: Sequence[ExecutedNode]
) -> list[NodeMapping]:
    """One :class:`NodeMapping` per executed node, in the order given.

    ``optimized_path`` is the graph onnxruntime saved for the same session; without it (``None`` or a
    missing file) only the executed names and indices are used, which finds fewer anchors and no regions.
    """
    original = load_graph_index(_load(original_path, "the model that ran"))
    saved = None
    if optimized_path is not None and Path(optimized_path).is_file():
        saved = load_graph_index(_load(Path(optimized_path), "the optimized graph onnxruntime saved"))
    # A node run several times (in a Loop body) is listed once per call; map each distinct node once.
    first: dict[tuple[str | None, str, str, int | None], ExecutedNode] = {}
    for e in executed:
        first.setdefault(_identity(e), e)
    distinct = list(first)
    nodes = list(first.values())
    joined = join_saved_nodes(nodes, original, saved) if saved is not None else [None] * len(nodes)
    in_bodies = body_nodes(nodes, original)
    slots = [_anchored_slot(e, body, saved_node, original, saved)
             for e, body, saved_node in zip(nodes, in_bodies, joined, strict=True)]
    RegionBuilder(original, saved, slots).run()
    by_key = {key: _to_mapping(slot, original) for key, slot in zip(distinct, slots, strict=True)}
    return [by_key[_identity(e)] for e in executed]


def _identity(e: ExecutedNode) -> tuple[str | None, str, str, int | None]:
    return (e.parent, e.name, e.op_type, e.node_index)


def mapping_coverage(mappings: Sequence[NodeMapping], durations: Sequence[float]) -> float:
    """Share of the time (``durations``, one per mapping) spent in nodes mapped to original nodes.

    Pass the durations of top-level nodes (or zeros for sub-graph nodes): an If/Loop/Scan node's time
    already includes its body's. With no time at all the share of mapped nodes is returned, and 1.0 for no
    nodes.
    """
    if len(mappings) != len(durations):
        raise ValueError(f"{len(mappings)} mappings but {len(durations)} durations")
    total = float(sum(durations))
    if total > 0:
        return sum(d for m, d in zip(mappings, durations, strict=True) if m.original_nodes) / total
    if not mappings:
        return 1.0
    return sum(1 for m in mappings if m.original_nodes) / len(mappings)


def _anchored_slot(
    e: ExecutedNode,
    body_node: GraphNode | None,
    saved_node: GraphNode | None,
    original: GraphIndex,
    saved: GraphIndex | None,
) -> Slot:
    # node_index restarts in every sub-graph: it points into the main graph only for top-level nodes.
    node_index = e.node_index if e.parent is None else None
    anchor = find_anchor(e.name, e.op_type, node_index, body_node, saved_node, original, saved)
    if anchor is None:
        return Slot(e.op_type, saved_node)
    return Slot(e.op_type, saved_node, set(anchor.keys), anchor.method)


def _to_mapping(slot: Slot, original: GraphIndex) -> NodeMapping:
    nodes = sorted((original.by_key[k] for k in slot.region), key=lambda n: n.position)
    method = slot.method if nodes else "none"
    return NodeMapping(tuple(n.key for n in nodes), _weights_of(nodes, original), method)


def _weights_of(nodes: list[GraphNode], original: GraphIndex) -> tuple[str, ...]:
    """Weights the nodes consume, also through weight preprocessing run as separate nodes (a QDQ model's
    weight DequantizeLinear at ``ORT_DISABLE_ALL``): a convolution's weights are its weights either way."""
    weights: dict[str, None] = {}
    seen: set[str] = set()
    stack = [t for n in reversed(nodes) for t in reversed(n.inputs) if t in original.constant]
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        if tensor in original.weights:
            weights[tensor] = None
            continue
        producer = original.producer.get(tensor)
        if producer is not None:
            stack.extend(t for t in reversed(producer.inputs) if t in original.constant)
    return tuple(weights)


def _load(path: Path, what: str) -> onnx.ModelProto:
    # Weight values are not needed to map nodes; external data stays on disk.
    try:
        return onnx.load(str(path), load_external_data=False)
    except (OSError, ValueError, DecodeError) as exc:
        raise ModelError(
            f"Cannot read {what} at {path} to map executed nodes to its nodes: {exc}. The file must be an "
            "ONNX model readable by the installed onnx package."
        ) from exc
