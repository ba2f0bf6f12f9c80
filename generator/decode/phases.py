"""Where a decoder's time goes, prefill and decode apart: one profiled session (onnxruntime's profiler, as a
trial's profiled pass uses: generator.machine.profiling) runs the prompt's prefill `passes` times, then one
decode step at a stated context `passes` times, each from the same past (the cache a prefill of context - 1
tokens left), after a warm-up pass of each. Every node's time is its median over the passes of its phase, so
one preempted pass does not rank a layer first; the phase's total is the median of its passes' kernel sums.
Profiled passes run slower than timed ones (the profiler's own cost): read the shares. Used by `perfsite
generate --layers` (generator.generate.layers prints it) and by the process that profiles a configuration's
generative versions together (the `phase_ops` and `phase_nodes` tables: profile_phases_together), whose nodes are
tied back to the model file's nodes and weights as a trial's profiled pass ties its own (generator.layers.mapping).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from generator.decode.convention import DecoderLayout
from generator.machine.profiling import NodeStat, ProfileRecording, node_statistics, parse_profile

TOP_NODES = 10


@dataclass(frozen=True)
class PhaseLayers:
    """One phase's profiled passes: the median of their kernel sums, and each node's and op type's median."""

    phase: str  # prefill or decode
    context_tokens: int  # positions the pass attends to: the prompt's, or the cache's with the step's token
    passes: int
    total_us: float
    op_types: tuple[tuple[str, float], ...]  # op type -> the sum of its nodes' medians, µs, largest first
    nodes: tuple[NodeStat, ...]  # the slowest by median, at most TOP_NODES
    op_nodes: dict[str, int] = field(default_factory=dict)  # op type -> its top-level nodes
    every: tuple[NodeStat, ...] = ()  # every top-level node, in execution order
    mapped: tuple[dict, ...] = ()  # each of `every`'s model-file nodes and weights (mapped_columns), when mapped

    @property
    def nodes_us(self) -> float:
        """The nodes' medians summed (what the op types add up to): the phase's kernel time pages and the
        terminal give, steady where a few disturbed passes move the median of the sums."""
        return sum(us for _, us in self.op_types)

    def as_dict(self) -> dict:
        return {"phase": self.phase, "context_tokens": self.context_tokens, "passes": self.passes,
                "kernel_us_p50": round(self.total_us, 3), "kernel_us_nodes": round(self.nodes_us, 3),
                "op_types": [{"op_type": op, "us_p50": round(us, 3)} for op, us in self.op_types],
                "slowest_nodes": [{"node": n.node_name, "op_type": n.op_type, "us_p50": round(n.dur_p50_us, 3),
                                   "runtime_precision": n.runtime_precision} for n in self.nodes]}


def phase_ops_rows(phases: Sequence[PhaseLayers | None]) -> list[dict]:
    """The `phase_ops` table's rows of a trial (without its trial_key): one per phase and op type."""
    return [{"phase": p.phase, "context_tokens": p.context_tokens, "passes": p.passes, "op_type": op,
             "nodes": p.op_nodes.get(op, 0), "us_p50": us, "phase_us_p50": p.total_us}
            for p in phases if p is not None for op, us in p.op_types]


def phase_nodes_rows(phases: Sequence[PhaseLayers | None]) -> list[dict]:
    """The `phase_nodes` table's rows of a trial (without its trial_key): one per phase and top-level node."""
    rows = []
    for p in phases:
        if p is None:
            continue
        mapped = p.mapped or ({"original_nodes": [], "weights": [], "mapping_method": None},) * len(p.every)
        for n, m in zip(p.every, mapped, strict=True):
            rows.append({"phase": p.phase, "context_tokens": p.context_tokens, "passes": p.passes,
                         "exec_order": n.exec_order, "node_name": n.node_name, "op_type": n.op_type,
                         "runtime_precision": n.runtime_precision, "calls": n.calls, "us_p50": n.dur_p50_us,
                         "us_min": n.dur_min_us, "us_max": n.dur_max_us, "input_shapes": n.input_shapes,
                         "output_shapes": n.output_shapes, "parameter_bytes": n.parameter_bytes,
                         "activation_bytes": n.activation_bytes, **m})
    return rows


