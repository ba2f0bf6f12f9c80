"""Rule-based advice on a comparison: each rule is a small function that returns one Advice or None.

Rules read the Comparison record and, for kernel-level facts, the LayerMatch it was built from. Texts are
plain (the page escapes them), name the versions, and give the figure that triggered the rule. The registry
`RULES` keeps the order advice is shown in; docs/methodology-compare.md lists every rule and its threshold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from generator.analysis.layer_match import kernel_op
from generator.analysis.layer_names import CONVERSION_OPS
from generator.analysis.profile_times import ProcessTimes, node_times, ratio_of, summed
from generator.analysis.records_compare import Advice, Comparison
from generator.numbers import counted, num
from generator.results.evidence import LogTest, one_side_test, p_from_interval, unpaired_test

if TYPE_CHECKING:
    from generator.analysis.layer_match import Executed, LayerMatch

FP32_SHARE_MIN = 0.20  # FP32 share of an op's time in a reduced-precision version worth a remark
OVERHEAD_SHARE_MIN = 0.10  # Q/DQ share of B's time worth a remark
CONV_SLOWER_MIN = 1.10  # Conv time ratio B / A from which dynamic INT8 counts as having made Conv slower
LOW_OPTIMIZATION = ("disable", "basic")  # levels at which onnxruntime does not fuse Q/DQ into QLinear kernels
_FP16_CAST = re.compile(r"^InsertedPrecisionFreeCast_|^graph_(?:input|output)_cast_?\d+$")


@dataclass(frozen=True)
class AdviceInput:
    """What rules read: the comparison, its layer match (None without profiles), the provider asked for."""

    comparison: Comparison
    match: LayerMatch | None
    provider: str | None


Rule = Callable[[AdviceInput], Advice | None]


def _pct(share: float) -> str:
    return "less than 1 %" if 0 < share < 0.005 else f"{round(share * 100)} %"


def _low_level_qdq(data: AdviceInput) -> str | None:
    """The optimization level, when it is too low for onnxruntime to fuse Q/DQ into QLinear kernels."""
    level = (data.comparison.config or {}).get("optimization_level")
    has_qdq = any(e.op_type in ("QuantizeLinear", "DequantizeLinear") for e in _executed(data, "b"))
    return level if has_qdq and level in LOW_OPTIMIZATION else None


def _executed(data: AdviceInput, side: str) -> tuple[Executed, ...]:
    if data.match is None:
        return ()
    return data.match.executed_a if side == "a" else data.match.executed_b


def _op(e: Executed) -> str:
    return kernel_op(e.op_type)  # imported once: asked for every node of B, for each rule, in every comparison


def fp32_share_rule(op: str) -> Rule:
    """`op` time of B still in FP32 although B is a reduced-precision version (it runs INT8/FP16 kernels or
    precision conversions elsewhere)."""
    def rule(data: AdviceInput) -> Advice | None:
        b = _executed(data, "b")
        # A QDQ model at a low optimization level runs no INT8 kernel at all, only its conversions.
        if not any(e.precision in ("INT8", "FP16") or e.op_type in CONVERSION_OPS for e in b):
            return None
        kernels = [e for e in b if _op(e) == op]
        total = sum(e.dur_us for e in kernels)
        fp32 = [e for e in kernels if e.precision == "FP32"]
        share = sum(e.dur_us for e in fp32) / total if total > 0 else 0.0
        if share < FP32_SHARE_MIN:
            return None
        p, evidence = share_test(fp32, kernels, FP32_SHARE_MIN, f"FP32 share of {op} time in {data.comparison.b}")
        text = (f"{_pct(share)} of {op} time still runs in FP32 in {data.comparison.b} ({len(fp32)} of "
                f"{counted(len(kernels), op + ' kernel')}). ")
        level = _low_level_qdq(data)
        if level:
            text += (f"At optimization level {level} onnxruntime does not fuse DequantizeLinear, {op} and "
                     f"QuantizeLinear into one INT8 kernel: try optimization_level all.")
        else:
            text += (f"The transform left them in full precision, or this provider has no low-precision {op} "
                     "kernel for them: check the transform's op_types and exclude_nodes.")
        return Advice(f"fp32_{op.lower()}", "warning", text, p, evidence)
    return rule


def dynamic_conv_slower(data: AdviceInput) -> Advice | None:
    """Dynamic quantization runs Conv as ConvInteger, which has no fast kernel on many CPUs."""
    c = data.comparison
    if not any(e.op_type == "ConvInteger" for e in _executed(data, "b")):
        return None
    row = next((r for r in c.layer_types if r.op_type == "Conv"), None)
    if row is None or row.ratio is None or row.ratio.point < CONV_SLOWER_MIN:
        return None
    conv_a = [e for e in _executed(data, "a") if _op(e) == "Conv"]
    conv_b = [e for e in _executed(data, "b") if _op(e) == "Conv"]
    test = unpaired_test(process_sum(conv_a).floored(), process_sum(conv_b).floored())
    p = test.p_above(math.log(CONV_SLOWER_MIN)) if test else None
    # The caveat comes from the finding's own test (at 95 % alone; the page marks the finding unsettled when the
    # report-wide rule does not settle it), its interval around the ratio shown.
    caveat = "" if p is not None and p <= 0.05 else f", {_too_wide(_around(row.ratio.point, test), conv_a, conv_b)}"
    return Advice("dynamic_conv_slower", "warning", (
        f"Dynamic INT8 made Conv slower on this CPU: Conv takes {num(row.time_b_us)} µs in {c.b} against "
        f"{num(row.time_a_us)} µs in {c.a} ({row.ratio.point:.3g}×{caveat}); ConvInteger has no fast kernel "
        "here. Try static quantization (quantize mode static_qdq) for convolutional models."),
        p, f"Conv time {c.b} / {c.a} above {CONV_SLOWER_MIN:g}×")


def _around(point: float, test: LogTest | None) -> tuple[float, float] | None:
    """`test`'s 95 % interval, as a ratio, around `point` (the figure shown)."""
    if test is None:
        return None
    low, high = test.interval()
    if not (low > 0 and math.isfinite(high)):
        return None
    half = (math.log(high) - math.log(low)) / 2
    return point * math.exp(-half), point * math.exp(half)


