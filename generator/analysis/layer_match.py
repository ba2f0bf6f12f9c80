"""Match the layers of two versions of one model (FP32 and INT8, FP16, another export) at one configuration.

Input: the `nodes` rows of one profiled trial per version, list and shape cells decoded at load
(generator.results.cells). Each executed node lists the original nodes of its
own version's model file (`original_nodes`) and their weights (`weights`), found by generator.layers.mapping.
Versions made by quantization or FP16 conversion rename what they touch, so the two versions' names are
first brought to a common form, then executed nodes are grouped with a union-find (analysis.layer_links):

1. **Overhead.** An executed node that only converts precision (QuantizeLinear, DequantizeLinear,
   DynamicQuantizeLinear, a Cast inserted by onnxruntime or by the transform, the requantize `Mul`s of dynamic
   quantization) goes to the quantization-overhead bucket of its version and takes no part in matching.
2. **Names.** Every other original node name is stripped of what the quantizer adds (`_quant`,
   `_QuantizeLinear`, `_output_quantized_cast`, `_bias_add`, `ConvBnFusion_W_` ...) until it is a name the
   other version also knows (:func:`common_name`). Executed nodes sharing a name, in either version, are one
   group: this joins a Conv to its QLinearConv, the three kernels onnxruntime left unfused at
   ORT_DISABLE_ALL to the one FusedConv of the other version, and a layout conversion to the layer it serves.
   Unnamed nodes (keyed `<op>_<position>`, positions shift when a transform inserts nodes) link across versions
   only when their weights agree, or when both are weightless with the same op and input shapes.
3. **Weights.** A group still present in one version only joins the other version's group that uses the same
   (stripped) weight: a BatchNormalization executed alone in FP32 joins the INT8 Conv it was folded into
   (`ConvBnFusion_BN_B_bn1.bias_quantized` is `bn1.bias`). Quantization parameters (`_scale`,
   `_zero_point`) and constants used by many nodes are not evidence.
4. **Producers.** An activation or normalization the quantizer removed (Relu, Clip, BatchNormalization,
   Identity, Dropout) and still unmatched joins the group of its producer: the nearest earlier executed node of
   its version whose output shape is its input shape.

Groups with time in both versions are matched layers; the rest are reported as present in one version only.
Only top-level executed nodes count (`parent` null): an If/Loop/Scan node's time includes its sub-graph's.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analysis.frozen_records import built
from generator.analysis.layer_links import group_executed
from generator.analysis.layer_names import (
    CONVERSION_OPS,
    INSERTED_CAST,
    REMOVABLE_OPS,
    closure,
    common_name,
    is_added_name,
    is_qparam,
)
from generator.analysis.records_compare import KernelRow, MatchCoverage, QuantOverhead, RatioCI
from generator.analysis.stats import scaled_ratio_ci
from generator.cells import clean
from generator.results.profiled import ensured


@dataclass(frozen=True)
class Executed:
    """One top-level executed node of one version, with its names in the common form."""

    side: str  # "a" or "b"
    exec_order: int
    name: str
    op_type: str
    dur_us: float
    precision: str | None
    provider: str | None
    original_nodes: tuple[str, ...]
    weights: tuple[str, ...]
    method: str | None
    input_shapes: tuple
    output_shapes: tuple
    overhead: bool
    dur_std_us: float = 0.0  # spread of its figure over the profiling processes (results.profiled)
    dur_process_us: tuple[float, ...] = ()  # its figure in each profiling process
    keys: tuple[str, ...] = ()  # common-form names of its non-added original nodes
    weight_keys: tuple[str, ...] = ()  # common-form names of its weights (quantization parameters left out)


@dataclass(frozen=True)
class LayerGroup:
    """Executed nodes of A and B that compute the same original layers."""

    members_a: tuple[Executed, ...]
    members_b: tuple[Executed, ...]
    keys: tuple[str, ...]  # common-form original node names, in execution order

    @property
    def time_a_us(self) -> float:
        return sum(e.dur_us for e in self.members_a)

    @property
    def time_b_us(self) -> float:
        return sum(e.dur_us for e in self.members_b)

    @property
    def matched(self) -> bool:
        return bool(self.members_a) and bool(self.members_b)


@dataclass(frozen=True)
class LayerMatch:
    """The result of :func:`match_layers`: layer groups, the overhead nodes of each version, coverage."""

    groups: tuple[LayerGroup, ...]
    overhead_a: tuple[Executed, ...]
    overhead_b: tuple[Executed, ...]
    coverage: MatchCoverage
    overhead: QuantOverhead
    kernels: tuple[KernelRow, ...]
    executed_a: tuple[Executed, ...] = ()  # every top-level executed node of A, in execution order
    executed_b: tuple[Executed, ...] = ()


def _plain_column(column: pd.Series) -> list[Any]:
    """A column's cells as plain Python values (`clean`, but decoded tuple and dict cells as they are). Column by
    column: integer, boolean and string columns without a missing value come out as Python values already,
    so only the others go through `clean` (a thousand-node sweep has millions of cells)."""
    values = column.tolist()  # Python numbers, strings, NaN for missing ones, decoded tuples and dicts
    if column.dtype.kind in "iubf" and not column.hasnans:  # a nullable integer column may hold pd.NA
        return values
    if isinstance(column.dtype, pd.StringDtype) and not column.hasnans:  # strings only: clean keeps them
        return values
    if column.dtype.kind == "f":
        return [None if v is pd.NA or v != v else v for v in values]  # NaN: the only float unequal to itself
    if set(map(type, values)) <= _KEPT_TYPES:  # decoded cells only (most columns): the types counted in C
        return values
    return [v if type(v) is str or isinstance(v, (tuple, dict)) else clean(v) for v in values]


_KEPT_TYPES = {str, tuple, dict}  # cells `clean` would keep as they are (_plain_column)


def executed_columns(nodes: pd.DataFrame, names: Sequence[str]) -> list[list[Any]]:
    """Columns `names` of one trial's top-level executed nodes, in execution order, each as the list of its
    cells (_plain_column; a column missing from older results is all None): readers take the few columns
    they need of every trial of a sweep, a thousand nodes each. Only those columns are taken, at the rows'
    positions in order (a filtered and sorted frame copied each of the table's 26 columns twice)."""
    nodes = ensured(nodes)
    positions = top_level_positions(nodes)
    return [_plain_column(nodes[name].take(positions)) if name in nodes.columns else [None] * len(positions)
            for name in names]


def top_level_positions(nodes: pd.DataFrame) -> Any:
    """The positions of `nodes`' top-level rows (no parent), in execution order (stable: a table of several
    trials keeps its trials' order among equal exec_orders): the order `sort_values` of the filtered rows
    gives, for taking only the columns a reader needs (filtering and sorting the whole table copied each of
    its 26 columns twice)."""
    top = nodes["exec_order"].reset_index(drop=True)[nodes["parent"].isna().to_numpy()]
    return top.sort_values(kind="stable").index.to_numpy()


def executed_nodes(side: str, nodes: pd.DataFrame) -> list[Executed]:
    """Top-level executed nodes of one trial's `nodes` rows, in execution order, as version `side` ("a"/"b")."""
    columns = executed_columns(nodes, _EXECUTED_COLUMNS)
    orders, names, ops, durations, precisions, providers, originals, weights, methods, ins, outs, stds, per = columns
    names, ops = [str(n) for n in names], [str(o) for o in ops]
    overheads = map(_is_overhead, names, ops, originals, methods)
    return [built(Executed, {  # a sweep reads a thousand nodes of each of its trials
        "side": side, "exec_order": int(order), "name": name, "op_type": op, "dur_us": float(dur or 0.0),
        "precision": precision, "provider": provider, "original_nodes": original, "weights": weight,
        "method": method, "input_shapes": shapes_in, "output_shapes": shapes_out, "overhead": overhead,
        "dur_std_us": float(std or 0.0), "dur_process_us": tuple(processes or ()), "keys": (),
        "weight_keys": ()})  # `or`: never -0.0
        for order, name, op, dur, precision, provider, original, weight, method, shapes_in, shapes_out, std, processes,
        overhead in zip(orders, names, ops, durations, precisions, providers, originals, weights, methods, ins, outs,
                        stds, per, overheads, strict=True)]


# What an Executed holds, in executed_nodes' order (a column missing from older results reads as None).
_EXECUTED_COLUMNS = ("exec_order", "node_name", "op_type", "dur_us", "runtime_precision", "provider",
                     "original_nodes", "weights", "mapping_method", "input_shapes", "output_shapes",
                     "dur_process_std_us", "dur_process_us")


def _is_overhead(name: str, op_type: str, originals: tuple[str, ...], method: str | None) -> bool:
    if op_type in CONVERSION_OPS:
        return True
    if originals and all(map(is_added_name, originals)):
        return True  # requantize Mul, the Cast of dynamic quantization, the FP16 converter's casts
    # A Cast onnxruntime inserted (FP16 on CPU, `InsertedPrecisionFreeCast_*`) computes nothing of the model;
    # the mapping gives it a neighbour's nodes.
    return op_type == "Cast" and (method == "neighbour" or not originals or name.startswith(INSERTED_CAST))


def _with_common_names(a: list[Executed], b: list[Executed]) -> tuple[list[Executed], list[Executed]]:
    """Rewrite each version's node and weight names into the form the other version also has, and give each
    node its side ("a"/"b"): a trial's nodes are read once, whichever side of a comparison they take."""
    def names(side: list[Executed]) -> set[str]:
        return {n for e in side if not e.overhead for n in e.original_nodes if not is_added_name(n)}

    def weights(side: list[Executed]) -> set[str]:
        return {w for e in side if not e.overhead for w in e.weights if not is_qparam(w)}

    node_cl = {"a": closure(names(b)), "b": closure(names(a))}
    weight_cl = {"a": closure(weights(b)), "b": closure(weights(a))}

    def rewrite(e: Executed, side: str) -> Executed:
        # _changed's record, made from a copy of e's fields: both trials' thousand nodes, for every ordered
        # pair of versions of a chooser.
        fields = e.__dict__.copy()
        fields["side"] = side
        fields["keys"] = _common_forms(e.original_nodes, node_cl[side], is_added_name)
        fields["weight_keys"] = _common_forms(e.weights, weight_cl[side], is_qparam)
        return built(Executed, fields)

    return (_claimed_casts([rewrite(e, "a") for e in a]), _claimed_casts([rewrite(e, "b") for e in b]))


def _changed(e: Executed, **changes: Any) -> Executed:
    """`e` with some fields changed, as dataclasses.replace gives it."""
    return built(Executed, {**e.__dict__, **changes})


def _common_forms(names: tuple[str, ...], other_closure: set[str], left_out: Callable[[str], bool]) -> tuple[str, ...]:
    """The common form of each name not `left_out`, each form once, in order (most nodes have one name)."""
    if not names:  # most nodes' weights
        return ()
    if len(names) == 1:
        return () if left_out(names[0]) else (common_name(names[0], other_closure),)
    return tuple(dict.fromkeys(common_name(n, other_closure) for n in names if not left_out(n)))


def _claimed_casts(side: list[Executed]) -> list[Executed]:
    """An inserted Cast that is the only kernel computing an original node (onnxruntime merged the model's
    own Cast into it) is that node, not overhead."""
    covered = {k for e in side if not e.overhead for k in e.keys}
    return [_changed(e, overhead=False)
            if e.overhead and e.op_type == "Cast" and e.method not in (None, "neighbour")
            and e.name.startswith(INSERTED_CAST) and e.keys and not set(e.keys) <= covered else e
            for e in side]


def match_layers(nodes_a: pd.DataFrame, nodes_b: pd.DataFrame, reference: RatioCI | None = None,
                 iterations_a: int = 1, iterations_b: int = 1) -> LayerMatch:
    """Group the executed nodes of two versions into matched layers (see the module docstring).

    `nodes_a` and `nodes_b` are the `nodes` rows of one profiled trial each. Kernel rows come sorted by the
    larger of the two times, most first. A matched row's `ratio` interval borrows process-to-process
    variation from `reference` (the whole-model latency ratio) and adds the spread over the profiled
    iterations (`iterations_a`/`iterations_b` of them), see generator.analysis.stats.scaled_ratio_ci.
    """
    return match_executed(executed_nodes("a", nodes_a), executed_nodes("b", nodes_b), reference, iterations_a,
                          iterations_b)


def match_executed(a: Sequence[Executed], b: Sequence[Executed], reference: RatioCI | None = None,
                   iterations_a: int = 1, iterations_b: int = 1, kernel_ratios: bool = True) -> LayerMatch:
    """match_layers from the two trials' executed nodes (executed_nodes of either side: each comes out as its
    side's), for a caller that keeps them per trial. Without `kernel_ratios` every kernel row's ratio is None
    (the chooser's version pairs use the rows' shapes only: its page script computes their ratios)."""
    a, b = _with_common_names(list(a), list(b))
    nodes = [e for e in a + b if not e.overhead]
    groups = tuple(_group(ms) for ms in group_executed(nodes))
    overhead_a = tuple(e for e in a if e.overhead)
    overhead_b = tuple(e for e in b if e.overhead)
    total_a, total_b = sum(e.dur_us for e in a), sum(e.dur_us for e in b)
    overhead = _overhead(overhead_a, overhead_b, total_a, total_b)

    def ratio(members_a: Sequence[Executed], time_a: float, members_b: Sequence[Executed],
              time_b: float) -> RatioCI | None:
        """group_ratio of a row whose members' summed times (member_time's) are known already."""
        return scaled_ratio_ci(time_a, time_b, reference, _rel_se(members_a, iterations_a, time_a),
                               _rel_se(members_b, iterations_b, time_b))

    layer_rows = [_layer_row(g, total_a, total_b, ratio if kernel_ratios else _no_ratio) for g in groups]
    coverage = _coverage(layer_rows, overhead_a, overhead_b, total_a, total_b)
    kernels = _kernel_rows(layer_rows, overhead_a, overhead_b, total_a, total_b)
    return LayerMatch(groups, overhead_a, overhead_b, coverage, overhead, kernels, tuple(a), tuple(b))


def _no_ratio(*_: Any) -> None:
    return None


def _group(members: list[Executed]) -> LayerGroup:
    # Made by built(): a version pair has a group per layer, a thousand for a thousand-node model.
    if len(members) == 1:  # a layer of one version: one kernel (its keys are distinct)
        e = members[0]
        sides = ((e,), ()) if e.side == "a" else ((), (e,))
        return built(LayerGroup, {"members_a": sides[0], "members_b": sides[1], "keys": e.keys})
    if len(members) == 2 and members[0].side != members[1].side:  # most layers: one kernel in each version
        a, b = members if members[0].side == "a" else members[::-1]
        keys = a.keys if a.keys == b.keys else tuple(dict.fromkeys(a.keys + b.keys))  # a's keys are distinct
        return built(LayerGroup, {"members_a": (a,), "members_b": (b,), "keys": keys})
    keys = tuple(dict.fromkeys(k for e in sorted(members, key=lambda e: (e.side, e.exec_order)) for k in e.keys))
    return built(LayerGroup, {
        "members_a": tuple(sorted((e for e in members if e.side == "a"), key=lambda e: e.exec_order)),
        "members_b": tuple(sorted((e for e in members if e.side == "b"), key=lambda e: e.exec_order)),
        "keys": keys,
    })


def _coverage(layer_rows: Sequence[KernelRow], overhead_a: Sequence[Executed], overhead_b: Sequence[Executed],
              total_a: float, total_b: float) -> MatchCoverage:
    """From the layer rows in group order: a matched row's times are its group's time_a_us and time_b_us,
    summed here in the groups' order."""
    matched_a = sum(r.time_a_us for r in layer_rows if r.only_in is None)
    matched_b = sum(r.time_b_us for r in layer_rows if r.only_in is None)
    over_a, over_b = sum(e.dur_us for e in overhead_a), sum(e.dur_us for e in overhead_b)
    return MatchCoverage(
        share_a=_share(matched_a + over_a, total_a), share_b=_share(matched_b + over_b, total_b),
        matched_a_us=matched_a, matched_b_us=matched_b, overhead_a_us=over_a, overhead_b_us=over_b,
        total_a_us=total_a, total_b_us=total_b,
    )


def _share(part: float, total: float) -> float:
    return part / total if total > 0 else 0.0


def _by_op(nodes: Sequence[Executed]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for e in nodes:
        out[e.op_type] += e.dur_us
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _overhead(overhead_a: Sequence[Executed], overhead_b: Sequence[Executed],
              total_a: float, total_b: float) -> QuantOverhead:
    time_a, time_b = sum(e.dur_us for e in overhead_a), sum(e.dur_us for e in overhead_b)
    return QuantOverhead(
        time_b_us=time_b, share_b=_share(time_b, total_b), by_op=_by_op(overhead_b),
        time_a_us=time_a, share_a=_share(time_a, total_a), by_op_a=_by_op(overhead_a),
        nodes_b=len(overhead_b), nodes_a=len(overhead_a),
    )


@functools.lru_cache(maxsize=4096)  # a few dozen op types, asked for once per node and comparison
def kernel_op(op_type: str) -> str:
    """The standard op an executed kernel implements (`QLinearConv`, `FusedConv` → `Conv`); conversions keep
    their own name."""
    from generator.layers.anchors import base_op

    return op_type if op_type in CONVERSION_OPS or op_type == "Cast" else base_op(op_type)


def _dominant(members: Sequence[Executed], attr: str) -> str | None:
    if len(members) == 1:
        return getattr(members[0], attr)
    time: dict[str, float] = defaultdict(float)
    for e in members:
        value = getattr(e, attr)
        if value is not None:
            time[value] += e.dur_us
    return min(time, key=lambda k: (-time[k], k)) if time else None


def group_ratio(members_a: Sequence[Executed], members_b: Sequence[Executed], reference: RatioCI | None,
                iterations_a: int, iterations_b: int) -> RatioCI | None:
    """B / A time of two sets of executed nodes with an approximate 95 % interval (None if either is 0)."""
    return side_ratio(member_time(members_a, iterations_a), member_time(members_b, iterations_b), reference)


def member_time(members: Sequence[Executed], iterations: int) -> tuple[float, float]:
    """One side of a group_ratio: the members' summed time and its relative standard error. Layer types compute
    it once per trial (compare.op_side), not once per pair of trials. The chooser's page script
    (site_templates/assets/perfsite-choose.js, `rowSide`) computes the same for its kernel rows: change both
    together."""
    total = sum(e.dur_us for e in members)
    return total, _rel_se(members, iterations, total)


def side_ratio(a: tuple[float, float], b: tuple[float, float], reference: RatioCI | None) -> RatioCI | None:
    """group_ratio from the two sides' member_time."""
    return scaled_ratio_ci(a[0], b[0], reference, a[1], b[1])


def _rel_se(members: Sequence[Executed], iterations: int, total: float) -> float:
    """Relative standard error of the members' summed time `total`: the nodes' spreads over the `iterations`
    profiling processes (`dur_process_std_us`), taken as independent."""
    if total <= 0:
        return 0.0
    if len(members) == 1:  # a row of one kernel: sum() of one square adds it to 0, the square itself
        return math.sqrt(members[0].dur_std_us ** 2 / max(iterations, 1)) / total
    return math.sqrt(sum(e.dur_std_us ** 2 for e in members) / max(iterations, 1)) / total


def _kernel_rows(layer_rows: list[KernelRow], overhead_a: Sequence[Executed], overhead_b: Sequence[Executed],
                 total_a: float, total_b: float) -> tuple[KernelRow, ...]:
    rows = layer_rows + [_overhead_row(e, total_a, total_b) for e in (*overhead_a, *overhead_b)]
    return tuple(sorted(rows, key=lambda r: (-max(r.time_a_us, r.time_b_us), r.layer, r.executed_a, r.executed_b)))


def _layer_row(g: LayerGroup, total_a: float, total_b: float, ratio: Callable) -> KernelRow:
    # A chooser makes a row per layer group of each of its ordered version pairs (22,000 for vit-search-23's
    # 20), most of one kernel per version: the helpers give a single member's figures without a loop.
    members_a, members_b = g.members_a, g.members_b
    reference = members_a or members_b
    if len(reference) == 1:  # most rows: one kernel per version (its keys are distinct already)
        main = reference[0]
        labels = main.keys
    else:
        main = max(reference, key=_work_first)
        labels = tuple(dict.fromkeys(k for e in reference for k in e.keys))
    time_a, names_a, precision_a, ops_a = _row_side(members_a)
    time_b, names_b, precision_b, ops_b = _row_side(members_b)
    matched = bool(members_a and members_b)
    only_in = None if matched else ("a" if members_a else "b")
    return built(KernelRow, {
        "layer": _label(labels) or main.name, "op_type": kernel_op(main.op_type),
        "time_a_us": time_a, "time_b_us": time_b, "precision_a": precision_a, "precision_b": precision_b,
        "delta_us": time_b - time_a, "ratio": ratio(members_a, time_a, members_b, time_b) if matched else None,
        "only_in": only_in, "note": _layer_note(g, only_in), "executed_a": names_a, "executed_b": names_b,
        "weights": _row_weights(reference), "original_nodes": g.keys,
        "share_a": _share(time_a, total_a), "share_b": _share(time_b, total_b), "kind": "layer",
        "ops_a": ops_a, "ops_b": ops_b,
    })


def _row_side(members: Sequence[Executed]) -> tuple[float, tuple[str, ...], str | None, tuple[str, ...]]:
    """One side of a layer row: the members' summed time (g.time_a_us; an int 0 for none, as sum() gives),
    their names, dominant precision and executed_ops."""
    if len(members) == 1:  # sum() of one time adds it to 0: the time itself (never -0.0, see executed_nodes)
        e = members[0]
        return e.dur_us, (e.name,), e.precision, (e.op_type,)
    return (sum([e.dur_us for e in members]), tuple(e.name for e in members), _dominant(members, "precision"),
            executed_ops(members))


def _row_weights(reference: Sequence[Executed]) -> tuple[str, ...]:
    """The weights of a row's reference members, quantization parameters left out, each once."""
    if len(reference) == 1 and len(reference[0].weights) <= 1:  # most kernels: no weight or one
        return tuple(w for w in reference[0].weights if not is_qparam(w))
    return tuple(dict.fromkeys(w for e in reference for w in e.weights if not is_qparam(w)))


def _work_first(e: Executed) -> tuple:
    """Which member names a row's op type: one that does the layer's work (a Conv, not the Relu or BatchNorm
    fused into its group), then the longest: by time alone, a label could follow the profiler's noise."""
    return (kernel_op(e.op_type) not in REMOVABLE_OPS, e.dur_us, -e.exec_order)


def executed_ops(members: Sequence[Executed]) -> tuple[str, ...]:
    """The distinct op types onnxruntime ran, in execution order."""
    if len(members) <= 1:
        return (members[0].op_type,) if members else ()
    return tuple(dict.fromkeys(e.op_type for e in sorted(members, key=lambda e: e.exec_order)))


def _label(names: Sequence[str], shown: int = 3) -> str:
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} +{len(names) - shown} more"


def _layer_note(g: LayerGroup, only_in: str | None) -> str | None:
    members = g.members_a or g.members_b
    if not (members[0].original_nodes if len(members) == 1 else any(e.original_nodes for e in members)):
        return "not mapped to the model file"
    if only_in == "a":
        return "no counterpart in B: removed or fused by the transform, or run in a way the mapping cannot tie"
    if only_in == "b":
        return "only in B: added by the transform"
    n_a, n_b = len(g.members_a), len(g.members_b)
    if n_a != n_b:
        return f"{n_a} kernel{'s' * (n_a != 1)} in A, {n_b} in B"
    return None


def _overhead_row(e: Executed, total_a: float, total_b: float) -> KernelRow:
    side_a = e.side == "a"
    time_a, time_b = (e.dur_us, 0.0) if side_a else (0.0, e.dur_us)
    return KernelRow(
        layer=_label(e.original_nodes) or e.name, op_type=e.op_type, time_a_us=time_a, time_b_us=time_b,
        precision_a=e.precision if side_a else None, precision_b=None if side_a else e.precision,
        delta_us=time_b - time_a, ratio=None, only_in=e.side, note=_overhead_note(e),
        executed_a=(e.name,) if side_a else (), executed_b=() if side_a else (e.name,),
        weights=tuple(w for w in e.weights if not is_qparam(w)), original_nodes=e.original_nodes,
        share_a=_share(time_a, total_a), share_b=_share(time_b, total_b), kind="overhead",
    )


def _overhead_note(e: Executed) -> str:
    if e.op_type in CONVERSION_OPS:
        return f"added by quantization ({e.op_type})"
    if e.op_type == "Cast":
        return "inserted Cast" if e.method == "neighbour" or e.name.startswith(INSERTED_CAST) else \
            "Cast added by the transform"
    return f"requantization ({e.op_type} of quantization scales)"
