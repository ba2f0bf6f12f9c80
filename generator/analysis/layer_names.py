"""How model transforms rename nodes, and how to bring two versions' names to a common form.

onnxruntime.quantization and the float16 converter derive the names of what they touch from the original
names (`conv1_quant`, `ConvBnFusion_W_conv1.weight`, `/fc/Gemm_output_quantized_cast`); these rules undo that
one step at a time (see docs/methodology-compare.md and ../shared/LAYER_MAPPING.md's findings).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

# Executed ops that only convert between precisions.
CONVERSION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})
# Ops a quantizer or its pre-processing removes from the FP32 graph: folded into the op before them, absorbed
# by a QuantizeLinear, or merged with a neighbour by the graph optimizer quant_pre_process runs.
REMOVABLE_OPS = frozenset({"Relu", "Clip", "BatchNormalization", "Identity", "Dropout", "LeakyRelu",
                           "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten"})
# Original-node names the transforms give the conversion nodes they add (onnxruntime.quantization,
# onnxconverter-common's float16 converter): their time is overhead, and the names are no evidence of a layer.
ADDED = re.compile(
    r"(?:_QuantizeLinear|_DequantizeLinear|_quant_scales_mul|_quant_output_scale_mul|_output_quantized_cast)"
    r"(?:/duplicated|_token_\d+)?$|^graph_(?:input|output)_cast_?\d+$|^InsertedPrecisionFreeCast_"
)
# What transforms append or prepend to a name they derive from an original one, removed one at a time.
STRIP_SUFFIX = re.compile(
    r"(?:/duplicated|_token_\d+|_QuantizeLinear(?:_Input)?|_DequantizeLinear|_quant_scales_mul"
    r"|_quant_output_scale_mul|_output_quantized_cast|_quantized|_quant|_bias_add|_bias_reshape_shape"
    r"|_MatMul|_Add|_output_\d+|:\d+|_fp16|_scale|_zero_point)$"
)
STRIP_PREFIX = re.compile(r"^(?:ConvBnFusion_W_|ConvBnFusion_BN_B_|ConvBnFusion_|InsertedPrecisionFreeCast_)")
INSERTED_CAST = "InsertedPrecisionFreeCast_"
QPARAM = re.compile(r"(?:_scale|_zero_point)$")
# A node without a (unique) name is keyed `<op_type>_<position>` (generator.layers.graph_index).
UNNAMED = re.compile(r"^[A-Z][A-Za-z0-9]*_\d+(?:#\d+)?$")
# A weight listed by more executed nodes than this is a shared constant (a reshape target), not a layer's.
MAX_WEIGHT_USERS = 3


@cache  # asked for every original node of every trial a comparison or the chooser reads
def is_added_name(name: str) -> bool:
    """True for an original-node name a transform gave a conversion node it inserted."""
    return bool(ADDED.search(name))


@cache
def is_qparam(name: str) -> bool:
    """True for a weight that is a quantization parameter (`_scale`, `_zero_point`): no evidence of a layer."""
    return bool(QPARAM.search(name))


@cache
def strip_candidates(name: str) -> tuple[str, ...]:
    """`name` and every form obtained by removing transform suffixes/prefixes, least stripped first."""
    seen, frontier = [name], [name]
    while frontier:
        nxt = []
        for current in frontier:
            for form in (STRIP_SUFFIX.sub("", current, count=1), STRIP_PREFIX.sub("", current, count=1)):
                if form and form not in seen:
                    seen.append(form)
                    nxt.append(form)
        frontier = nxt
    return tuple(seen)


def common_name(name: str, other_closure: set[str]) -> str:
    """The least-stripped form of `name` that the other version also has in some form, else `name`."""
    return next((form for form in strip_candidates(name) if form in other_closure), name)


def closure(names: Iterable[str]) -> set[str]:
    """Every stripped form of every name."""
    return {form for name in names for form in strip_candidates(name)}
