"""Per-layer changes between the profiled passes of a baseline trial and a candidate trial.

A *layer* is an original node of the model file: each top-level executed node is named after the original
node it mainly computes (its `original_nodes` entry whose name ends in its op type, e.g. `/layer4/conv/Conv`
for a Conv that onnxruntime fused with its Relu and renamed `/layer4/relu/Relu_output_0_nchwc`; else its
first original node; else, unmapped, its executed name). Executed nodes with the same layer name are summed
(an NCHWc Conv and the ReorderOutput after it). Layers are matched across the two sides by that name, so a
layer present on one side only is *added* or *removed*.

Statistics, and why they are conservative: each side's profile comes from its profiling processes (the
measurement processes of its first rounds), each giving a node's median over its profiled inferences. The
spread between processes (`dur_process_std_us`) is the one that matters on shared machines: a whole process
running 10-20 % slower than its siblings (a busy hyper-thread sibling, a frequency change) without any sign in
its CPU time. Two steps deal with it:

1. **Robust times, calibrated.** A layer's time is its `dur_us` (the median over the processes of each one's
   median, less the profiler's measured cost per call: generator.results.profiled; one preempted inference
   does not move it), scaled by (median request latency of the side's timed processes) / (sum of those
   figures), so profiled processes that ran uniformly slow or fast cancel out; what remains is each layer's
   part of the timed latency (µs per inference).
2. **A conservative rule.** The layer's ratio interval comes from `generator.analysis.stats.scaled_ratio_ci`
   (the compare page's rule): the iteration standard errors of both sides, combined with the process-to-
   process variation borrowed from the whole-model latency ratio of the same two trials. A layer counts as
   changed only when that 95 % interval excludes 1, AND its ratio is at least `MIN_LAYER_RATIO` (1.10) or
   at most its inverse (twice the default 5 % regression margin: the calibration assumes that noise slows
   every layer alike, which holds only roughly: the profiler's fixed cost per node varies with the load,
   and moves small layers most), AND the difference is at least `MIN_SHARE` (5 %) of the baseline's
   profiled time: a smaller change could not by itself move the whole model past the default 5 % threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from generator.analysis.profile import top_level_nodes
from generator.analysis.records_compare import RatioCI
from generator.analysis.stats import scaled_ratio_ci
from generator.cells import clean

MIN_LAYER_RATIO = 1.10
MIN_SHARE = 0.05


@dataclass(frozen=True)
class LayerTiming:
    """One layer's profiled time per inference on one side (µs), with its spread over the profiling processes
    and their count (`iterations`)."""

    layer: str
    op_type: str
    mean_us: float
    std_us: float
    iterations: int
    executed: tuple[str, ...]
    order: int = 0  # execution order of its first executed node


@dataclass(frozen=True)
class LayerChange:
    """A layer that changed: `status` is slower, faster, added (candidate only) or removed (baseline only)."""

    layer: str
    op_type: str
    status: str
    baseline_us: float | None
    candidate_us: float | None
    delta_us: float
    ratio: RatioCI | None
    executed: tuple[str, ...] = ()


@dataclass(frozen=True)
class LayerDiff:
    """Every significant layer change of one (experiment, version, configuration), most first."""

    changed: tuple[LayerChange, ...]
    added: tuple[LayerChange, ...]
    removed: tuple[LayerChange, ...]
    baseline_total_us: float
    candidate_total_us: float
    note: str | None = None
    # Every layer of either side in execution order (candidate's, then the removed ones), status
    # "unchanged" where the rule did not fire: the changes page charts them all.
    all_layers: tuple[LayerChange, ...] = ()

    @property
    def regressions(self) -> tuple[LayerChange, ...]:
        return tuple(c for c in self.changed if c.status == "slower")

    @property
    def improvements(self) -> tuple[LayerChange, ...]:
        return tuple(c for c in self.changed if c.status == "faster")


def layer_name(node_name: str, op_type: str, original_nodes: tuple[str, ...]) -> str:
    """The original node an executed node is named after (see the module docstring)."""
    for original in original_nodes:
        if original.rsplit("/", 1)[-1].split("_")[0] == op_type:
            return original
    return original_nodes[0] if original_nodes else node_name


def layer_timings(
    nodes: pd.DataFrame, trial_key: str, iterations: int, scale: float = 1.0
) -> dict[str, LayerTiming]:
    """The trial's top-level executed nodes grouped into layers (median times summed, variances added),
    every time multiplied by `scale` (the calibration factor of the module docstring)."""
    grouped: dict[str, list[tuple[str, str, float, float, int]]] = {}
    for _, row in top_level_nodes(nodes, trial_key).sort_values("exec_order").iterrows():
        originals = row["original_nodes"]
        name = layer_name(str(row["node_name"]), str(row["op_type"]), originals)
        std = clean(row.get("dur_process_std_us"))
        grouped.setdefault(name, []).append(
            (str(row["node_name"]), str(row["op_type"]), node_time_us(row), float(std or 0.0),
             int(row["exec_order"]))
        )
    return {
        name: LayerTiming(
            layer=name, op_type=parts[0][1], mean_us=scale * sum(p[2] for p in parts),
            std_us=scale * math.sqrt(sum(p[3] ** 2 for p in parts)), iterations=iterations,
            executed=tuple(p[0] for p in parts), order=parts[0][4],
        )
        for name, parts in grouped.items()
    }


def node_time_us(row: pd.Series) -> float:
    """An executed node's figure (generator.results.profiled's `dur_us`)."""
    return float(clean(row.get("dur_us")) or 0.0)


def profiled_sum_us(nodes: pd.DataFrame, trial_key: str) -> float:
    """Sum of the top-level executed nodes' median times: the profiled inference the calibration scales."""
    return float(sum(node_time_us(r) for _, r in top_level_nodes(nodes, trial_key).iterrows()))


