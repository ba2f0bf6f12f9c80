"""The work of each executed node: the static sums of the original nodes it owns, and the bytes it moved.

Shared by the profile pages (generator.analysis.roofline) and by `perfsite run`'s check of the machine limits
(generator.runner.limits_check), which must both credit a node with the same operations: the runner may not
import the analysis stage, so the rule lives here, below both.

Executed nodes and original nodes meet through ``nodes.original_nodes``: an executed node's counts are the sum
over the original nodes it owns, and an original node covered by several executed nodes is split evenly between
them (a DequantizeLinear shared by two fused kernels), or between those that implement its op type when some do
(a Conv covered by its QLinearConv and by the layout Transpose before it), so that no operation counts twice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from generator.cells import clean

STATIC_SUMS = ("flops", "macs", "int_ops", "params", "weight_bytes", "input_bytes", "output_bytes")

# Executed op type -> the ONNX op type it implements (onnxruntime's fused, layout and quantized kernels).
OP_FAMILY: dict[str, str] = {
    "FusedConv": "Conv", "NhwcConv": "Conv", "QLinearConv": "Conv", "ConvInteger": "Conv",
    "NhwcFusedConv": "Conv", "FusedGemm": "Gemm", "QGemm": "Gemm", "FusedMatMul": "MatMul",
    "QLinearMatMul": "MatMul", "MatMulInteger": "MatMul", "MatMulIntegerToFloat": "MatMul",
    "DynamicQuantizeMatMul": "MatMul", "MatMulNBits": "MatMul", "NhwcMaxPool": "MaxPool",
    "QLinearAveragePool": "AveragePool", "QLinearGlobalAveragePool": "GlobalAveragePool",
    "QLinearAdd": "Add", "QLinearMul": "Mul", "QLinearConcat": "Concat", "QLinearSigmoid": "Sigmoid",
    "QLinearLeakyRelu": "LeakyRelu", "QLinearSoftmax": "Softmax", "QAttention": "Attention",
    "QLinearReduceMean": "ReduceMean", "QLinearWhere": "Where",
}


def op_family(op_type: str) -> str:
    """The ONNX op type an executed op type implements (itself when it is one)."""
    return OP_FAMILY.get(op_type, op_type)


def strings(value: Any) -> tuple[str, ...]:
    return () if value is None or (isinstance(value, float) and math.isnan(value)) else tuple(map(str, value))


def _owners(top: pd.DataFrame, static_ops: dict[str, str]) -> tuple[list[list[str]], dict[str, list[int]]]:
    """The original nodes each executed node covers, and for each original node the executed nodes that own
    its counts: those of its op family when there are some, otherwise every one covering it. `static_ops`:
    the analysed original nodes' op types."""
    covers = [sorted(set(strings(v))) for v in top["original_nodes"]]
    families = [op_family(str(op)) for op in top["op_type"]]
    owners: dict[str, list[int]] = {}
    for i, nodes in enumerate(covers):
        for o in nodes:
            owners.setdefault(o, []).append(i)
    for o, idx in owners.items():
        same = [i for i in idx if o in static_ops and families[i] == op_family(static_ops[o])]
        owners[o] = same or idx
    return covers, owners


def split_sums(top: pd.DataFrame, static: pd.DataFrame) -> list[dict[str, float] | None]:
    """Per executed node, the static sums of the original nodes it owns, each shared evenly among its owners
    (see _owners); None for a node none of whose original nodes was analysed."""
    # Plain dicts, read once: a DataFrame lookup per node and column was most of a large model's profile page.
    static_ops = {str(k): str(v) for k, v in static["op_type"].items()}
    columns = {c: {str(k): float(clean(v) or 0.0) for k, v in static[c].items()} for c in STATIC_SUMS}
    covers, owners = _owners(top, static_ops)
    out: list[dict[str, float] | None] = []
    for i, nodes in enumerate(covers):
        known = [o for o in nodes if o in static_ops]
        mine = [o for o in known if i in owners[o]]
        sums = {c: sum(columns[c][o] / len(owners[o]) for o in mine) for c in STATIC_SUMS}
        out.append(sums if known else None)
    return out


def traffic_bytes(node: Mapping[str, Any], sums: dict[str, float]) -> float | None:
    """Weights (static: onnxruntime reports prepacked weights as absent) plus the activations the kernel
    itself read and wrote as onnxruntime reports them (a fused kernel never reads its internal
    intermediates), falling back to the static activation sums when the profile has no sizes."""
    act_in, act_out = clean(node.get("activation_bytes")), clean(node.get("output_bytes"))
    if act_in is None or act_out is None:
        act_in, act_out = sums["input_bytes"], sums["output_bytes"]
    total = sums["weight_bytes"] + float(act_in) + float(act_out)
    return total if total > 0 else None