def _too_wide(interval: tuple[float, float] | None, a: list[Executed], b: list[Executed]) -> str:
    """Why a large layer-type ratio is not settled: its interval, and what made it wide."""
    fewest = min(len(process_sum(m).floored()) for m in (a, b))
    spread = max(_spread(process_sum(m)) for m in (a, b))
    why = (f"only {fewest} profiling process{'es' if fewest != 1 else ''} on a side" if fewest < 2 else
           f"the profiling processes of one side disagree by up to {spread:.0%}")
    if interval is None:
        return f"too few figures to settle it: {why}"
    return f"its 95 % interval ({interval[0]:.3g}× to {interval[1]:.3g}×) is too wide to settle it: {why}"


def _spread(t: ProcessTimes) -> float:
    values = t.floored()
    return max(values) / min(values) - 1 if len(values) >= 2 and min(values) > 0 else 0.0


def process_sum(executed: list[Executed]) -> ProcessTimes:
    """The executed nodes' summed time, process by process."""
    return summed(node_times(e.dur_us, e.dur_process_us or None) for e in executed)


def share_test(part: list[Executed], whole: list[Executed], bound: float, what: str) -> tuple[float | None, str]:
    """p-value that `part`'s share of `whole`'s time is above `bound`, over the profiling processes."""
    shares = ratio_of(process_sum(part), process_sum(whole))
    test = one_side_test([x for x in shares.per_process if math.isfinite(x) and x > 0])
    band = shares.interval()
    words = f"{what}: {shares.value:.0%}" + (f" ({band[0]:.0%} to {band[1]:.0%})" if band else "")
    return (test.p_above(math.log(bound)) if test else None), f"{words}, above {bound:.0%}"


def _is_fp16_cast(e: Executed) -> bool:
    return e.op_type == "Cast" and bool(_FP16_CAST.search(e.name) or any(_FP16_CAST.search(n)
                                                                        for n in e.original_nodes))


def qdq_overhead(data: AdviceInput) -> Advice | None:
    """Quantization's conversions (Q/DQ, DynamicQuantizeLinear, its casts and requantize multiplications)
    take a large share of B's kernel time. FP16 casts are the fp16_casts rule's."""
    c = data.comparison
    executed = _executed(data, "b")
    total = sum(e.dur_us for e in executed)
    kernels = [e for e in executed if e.overhead and not _is_fp16_cast(e)]
    share = sum(e.dur_us for e in kernels) / total if total > 0 else 0.0
    if share < OVERHEAD_SHARE_MIN:
        return None
    p, evidence = share_test(kernels, list(executed), OVERHEAD_SHARE_MIN, f"Q/DQ share of {c.b}'s kernel time")
    by_op: dict[str, float] = {}
    for e in kernels:
        by_op[e.op_type] = by_op.get(e.op_type, 0.0) + e.dur_us
    parts = ", ".join(f"{op} {num(us)} µs" for op, us in sorted(by_op.items(), key=lambda kv: -kv[1])[:3])
    text = f"Q/DQ overhead is {_pct(share)} of {c.b}'s time ({counted(len(kernels), 'conversion kernel')}: {parts})."
    level = _low_level_qdq(data)
    if level:
        text += (f" At optimization level {level} onnxruntime runs QuantizeLinear/DequantizeLinear as separate "
                 "kernels instead of fusing them into QLinear kernels: try optimization_level all.")
    return Advice("qdq_overhead", "warning", text, p, evidence)


