"""Output shapes of the onnxruntime-specific operators ONNX's shape inference does not know.

ONNX shape inference stops at a ``com.microsoft`` node (QOperator models are full of them: QLinearAdd,
QGemm, QLinearGlobalAveragePool) and every tensor after it stays unknown. These rules give such a node's
output type and shape from its inputs'; :mod:`generator.flops.shapes` writes them into the graph and runs
ONNX's inference again so that it carries on downstream. onnxruntime's own symbolic shape inference would
do this too but gives up on whole models ("Incomplete symbolic shape inference") where one op is missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import onnx
from onnx import TensorProto, helper

# (element type, shape) of a tensor; shape dims are ints (only fully known shapes take part).
TensorType = tuple[int, tuple[int, ...]]
Lookup = Callable[[str], TensorType | None]
ShapeRule = Callable[[onnx.NodeProto, Lookup], list[TensorType | None]]

MS = "com.microsoft"
CONTRIB_SHAPES: dict[tuple[str, str], ShapeRule] = {}


def _rule(domain: str, *op_types: str) -> Callable[[ShapeRule], ShapeRule]:
    def register(fn: ShapeRule) -> ShapeRule:
        for op_type in op_types:
            CONTRIB_SHAPES[(domain, op_type)] = fn
        return fn

    return register


def _input(node: onnx.NodeProto, lookup: Lookup, index: int) -> TensorType | None:
    return lookup(node.input[index]) if index < len(node.input) and node.input[index] else None


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def broadcast(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy broadcasting of shapes."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    return tuple(max(dims) if 0 not in dims else 0 for dims in zip(*padded, strict=True))


@_rule(MS, "Gelu", "BiasGelu", "FastGelu", "QuickGelu", "QLinearLeakyRelu", "QLinearSigmoid", "QLinearSoftmax",
       "SkipLayerNormalization", "SkipSimplifiedLayerNormalization")
@_rule("", "SimplifiedLayerNormalization")
def same_as_first(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    return [_input(node, lookup, 0)]


@_rule(MS, "QLinearAdd", "QLinearMul")
def broadcast_binary(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    a, b = _input(node, lookup, 0), _input(node, lookup, 3)
    return [(a[0], broadcast(a[1], b[1]))] if a and b else [None]


@_rule(MS, "QLinearGlobalAveragePool")
def global_pool(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    x = _input(node, lookup, 0)
    if x is None:
        return [None]
    elem, shape = x
    if _attrs(node).get("channels_last", 0):
        return [(elem, (shape[0], *([1] * (len(shape) - 2)), shape[-1]))]
    return [(elem, (shape[0], shape[1], *([1] * (len(shape) - 2))))]


def matmul_shape(a: Sequence[int], b: Sequence[int], trans_a: bool = False, trans_b: bool = False) -> tuple[int, ...]:
    """numpy.matmul's output shape, after optionally swapping the last two axes of A and B."""
    a, b = list(a), list(b)
    if trans_a and len(a) >= 2:
        a[-2], a[-1] = a[-1], a[-2]
    if trans_b and len(b) >= 2:
        b[-2], b[-1] = b[-1], b[-2]
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return (*b[:-2], b[-1])
    if len(b) == 1:
        return tuple(a[:-1])
    return (*broadcast(a[:-2], b[:-2]), a[-2], b[-1])


@_rule(MS, "QGemm")
def qgemm_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    a, b = _input(node, lookup, 0), _input(node, lookup, 3)
    if not (a and b):
        return [None]
    attrs = _attrs(node)
    zero_point = _input(node, lookup, 8)
    elem = zero_point[0] if zero_point else TensorProto.FLOAT
    return [(elem, matmul_shape(a[1], b[1], bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))))]


@_rule(MS, "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "FusedMatMul")
def float_matmul_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    a, b = _input(node, lookup, 0), _input(node, lookup, 1)
    if not (a and b):
        return [None]
    attrs = _attrs(node)
    elem = a[0] if node.op_type == "FusedMatMul" else TensorProto.FLOAT
    return [(elem, matmul_shape(a[1], b[1], bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))))]


