"""Joining profiled nodes to graph nodes: the saved graph's node each executed node is, and the node of a
sub-graph a nested executed node is when names repeat across sub-graphs."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from generator.layers.graph_index import GraphIndex, GraphNode

if TYPE_CHECKING:
    from generator.layers.mapping import ExecutedNode

_UNNAMED = re.compile(r"^(?P<op>.+)_(?P<index>\d+)$")


def body_nodes(executed: Sequence[ExecutedNode], index: GraphIndex) -> list[GraphNode | None]:
    """For each executed node of a sub-graph (``parent`` set), its node in ``index``; None otherwise.

    The profile names the enclosing If/Loop/Scan node but not the branch. When a name exists in several
    bodies of that node (both branches of an If call a node ``scale``), the body holding the most names
    executed under the same parent wins: the branch that ran.
    """
    candidates = [_candidates(e, index) for e in executed]
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for e, found in zip(executed, candidates, strict=True):
        for body in {n.body for n in found}:
            votes[e.parent or ""][body or ""] += 1
    chosen: list[GraphNode | None] = []
    for e, found in zip(executed, candidates, strict=True):
        ranked = sorted(found, key=lambda n: -votes[e.parent or ""][n.body or ""])
        chosen.append(ranked[0] if ranked else None)
    return chosen


def _candidates(e: ExecutedNode, index: GraphIndex) -> tuple[GraphNode, ...]:
    parent = index.by_name.get(e.parent) if e.parent else None
    return index.by_parent_name.get((parent.key, e.name), ()) if parent is not None else ()


def join_saved_nodes(
    executed: Sequence[ExecutedNode], original: GraphIndex, saved: GraphIndex
) -> list[GraphNode | None]:
    """The saved-graph node of each executed node (None when it cannot be told).

    Named nodes join by name (inside their parent's body for sub-graph nodes). A node saved without a name
    is profiled as ``<op>_<node_index>``: it joins through the original node at that index when it survived
    unchanged (same op, same outputs), else by position when the saved graph is in onnxruntime's index order
    (``ORT_DISABLE_ALL``), else by execution order among the unnamed nodes of its op (from
    ``ORT_ENABLE_BASIC`` on the saved graph is in execution order).
    """
    named: dict[str, GraphNode] = {}
    for node in saved.nodes:
        if node.name:
            named.setdefault(node.name, node)
    in_bodies = body_nodes(executed, saved)
    joined = [body or named.get(e.name) for e, body in zip(executed, in_bodies, strict=True)]
    taken = {node.key for node in joined if node is not None}
    unnamed = [k for k, e in enumerate(executed)
               if joined[k] is None and e.parent is None and _unnamed_form(e)]
    positional = _indices_are_positions(executed, joined)
    for rule in (_through_original, _by_position):
        for k in unnamed:
            node = rule(executed[k], original, saved, positional) if joined[k] is None else None
            if node is not None and node.key not in taken:
                joined[k] = node
                taken.add(node.key)
    _by_order(executed, saved, [k for k in unnamed if joined[k] is None], joined, taken)
    return joined


def _unnamed_form(e: ExecutedNode) -> bool:
    match = _UNNAMED.match(e.name)
    return match is not None and match["op"] == e.op_type


def _through_original(e: ExecutedNode, original: GraphIndex, saved: GraphIndex, _: bool) -> GraphNode | None:
    """The saved node that still computes the unnamed original node at ``node_index``."""
    if e.node_index is None or not 0 <= e.node_index < len(original.top_level):
        return None
    source = original.top_level[e.node_index]
    if source.name or source.op_type != e.op_type or not source.outputs:
        return None
    node = saved.producer.get(source.outputs[0])
    if node is None or node.name or node.op_type != e.op_type or node.outputs != source.outputs:
        return None
    return node


def _by_position(
    e: ExecutedNode, original: GraphIndex, saved: GraphIndex, positional: bool
) -> GraphNode | None:
    if not positional or e.node_index is None or not 0 <= e.node_index < len(saved.top_level):
        return None
    node = saved.top_level[e.node_index]
    return node if not node.name and node.op_type == e.op_type else None


def _indices_are_positions(executed: Sequence[ExecutedNode], joined: list[GraphNode | None]) -> bool:
    """True when every named top-level node's node_index is its position in the saved graph."""
    pairs = [(e.node_index, n.top_index) for e, n in zip(executed, joined, strict=True)
             if n is not None and e.parent is None]
    return bool(pairs) and all(index == position for index, position in pairs)


def _by_order(executed: Sequence[ExecutedNode], saved: GraphIndex, pending: list[int],
              joined: list[GraphNode | None], taken: set[str]) -> None:
    """Pair the k-th unnamed executed node of an op with the k-th unnamed saved node of that op, when both
    counts agree."""
    want: dict[str, list[int]] = defaultdict(list)
    for k in sorted(pending, key=lambda k: executed[k].exec_order):
        want[executed[k].op_type].append(k)
    have: dict[str, list[GraphNode]] = defaultdict(list)
    for node in saved.top_level:
        if not node.name and node.key not in taken:
            have[node.op_type].append(node)
    for op_type, ks in want.items():
        if len(ks) == len(have[op_type]):
            for k, node in zip(ks, have[op_type], strict=True):
                joined[k] = node
                taken.add(node.key)
