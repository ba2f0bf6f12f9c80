"""From the profiled pass to the timeline, its temporal statistics and its layer details (generator.timeline).

The worker's profile job reports the executed nodes mapped to the model's nodes and the static FLOP analysis
of the model's nodes; each executed node's operations are the sums over the original nodes it owns, split as
the profile pages split them (generator.analysis.roofline), so no operation is counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from generator.machine.profiling import parse_profile
from generator.timeline import (
    LayerDetail,
    TemporalStats,
    Timeline,
    layer_details,
    temporal_statistics,
    timeline_from_recording,
)

TEMPORAL_BINS = 100


@dataclass(frozen=True)
class ProfileAnalysis:
    """The median profiled inference and what is derived from it."""

    timeline: Timeline
    temporal: TemporalStats
    layers: tuple[LayerDetail, ...]
    original_nodes: dict[str, tuple[str, ...]]  # executed node name -> original node keys
    total_flops: float | None  # static analysis over the model's nodes (None: nothing could be counted)
    total_int_ops: float | None
    notes: tuple[str, ...]  # what the static analysis could not count, and why
    bandwidth_gbs: float | None = None  # the measured limit the layers were set against


def ops_by_executed_node(nodes: list[Mapping[str, Any]], layers: list[Mapping[str, Any]]) -> dict[str, float]:
    """Operations (FLOPs + integer operations) per top-level executed node name, from the worker's mapped
    ``nodes`` and its static-analysis ``layers`` rows; nodes none of whose original nodes was analysed are
    left out (unknown, not zero)."""
    from generator.analysis.roofline import split_sums

    top = pd.DataFrame([n for n in nodes if n.get("parent") is None])
    if top.empty or not layers:
        return {}
    static = pd.DataFrame(list(layers)).drop_duplicates("node").set_index("node")
    out: dict[str, float] = {}
    for name, sums in zip(top["node_name"], split_sums(top, static), strict=True):
        if sums is not None:
            out[str(name)] = out.get(str(name), 0.0) + sums["flops"] + sums["int_ops"]
    return out


def analyse_profile(profile: Mapping[str, Any], skip_runs: int, peak_gflops: float | None,
                    bandwidth_gbs: float | None) -> ProfileAnalysis:
    """The timeline of the median profiled inference (``profile``: the worker's profile-mode output) with
    operations per node, its temporal statistics and its layer details against the machine's limits."""
    recording = parse_profile(Path(profile["profile_file"]), skip_runs=skip_runs)
    nodes, layers = list(profile.get("nodes", [])), list(profile.get("layers", []))
    tl = timeline_from_recording(recording, ops_by_executed_node(nodes, layers))
    notes = [*profile.get("layers_notes", [])]
    if profile.get("layers_error"):
        notes.append(f"Static analysis: {profile['layers_error']}")
    return ProfileAnalysis(
        timeline=tl, temporal=temporal_statistics(tl, bins=TEMPORAL_BINS),
        layers=tuple(layer_details(tl, peak_gflops, bandwidth_gbs)),
        original_nodes={str(n["node_name"]): tuple(n.get("original_nodes") or ()) for n in nodes},
        total_flops=_total(layers, "flops"), total_int_ops=_total(layers, "int_ops"), notes=tuple(notes),
        bandwidth_gbs=bandwidth_gbs,
    )


def _total(layers: list[Mapping[str, Any]], column: str) -> float | None:
    values = [float(r[column]) for r in layers if r.get(column) is not None]
    return sum(values) if values else None
