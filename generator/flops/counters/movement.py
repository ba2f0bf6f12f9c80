"""Operators that move, select, generate or reinterpret data without arithmetic: registered as zero.

They are registered explicitly so that a node the registry does not know is truly unknown (listed, not
counted) rather than silently free. Their cost is memory traffic, which the layer rows carry as bytes.
``If`` costs nothing itself: the nodes of its branches have rows of their own. ``Loop`` and ``Scan`` are
not counted: how often their body runs is only known at run time.
"""

from __future__ import annotations

from generator.flops.registry import ZERO, Counts, NodeContext, NotCountable, counter

ZERO_COST_OPS = (
    # Shape and layout: views, copies and metadata.
    "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Shape", "Size", "Identity", "Expand", "Tile",
    "Concat", "Split", "Slice", "Pad", "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Trilu",
    # Indexing and selection: Where picks one of two values, Gather copies rows of its data input.
    "Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements", "Scatter", "Compress", "Where",
    "NonZero", "OneHot",
    # Generated values and type conversions (Cast converts; it does no arithmetic on the values).
    "ConstantOfShape", "Range", "EyeLike", "Cast", "CastLike",
    # Identity at inference.
    "Dropout",
    # Sequences and optionals.
    "SequenceConstruct", "SequenceAt", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceLength",
    "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalHasElement", "OptionalGetElement",
    # Control flow whose branches are counted node by node.
    "If",
)


@counter(*ZERO_COST_OPS)
def zero_cost(ctx: NodeContext) -> Counts:
    return ZERO


@counter("Loop", "Scan")
def loop(ctx: NodeContext) -> Counts:
    raise NotCountable(
        f"{ctx.op_type}: the number of iterations is only known at run time; its body's nodes have rows of "
        "their own, counted for one iteration"
    )
