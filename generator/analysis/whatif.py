"""What-if estimates (Amdahl): the latency if some op types or layers ran a given factor faster.

Factors come from the spec (`whatif: {Conv: 2.0}`) or from a measured comparison of two versions (per op
family, one version's time over the other's). Everything not sped up, the other kernels and the time outside
them, is assumed to take what it took.

Op types are matched by family: onnxruntime runs an ONNX `Conv` as `FusedConv`, `NhwcConv` or, quantized,
`QLinearConv` or `ConvInteger`. A spec factor for `Conv` applies to all of them, and two versions are compared
family by family (FP32 `Conv` against INT8 `QLinearConv`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from generator.analysis.profile_times import ProcessTimes, summed
from generator.analysis.roofline import LayerResult, op_family
from generator.analysis.summaries import TrialSummary


@dataclass(frozen=True)
class WhatIfFactor:
    """One speed-up factor of a what-if, and the share of the measured time it applies to."""

    key: str  # an op type (or family), or an executed or original node name
    factor: float
    time_share: float  # of the profiled session.run time
    saved_ms: float  # of the measured latency (negative: a slow-down)


@dataclass(frozen=True)
class WhatIf:
    """An Amdahl estimate: some parts run `factor` times faster, everything else (the other kernels and
    the time outside them) as measured."""

    kind: str  # "spec" (the spec's factors), "measured" (another version's speeds), "op_type" (one op type)
    label: str  # "whatif", the other version's name, the op type
    factors: tuple[WhatIfFactor, ...]
    unmatched: tuple[str, ...]  # keys that matched no executed node
    measured_ms: float  # median latency of the timed processes
    estimated_ms: float
    # Items in flight / latency, at the measured and the estimated latency (whatif's docstring): the same basis
    # as the ms figures, not the stored throughput.
    measured_ips: float
    estimated_ips: float
    left_out: tuple[str, ...] = ()  # op families only the compared version ran: not in the estimate
    per_process: tuple[float, ...] = ()  # the speed-up from each profiling process's node times
    # A measured what-if's factors came process by process (the two versions profiled in the same rounds);
    # False: the factors are figures alone, and the speed-up's interval lacks their uncertainty.
    factors_paired: bool = True

    @property
    def speedup(self) -> float:
        return self.measured_ms / self.estimated_ms

    @property
    def speedup_times(self) -> ProcessTimes:
        """The speed-up with its per-process figures (its interval: ProcessTimes.interval)."""
        return ProcessTimes(self.speedup, self.per_process or (self.speedup,))


def _matches(key: str, row: LayerResult) -> bool:
    return key in (row.op_type, op_family(row.op_type), row.node_name) or key in row.original_nodes


def whatif(results: list[LayerResult], trial: TrialSummary, factors: Mapping[str, float], kind: str, label: str,
           left_out: tuple[str, ...] = (), match: Callable[[str, LayerResult], bool] | None = None,
           factors_per_process: Mapping[str, tuple[float, ...]] | None = None) -> WhatIf | None:
    """Estimated latency if the matching nodes ran `factor` times faster (keys: op type or family, executed
    node name or original node name, or as `match` says; a node matched by several keys takes the first, in
    the mapping's order).

    Amdahl: estimated = measured × (1 − Σ sᵢ (1 − 1/kᵢ)), with sᵢ a node's time (profiler cost removed,
    generator.results.profiled) over the measured latency, the timed processes' median (the mean when no
    median was stored); when the kernels add up to more than that (generator.analysis.accounting), over their
    sum, so that Σ sᵢ stays at most 1. The speed-up's interval takes the same estimate in each profiling
    process (its node times) and is the t interval of those around the figure shown. Items per second come
    from the same latency, measured and estimated alike: the items in flight over the time per request
    (batch × concurrency / latency, Little's law for streams that are always busy). None without a measured
    latency.
    """
    measured = trial.latency_p50_ms or trial.latency_mean_ms
    if not measured:
        return None
    base_us = max(measured * 1e3, sum(r.dur_us for r in results))
    chosen: dict[str, list[LayerResult]] = {k: [] for k in factors}
    for row in results:
        key = next((k for k in factors if (match or _matches)(k, row)), None)
        if key is not None:
            chosen[key].append(row)
    shares = {k: sum(r.dur_us for r in rows) / base_us for k, rows in chosen.items()}
    parts = tuple(WhatIfFactor(k, float(f), shares[k], measured * shares[k] * (1 - 1 / f))
                  for k, f in factors.items() if shares[k] > 0)
    estimated = measured - sum(p.saved_ms for p in parts)  # > 0: Σ sᵢ <= 1 and every factor is finite
    in_flight = trial.batch * trial.concurrency  # items
    return WhatIf(
        kind=kind, label=label, factors=parts, unmatched=tuple(k for k in factors if shares[k] == 0),
        measured_ms=measured, estimated_ms=estimated, measured_ips=in_flight * 1e3 / measured,
        estimated_ips=in_flight * 1e3 / estimated, left_out=left_out,
        per_process=_per_process(chosen, factors, results, base_us, factors_per_process or {}),
        factors_paired=kind != "measured" or all(p.key in (factors_per_process or {}) for p in parts),
    )


def _per_process(chosen: Mapping[str, list[LayerResult]], factors: Mapping[str, float], results: list[LayerResult],
                 base_us: float, factors_per_process: Mapping[str, tuple[float, ...]]) -> tuple[float, ...]:
    """The speed-up from each profiling process: its nodes' shares of its own kernels, times the kernels' share
    of the measured base, each factor the process's own where it has one (a measured comparison's, process by
    process). Shares, not times: a process that ran uniformly slower (a spell when the host slowed its vCPU) has
    every node slower alike, and its estimate should not move with it; the uncertainty of the kernels' share
    itself is the finding's to add (generator.analysis.findings.profile)."""
    kernels = summed(r.times for r in results if r.times is not None)
    width = len(kernels.per_process)
    saved = summed(_saved(summed(r.times for r in rows if r.times is not None), factors[k],
                          factors_per_process.get(k, ()), width) for k, rows in chosen.items() if rows)
    if not kernels.per_process or len(saved.per_process) != len(kernels.per_process):
        return ()
    fraction = kernels.value / base_us
    out = []
    for part, whole in zip(saved.per_process, kernels.per_process, strict=True):
        cut = fraction * part / whole if whole > 0 else math.nan
        out.append(1 / (1 - cut) if cut < 1 else math.inf)
    return tuple(out)


