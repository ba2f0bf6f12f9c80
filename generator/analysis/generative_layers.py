"""Where one generative version's time goes, node by node: its profiled prefill and decode step at every
configuration it was measured at (the `phase_nodes` table), with the decode step's bytes held
against the machine's measured memory bandwidth. The version's profile page shows it
(generator.site.generative_profile)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from generator.analysis.generative import GenerativeReport, GenerativeRow

SLOWEST = 10  # nodes a phase's "slowest" list names


@dataclass(frozen=True)
class PhaseNode:
    """One top-level node of a profiled phase: its median time over the passes and what it reads."""

    exec_order: int
    node_name: str
    op_type: str
    precision: str | None
    original_nodes: tuple[str, ...]
    weights: tuple[str, ...]
    output_shapes: tuple[tuple[int, ...], ...]
    us_p50: float
    us_min: float | None
    us_max: float | None
    share: float  # of the sum of the phase's node medians
    bytes_read: int | None  # weights and inputs, as onnxruntime sizes them
    floor_us: float | None  # bytes_read at the machine's measured bandwidth (decode only)

    @property
    def floor_share(self) -> float | None:
        return self.floor_us / self.us_p50 if self.floor_us is not None and self.us_p50 > 0 else None


@dataclass(frozen=True)
class PhaseTable:
    phase: str  # prefill or decode
    context_tokens: int
    passes: int
    kernel_ms: float  # the sum of the nodes' medians (generator.analysis.generative_pairs.PhaseOps says why)
    ops: tuple[tuple[str, int, float, float], ...]  # op type, nodes, ms, share; the most first
    nodes: tuple[PhaseNode, ...]  # execution order
    slowest: tuple[PhaseNode, ...]  # by median, at most SLOWEST
    bytes_read: int | None  # every node's, the pass's whole traffic as onnxruntime sizes it
    floor_ms: float | None  # that at the machine's measured bandwidth (decode only)


@dataclass(frozen=True)
class ConfigLayers:
    row: GenerativeRow  # the trial's timed figures (TTFT, TPOT, the decode floor)
    phases: tuple[PhaseTable, ...]


@dataclass(frozen=True)
class VersionLayers:
    version: str
    configs: tuple[ConfigLayers, ...]


def version_layers(report: GenerativeReport, phase_nodes: pd.DataFrame) -> list[VersionLayers]:
    """Each version with a profiled trial, in the report's order, its configurations in the report's order."""
    if phase_nodes.empty:
        return []
    nodes = {key: g for key, g in phase_nodes.groupby("trial_key", sort=False)}
    found: dict[str, list[ConfigLayers]] = {}
    for row in report.rows:
        table = nodes.get(row.trial_key)
        if table is None:
            continue
        phases = tuple(_phase(phase, g, row.bandwidth_gbs)
                       for phase, g in sorted(table.groupby("phase"), key=lambda kv: kv[0] != "prefill"))
        found.setdefault(row.version, []).append(ConfigLayers(row, phases))
    return [VersionLayers(v, tuple(configs)) for v, configs in found.items()]


def _phase(phase: str, table: pd.DataFrame, bandwidth_gbs: float | None) -> PhaseTable:
    table = table.sort_values("exec_order", kind="stable")
    summed = float(table["us_p50"].sum())
    per_gb = 1e6 / (bandwidth_gbs * 1e9) if bandwidth_gbs and phase == "decode" else None  # µs per byte
    nodes = tuple(_node(r, summed, per_gb) for r in table.itertuples(index=False))
    by_op: dict[str, list[float]] = {}
    for n in nodes:
        by_op.setdefault(n.op_type, []).append(n.us_p50)
    ops = tuple(sorted(((op, len(t), sum(t) / 1e3, sum(t) / summed if summed else 0.0) for op, t in by_op.items()),
                       key=lambda o: (-o[2], o[0])))
    known = [n.bytes_read for n in nodes if n.bytes_read is not None]
    read = sum(known) if known else None
    return PhaseTable(phase, int(table["context_tokens"].iloc[0]), int(table["passes"].iloc[0]),
                      summed / 1e3, ops, nodes,
                      tuple(sorted(nodes, key=lambda n: (-n.us_p50, n.exec_order))[:SLOWEST]), read,
                      read * per_gb / 1e3 if read is not None and per_gb else None)


def _node(r, summed: float, per_gb: float | None) -> PhaseNode:
    read = _bytes(r.parameter_bytes, r.activation_bytes)
    return PhaseNode(int(r.exec_order), r.node_name, r.op_type, r.runtime_precision or None,
                     _names(r.original_nodes), _names(r.weights), _shapes(r.output_shapes), float(r.us_p50),
                     _float(r.us_min), _float(r.us_max), float(r.us_p50) / summed if summed else 0.0, read,
                     read * per_gb if read is not None and per_gb else None)


def _bytes(*sizes) -> int | None:
    known = [int(s) for s in sizes if s is not None and not pd.isna(s)]
    return sum(known) if known else None


def _shapes(value: str | None) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(s) for s in json.loads(value)) if value else ()


def _names(value: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(value) if value is not None else ()


def _float(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