def compare_layers(
    baseline: dict[str, LayerTiming], candidate: dict[str, LayerTiming], reference: RatioCI | None
) -> LayerDiff:
    """Layers changed beyond the conservative rule of the module docstring (`reference`: the whole-model
    latency ratio of the same two trials), and the added and removed layers."""
    total_a = sum(t.mean_us for t in baseline.values())
    total_b = sum(t.mean_us for t in candidate.values())
    changed = [c for name in baseline.keys() & candidate.keys()
               if (c := _change(baseline[name], candidate[name], total_a, reference)) is not None]
    # Added and removed layers in execution order: they read as a piece of the model that came or went.
    added = [LayerChange(t.layer, t.op_type, "added", None, t.mean_us, t.mean_us, None, t.executed)
             for t in sorted(candidate.values(), key=lambda t: t.order) if t.layer not in baseline]
    removed = [LayerChange(t.layer, t.op_type, "removed", t.mean_us, None, -t.mean_us, None, t.executed)
               for t in sorted(baseline.values(), key=lambda t: t.order) if t.layer not in candidate]
    kept = {c.layer: c for c in changed}
    common = [kept.get(t.layer) or LayerChange(t.layer, t.op_type, "unchanged", baseline[t.layer].mean_us,
                                               t.mean_us, t.mean_us - baseline[t.layer].mean_us, None, t.executed)
              for t in sorted(candidate.values(), key=lambda t: t.order) if t.layer in baseline]
    everything = sorted(common + added, key=lambda c: candidate[c.layer].order) + removed
    return LayerDiff(_most_first(changed), tuple(added), tuple(removed), total_a, total_b, None, tuple(everything))


def _change(a: LayerTiming, b: LayerTiming, total_a_us: float, reference: RatioCI | None) -> LayerChange | None:
    ratio = scaled_ratio_ci(a.mean_us, b.mean_us, reference, _rel_se(a), _rel_se(b))
    delta = b.mean_us - a.mean_us
    if ratio is None or not ratio.significant or abs(delta) < MIN_SHARE * total_a_us:
        return None
    if 1.0 / MIN_LAYER_RATIO < ratio.point < MIN_LAYER_RATIO:
        return None
    return LayerChange(a.layer, b.op_type, "slower" if delta > 0 else "faster", a.mean_us, b.mean_us, delta,
                       ratio, b.executed)


def _rel_se(t: LayerTiming) -> float:
    """Relative standard error of the layer's figure over the profiling processes."""
    return t.std_us / math.sqrt(max(t.iterations, 1)) / t.mean_us if t.mean_us > 0 else 0.0


def _most_first(changes: list[LayerChange]) -> tuple[LayerChange, ...]:
    return tuple(sorted(changes, key=lambda c: (-abs(c.delta_us), c.layer)))


def no_profile(baseline_total_us: float, candidate_total_us: float, note: str) -> LayerDiff:
    """A LayerDiff saying why there is no layer comparison (a side has no profiled pass)."""
    return LayerDiff((), (), (), baseline_total_us, candidate_total_us, note)
