"""Pooling and resampling.

A pooling window of ``k`` elements costs ``k - 1`` comparisons (max) or ``k - 1`` additions and a division
(average: ``k``) per output element. Windows are counted whole, also where they overlap the padding.
Resize: nearest is data movement (0); linear interpolation is ``2^d - 1`` one-dimensional lerps of 3
operations (``a + t(b - a)``) per output element, ``d`` being the number of axes whose size changes; cubic
is ``(4^d - 1) / 3`` four-tap interpolations of 7 operations (4 multiplies, 3 adds).
"""

from __future__ import annotations

import math

from generator.flops.registry import Counts, NodeContext, NotCountable, counter

LERP_OPS = 3
CUBIC_TAP_OPS = 7


def _window(ctx: NodeContext) -> int:
    return math.prod(int(k) for k in ctx.attr("kernel_shape", ()))


@counter("MaxPool")
def max_pool(ctx: NodeContext) -> Counts:
    return ctx.arithmetic(ctx.output_numel() * (_window(ctx) - 1))


@counter("AveragePool")
def average_pool(ctx: NodeContext) -> Counts:
    return ctx.arithmetic(ctx.output_numel() * _window(ctx))


@counter("LpPool")
def lp_pool(ctx: NodeContext) -> Counts:
    """|x|^p summed over the window, then ^(1/p): 2k + (k - 1) + 1 = 3k per output."""
    return ctx.arithmetic(ctx.output_numel() * 3 * _window(ctx))


@counter("GlobalAveragePool")
def global_average_pool(ctx: NodeContext) -> Counts:
    """Per (item, channel): HW - 1 additions and a division, so one operation per input element."""
    return ctx.arithmetic(ctx.input_numel(0))


@counter("GlobalMaxPool")
def global_max_pool(ctx: NodeContext) -> Counts:
    return ctx.arithmetic(ctx.input_numel(0) - ctx.output_numel())


def interpolation_ops(mode: str, in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> int:
    """Operations per output element of a Resize in ``mode`` (see the module docstring)."""
    changed = sum(1 for a, b in zip(in_shape, out_shape, strict=True) if a != b)
    if mode == "nearest" or changed == 0:
        return 0
    if mode in ("linear", "bilinear"):
        return LERP_OPS * (2**changed - 1)
    if mode == "cubic":
        return CUBIC_TAP_OPS * (4**changed - 1) // 3
    raise NotCountable(f"Resize mode {mode!r} has no counter")


@counter("Resize", "Upsample")
def resize(ctx: NodeContext) -> Counts:
    per_output = interpolation_ops(ctx.text_attr("mode", "nearest"), ctx.input_shape(0), ctx.output_shape())
    return ctx.arithmetic(per_output * ctx.output_numel())
