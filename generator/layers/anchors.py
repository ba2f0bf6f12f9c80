"""Anchors: the original nodes an executed node certainly covers, found from names, indices and tensors.

Each rule reads one trace onnxruntime leaves when it rewrites a graph (see docs/methodology-mapping.md):
fused nodes keep the name of the node they grew from (``conv1`` → ``FusedConv conv1``), renamed copies get
suffixes (``conv1_token_20``, ``pool_out_DequantizeLinear/duplicated``,
``scores/MatmulTransposeFusion//MatMulScaleFusion/``), NCHWc nodes are named after their output tensor
(``relu1_out_nchwc``), unnamed nodes keep their index, fused outputs keep the name of the last fused tensor,
and folded weights keep their name behind a prefix (``ConvBnFusion_BN_B_bn1.b``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import onnx

from generator.layers.graph_index import GraphIndex, GraphNode

# Priority of anchor methods, strongest first; an executed node reports the strongest that matched.
METHODS = ("exact", "index", "stripped", "tensor", "weight", "structure", "neighbour")

# Suffixes onnxruntime appends to keep names unique (graph.cc GenerateNodeName/GenerateNodeArgName) or to
# mark a copy (the QDQ propagation's duplicated DequantizeLinear).
_UNIQUE_SUFFIX = re.compile(r"(?:_token_\d+|/duplicated)$")
_BOUNDARY = re.compile(r"[_/]")

# Nodes that only move data: when onnxruntime inserted one (it has no name anchor), it computes nothing of
# the original graph and serves a neighbour (Reorder around NCHWc kernels, Transpose around NHWC ones,
# Reshape around a MatMul+Add turned into a 2-D Gemm).
LAYOUT_OPS = frozenset(
    {"ReorderInput", "ReorderOutput", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"}
)
QUANTIZE_OPS = frozenset({"QuantizeLinear", "DynamicQuantizeLinear"})

# Prefixes and suffixes of the kernels onnxruntime substitutes for a standard op.
_OP_PREFIXES = ("QLinear", "DynamicQuantize", "Fused", "Nhwc", "Q")
_OP_SUFFIXES = ("IntegerToFloat", "Integer", "Activation", "AndScale", "_nhwc")


@dataclass(frozen=True)
class Anchor:
    """The original nodes an executed node covers for certain, and the strongest rule that found them."""

    keys: frozenset[str]
    method: str


@cache
def base_op(op_type: str) -> str:
    """The standard op a kernel implements: ``QLinearConv``, ``FusedConv``, ``ConvInteger`` → ``Conv``; an op
    whose name only looks prefixed stays itself (``DynamicQuantizeLinear`` is no kind of ``Linear``)."""
    op = _stripped(op_type)
    return op if op == op_type or onnx.defs.has(op) else op_type


def _stripped(op_type: str) -> str:
    op = op_type
    for prefix in _OP_PREFIXES:
        rest = op[len(prefix) :]
        if op.startswith(prefix) and rest[:1].isupper():
            op = rest
            break
    for suffix in _OP_SUFFIXES:
        if op.endswith(suffix) and len(op) > len(suffix):
            op = op[: -len(suffix)]
            break
    return op


@cache
def _is_op_word(word: str) -> bool:
    """True for names onnxruntime gives nodes it creates (``Transpose``, ``QuantizeLinear``, ...)."""
    return onnx.defs.has(word) or word in LAYOUT_OPS or onnx.defs.has(base_op(word))


def is_layout(node: GraphNode, has_name_anchor: bool) -> bool:
    """A layout conversion that onnxruntime inserted (an original Transpose keeps its own anchors)."""
    return node.op_type in LAYOUT_OPS and not has_name_anchor


def find_anchor(
    name: str,
    op_type: str,
    node_index: int | None,
    body_node: GraphNode | None,
    saved_node: GraphNode | None,
    original: GraphIndex,
    saved: GraphIndex | None,
) -> Anchor | None:
    """All anchors of one executed node, united; ``None`` when no rule matched.

    ``body_node`` is the original node of a sub-graph the executed node was resolved to (see
    :func:`generator.layers.join.body_nodes`), None at top level.
    """
    found: dict[str, set[str]] = {}
    body_node = _body_node(name, body_node, saved_node, original)
    for method, node in _name_anchors(name, op_type, node_index, original, body_node):
        found.setdefault(method, set()).add(node.key)
    if saved_node is not None and saved is not None and not is_layout(saved_node, bool(found)):
        for method, node in _graph_anchors(op_type, saved_node, original, saved):
            found.setdefault(method, set()).add(node.key)
    if not found:
        return None
    method = next(m for m in METHODS if m in found)
    return Anchor(frozenset().union(*found.values()), method)


def _body_node(
    name: str, body_node: GraphNode | None, saved_node: GraphNode | None, original: GraphIndex
) -> GraphNode | None:
    """The original node of a sub-graph an executed node is, when names repeat across sub-graphs."""
    if body_node is not None:
        return body_node
    if saved_node is not None and saved_node.parent_key is not None and saved_node.name == name:
        # The same key names the same branch of the same If/Loop in both graphs.
        return original.by_key.get(saved_node.key)
    return None


def _name_anchors(
    name: str, op_type: str, node_index: int | None, original: GraphIndex, body_node: GraphNode | None
) -> Iterator[tuple[str, GraphNode]]:
    exact = body_node or original.by_name.get(name)
    if exact is not None and _compatible(exact, op_type, name):
        yield "exact", exact
    if node_index is not None and 0 <= node_index < len(original.top_level):
        node = original.top_level[node_index]
        if node.op_type == op_type and node.name in ("", name):
            yield "index", node
    if exact is None:
        stripped = _strip_name(name, original)
        if stripped is not None:
            yield "stripped", stripped


def _compatible(node: GraphNode, op_type: str, name: str) -> bool:
    """An executed node called like an op (``Transpose``) is only the original node of that op."""
    return not _is_op_word(name) or base_op(node.op_type) == base_op(op_type)


def _strip_name(name: str, original: GraphIndex) -> GraphNode | None:
    """The original node behind a renamed executed node: suffixes removed, then the longest known prefix.

    A prefix may be a node name (``conv1_quant_token_1`` → ``conv1_quant``) or a tensor name whose
    producer is meant (``relu1_out_nchwc`` → tensor ``relu1_out``). Prefixes that are op names are skipped:
    onnxruntime names the nodes it creates after their op (``Transpose_token_19``).
    """
    text = name
    while _UNIQUE_SUFFIX.search(text):
        text = _UNIQUE_SUFFIX.sub("", text)
    cuts = [len(text)] + [m.start() for m in _BOUNDARY.finditer(text)][::-1]
    for cut in cuts:
        prefix = text[:cut]
        if not prefix or _is_op_word(prefix):
            continue
        node = original.by_name.get(prefix) or _producer(prefix, original)
        if node is not None:
            return node
    return None


def _producer(tensor: str, original: GraphIndex) -> GraphNode | None:
    return original.producer.get(tensor) if original.is_activation(tensor) else None


def _graph_anchors(
    op_type: str, saved_node: GraphNode, original: GraphIndex, saved: GraphIndex
) -> Iterator[tuple[str, GraphNode]]:
    for out in saved_node.outputs:
        for node in _tensor_anchor(out, op_type, original):
            yield "tensor", node
    if all(o in saved.constant for o in saved_node.outputs if o):
        return  # weight preprocessing (a DequantizeLinear of a weight): it serves the weight's user
    for inp in saved_node.inputs:
        if inp in saved.weights:
            node = _weight_anchor(inp, original)
            if node is not None:
                yield "weight", node


def _tensor_anchor(tensor: str, op_type: str, original: GraphIndex) -> list[GraphNode]:
    """The original producer of a tensor the saved node writes under an original name.

    A fused kernel writes the last fused tensor (BASIC: the Conv writes the BatchNormalization's output).
    When that producer is a QuantizeLinear and the executed node is not one, the kernel computed the node
    behind it too (QDQ → QLinearConv). NHWC kernels write a tensor named after their original node.
    """
    if not tensor:
        return []
    name = _UNIQUE_SUFFIX.sub("", tensor)
    producer = _producer(name, original)
    if producer is None:
        node = original.by_name.get(name)
        return [node] if node is not None and not _is_op_word(name) else []
    found = [producer]
    if producer.op_type in QUANTIZE_OPS and op_type not in QUANTIZE_OPS:
        behind = _producer(producer.inputs[0], original)
        if behind is not None:
            found.append(behind)
    return found


def _weight_anchor(weight: str, original: GraphIndex) -> GraphNode | None:
    """The one original node computing with a distinctive weight, through DequantizeLinear-like chains."""
    name = _original_weight_name(weight, original)
    if name is None:
        return None
    users = _weight_users(name, original)
    return users[0] if len(users) == 1 else None


def _original_weight_name(weight: str, original: GraphIndex) -> str | None:
    """The original weight a saved initializer came from: same name, or the longest original suffix.

    onnxruntime prefixes the weights it rewrites (``ConvBnFusion_W_``, ``ConvBnFusion_BN_B_``,
    ``ConvAddFusion_B_``) and may append ``_token_N``.
    """
    text = _UNIQUE_SUFFIX.sub("", weight)
    for start in [0] + [m.end() for m in _BOUNDARY.finditer(text)]:
        candidate = text[start:]
        if candidate in original.distinctive_weights:
            return candidate
    return None


def _weight_users(weight: str, original: GraphIndex) -> list[GraphNode]:
    """Nodes whose run-time computation uses ``weight``, skipping weight-only preprocessing nodes."""
    users: dict[str, GraphNode] = {}
    stack, seen = [weight], {weight}
    while stack:
        for node in original.consumers.get(stack.pop(), ()):
            prepared = [o for o in node.outputs if o and o in original.constant]
            if prepared and len(prepared) == len([o for o in node.outputs if o]):
                stack.extend(o for o in prepared if o not in seen)
                seen.update(prepared)
            else:
                users[node.key] = node
    return list(users.values())
