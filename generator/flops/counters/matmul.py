"""Matrix products: MatMul (batched, broadcasting), Gemm, onnxruntime's FusedMatMul, and two-operand Einsum.

Every output element of a matrix product is a dot product over the shared dimension ``K``, so the
multiply-adds are ``output elements × K`` whatever the batch dimensions and their broadcasting.
"""

from __future__ import annotations

import math
import re

from generator.flops.registry import MS_DOMAIN, Counts, NodeContext, NotCountable, counter


def matmul_macs(ctx: NodeContext, a: int = 0, trans_a: bool = False) -> int:
    """Output elements × K, K being A's last dimension (second to last when A is transposed)."""
    shape_a = ctx.input_shape(a)
    k = shape_a[-2] if trans_a and len(shape_a) >= 2 else shape_a[-1]
    return ctx.output_numel() * k


def gemm_macs(ctx: NodeContext, a: int = 0) -> int:
    """Gemm's A is 2-D, ``[M, K]`` or ``[K, M]`` with ``transA``."""
    return matmul_macs(ctx, a, bool(ctx.attr("transA", 0)))


@counter("MatMul")
def matmul(ctx: NodeContext) -> Counts:
    macs = matmul_macs(ctx)
    return ctx.arithmetic(2 * macs, macs)


@counter("Gemm")
def gemm(ctx: NodeContext) -> Counts:
    """alpha·A·B + beta·C: scaling by alpha or beta costs 1 per output element when it is not 1, adding C 1."""
    macs = gemm_macs(ctx)
    out = ctx.output_numel()
    extra = out if ctx.attr("alpha", 1.0) != 1.0 else 0
    if ctx.has_input(2):
        extra += out + (out if ctx.attr("beta", 1.0) != 1.0 else 0)
    return ctx.arithmetic(2 * macs + extra, macs)


@counter("FusedMatMul", domain=MS_DOMAIN)
def fused_matmul(ctx: NodeContext) -> Counts:
    """MatMul with optional transposes of A and B and an ``alpha`` scale."""
    macs = matmul_macs(ctx, 0, bool(ctx.attr("transA", 0)))
    extra = ctx.output_numel() if ctx.attr("alpha", 1.0) != 1.0 else 0
    return ctx.arithmetic(2 * macs + extra, macs)


@counter("Einsum")
def einsum(ctx: NodeContext) -> Counts:
    """Two operands: one multiply-add per combination of all index values (the product of every distinct
    index's size); summing over an index of one operand costs input - output additions. More operands:
    the cost depends on the contraction order onnxruntime picks, so it is not counted."""
    equation = ctx.text_attr("equation").replace(" ", "")
    operands = equation.split("->")[0].split(",")
    if len(operands) == 1:
        return ctx.arithmetic(ctx.input_numel(0) - ctx.output_numel())
    if len(operands) != 2:
        raise NotCountable(f"Einsum with {len(operands)} operands: the cost depends on the contraction order")
    sizes = _index_sizes(operands, [ctx.input_shape(0), ctx.input_shape(1)])
    macs = math.prod(sizes.values())
    return ctx.arithmetic(2 * macs, macs)


def _index_sizes(operands: list[str], shapes: list[tuple[int, ...]]) -> dict[str, int]:
    """Size of each index letter; the dimensions under ``...`` get one pseudo-index each (broadcast: max)."""
    sizes: dict[str, int] = {}
    for term, shape in zip(operands, shapes, strict=True):
        letters = re.findall(r"\.\.\.|[A-Za-z]", term)
        ellipsis_rank = len(shape) - (len(letters) - letters.count("..."))
        expanded: list[str] = []
        for letter in letters:
            if letter == "...":
                # Right-aligned, as numpy broadcasting aligns them.
                expanded.extend(f"...{ellipsis_rank - i}" for i in range(ellipsis_rank))
            else:
                expanded.append(letter)
        for letter, dim in zip(expanded, shape, strict=True):
            sizes[letter] = max(sizes.get(letter, 1), dim)
    return sizes
