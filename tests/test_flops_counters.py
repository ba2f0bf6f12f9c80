"""Every FLOP counter against a value computed by hand, on one-node models built with onnx.helper.

Each case writes its arithmetic out. Conventions (docs/methodology-flops.md): a multiply-add is 1 MAC and
2 operations; a bias add, an element-wise operation or an elementary function (exp, erf, sqrt, ...) is 1;
integer arithmetic goes to int_ops. The last tests check that every registered counter has a case here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from generator.flops import COUNTERS, Counts, NodeContext, analyze_model
from generator.flops.counters.movement import ZERO_COST_OPS

MS = "com.microsoft"
F32 = "float32"


def act(*shape: int, dtype: str = F32) -> tuple[str, tuple[int, ...]]:
    """An activation input (a graph input at this shape)."""
    return dtype, shape


def w(values, dtype: str = F32) -> np.ndarray:
    """A weight (initializer)."""
    return np.asarray(values, dtype=dtype)


def ones(*shape: int, dtype: str = F32) -> np.ndarray:
    return np.ones(shape, dtype=dtype)


SCALE, U8_ZP, I8_ZP = w(0.1), w(128, "uint8"), w(0, "int8")


def count_node(tmp_path: Path, op: str, inputs: list, attrs: dict | None = None, domain: str = "",
               opset: int = 17, outputs: int = 1):
    """Build a model of one node named ``node`` (inputs: act(...) specs, arrays for weights, None for an
    omitted optional input), analyze it at the activations' shapes and return the node's row."""
    names, graph_inputs, inits, shapes = [], [], [], {}
    for i, spec in enumerate(inputs):
        name = f"in{i}"
        if spec is None:
            names.append("")
            continue
        names.append(name)
        if isinstance(spec, np.ndarray):
            inits.append(numpy_helper.from_array(spec, name))
        else:
            dtype, shape = spec
            graph_inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                                              list(shape)))
            shapes[name] = shape
    outs = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, name="node", domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], "g", graph_inputs, [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if domain == MS else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    path = tmp_path / f"{op}.onnx"
    onnx.save(model, path)
    (row,) = analyze_model(path, shapes)
    assert row.node == "node" and row.counted, row
    return row


def check(row, expected: Counts) -> None:
    assert (row.flops, row.macs, row.int_ops) == (expected.flops, expected.macs, expected.int_ops)


# -- element-wise: x [2, 3, 4] = 24 elements ------------------------------------------------------------

X = act(2, 3, 4)
N = 2 * 3 * 4  # 24 output elements
FLOAT_UNARY_ONE_OP = ("Neg", "Abs", "Relu", "Sqrt", "Reciprocal", "Exp", "Log", "Erf", "Tanh", "Sin", "Cos", "Tan",
                      "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Sign", "Floor", "Ceil",
                      "Round", "IsNaN", "IsInf")
FLOAT_BINARY_ONE_OP = ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")
COMPOSITE = {  # op: (operations per element, the formula's operations)
    "LeakyRelu": 2,  # compare, multiply
    "ThresholdedRelu": 2,  # compare, select
    "Sigmoid": 4,  # neg, exp, add, div
    "HardSigmoid": 4,  # mul, add, max, min
    "HardSwish": 5,  # hard sigmoid (4) and a multiply
    "Elu": 4,  # compare, exp, sub, mul
    "Selu": 5,  # Elu and the gamma multiply
    "Celu": 7,  # div, exp, sub, mul, min, max, add
    "Softplus": 3,  # exp, add, log
    "Softsign": 3,  # abs, add, div
    "Mish": 5,  # softplus (3), tanh, mul
}


@pytest.mark.parametrize("op", FLOAT_UNARY_ONE_OP)
def test_float_unary_one_op_per_element(tmp_path, op):
    check(count_node(tmp_path, op, [X]), Counts(flops=24 * 1))


@pytest.mark.parametrize("op", FLOAT_BINARY_ONE_OP)
def test_float_binary_one_op_per_output_element(tmp_path, op):
    # x [2, 3, 4] with y [4] broadcast: one operation per output element, 24.
    check(count_node(tmp_path, op, [X, act(4)]), Counts(flops=24))


@pytest.mark.parametrize("op", sorted(COMPOSITE))
def test_composite_activations(tmp_path, op):
    opset = {"Mish": 18}.get(op, 17)
    check(count_node(tmp_path, op, [X], opset=opset), Counts(flops=N * COMPOSITE[op]))


def test_prelu(tmp_path):
    # x [2, 3, 4], slope [4]: compare and multiply per element: 24 * 2 = 48.
    check(count_node(tmp_path, "PRelu", [X, ones(4)]), Counts(flops=48))


@pytest.mark.parametrize("op, dtype, opset, attrs", [
    ("Mod", "int32", 17, {}), ("BitShift", "uint8", 17, {"direction": "LEFT"}),
    ("BitwiseAnd", "int32", 18, {}), ("BitwiseOr", "int32", 18, {}), ("BitwiseXor", "int32", 18, {}),
    ("And", "bool", 17, {}), ("Or", "bool", 17, {}), ("Xor", "bool", 17, {}),
])
def test_integer_binary_ops_are_int_ops(tmp_path, op, dtype, opset, attrs):
    row = count_node(tmp_path, op, [act(2, 3, 4, dtype=dtype), act(2, 3, 4, dtype=dtype)], attrs, opset=opset)
    check(row, Counts(int_ops=24))


@pytest.mark.parametrize("op, dtype, opset", [("Not", "bool", 17), ("BitwiseNot", "int32", 18)])
def test_integer_unary_ops_are_int_ops(tmp_path, op, dtype, opset):
    check(count_node(tmp_path, op, [act(2, 3, 4, dtype=dtype)], opset=opset), Counts(int_ops=24))


def test_integer_add_on_shapes_is_int_ops(tmp_path):
    # int64 [5] + int64 [5]: 5 integer additions, no FLOPs.
    check(count_node(tmp_path, "Add", [act(5, dtype="int64"), act(5, dtype="int64")]), Counts(int_ops=5))


def test_variadic_sum_max_min_mean(tmp_path):
    three = [X, X, X]
    check(count_node(tmp_path, "Sum", three), Counts(flops=24 * 2))  # 3 inputs: 2 adds per element
    check(count_node(tmp_path, "Max", [X, X]), Counts(flops=24 * 1))  # 2 inputs: 1 comparison
    check(count_node(tmp_path, "Min", three), Counts(flops=24 * 2))
    check(count_node(tmp_path, "Mean", three), Counts(flops=24 * 3))  # 2 adds and a division


def test_clip_counts_bounds_given(tmp_path):
    check(count_node(tmp_path, "Clip", [X, w(0.0), w(6.0)]), Counts(flops=24 * 2))  # max and min
    check(count_node(tmp_path, "Clip", [X, w(0.0)]), Counts(flops=24 * 1))  # lower bound only


def test_gelu_onnx_opset_20(tmp_path):
    # exact: div, erf, add, mul, mul = 5 per element; tanh form: 9 (x^3: 2, *c, +x, *k, tanh, +1, *x, *0.5).
    check(count_node(tmp_path, "Gelu", [X], opset=20), Counts(flops=24 * 5))
    check(count_node(tmp_path, "Gelu", [X], {"approximate": "tanh"}, opset=20), Counts(flops=24 * 9))


def test_microsoft_gelu_family(tmp_path):
    check(count_node(tmp_path, "Gelu", [X], domain=MS), Counts(flops=24 * 5))
    check(count_node(tmp_path, "BiasGelu", [X, ones(4)], domain=MS), Counts(flops=24 * 6))  # + bias add
    check(count_node(tmp_path, "FastGelu", [X], domain=MS), Counts(flops=24 * 9))
    check(count_node(tmp_path, "FastGelu", [X, ones(4)], domain=MS), Counts(flops=24 * 10))
    check(count_node(tmp_path, "QuickGelu", [X], domain=MS), Counts(flops=24 * 6))  # mul, sigmoid (4), mul


# -- convolutions -----------------------------------------------------------------------------------------


def test_conv_with_and_without_bias(tmp_path):
    # N=1, C=3, 8x8, K=4 filters 3x3, pad 1 -> out 8x8: macs = 1*4*8*8 * 3*3*3 = 6912.
    x, weight = act(1, 3, 8, 8), ones(4, 3, 3, 3)
    check(count_node(tmp_path, "Conv", [x, weight], {"pads": [1, 1, 1, 1]}), Counts(flops=2 * 6912, macs=6912))
    # Bias: one add per output element, 1*4*8*8 = 256.
    row = count_node(tmp_path, "Conv", [x, weight, ones(4)], {"pads": [1, 1, 1, 1]})
    check(row, Counts(flops=2 * 6912 + 256, macs=6912))
    assert (row.params, row.weight_bytes) == (4 * 3 * 3 * 3 + 4, (108 + 4) * 4)
    assert (row.input_bytes, row.output_bytes) == (3 * 8 * 8 * 4, 4 * 8 * 8 * 4)


def test_conv_stride_groups_dilations(tmp_path):
    # Stride 2, pad 1: out 4x4; macs = 4*4*4 * 3*3*3 = 1728.
    row = count_node(tmp_path, "Conv", [act(1, 3, 8, 8), ones(4, 3, 3, 3)], {"pads": [1] * 4, "strides": [2, 2]})
    check(row, Counts(flops=2 * 1728, macs=1728))
    # Groups: C=4, 6x6, M=8, group 2, 3x3, no pad: out 4x4; each output sees 4/2 channels: 8*4*4 * 2*3*3 = 2304.
    row = count_node(tmp_path, "Conv", [act(1, 4, 6, 6), ones(8, 2, 3, 3)], {"group": 2})
    check(row, Counts(flops=2 * 2304, macs=2304))
    # Dilation 2: a 3x3 kernel spans 5x5; C=2, 9x9 -> out 5x5; M=3: 3*5*5 * 2*3*3 = 1350.
    row = count_node(tmp_path, "Conv", [act(1, 2, 9, 9), ones(3, 2, 3, 3)], {"dilations": [2, 2]})
    check(row, Counts(flops=2 * 1350, macs=1350))


def test_conv_transpose(tmp_path):
    # X [1,2,3,3], W [2,4,3,3] (C=2 -> M=4): every input element meets 4*3*3 weights: 18 * 36 = 648 macs;
    # out [1,4,5,5] = 100 bias adds.
    x, weight = act(1, 2, 3, 3), ones(2, 4, 3, 3)
    check(count_node(tmp_path, "ConvTranspose", [x, weight]), Counts(flops=1296, macs=648))
    check(count_node(tmp_path, "ConvTranspose", [x, weight, ones(4)]), Counts(flops=1296 + 100, macs=648))


def test_fused_conv(tmp_path):
    # Conv of test_conv (6912 macs) + bias (256) + Relu (256).
    row = count_node(tmp_path, "FusedConv", [act(1, 3, 8, 8), ones(4, 3, 3, 3), ones(4)],
                     {"pads": [1] * 4, "kernel_shape": [3, 3], "activation": "Relu"}, domain=MS)
    check(row, Counts(flops=2 * 6912 + 256 + 256, macs=6912))


# -- matrix products ---------------------------------------------------------------------------------------


def test_matmul_batched_broadcast_and_vector(tmp_path):
    # [2,3,4] x [4,5] -> [2,3,5]: 30 outputs, K=4: 120 macs.
    check(count_node(tmp_path, "MatMul", [act(2, 3, 4), ones(4, 5)]), Counts(flops=240, macs=120))
    # [2,1,3,4] x [5,4,6] -> [2,5,3,6]: 180 outputs, K=4: 720 macs.
    check(count_node(tmp_path, "MatMul", [act(2, 1, 3, 4), act(5, 4, 6)]), Counts(flops=1440, macs=720))
    # [4] . [4] -> scalar: 4 macs.
    check(count_node(tmp_path, "MatMul", [act(4), act(4)]), Counts(flops=8, macs=4))


def test_gemm(tmp_path):
    # A [3,4], B [5,4] transB: M=3, N=5, K=4: 60 macs; + C [5] broadcast: 15 adds.
    row = count_node(tmp_path, "Gemm", [act(3, 4), ones(5, 4), ones(5)], {"transB": 1})
    check(row, Counts(flops=120 + 15, macs=60))
    # transA and alpha 0.5, beta 2: + 15 (alpha) + 15 (C) + 15 (beta).
    row = count_node(tmp_path, "Gemm", [act(4, 3), ones(4, 5), ones(5)], {"transA": 1, "alpha": 0.5, "beta": 2.0})
    check(row, Counts(flops=120 + 45, macs=60))


def test_fused_matmul(tmp_path):
    # [2,3,4] x [2,5,4]^T -> [2,3,5]: 30 * 4 = 120 macs; alpha 0.125 scales the 30 outputs.
    row = count_node(tmp_path, "FusedMatMul", [act(2, 3, 4), act(2, 5, 4)], {"transB": 1, "alpha": 0.125}, domain=MS)
    check(row, Counts(flops=240 + 30, macs=120))


def test_einsum(tmp_path):
    # bij,bjk->bik with b=2, i=3, j=4, k=5: one multiply-add per (b, i, j, k): 120.
    row = count_node(tmp_path, "Einsum", [act(2, 3, 4), act(2, 4, 5)], {"equation": "bij,bjk->bik"})
    check(row, Counts(flops=240, macs=120))
    # ...ij,...jk: the batch dims under the ellipsis (2) multiply in the same way.
    row = count_node(tmp_path, "Einsum", [act(2, 3, 4), act(2, 4, 5)], {"equation": "...ij,...jk->...ik"})
    check(row, Counts(flops=240, macs=120))
    # ij->i over [3, 4]: 12 - 3 = 9 additions.
    check(count_node(tmp_path, "Einsum", [act(3, 4)], {"equation": "ij->i"}), Counts(flops=9))


# -- normalization ----------------------------------------------------------------------------------------


def test_batch_normalization(tmp_path):
    # X [2,3,4,4] = 96 elements: a*x + b each (2), and 5 per channel to fold the statistics: 192 + 15.
    params = [ones(3), ones(3), ones(3), ones(3)]
    check(count_node(tmp_path, "BatchNormalization", [act(2, 3, 4, 4), *params]), Counts(flops=192 + 15))


def test_layer_normalization(tmp_path):
    # X [2,3,8] over the last axis: 6 rows of n=8: 7n + 3 = 59 each with bias (354), 6n + 3 = 51 without (306).
    x = act(2, 3, 8)
    check(count_node(tmp_path, "LayerNormalization", [x, ones(8), ones(8)]), Counts(flops=6 * 59))
    check(count_node(tmp_path, "LayerNormalization", [x, ones(8)]), Counts(flops=6 * 51))


def test_instance_and_group_normalization(tmp_path):
    # Instance: X [2,3,4,4]: 6 rows (item, channel) of 16: 6 * (7*16 + 3) = 690.
    row = count_node(tmp_path, "InstanceNormalization", [act(2, 3, 4, 4), ones(3), ones(3)])
    check(row, Counts(flops=690))
    # Group (opset 18): X [2,4,3,3], 2 groups: 4 rows of 2*9 = 18: 4 * (7*18 + 3) = 516.
    row = count_node(tmp_path, "GroupNormalization", [act(2, 4, 3, 3), ones(2), ones(2)], {"num_groups": 2}, opset=18)
    check(row, Counts(flops=516))


def test_rms_normalizations(tmp_path):
    # X [2,3,8]: 6 rows of 8: 4n + 3 = 35 each: 210.
    check(count_node(tmp_path, "SimplifiedLayerNormalization", [act(2, 3, 8), ones(8)]), Counts(flops=210))
    check(count_node(tmp_path, "RMSNormalization", [act(2, 3, 8), ones(8)], opset=23), Counts(flops=210))


def test_skip_layer_normalizations(tmp_path):
    # input + skip + bias: 2 * 48 adds, then the layer norm with beta: 354.
    x = act(2, 3, 8)
    row = count_node(tmp_path, "SkipLayerNormalization", [x, x, ones(8), ones(8), ones(8)], domain=MS)
    check(row, Counts(flops=96 + 354))
    # input + skip: 48 adds, then the RMS norm: 210.
    row = count_node(tmp_path, "SkipSimplifiedLayerNormalization", [x, x, ones(8)], domain=MS)
    check(row, Counts(flops=48 + 210))


# -- reductions and softmax: X [2,3,4] reduced over axis 1 -> 8 outputs ---------------------------------


@pytest.mark.parametrize("op, expected", [
    ("ReduceMax", 24 - 8), ("ReduceMin", 24 - 8), ("ReduceProd", 24 - 8),  # n - 1 per output
    ("ReduceMean", 24), ("ReduceLogSum", 24),  # sum (16) and one division or log per output (8)
    ("ReduceSumSquare", 2 * 24 - 8), ("ReduceL1", 2 * 24 - 8),  # square/abs per input (24) and the sum (16)
    ("ReduceL2", 2 * 24), ("ReduceLogSumExp", 2 * 24),  # + sqrt/log per output
])
def test_reductions_with_axes_attribute(tmp_path, op, expected):
    check(count_node(tmp_path, op, [X], {"axes": [1]}), Counts(flops=expected))


def test_reduce_sum_and_arg_reductions(tmp_path):
    check(count_node(tmp_path, "ReduceSum", [X, w([1], "int64")]), Counts(flops=24 - 8))
    check(count_node(tmp_path, "ArgMax", [X], {"axis": 1}), Counts(flops=24 - 8))
    check(count_node(tmp_path, "ArgMin", [X], {"axis": 1}), Counts(flops=24 - 8))


def test_softmax_family(tmp_path):
    # 6 rows of 4 over the last axis: softmax 5n - 2 = 18 per row; log-softmax 5n - 1 = 19; hardmax n - 1 = 3.
    check(count_node(tmp_path, "Softmax", [X]), Counts(flops=6 * 18))
    check(count_node(tmp_path, "LogSoftmax", [X]), Counts(flops=6 * 19))
    check(count_node(tmp_path, "Hardmax", [X]), Counts(flops=6 * 3))
    # Opset 11: axis 1 by default and the input flattened to [2, 12]: 2 rows of 12: 2 * (60 - 2).
    check(count_node(tmp_path, "Softmax", [X], opset=11), Counts(flops=2 * 58))


# -- pooling and resampling: X [1,2,8,8] --------------------------------------------------------------------


def test_pooling(tmp_path):
    x = act(1, 2, 8, 8)
    # 3x3 stride 2 pad 1 -> 4x4: 32 outputs, 8 comparisons each.
    row = count_node(tmp_path, "MaxPool", [x], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4})
    check(row, Counts(flops=32 * 8))
    # 2x2 stride 2 -> 4x4: 32 outputs, 3 adds and a division each; LpPool: 3k = 12 each.
    check(count_node(tmp_path, "AveragePool", [x], {"kernel_shape": [2, 2], "strides": [2, 2]}), Counts(flops=32 * 4))
    check(count_node(tmp_path, "LpPool", [x], {"kernel_shape": [2, 2], "strides": [2, 2]}), Counts(flops=32 * 12))
    # Global: 2 channels of 64: average 63 adds + 1 div each (128); max 63 comparisons each (126).
    check(count_node(tmp_path, "GlobalAveragePool", [x]), Counts(flops=128))
    check(count_node(tmp_path, "GlobalMaxPool", [x]), Counts(flops=126))


def test_resize_and_upsample(tmp_path):
    # [1,1,4,4] -> [1,1,8,8] = 64 outputs; two axes change (d = 2).
    x, scales = act(1, 1, 4, 4), w([1, 1, 2, 2])
    check(count_node(tmp_path, "Resize", [x, None, scales]), Counts())  # nearest: copies
    # linear: 2^2 - 1 = 3 lerps of 3 operations: 9 per output.
    check(count_node(tmp_path, "Resize", [x, None, scales], {"mode": "linear"}), Counts(flops=64 * 9))
    # cubic: (4^2 - 1) / 3 = 5 four-tap interpolations of 7: 35 per output.
    check(count_node(tmp_path, "Resize", [x, None, scales], {"mode": "cubic"}), Counts(flops=64 * 35))
    check(count_node(tmp_path, "Upsample", [x, scales], {"mode": "linear"}, opset=9), Counts(flops=64 * 9))


# -- integer operators -------------------------------------------------------------------------------------


def test_qlinear_conv_and_conv_integer(tmp_path):
    # The Conv of test_conv in uint8 x int8: 6912 macs, 2 int ops each, + int32 bias 256; 0 FLOPs.
    x, weight = act(1, 3, 8, 8, dtype="uint8"), ones(4, 3, 3, 3, dtype="int8")
    inputs = [x, SCALE, U8_ZP, weight, SCALE, I8_ZP, SCALE, U8_ZP, ones(4, dtype="int32")]
    row = count_node(tmp_path, "QLinearConv", inputs, {"pads": [1] * 4})
    check(row, Counts(macs=6912, int_ops=2 * 6912 + 256))
    row = count_node(tmp_path, "ConvInteger", [x, ones(4, 3, 3, 3, dtype="uint8")], {"pads": [1] * 4})
    check(row, Counts(macs=6912, int_ops=2 * 6912))


def test_integer_matmuls(tmp_path):
    # [2,3,4] x [4,5]: 120 macs, 240 int ops.
    a, b = act(2, 3, 4, dtype="uint8"), ones(4, 5, dtype="int8")
    check(count_node(tmp_path, "MatMulInteger", [a, b]), Counts(macs=120, int_ops=240))
    inputs = [a, SCALE, U8_ZP, b, SCALE, I8_ZP, SCALE, U8_ZP]
    check(count_node(tmp_path, "QLinearMatMul", inputs), Counts(macs=120, int_ops=240))
    # Integer product, then a float bias add on the 30 outputs.
    float_a = act(2, 3, 4)
    row = count_node(tmp_path, "DynamicQuantizeMatMul", [float_a, b, SCALE, I8_ZP, ones(5)], domain=MS)
    check(row, Counts(flops=30, macs=120, int_ops=240))
    row = count_node(tmp_path, "MatMulIntegerToFloat", [a, b, SCALE, SCALE, U8_ZP, I8_ZP, ones(5)], domain=MS)
    check(row, Counts(flops=30, macs=120, int_ops=240))


def test_qgemm(tmp_path):
    # A [3,4], B [5,4]^T: 60 macs; int32 C [5] added to the 15 outputs.
    inputs = [act(3, 4, dtype="uint8"), SCALE, U8_ZP, ones(5, 4, dtype="int8"), SCALE, I8_ZP,
              ones(5, dtype="int32"), SCALE, U8_ZP]
    check(count_node(tmp_path, "QGemm", inputs, {"transB": 1}, domain=MS), Counts(macs=60, int_ops=120 + 15))


def test_qlinear_elementwise_and_pooling(tmp_path):
    a = act(2, 3, 4, dtype="uint8")
    binary = [a, SCALE, U8_ZP, a, SCALE, U8_ZP, SCALE, U8_ZP]
    check(count_node(tmp_path, "QLinearAdd", binary, domain=MS), Counts(int_ops=24))
    check(count_node(tmp_path, "QLinearMul", binary, domain=MS), Counts(int_ops=24))
    unary = [a, SCALE, U8_ZP, SCALE, U8_ZP]
    check(count_node(tmp_path, "QLinearLeakyRelu", unary, domain=MS), Counts(int_ops=24 * 2))
    check(count_node(tmp_path, "QLinearSigmoid", unary, domain=MS), Counts(int_ops=24 * 4))
    row = count_node(tmp_path, "QLinearSoftmax", unary, {"axis": -1, "opset": 13}, domain=MS)
    check(row, Counts(int_ops=6 * 18))  # 6 rows of 4: 5n - 2
    image = [act(1, 2, 8, 8, dtype="uint8"), SCALE, U8_ZP, SCALE, U8_ZP]
    check(count_node(tmp_path, "QLinearGlobalAveragePool", image, domain=MS), Counts(int_ops=128))
    row = count_node(tmp_path, "QLinearAveragePool", image, {"kernel_shape": [2, 2], "strides": [2, 2]}, domain=MS)
    check(row, Counts(int_ops=32 * 4))
    concat = [SCALE, U8_ZP, a, SCALE, U8_ZP, a, SCALE, U8_ZP]
    row = count_node(tmp_path, "QLinearConcat", concat, {"axis": 1}, domain=MS)
    check(row, Counts())
    assert row.output_shapes == "[[2, 6, 4]]"


@pytest.mark.parametrize("domain", ["", MS])
def test_quantize_dequantize(tmp_path, domain):
    # Scale and zero point: 2 float operations per element; without a zero point 1.
    check(count_node(tmp_path, "QuantizeLinear", [X, SCALE, U8_ZP], domain=domain), Counts(flops=48))
    check(count_node(tmp_path, "QuantizeLinear", [X, SCALE], domain=domain), Counts(flops=24))
    q = act(2, 3, 4, dtype="uint8")
    check(count_node(tmp_path, "DequantizeLinear", [q, SCALE, U8_ZP], domain=domain), Counts(flops=48))


def test_dynamic_quantize_linear(tmp_path):
    # min and max over 24 values (2 * 23), then scale and zero point per element (2 * 24).
    check(count_node(tmp_path, "DynamicQuantizeLinear", [X], outputs=3), Counts(flops=46 + 48))


# -- attention: B=2, S=4, hidden 8, 2 heads of 4 ---------------------------------------------------------


def test_attention(tmp_path):
    # Projection: 2*4 rows x 8 inputs x 24 outputs = 1536 macs; bias: 8 * 24 = 192 adds.
    # Scores: B*N*S*L = 2*2*4*4 = 64; Q.K^T and P.V: 64 * (4 + 4) = 512 macs; scaling 64;
    # softmax: 16 rows of 4: 16 * 18 = 288.
    inputs = [act(2, 4, 8), ones(8, 24), ones(24)]
    row = count_node(tmp_path, "Attention", inputs, {"num_heads": 2}, domain=MS)
    check(row, Counts(flops=2 * 1536 + 192 + 2 * 512 + 64 + 288, macs=1536 + 512))
    # A mask adds one operation per score: + 64.
    row = count_node(tmp_path, "Attention", [*inputs, act(2, 4, dtype="int32")], {"num_heads": 2}, domain=MS)
    check(row, Counts(flops=2 * 1536 + 192 + 2 * 512 + 64 + 64 + 288, macs=1536 + 512))
    assert row.output_shapes == "[[2, 4, 8]]"


def test_qattention(tmp_path):
    # As test_attention with an integer projection: 1536 macs = 3072 int ops; the rest in float.
    inputs = [act(2, 4, 8, dtype="uint8"), ones(8, 24, dtype="int8"), ones(24), SCALE, SCALE, None, U8_ZP, I8_ZP]
    row = count_node(tmp_path, "QAttention", inputs, {"num_heads": 2}, domain=MS)
    check(row, Counts(flops=192 + 2 * 512 + 64 + 288, macs=1536 + 512, int_ops=2 * 1536))


def test_multi_head_attention(tmp_path):
    # Q [2,4,8], K and V [2,6,8], 2 heads of 4: scores 2*2*4*6 = 96; macs 96 * (4 + 4) = 768;
    # scaling 96; softmax 16 rows of 6: 16 * 28 = 448.
    q, kv = act(2, 4, 8), act(2, 6, 8)
    row = count_node(tmp_path, "MultiHeadAttention", [q, kv, kv], {"num_heads": 2}, domain=MS)
    check(row, Counts(flops=2 * 768 + 96 + 448, macs=768))
    assert row.output_shapes == "[[2, 4, 8]]"
    # Bias [24] added to Q (64), K (96) and V (96).
    row = count_node(tmp_path, "MultiHeadAttention", [q, kv, kv, ones(24)], {"num_heads": 2}, domain=MS)
    check(row, Counts(flops=2 * 768 + 96 + 448 + 256, macs=768))
    # Packed QKV [B=2, S=4, N=2, 3, H=4]: L = S = 4: scores 64, macs 512, softmax 16 * 18.
    row = count_node(tmp_path, "MultiHeadAttention", [act(2, 4, 2, 3, 4)], {"num_heads": 2}, domain=MS)
    check(row, Counts(flops=2 * 512 + 64 + 288, macs=512))


# -- zero-cost operators and coverage ---------------------------------------------------------------------


@pytest.mark.parametrize("op, inputs, attrs", [
    ("Reshape", [X, w([6, 4], "int64")], {}), ("Transpose", [X], {"perm": [2, 0, 1]}), ("Flatten", [X], {}),
    ("Unsqueeze", [X, w([0], "int64")], {}), ("Shape", [X], {}), ("Gather", [X, w([0, 1], "int64")], {}),
    ("Cast", [X], {"to": onnx.TensorProto.FLOAT16}), ("Where", [act(2, 3, 4, dtype="bool"), X, X], {}),
    ("Concat", [X, X], {"axis": 0}), ("Identity", [X], {}), ("Pad", [X, w([0, 0, 1, 0, 0, 1], "int64")], {}),
])
def test_zero_cost_ops_on_models(tmp_path, op, inputs, attrs):
    check(count_node(tmp_path, op, inputs, attrs), Counts())


def test_every_zero_cost_op_counts_zero():
    for op in ZERO_COST_OPS:
        ctx = NodeContext(key="n", op_type=op, domain="", opset=17, attrs={}, inputs=(), outputs=())
        assert COUNTERS[("", op)](ctx) == Counts(), op


# Counters tested above through whole models, by (domain, op type).
TESTED = {
    ("", op) for op in (*FLOAT_UNARY_ONE_OP, *FLOAT_BINARY_ONE_OP, *COMPOSITE, *ZERO_COST_OPS)
} | {("", op) for op in (
    "PRelu", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "And", "Or", "Xor", "Not",
    "Sum", "Max", "Min", "Mean", "Clip", "Gelu", "Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum",
    "BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization",
    "SimplifiedLayerNormalization", "RMSNormalization", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
    "ReduceMean", "ReduceLogSum", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ArgMax", "ArgMin",
    "Softmax", "LogSoftmax", "Hardmax", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool",
    "Resize", "Upsample", "QLinearConv", "ConvInteger", "MatMulInteger", "QLinearMatMul", "QuantizeLinear",
    "DequantizeLinear", "DynamicQuantizeLinear", "Loop", "Scan",  # Loop/Scan: tests/test_flops.py
)} | {(MS, op) for op in (
    "Gelu", "BiasGelu", "FastGelu", "QuickGelu", "FusedConv", "FusedMatMul", "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization", "QGemm", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QLinearAdd",
    "QLinearMul", "QLinearLeakyRelu", "QLinearSigmoid", "QLinearSoftmax", "QLinearGlobalAveragePool",
    "QLinearAveragePool", "QLinearConcat", "QuantizeLinear", "DequantizeLinear", "Attention", "QAttention",
    "MultiHeadAttention",
)}


def test_every_registered_counter_has_a_hand_computed_case():
    assert set(COUNTERS) - TESTED == set(), "counters without a test case"
    assert TESTED - set(COUNTERS) == set(), "test cases for op types that are not registered"