def decode_context(prompt_tokens: int, new_tokens: int) -> int:
    """The context of the profiled decode step: halfway through the request's new tokens (the prompt and the
    tokens before it, plus its own), at least the first decode step's."""
    return prompt_tokens + max(1, new_tokens // 2)


def profile_phases(model: Path, layout: DecoderLayout, batch: int, prompt_tokens: int, new_tokens: int,
                   threads: int, passes: int = 10) -> tuple[PhaseLayers, PhaseLayers | None]:
    """Prefill's and one decode step's layers (decode None for one new token: a request without a step)."""
    return profile_phases_together([(model, layout)], batch, prompt_tokens, new_tokens, threads, passes)[0]


def profile_phases_together(models: Sequence[tuple[Path, DecoderLayout]], batch: int, prompt_tokens: int,
                            new_tokens: int, threads: int, passes: int = 10,
                            ) -> list[tuple[PhaseLayers, PhaseLayers | None]]:
    """profile_phases of several decoders in this process, pass by pass in turn (A B C, A B C), as their timed
    requests are (generator.runner.generative.timed_generation_group: every pass follows another version's):
    each version's profile then sees the machine as the others' do, and their op types compare."""
    from generator.decode.loop import DecodeLoop, prompt_ids
    from generator.machine.session import open_session

    context = decode_context(prompt_tokens, new_tokens)
    with tempfile.TemporaryDirectory(prefix="perfsite-layers-") as folder:
        sessions, optimized = [], []
        for i, (path, _) in enumerate(models):
            where = Path(folder) / str(i)  # a folder each: onnxruntime names a profile by its start time
            where.mkdir()
            optimized.append(where / "optimized.onnx")  # its node names are the profile's
            sessions.append(open_session(path, {"threads": threads}, profile_dir=where,
                                         optimized_path=optimized[-1])[0])
        prompts = [DecodeLoop(s, layout, prompt_ids(layout, batch, prompt_tokens), 1)
                   for s, (_, layout) in zip(sessions, models, strict=True)]
        for _ in range(passes + 1):  # the first is warm-up
            for loop in prompts:
                loop.prefill_logits()
        if new_tokens > 1:
            cached = [DecodeLoop(s, layout, prompt_ids(layout, batch, context - 1), 1)
                      for s, (_, layout) in zip(sessions, models, strict=True)]
            pasts = {id(loop): loop.prefill_past() for loop in cached}
            token = np.zeros((batch, 1), np.int64)
            for _ in range(passes + 1):
                for loop in cached:
                    loop.step(token, context, pasts[id(loop)])
        recordings = [parse_profile(s.end_profiling()) for s in sessions]
        found = []
        for recording, (path, _), saved in zip(recordings, models, optimized, strict=True):
            runs = recording.runs
            prefill = _phase("prefill", prompt_tokens, _kept(recording, runs[1:passes + 1]))
            # After the prefill passes: the cache's own prefill, then the steps (the first one warm-up).
            decode = _phase("decode", context, _kept(recording, runs[-passes:])) if new_tokens > 1 else None
            found.append((_mapped(prefill, path, saved), decode and _mapped(decode, path, saved)))
    return found


def _mapped(phase: PhaseLayers, model: Path, optimized: Path) -> PhaseLayers:
    from generator.layers.mapping import mapped_columns

    return replace(phase, mapped=tuple(mapped_columns(model, optimized, phase.every)))


def _kept(recording: ProfileRecording, runs: Sequence) -> ProfileRecording:
    return replace(recording, runs=tuple(runs))


def _phase(phase: str, context: int, recording: ProfileRecording) -> PhaseLayers:
    stats = [s for s in node_statistics(recording) if s.parent is None]  # a sub-graph's time is its parent's
    by_op: dict[str, float] = {}
    counts: dict[str, int] = {}
    for s in stats:
        by_op[s.op_type] = by_op.get(s.op_type, 0.0) + s.dur_p50_us
        counts[s.op_type] = counts.get(s.op_type, 0) + 1
    slowest = sorted(stats, key=lambda s: (-s.dur_p50_us, s.exec_order))[:TOP_NODES]
    return PhaseLayers(phase, context, len(recording.runs), float(np.median(recording.kernel_sum_us)),
                       tuple(sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))), tuple(slowest), counts,
                       tuple(stats))
