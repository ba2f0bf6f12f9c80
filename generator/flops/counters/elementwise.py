"""Element-wise operators: a fixed number of operations per output element.

An arithmetic operation, a comparison or one evaluation of an elementary function (exp, log, sqrt, erf,
tanh, sin, ...) counts 1. Activations that ONNX defines by a formula count the operations of that formula,
so that a fused node counts what the unfused pattern it replaces counts (onnxruntime's Gelu = the exporter's
Div, Erf, Add, Mul, Mul = 5). The element type decides FLOPs or integer ops (``NodeContext.arithmetic``).
"""

from __future__ import annotations

from generator.flops.registry import MS_DOMAIN, Counts, NodeContext, counter

UNARY_OR_BINARY_COST = {
    # One operation or elementary function per element.
    **dict.fromkeys(
        (
            "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Neg", "Abs", "Relu", "Sqrt", "Reciprocal", "Exp",
            "Log", "Erf", "Tanh", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
            "Acosh", "Atanh", "Sign", "Floor", "Ceil", "Round", "Equal", "Less", "Greater", "LessOrEqual",
            "GreaterOrEqual", "And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
            "BitwiseNot", "IsNaN", "IsInf",
        ),
        1,
    ),
    "LeakyRelu": 2,  # x < 0 ? alpha * x : x: a comparison and a multiply
    "PRelu": 2,
    "ThresholdedRelu": 2,  # x > alpha ? x : 0
    "Sigmoid": 4,  # 1 / (1 + exp(-x)): neg, exp, add, div
    "HardSigmoid": 4,  # max(0, min(1, alpha * x + beta))
    "HardSwish": 5,  # x * HardSigmoid(x)
    "Elu": 4,  # x < 0 ? alpha * (exp(x) - 1) : x
    "Selu": 5,  # gamma * Elu
    "Celu": 7,  # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    "Softplus": 3,  # log(exp(x) + 1)
    "Softsign": 3,  # x / (1 + |x|)
    "Mish": 5,  # x * tanh(softplus(x))
}
GELU_ERF_COST = 5  # x * 0.5 * (1 + erf(x / sqrt(2))): div, erf, add, mul, mul
GELU_TANH_COST = 9  # 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))): 2 mul (cube), mul, add, mul, tanh, add, mul, mul
QUICK_GELU_COST = 6  # x * sigmoid(alpha * x): mul, sigmoid (4), mul

# Activation names of onnxruntime's fused kernels (FusedConv, FusedGemm) and their per-element cost.
ACTIVATION_COSTS = {
    name: UNARY_OR_BINARY_COST[name]
    for name in ("Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "Elu", "Selu", "Softplus", "Softsign")
}
ACTIVATION_COSTS["Clip"] = 2


def per_element(cost: int):
    """A counter of ``cost`` operations per output element."""

    def count(ctx: NodeContext) -> Counts:
        return ctx.arithmetic(cost * ctx.output_numel())

    return count


for _op, _cost in UNARY_OR_BINARY_COST.items():
    counter(_op)(per_element(_cost))


@counter("Sum", "Max", "Min")
def variadic_reduce(ctx: NodeContext) -> Counts:
    """k inputs combine with k - 1 operations per output element (one input: a copy)."""
    operands = sum(1 for t in ctx.inputs if t is not None)
    return ctx.arithmetic((operands - 1) * ctx.output_numel())


@counter("Mean")
def variadic_mean(ctx: NodeContext) -> Counts:
    """k - 1 additions and a division per output element."""
    operands = sum(1 for t in ctx.inputs if t is not None)
    return ctx.arithmetic(operands * ctx.output_numel() if operands > 1 else 0)


@counter("Clip")
def clip(ctx: NodeContext) -> Counts:
    """One comparison per bound given (opset >= 11: inputs 1 and 2; before: ``min``/``max`` attributes)."""
    if ctx.opset >= 11:
        bounds = sum(1 for i in (1, 2) if ctx.has_input(i))
    else:
        bounds = sum(1 for a in ("min", "max") if a in ctx.attrs)
    return ctx.arithmetic(bounds * ctx.output_numel())


@counter("Gelu")
def gelu(ctx: NodeContext) -> Counts:
    """ONNX Gelu (opset 20): exact (erf) form by default, ``approximate="tanh"`` form otherwise."""
    tanh = ctx.text_attr("approximate", "none") == "tanh"
    return ctx.arithmetic((GELU_TANH_COST if tanh else GELU_ERF_COST) * ctx.output_numel())


@counter("Gelu", domain=MS_DOMAIN)
def ms_gelu(ctx: NodeContext) -> Counts:
    return ctx.arithmetic(GELU_ERF_COST * ctx.output_numel())


@counter("BiasGelu", domain=MS_DOMAIN)
def ms_bias_gelu(ctx: NodeContext) -> Counts:
    """Gelu(x + bias): one add more per element."""
    return ctx.arithmetic((GELU_ERF_COST + 1) * ctx.output_numel())


@counter("FastGelu", domain=MS_DOMAIN)
def ms_fast_gelu(ctx: NodeContext) -> Counts:
    """The tanh approximation, plus a bias add when the optional bias (input 1) is given."""
    bias = 1 if ctx.has_input(1) else 0
    return ctx.arithmetic((GELU_TANH_COST + bias) * ctx.output_numel())


@counter("QuickGelu", domain=MS_DOMAIN)
def ms_quick_gelu(ctx: NodeContext) -> Counts:
    return ctx.arithmetic(QUICK_GELU_COST * ctx.output_numel())
