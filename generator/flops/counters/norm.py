"""Normalizations: batch, layer, instance, group and RMS (simplified layer) normalization, and the skip forms.

Layer-style normalizations count the operations of ONNX's definition of LayerNormalization, per row of
``n`` normalized elements: mean (n - 1 adds, 1 div: n), x - mean (n), square (n), variance mean (n),
+ epsilon, sqrt, reciprocal (3), × reciprocal (n), × scale (n), + bias (n): ``7n + 3``, or ``6n + 3``
without bias. RMS normalization skips the mean and the subtraction: square, mean, + eps, sqrt,
reciprocal, × reciprocal, × scale: ``4n + 3``.

BatchNormalization at inference uses constant statistics: per channel, ``a = scale / sqrt(var + eps)``
and ``b = B - mean × a`` (5 operations), then ``a × x + b`` per element (2).
"""

from __future__ import annotations

import math

from generator.flops.registry import MS_DOMAIN, Counts, NodeContext, counter

BN_PER_CHANNEL = 5  # add eps, sqrt, div; mul, sub
BN_PER_ELEMENT = 2  # a * x + b


def layer_norm_ops(rows: int, n: int, bias: bool) -> int:
    """Operations of layer-normalizing ``rows`` rows of ``n`` elements (see the module docstring)."""
    return rows * ((7 if bias else 6) * n + 3)


def rms_norm_ops(rows: int, n: int) -> int:
    return rows * (4 * n + 3)


def _rows_and_width(shape: tuple[int, ...], axis: int) -> tuple[int, int]:
    axis = axis % len(shape) if shape else 0
    n = math.prod(shape[axis:])
    return math.prod(shape[:axis]), n


@counter("BatchNormalization")
def batch_norm(ctx: NodeContext) -> Counts:
    shape = ctx.input_shape(0)
    channels = shape[1] if len(shape) > 1 else 1
    if ctx.attr("training_mode", 0):
        # Statistics computed from the batch: per channel, a layer norm over N × spatial elements.
        return ctx.arithmetic(layer_norm_ops(channels, math.prod(shape) // max(channels, 1), bias=True))
    return ctx.arithmetic(BN_PER_ELEMENT * math.prod(shape) + BN_PER_CHANNEL * channels)


@counter("LayerNormalization")
def layer_norm(ctx: NodeContext) -> Counts:
    rows, n = _rows_and_width(ctx.input_shape(0), int(ctx.attr("axis", -1)))
    return ctx.arithmetic(layer_norm_ops(rows, n, bias=ctx.has_input(2)))


@counter("InstanceNormalization")
def instance_norm(ctx: NodeContext) -> Counts:
    """Each (item, channel) plane is a row; scale and bias are always given."""
    rows, n = _rows_and_width(ctx.input_shape(0), 2)
    return ctx.arithmetic(layer_norm_ops(rows, n, bias=True))


@counter("GroupNormalization")
def group_norm(ctx: NodeContext) -> Counts:
    """Each (item, group) is a row of channels/groups × spatial elements."""
    shape = ctx.input_shape(0)
    rows = shape[0] * int(ctx.attr("num_groups"))
    return ctx.arithmetic(layer_norm_ops(rows, math.prod(shape) // rows, bias=True))


@counter("SimplifiedLayerNormalization", "RMSNormalization")
def rms_norm(ctx: NodeContext) -> Counts:
    """onnxruntime registers SimplifiedLayerNormalization in the ONNX domain; RMSNormalization is opset 23."""
    rows, n = _rows_and_width(ctx.input_shape(0), int(ctx.attr("axis", -1)))
    return ctx.arithmetic(rms_norm_ops(rows, n))


@counter("SkipLayerNormalization", domain=MS_DOMAIN)
def skip_layer_norm(ctx: NodeContext) -> Counts:
    """input + skip (+ bias, input 4), then a layer norm over the last axis with beta (input 3) if given."""
    rows, n = _rows_and_width(ctx.input_shape(0), -1)
    adds = rows * n * (2 if ctx.has_input(4) else 1)
    return ctx.arithmetic(adds + layer_norm_ops(rows, n, bias=ctx.has_input(3)))


@counter("SkipSimplifiedLayerNormalization", domain=MS_DOMAIN)
def skip_rms_norm(ctx: NodeContext) -> Counts:
    """input + skip (+ bias, input 3), then an RMS norm over the last axis."""
    rows, n = _rows_and_width(ctx.input_shape(0), -1)
    adds = rows * n * (2 if ctx.has_input(3) else 1)
    return ctx.arithmetic(adds + rms_norm_ops(rows, n))
