"""One trial as the sweep measures it (TrialState: its processes, profiles, outputs, pair and budget), and the
rows of the results tables it becomes (trial_files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generator.decode.convention import DecoderLayout
from generator.decode.genai import engine_label
from generator.results import intervals
from generator.results.schema import column_names
from generator.results.store import TrialFiles
from generator.runner import aggregate, generative_rows, profiles
from generator.runner.sides import PlannedTrial, Side, now


@dataclass(eq=False)
class TrialState:
    """A trial being measured: what its processes gave so far, and what it still needs."""

    planned: PlannedTrial
    started_at: str
    side: Side
    tag: str = ""  # unique within the group: the same trial key can be on both sides of a paired run
    feeds: Path | None = None
    processes: list[aggregate.ProcessOutcome] = field(default_factory=list)
    error: str | None = None
    profile: dict | None = None
    profile_error: str | None = None
    outputs: list[dict[str, np.ndarray]] | None = None
    outputs_error: str | None = None
    record_outputs: bool = False  # the agreement check compares this version's outputs
    outputs_while_profiling: bool = True  # until a profiling process that recorded them failed
    profiled: list[profiles.ProfiledProcess] = field(default_factory=list)
    profile_errors: list[str] = field(default_factory=list)
    pair: TrialState | None = None
    pair_id: str | None = None
    apart: bool = False  # a pair's process that measured both together failed: one process each from then on
    measuring_s: float = 0.0
    exhausted: bool = False
    decoder: DecoderLayout | None = None  # a generative trial's KV layout (generator.runner.generative)
    alone_peak_rss_mb: float | None = None  # a generative trial's outputs process: the version alone in memory
    phase_ops: list[dict] = field(default_factory=list)  # and its profile of prefill and one decode step
    phase_nodes: list[dict] = field(default_factory=list)

    @property
    def percentile(self) -> str:
        return self.side.loaded.spec.measure.percentile

    def interval(self) -> intervals.LogInterval | None:
        """The confidence sequence that decides when to stop: the paired ratio's for a pair (over the rounds the
        diff judges, at its level), else the trial's own headline latency's (aggregate.stops)."""
        if self.pair is None:
            return aggregate.headline_interval(self.processes, self.percentile)
        base, cand = (self.pair, self) if self.side.label == "candidate" else (self, self.pair)
        return aggregate.paired_interval(base.processes, cand.processes, self.percentile)

    def halfwidth(self) -> float | None:
        return aggregate.relative_halfwidth(self.interval())

    def converged(self) -> bool:
        """The interval is within the target; or, for a pair whose run knows the diff's threshold, it already
        settles the verdict."""
        threshold = self.side.decide_latency_ratio if self.pair is not None else None
        if not aggregate.stops(self.interval(), self.side.settings["target"], threshold):
            return False
        return self.pair is None or self.decoder is None or self._phases_converged()

    def _phases_converged(self) -> bool:
        """A generative pair goes on until its prefill and decode ratios settle too: the diff judges each apart
        (generator.diff.phases), and the end-to-end ratio can settle first."""
        base, cand = (self.pair, self) if self.side.label == "candidate" else (self, self.pair)
        regression = self.side.loaded.spec.regression
        for column, ratio in (("ttft_median_ms", regression.ttft_ratio), ("tpot_median_ms", regression.tpot_ratio)):
            if column == "tpot_median_ms" and not any(p.tpot_ms.size for p in self.processes):
                continue  # one new token: no decode step
            ci = aggregate.paired_phase_interval(base.processes, cand.processes, column)
            if not aggregate.stops(ci, self.side.settings["target"], ratio):
                return False
        return True

    def wants_more(self, rnd: int) -> bool:
        return self.error is None and (rnd < self.side.settings["repeats"] or not self.converged())

    def out_of_budget(self) -> bool:
        """Spent its budget; the two members of a pair stop together, so that every round has both."""
        spent = self.measuring_s >= self.side.settings["budget_s"]
        return spent or (self.pair is not None and self.pair.measuring_s >= self.pair.side.settings["budget_s"])

    def adaptive_columns(self) -> dict:
        return {
            "target": self.side.settings["target"], "budget_s": self.side.settings["budget_s"],
            "measuring_s": self.measuring_s, "budget_exhausted": self.exhausted,
            "pair_id": self.pair_id, "pair_side": self.side.label if self.pair_id else None,
        }


def trial_files(state: TrialState, agreement_rows: list[dict] | None = None) -> TrialFiles:
    """The trial's rows of every results table: its measured figures and profile when a process finished,
    else a failed row with the reason."""
    p, side = state.planned, state.side
    version = side.versions[p.trial.version]
    row = {
        "experiment": side.loaded.spec.name, "trial_key": p.key, "run_id": side.run_id,
        "env_id": side.env.env_id, "spec_sha256": side.loaded.sha256, "version": p.trial.version,
        "model_sha256": version.sha256, "model_bytes": version.size_bytes,
        "version_source": version.source, "version_notes": "; ".join(version.notes) or None,
        **aggregate.config_columns(p.trial), "quick": side.quick,
        "percentile": side.loaded.spec.measure.percentile, "started_at": state.started_at,
        "finished_at": now(), **state.adaptive_columns(), "target_name": side.target, "node_id": side.node_id,
        "engine": (engine_label(side.loaded.spec.models[p.trial.version].engine)
                   if side.loaded.spec.generate is not None else None),
    }
    tables: dict[str, list] = {"nodes": [], "layers": [], "timeline": [], "decode_steps": [], "phase_ops": [],
                               "phase_nodes": []}
    if state.error is None and state.processes:
        tables = _measured(state, row)
    else:
        row.update(status="failed", error=state.error or "no measurement process finished")
    return TrialFiles(
        trial=row,
        processes=[o.row(p.key) for o in state.processes],
        latencies=aggregate.latency_table(p.key, state.processes),
        nodes=tables["nodes"],
        layers=tables["layers"],
        agreement=list(agreement_rows or []) if row["status"] == "ok" else [],
        timeline=tables["timeline"],
        decode_steps=tables["decode_steps"],
        phase_ops=tables["phase_ops"],
        phase_nodes=tables["phase_nodes"],
    )


def _measured(state: TrialState, row: dict) -> dict[str, list]:
    """Complete an ok trial's `row` with its figures and profile; its nodes, layers and timeline rows."""
    p, side = state.planned, state.side
    expected = aggregate.cores_expected(p.trial, side.env.logical_cores)
    row.update(aggregate.measurement_columns(state.processes, expected, row["percentile"]))
    row.update(status="ok", **profile_columns(state))
    profile = state.profile or {}
    # The Python API has no allocator statistics; the profiled pass reads the arena from its profile.
    if row.get("arena_mb") is None:
        row["arena_mb"] = profile.get("arena_mb")
    nodes = profiles.node_rows(p.key, profile.get("nodes", []), state.profiled, set(column_names("nodes")))
    row.update(profiles.trial_columns(state.profiled if state.profile else [], nodes))
    steps, ops, phase_nodes = [], [], []
    if state.decoder is not None:
        ops = [{**r, "trial_key": p.key} for r in state.phase_ops]
        phase_nodes = [{**r, "trial_key": p.key} for r in state.phase_nodes]
        if row.get("peak_rss_mb") is None:  # measured with its configuration's other versions in one process
            row["peak_rss_mb"] = state.alone_peak_rss_mb
        dims = dict(p.trial.config.dims)
        row.update(generative_rows.generative_columns(state.processes, row["percentile"], state.decoder,
                                                      p.trial.config.batch, dims["prompt_tokens"], dims["new_tokens"]))
        steps = generative_rows.decode_step_rows(p.key, state.processes, dims["prompt_tokens"])
    return {"nodes": nodes, "layers": [{**layer, "trial_key": p.key} for layer in profile.get("layers", [])],
            "timeline": [{**call, "trial_key": p.key} for call in profile.get("timeline", [])], "decode_steps": steps,
            "phase_ops": ops, "phase_nodes": phase_nodes}


def profile_columns(state: TrialState) -> dict:
    """Whether the trial has a profile, and why not; its figures are profiles.trial_columns'."""
    error = state.profile_error or (state.profile_errors[0] if state.profile_errors else None)
    return {"profiled": state.profile is not None, "profile_error": None if state.profile else error}
