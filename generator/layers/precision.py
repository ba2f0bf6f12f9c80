"""The precision an executed node computed in, from the element types onnxruntime profiled."""

from __future__ import annotations

from collections.abc import Sequence

FP32 = "FP32"
FP16 = "FP16"
INT8 = "INT8"
MIXED = "mixed"
OTHER = "other"

# onnxruntime writes ``float`` and ``float16``; the aliases cover other spellings of the same types.
# bfloat16 and double are neither FP32 nor FP16: they fall to ``other`` (rule 4).
_FLOAT_TYPES = {"float": FP32, "float32": FP32, "float16": FP16, "mlfloat16": FP16}
_INT8_TYPES = frozenset({"int8", "uint8"})

# Ops that convert between precisions: they are the cost of running part of a model in another precision,
# so a user reading "time per precision" wants them apart from the layers that compute in one precision.
_CONVERSION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast"})


def runtime_precision(op_type: str, input_types: Sequence[str], output_types: Sequence[str]) -> str:
    """Classify an executed node as ``FP32``, ``FP16``, ``INT8``, ``mixed`` or ``other``.

    The types are element types as onnxruntime writes them in a profile's ``input_type_shape`` and
    ``output_type_shape`` (``float``, ``float16``, ``int8``, ``uint8``, ``int32``, ``int64``, ``bool``, ...).
    Rules, in order:

    1. Conversions between precisions are ``mixed``: ``QuantizeLinear``, ``DequantizeLinear``,
       ``DynamicQuantizeLinear``, and a ``Cast`` whose input and output precisions differ (float to
       float16, float to int8, int32 to float, ...). A ``Cast`` within one precision falls through to rule 2.
    2. A node with an 8-bit integer input is ``INT8``: the integer compute kernels (``QLinearConv``,
       ``QLinearMatMul``, ``ConvInteger``, ``MatMulInteger``, ``MatMulIntegerToFloat``, ``QGemm``,
       ``DynamicQuantizeMatMul``, ``QLinearAdd``, ...) and data movement on quantized tensors (``MaxPool``,
       ``Transpose``, ``Reshape`` of an ``uint8`` tensor). Their float inputs are scales; their float outputs
       (``MatMulIntegerToFloat``) are the result of integer arithmetic.
       Profiles omit weights that onnxruntime pre-packed, so a ``DynamicQuantizeMatMul`` may show only its
       float input: it is recognised by its op type.
    3. Otherwise the floating-point types of the inputs and outputs decide: only ``float`` gives ``FP32``,
       only ``float16`` gives ``FP16``, both gives ``mixed``. Integer tensors beside them
       (``int64`` shapes and indices of ``Reshape``, ``Gather``, ``Expand``) do not count, so shape-only ops
       take the precision of the data they move.
    4. Nothing in float, float16 or 8 bits (integer arithmetic on ``int64`` shapes, ``bool`` masks,
       ``bfloat16`` and ``double`` kernels): ``other``.
    """
    ins = [_element_type(t) for t in input_types]
    outs = [_element_type(t) for t in output_types]
    if op_type in _CONVERSION_OPS and _is_conversion(op_type, ins, outs):
        return MIXED
    if any(t in _INT8_TYPES for t in ins) or op_type in _ALWAYS_INT8_OPS:
        return INT8
    floats = {_FLOAT_TYPES[t] for t in ins + outs if t in _FLOAT_TYPES}
    if len(floats) == 1:
        return floats.pop()
    if floats:
        return MIXED
    if any(t in _INT8_TYPES for t in outs):
        return INT8
    return OTHER


# Integer kernels whose 8-bit weight onnxruntime pre-packs, so the profile may list only float inputs.
_ALWAYS_INT8_OPS = frozenset({"DynamicQuantizeMatMul", "DynamicQuantizeLSTM", "MatMulIntegerToFloat"})


def _is_conversion(op_type: str, ins: list[str], outs: list[str]) -> bool:
    if op_type != "Cast":
        return True
    return _precision_class(ins[:1]) != _precision_class(outs[:1])


def _precision_class(types: list[str]) -> str:
    if not types:
        return OTHER
    kind = types[0]
    if kind in _FLOAT_TYPES:
        return _FLOAT_TYPES[kind]
    return INT8 if kind in _INT8_TYPES else OTHER


def _element_type(text: str) -> str:
    """``float`` from ``float``, ``tensor(float)`` or ``Float``; profiles only use the first form."""
    kind = text.strip().lower()
    if kind.startswith("tensor(") and kind.endswith(")"):
        kind = kind[len("tensor(") : -1]
    return kind
