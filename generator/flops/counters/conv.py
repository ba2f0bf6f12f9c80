"""Convolutions: Conv, ConvTranspose and onnxruntime's FusedConv (Conv + activation).

Groups and dilations need no formula of their own: the weight's shape ``[M, C/group, k1, k2, ...]`` holds
the input channels each output sees, and the output's spatial size (from shape inference) already reflects
strides, pads and dilations. Every output element of a Conv is one dot product of ``C/group × k1 × k2 ...``
terms; a bias adds 1 operation per output element.
"""

from __future__ import annotations

import math

from generator.flops.counters.elementwise import ACTIVATION_COSTS
from generator.flops.registry import MS_DOMAIN, Counts, NodeContext, NotCountable, counter


def conv_macs(ctx: NodeContext, weight: int = 1) -> int:
    """Multiply-adds of a convolution: output elements × input channels per group × kernel elements."""
    return ctx.output_numel() * math.prod(ctx.input_shape(weight)[1:])


def conv_transpose_macs(ctx: NodeContext) -> int:
    """Each input element is multiplied into ``M/group × k1 × k2 ...`` outputs (weight ``[C, M/group, k...]``)."""
    return ctx.input_numel(0) * math.prod(ctx.input_shape(1)[1:])


@counter("Conv")
def conv(ctx: NodeContext) -> Counts:
    macs = conv_macs(ctx)
    bias_adds = ctx.output_numel() if ctx.has_input(2) else 0
    return ctx.arithmetic(2 * macs + bias_adds, macs)


@counter("ConvTranspose")
def conv_transpose(ctx: NodeContext) -> Counts:
    macs = conv_transpose_macs(ctx)
    bias_adds = ctx.output_numel() if ctx.has_input(2) else 0
    return ctx.arithmetic(2 * macs + bias_adds, macs)


@counter("FusedConv", domain=MS_DOMAIN)
def fused_conv(ctx: NodeContext) -> Counts:
    """Conv + bias + optional residual input (``Z``, input 3) + activation, as onnxruntime fuses them."""
    activation = ctx.text_attr("activation")
    if activation and activation not in ACTIVATION_COSTS:
        raise NotCountable(f"FusedConv activation {activation!r} has no counter")
    macs = conv_macs(ctx)
    out = ctx.output_numel()
    extra = (out if ctx.has_input(2) else 0) + (out if ctx.has_input(3) else 0)
    extra += out * ACTIVATION_COSTS.get(activation, 0)
    return ctx.arithmetic(2 * macs + extra, macs)