def _saved(times: ProcessTimes, factor: float, per_process: tuple[float, ...], width: int) -> ProcessTimes:
    """Time saved per process: its time × (1 − 1/its factor)."""
    if len(per_process) != width or len(times.per_process) != width:
        return times.scaled(1 - 1 / factor)
    return ProcessTimes(times.value * (1 - 1 / factor),
                        tuple(t * (1 - 1 / f) if f > 0 else math.nan for t, f in zip(times.per_process, per_process,
                                                                                        strict=True)))


def op_type_whatifs(results: list[LayerResult], trial: TrialSummary, factor: float = 2.0) -> list[WhatIf]:
    """For each executed op type alone (exactly that op type: one row for FusedConv, another for Conv):
    the estimate if it ran `factor` times faster (Sparsify's "where would optimization pay"), largest time
    first, ties by name."""
    times: dict[str, float] = {}
    for row in results:
        times[row.op_type] = times.get(row.op_type, 0.0) + row.dur_us
    order = sorted(times, key=lambda op: (-times[op], op))
    out = [whatif(results, trial, {op: factor}, "op_type", op, match=_exact_op_type) for op in order]
    return [w for w in out if w is not None]


def _exact_op_type(key: str, row: LayerResult) -> bool:
    return row.op_type == key


def measured_factors(mine: Mapping[str, float | ProcessTimes], other: Mapping[str, float | ProcessTimes]
                     ) -> tuple[dict[str, float], tuple[str, ...], dict[str, tuple[float, ...]]]:
    """Factors from two versions' times per executed op type (µs per inference), compared by family: my
    time / the other's time for each family both ran (above 1: the other version is faster at it), and the
    families only the other version ran (quantize and layout nodes), which an estimate of mine leaves out.
    With times per profiling process on both sides (the two versions profiled in the same rounds), the factor
    of each process too, so that an estimate's interval holds the factors' own uncertainty."""
    mine_f, other_f = _by_family(mine), _by_family(other)
    both = [f for f in mine_f if other_f.get(f, ProcessTimes(0.0, ())).value > 0 and mine_f[f].value > 0]
    factors = {f: mine_f[f].value / other_f[f].value for f in both}
    per_process = {f: tuple(a / b if b > 0 else math.nan for a, b in zip(mine_f[f].per_process,
                                                                       other_f[f].per_process, strict=True))
                   for f in both if len(mine_f[f].per_process) == len(other_f[f].per_process) > 1}
    return factors, tuple(sorted(set(other_f) - set(mine_f))), per_process


def _by_family(times: Mapping[str, float | ProcessTimes]) -> dict[str, ProcessTimes]:
    out: dict[str, list[ProcessTimes]] = {}
    for op, t in sorted(times.items()):
        out.setdefault(op_family(op), []).append(t if isinstance(t, ProcessTimes) else ProcessTimes(t, (t,)))
    families = {f: summed(parts) for f, parts in out.items()}
    return dict(sorted(families.items(), key=lambda item: (-item[1].value, item[0])))