def fp16_casts(data: AdviceInput) -> Advice | None:
    """FP16 models on a provider without FP16 kernels get Casts inserted around most ops."""
    casts = [e for e in _executed(data, "b") if e.overhead and _is_fp16_cast(e)]
    if not casts:
        return None
    c = data.comparison
    total = c.coverage.total_b_us if c.coverage else 0.0
    time = sum(e.dur_us for e in casts)
    where = "on CPU" if (data.provider or "cpu") == "cpu" else f"on {data.provider}"
    share = f", {_pct(time / total)} of its time" if total > 0 else ""
    return Advice("fp16_casts", "warning", (
        f"FP16 {where} inserted {counted(len(casts), 'cast')} in {c.b} ({num(time)} µs{share}): the provider runs ops "
        "without an FP16 kernel in FP32 and converts around them."), None, "casts in the graph that ran", fact=True)


def _provider_name(text: str) -> str:
    return text.removesuffix("ExecutionProvider").lower()


def provider_fallback(data: AdviceInput) -> Advice | None:
    """Nodes that ran on another execution provider than the one asked for."""
    if data.provider is None or data.match is None:
        return None
    c, parts = data.comparison, []
    for side, version in (("a", c.a), ("b", c.b)):
        executed = _executed(data, side)
        other = [e for e in executed if e.provider and _provider_name(e.provider) != data.provider]
        if other:
            total = sum(e.dur_us for e in executed)
            names = sorted({e.provider for e in other})
            share = sum(e.dur_us for e in other) / total if total > 0 else 0.0
            parts.append(f"{counted(len(other), 'node')} of {version} ({_pct(share)} of its time) ran on "
                         f"{', '.join(names)}")
    if not parts:
        return None
    return Advice("provider_fallback", "warning", (
        f"Provider fallback: {'; '.join(parts)} instead of the {data.provider} provider asked for. Those "
        "operators have no kernel there for these types."), None, "the provider each node ran on", fact=True)


def b_slower(data: AdviceInput) -> Advice | None:
    """B is significantly slower than A at the compared configuration."""
    c = data.comparison
    lat, thr = c.latency_ratio, c.throughput_ratio
    findings, tests = [], []
    if lat is not None and lat.significant and lat.point > 1.0:
        findings.append(f"{c.timing_percentile} latency {lat.point:.2f}× (95 % CI {lat.low:.2f}–{lat.high:.2f})")
        tests.append(p_from_interval(lat.point, lat.low, lat.high))
    if thr is not None and thr.significant and thr.point < 1.0:
        findings.append(f"throughput {thr.point:.2f}× (95 % CI {thr.low:.2f}–{thr.high:.2f})")
        tests.append(p_from_interval(thr.point, thr.low, thr.high))
    if not findings:
        return None
    # The text states every figure it lists: the claim needs each (the largest p-value, as findings.worst).
    p = None if any(x is None for x in tests) else max(tests)
    return Advice("b_slower", "warning", f"{c.b} is slower than {c.a} at {c.config_label}: {' and '.join(findings)}.",
                  p, f"{c.b} against {c.a}: {' and '.join(findings)}")


def _number(value: float | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def outputs_disagree(data: AdviceInput) -> Advice | None:
    """An output of B (or A) is outside the spec's tolerance against its reference version."""
    bad = [r for r in data.comparison.agreement if r.within_tolerance is False]
    if not bad:
        return None
    shown = "; ".join(f"{r.version} output {r.output} against {r.reference_version}: max abs "
                      f"{_number(r.max_abs, '.3g')}, cosine {_number(r.cosine, '.5f')}" for r in bad[:3])
    whose = "the spec's tolerance" if data.comparison.tolerance_set else "perfsite's default tolerance (cosine ≥ 0.99)"
    return Advice("outputs_disagree", "warning",
                  f"Outputs differ beyond {whose} ({shown}): the speed of a broken model is not a result. Check "
                  "B's accuracy (calibration data, quantized ops) before using its speed.", None,
                  "the outputs on the same inputs", fact=True)


RULES: tuple[tuple[str, Rule], ...] = (
    ("outputs_disagree", outputs_disagree),
    ("b_slower", b_slower),
    ("dynamic_conv_slower", dynamic_conv_slower),
    ("fp32_conv", fp32_share_rule("Conv")),
    ("fp32_matmul", fp32_share_rule("MatMul")),
    ("fp32_gemm", fp32_share_rule("Gemm")),
    ("qdq_overhead", qdq_overhead),
    ("fp16_casts", fp16_casts),
    ("provider_fallback", provider_fallback),
)


def advise(data: AdviceInput) -> tuple[Advice, ...]:
    """Every rule's advice, in registry order (rules that do not apply give nothing)."""
    return tuple(a for _, rule in RULES if (a := rule(data)) is not None)
