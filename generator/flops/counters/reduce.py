"""Reductions and softmax.

Reducing ``n`` values to one costs ``n - 1`` operations, so a reduction from ``in`` to ``out`` elements
costs ``in - out`` whichever axes it runs over; a mean adds one division per output (``in``).

Softmax follows ONNX's definition, per row of ``n``: max (n - 1), subtract (n), exp (n), sum (n - 1),
divide (n): ``5n - 2``. LogSoftmax: max, subtract, exp, sum, log (1), subtract (n): ``5n - 1``.
"""

from __future__ import annotations

import math

from generator.flops.registry import Counts, NodeContext, counter

SOFTMAX_PER_ELEMENT, SOFTMAX_PER_ROW = 5, -2
LOG_SOFTMAX_PER_ELEMENT, LOG_SOFTMAX_PER_ROW = 5, -1


def softmax_ops(rows: int, n: int) -> int:
    return rows * (SOFTMAX_PER_ELEMENT * n + SOFTMAX_PER_ROW)


def _reduction(ctx: NodeContext) -> tuple[int, int]:
    return ctx.input_numel(0), ctx.output_numel()


@counter("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin")
def reduce_plain(ctx: NodeContext) -> Counts:
    n_in, n_out = _reduction(ctx)
    return ctx.arithmetic(n_in - n_out)


@counter("ReduceMean", "ReduceLogSum")
def reduce_then_one_op(ctx: NodeContext) -> Counts:
    """Sum, then one division (mean) or logarithm per output: in - out + out."""
    n_in, _ = _reduction(ctx)
    return ctx.arithmetic(n_in)


@counter("ReduceSumSquare", "ReduceL1")
def reduce_after_map(ctx: NodeContext) -> Counts:
    """A square or an absolute value per input element, then the sum."""
    n_in, n_out = _reduction(ctx)
    return ctx.arithmetic(2 * n_in - n_out)


@counter("ReduceL2", "ReduceLogSumExp")
def reduce_map_then_op(ctx: NodeContext) -> Counts:
    """Square (exp) per input, sum, then sqrt (log) per output: in + in - out + out."""
    n_in, _ = _reduction(ctx)
    return ctx.arithmetic(2 * n_in)


def softmax_rows(ctx: NodeContext) -> tuple[int, int]:
    """Rows and row length: before opset 13 the input is flattened to 2-D at ``axis`` (default 1)."""
    shape = ctx.input_shape(0)
    if not shape:
        return 1, 1
    if ctx.opset < 13:
        axis = int(ctx.attr("axis", 1)) % len(shape)
        n = math.prod(shape[axis:])
    else:
        n = shape[int(ctx.attr("axis", -1)) % len(shape)]
    return math.prod(shape) // max(n, 1), n


@counter("Softmax")
def softmax(ctx: NodeContext) -> Counts:
    rows, n = softmax_rows(ctx)
    return ctx.arithmetic(softmax_ops(rows, n))


@counter("LogSoftmax")
def log_softmax(ctx: NodeContext) -> Counts:
    rows, n = softmax_rows(ctx)
    return ctx.arithmetic(rows * (LOG_SOFTMAX_PER_ELEMENT * n + LOG_SOFTMAX_PER_ROW))


@counter("Hardmax")
def hardmax(ctx: NodeContext) -> Counts:
    """An arg-max per row: n - 1 comparisons."""
    rows, n = softmax_rows(ctx)
    return ctx.arithmetic(rows * (n - 1))
