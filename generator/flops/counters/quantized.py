"""Integer operators (QOperator and dynamic quantization) and the quantize / dequantize conversions.

Integer kernels count their multiply-adds as ``macs`` and 2 ``int_ops`` each, with 0 FLOPs, plus the int32
bias add (1 per output element) where they take one. The arithmetic of quantization *inside* an integer
kernel (zero-point corrections, requantizing the int32 accumulator with the output scale) is not counted,
as the float kernel's counts have no counterpart to it. The standalone conversions are counted as float
element-wise work: DequantizeLinear ``(x - zero_point) × scale`` and QuantizeLinear
``x / scale + zero_point`` cost 2 per element with a zero point, 1 without (rounding and saturation are
conversions, not arithmetic).
"""

from __future__ import annotations

from generator.flops.counters.conv import conv_macs
from generator.flops.counters.matmul import matmul_macs
from generator.flops.counters.reduce import softmax_ops, softmax_rows
from generator.flops.registry import MS_DOMAIN, ZERO, Counts, NodeContext, counter


def integer_product(ctx: NodeContext, macs: int, bias_input: int | None) -> Counts:
    """An integer matrix product or convolution with an optional int32 bias (input ``bias_input``)."""
    bias_adds = ctx.output_numel() if bias_input is not None and ctx.has_input(bias_input) else 0
    return Counts(macs=macs, int_ops=2 * macs + bias_adds)


@counter("QLinearConv")
def qlinear_conv(ctx: NodeContext) -> Counts:
    """Inputs: x, x_scale, x_zero_point, w (3), w_scale, w_zero_point, y_scale, y_zero_point, B (8)."""
    return integer_product(ctx, conv_macs(ctx, weight=3), bias_input=8)


@counter("ConvInteger")
def conv_integer(ctx: NodeContext) -> Counts:
    return integer_product(ctx, conv_macs(ctx, weight=1), bias_input=None)


@counter("MatMulInteger")
def matmul_integer(ctx: NodeContext) -> Counts:
    return integer_product(ctx, matmul_macs(ctx), bias_input=None)


@counter("QLinearMatMul")
def qlinear_matmul(ctx: NodeContext) -> Counts:
    return integer_product(ctx, matmul_macs(ctx), bias_input=None)


@counter("QGemm", domain=MS_DOMAIN)
def qgemm(ctx: NodeContext) -> Counts:
    """Inputs: A, a_scale, a_zp, B (3), b_scale, b_zp, C (6, int32), y_scale, y_zp; alpha folds into scales."""
    return integer_product(ctx, matmul_macs(ctx, 0, bool(ctx.attr("transA", 0))), bias_input=6)


def _integer_matmul_float_bias(ctx: NodeContext, bias_input: int) -> Counts:
    """Integer product, dequantized to float, then a float bias add (FLOPs) when the bias is given."""
    macs = matmul_macs(ctx)
    bias_adds = ctx.output_numel() if ctx.has_input(bias_input) else 0
    return Counts(flops=bias_adds, macs=macs, int_ops=2 * macs)


@counter("DynamicQuantizeMatMul", domain=MS_DOMAIN)
def dynamic_quantize_matmul(ctx: NodeContext) -> Counts:
    """Inputs: A (float, quantized inside the kernel), B (int8), b_scale, b_zero_point, bias (4)."""
    return _integer_matmul_float_bias(ctx, bias_input=4)


@counter("MatMulIntegerToFloat", domain=MS_DOMAIN)
def matmul_integer_to_float(ctx: NodeContext) -> Counts:
    """Inputs: A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias (6)."""
    return _integer_matmul_float_bias(ctx, bias_input=6)


def _integer_per_element(cost: int):
    def count(ctx: NodeContext) -> Counts:
        return Counts(int_ops=cost * ctx.output_numel())

    return count


counter("QLinearAdd", "QLinearMul", domain=MS_DOMAIN)(_integer_per_element(1))
counter("QLinearLeakyRelu", domain=MS_DOMAIN)(_integer_per_element(2))
counter("QLinearSigmoid", domain=MS_DOMAIN)(_integer_per_element(4))


@counter("QLinearGlobalAveragePool", domain=MS_DOMAIN)
def qlinear_global_average_pool(ctx: NodeContext) -> Counts:
    return Counts(int_ops=ctx.input_numel(0))


@counter("QLinearAveragePool", domain=MS_DOMAIN)
def qlinear_average_pool(ctx: NodeContext) -> Counts:
    window = 1
    for k in ctx.attr("kernel_shape", ()):
        window *= int(k)
    return Counts(int_ops=ctx.output_numel() * window)


@counter("QLinearSoftmax", domain=MS_DOMAIN)
def qlinear_softmax(ctx: NodeContext) -> Counts:
    rows, n = softmax_rows(ctx)
    return Counts(int_ops=softmax_ops(rows, n))


@counter("QLinearConcat", domain=MS_DOMAIN)
def qlinear_concat(ctx: NodeContext) -> Counts:
    """A concatenation; rescaling inputs to the output's scale is requantization, not counted."""
    return ZERO


@counter("QuantizeLinear", "DequantizeLinear")
@counter("QuantizeLinear", "DequantizeLinear", domain=MS_DOMAIN)
def quantize_linear(ctx: NodeContext) -> Counts:
    """Scale (1) and zero point (1, when input 2 is given) per element, as float work."""
    per_element = 2 if ctx.has_input(2) else 1
    return Counts(flops=per_element * ctx.input_numel(0))


@counter("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: NodeContext) -> Counts:
    """min and max over the tensor (2(n - 1)), then quantize (2n); the scalar scale and zero point are free."""
    n = ctx.input_numel(0)
    return Counts(flops=2 * (n - 1) + 2 * n)