@_rule(MS, "Attention", "QAttention")
def attention_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    """``[B, S, Dv]``; the float type of the bias (QAttention's input is integer)."""
    x, weights, bias = _input(node, lookup, 0), _input(node, lookup, 1), _input(node, lookup, 2)
    if not (x and weights):
        return [None]
    sizes = [int(s) for s in _attrs(node).get("qkv_hidden_sizes", ())] or [weights[1][-1] // 3] * 3
    elem = bias[0] if bias else x[0]
    return [(elem, (x[1][0], x[1][1], sizes[2]))]


@_rule(MS, "MultiHeadAttention")
def mha_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    """``[B, S, N·dv]`` for the layouts described in the MultiHeadAttention counter."""
    query, key, value = (_input(node, lookup, i) for i in range(3))
    heads = int(_attrs(node).get("num_heads", 0))
    if query is None:
        return [None]
    elem, q = query
    if len(q) == 5:
        return [(elem, (q[0], q[1], q[2] * q[4]))]
    if key is not None and len(key[1]) == 5:
        return [(elem, (q[0], q[1], key[1][2] * key[1][4]))]
    if value is None:
        return [None]
    v = value[1]
    return [(elem, (q[0], q[1], heads * v[3] if len(v) == 4 else v[2]))]


@_rule(MS, "QLinearConcat")
def qlinear_concat_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    """Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per concatenated tensor."""
    parts = [_input(node, lookup, i) for i in range(2, len(node.input), 3)]
    zero_point = _input(node, lookup, 1)
    if not parts or any(p is None for p in parts) or zero_point is None:
        return [None]
    shapes = [p[1] for p in parts if p is not None]
    axis = int(_attrs(node)["axis"]) % len(shapes[0])
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return [(zero_point[0], tuple(out))]


def pooled_dims(in_dims: Sequence[int], kernel: Sequence[int], attrs: dict[str, object]) -> tuple[int, ...]:
    """Spatial output dims of a convolution or pooling (strides, pads, dilations, auto_pad, ceil_mode)."""
    rank = len(in_dims)
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    pads = list(attrs.get("pads", [0] * 2 * rank))
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    rounding = math.ceil if attrs.get("ceil_mode", 0) else math.floor
    out = []
    for i, size in enumerate(in_dims):
        span = dilations[i] * (kernel[i] - 1) + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(math.ceil(size / strides[i]))
        elif auto_pad == "VALID":
            out.append(math.ceil((size - span + 1) / strides[i]))
        else:
            out.append(int(rounding((size + pads[i] + pads[i + rank] - span) / strides[i])) + 1)
    return tuple(out)


@_rule(MS, "FusedConv")
def fused_conv_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    x, w = _input(node, lookup, 0), _input(node, lookup, 1)
    if not (x and w):
        return [None]
    spatial = pooled_dims(x[1][2:], w[1][2:], _attrs(node))
    return [(x[0], (x[1][0], w[1][0], *spatial))]


@_rule(MS, "QLinearAveragePool")
def qlinear_pool_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    x = _input(node, lookup, 0)
    if x is None:
        return [None]
    attrs = _attrs(node)
    kernel = [int(k) for k in attrs.get("kernel_shape", ())]
    if attrs.get("channels_last", 0):
        return [(x[0], (x[1][0], *pooled_dims(x[1][1:-1], kernel, attrs), x[1][-1]))]
    return [(x[0], (x[1][0], x[1][1], *pooled_dims(x[1][2:], kernel, attrs)))]


@_rule(MS, "QuantizeLinear", "DequantizeLinear")
def quantize_shape(node: onnx.NodeProto, lookup: Lookup) -> list[TensorType | None]:
    """Same shape; Quantize gives the zero point's type (uint8 without one), Dequantize the scale's."""
    x = _input(node, lookup, 0)
    if x is None:
        return [None]
    if node.op_type == "QuantizeLinear":
        zero_point = _input(node, lookup, 2)
        return [(zero_point[0] if zero_point else TensorProto.UINT8, x[1])]
    scale = _input(node, lookup, 1)
    return [(scale[0] if scale else TensorProto.FLOAT, x[1])]
