"""onnxruntime profile JSON: parsing into runs and node events, and per-node statistics.

The profile is a JSON array of Chrome trace events ``{cat, pid, tid, dur, ts, ph, name, args}`` with ``ts``
and ``dur`` in µs. Each inference is a ``Session`` event named ``model_run``; each kernel call a ``Node``
event named ``<node>_kernel_time`` whose args carry ``op_name``, ``provider``, shapes, sizes (as *strings*)
and, in recent versions, ``thread_scheduling_stats``. Older versions wrote ``graph_index`` and
``exec_plan_index``, and ``_fence_before``/``_fence_after`` events: only ``_kernel_time`` events are kept and
every field is optional.

Node events are assigned to the ``model_run`` whose interval contains their start. Sub-graph kernels (the
bodies of If/Loop/Scan) are logged as ordinary node events nested in time inside their control-flow node, on
the same thread; the control-flow node's duration includes them, so only top-level kernels add up to
``kernel_sum_us``.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from generator.errors import RunError
from generator.layers.precision import runtime_precision

KERNEL_SUFFIX = "_kernel_time"
CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan"})


@dataclass(frozen=True)
class NodeEvent:
    """One kernel call as the profile recorded it."""

    name: str
    op_type: str
    provider: str | None
    node_index: int | None
    ts_us: float
    dur_us: float
    tid: int | None
    input_type_shape: tuple[tuple[str, tuple[Any, ...]], ...]
    output_type_shape: tuple[tuple[str, tuple[Any, ...]], ...]
    activation_bytes: int | None
    parameter_bytes: int | None
    output_bytes: int | None
    pool_share: float | None
    arena_held_bytes: int | None
    parent: str | None = None  # enclosing If/Loop/Scan node, None at top level

    @property
    def end_us(self) -> float:
        return self.ts_us + self.dur_us


@dataclass(frozen=True)
class ProfileRun:
    """One ``model_run`` (one inference) and the kernel calls inside it, in start order."""

    index: int  # position among all model_run events of the file, warmup included
    start_us: float
    dur_us: float
    nodes: tuple[NodeEvent, ...]

    @property
    def kernel_sum_us(self) -> float:
        """Sum of top-level kernel times: sub-graph kernels are already inside their parent's time."""
        return float(sum(n.dur_us for n in self.nodes if n.parent is None))


@dataclass(frozen=True)
class ProfileRecording:
    """A parsed profile: the kept runs (after dropping ``skipped_runs`` warmup runs)."""

    path: Path
    runs: tuple[ProfileRun, ...]
    skipped_runs: int

    @property
    def model_run_us(self) -> tuple[float, ...]:
        return tuple(r.dur_us for r in self.runs)

    @property
    def kernel_sum_us(self) -> tuple[float, ...]:
        return tuple(r.kernel_sum_us for r in self.runs)

    @property
    def arena_held_bytes(self) -> int | None:
        """Largest CPU arena size onnxruntime reported during the kept runs (newer versions only)."""
        held = [n.arena_held_bytes for r in self.runs for n in r.nodes if n.arena_held_bytes is not None]
        return max(held) if held else None


@dataclass(frozen=True)
class NodeStat:
    """Statistics of one executed node over the kept runs.

    Field names are columns of the ``nodes`` table, except ``node_index`` (onnxruntime's in-memory node index,
    which the mapping to the original graph uses and the table does not keep).
    """

    exec_order: int
    node_name: str
    op_type: str
    provider: str | None
    parent: str | None
    calls: int
    dur_mean_us: float
    dur_p50_us: float
    dur_min_us: float
    dur_max_us: float
    dur_std_us: float
    input_shapes: str
    output_shapes: str
    input_types: str
    output_types: str
    runtime_precision: str
    activation_bytes: int | None
    parameter_bytes: int | None
    output_bytes: int | None
    pool_share: float | None
    thread_id: int | None
    start_offset_us: float
    node_index: int | None

    def as_dict(self) -> dict[str, Any]:
        # Every field is a scalar or a JSON string: a shallow copy is what asdict's deep one gave, in a fraction
        # of its time (one per executed node: thousands in a large model's profiled pass).
        return {name: getattr(self, name) for name in _NODE_STAT_FIELDS}


_NODE_STAT_FIELDS = tuple(f.name for f in fields(NodeStat))


def parse_profile(path: str | Path, skip_runs: int = 0) -> ProfileRecording:
    """Read an onnxruntime profile; drop the first ``skip_runs`` runs (warmup). RunError if unusable."""
    path = Path(path)
    events = _load_events(path)
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"),
                  key=lambda e: e["ts"])
    if not runs:
        raise RunError(f"The onnxruntime profile {path} holds no `model_run` event: nothing was profiled.")
    if skip_runs >= len(runs):
        raise RunError(f"The onnxruntime profile {path} holds {len(runs)} runs; {skip_runs} were warmup, "
                       "so none is left to analyse.")
    kernels = [e for e in events if e.get("cat") == "Node" and str(e.get("name", "")).endswith(KERNEL_SUFFIX)]
    nodes = [_node_event(e, share) for e, share in zip(kernels, _pool_shares(kernels), strict=True)]
    per_run = _assign_to_runs(nodes, runs)
    parsed = tuple(
        ProfileRun(i, float(r["ts"]), float(r["dur"]), _assign_parents(per_run[i]))
        for i, r in enumerate(runs) if i >= skip_runs
    )
    return ProfileRecording(path, parsed, skip_runs)


def _load_events(path: Path) -> list[dict[str, Any]]:
    """The trace events with numeric ts and dur; anything else in the array is ignored."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RunError(f"Cannot read the onnxruntime profile {path}: {e.strerror or e}.") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        where = f" at line {e.lineno}, column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
        raise RunError(f"The onnxruntime profile {path} is not valid JSON{where} ({_reason(e)}); it is "
                       "truncated or not written by onnxruntime (was the profiled process killed?).") from e
    if isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        data = data["traceEvents"]  # the Chrome trace "object" form, for tools that rewrite the file
    if not isinstance(data, list):
        raise RunError(f"The onnxruntime profile {path} is a JSON {type(data).__name__}, not the array of "
                       "trace events onnxruntime writes.")
    return [e for e in data if isinstance(e, dict) and _is_number(e.get("ts")) and _is_number(e.get("dur"))]


def _reason(e: Exception) -> str:
    return e.msg if isinstance(e, json.JSONDecodeError) else str(e)


def _is_number(v: object) -> bool:
    """A finite JSON number (a damaged file may hold NaN, Infinity or an integer too big for a float)."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _int(v: object) -> int | None:
    """onnxruntime writes sizes and indices as strings: "3072"."""
    try:
        return int(v)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(float("inf"))
        return None


def _type_shapes(raw: object) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``[{"float": [1, 3, 224, 224]}, ...]`` -> ``(("float", (1, 3, 224, 224)), ...)``."""
    out = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and len(item) == 1:
            (etype, shape), = item.items()
            out.append((str(etype), tuple(shape) if isinstance(shape, list) else ()))
    return tuple(out)


def _node_event(e: dict[str, Any], pool_share: float | None) -> NodeEvent:
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    name = str(e["name"])[: -len(KERNEL_SUFFIX)]
    index = args.get("node_index", args.get("exec_plan_index"))
    return NodeEvent(
        name=name, op_type=str(args.get("op_name", "")), provider=args.get("provider"),
        node_index=_int(index),
        ts_us=float(e["ts"]), dur_us=float(e["dur"]), tid=_int(e.get("tid")),
        input_type_shape=_type_shapes(args.get("input_type_shape")),
        output_type_shape=_type_shapes(args.get("output_type_shape")),
        activation_bytes=_int(args.get("activation_size")), parameter_bytes=_int(args.get("parameter_size")),
        output_bytes=_int(args.get("output_size")), pool_share=pool_share,
        arena_held_bytes=_int(args.get("mem_arena_held")),
    )


def _pool_shares(kernels: list[dict[str, Any]]) -> list[float | None]:
    """Share of each kernel's parallel work items that the intra-op pool's other threads ran.

    ``thread_scheduling_stats.sub_threads[tid].num_run`` counts the work items a pool thread ran since the
    profiler started (it never resets), so a kernel's items are the increase since the kernel logged before
    it, in the order the stats were written (kernel end). The calling thread runs one item per parallel loop
    (``main_thread.block_size`` has one entry per loop), or the whole kernel when it has no parallel loop.
    ``None`` where the stats are absent (one thread: onnxruntime writes an empty string; older versions).
    """
    shares: list[float | None] = [None] * len(kernels)
    last: dict[str, int] = {}
    for i in sorted(range(len(kernels)), key=lambda k: kernels[k]["ts"] + kernels[k]["dur"]):
        args = kernels[i].get("args")
        stats = args.get("thread_scheduling_stats") if isinstance(args, dict) else None
        if not isinstance(stats, dict) or not isinstance(stats.get("sub_threads"), dict):
            continue
        pool_items = 0
        for tid, sub in stats["sub_threads"].items():
            count = _int(sub.get("num_run")) if isinstance(sub, dict) else None
            if count is not None:
                pool_items += max(0, count - last.get(tid, 0))
                last[tid] = count
        main = stats.get("main_thread") if isinstance(stats.get("main_thread"), dict) else {}
        blocks = main.get("block_size")
        own_items = max(1, len(blocks) if isinstance(blocks, list) else 0)
        shares[i] = pool_items / (pool_items + own_items)
    return shares


def _assign_to_runs(nodes: list[NodeEvent], runs: list[dict[str, Any]]) -> list[list[NodeEvent]]:
    """Each node event goes to the run whose [start, end] holds its start; others are dropped."""
    starts = [float(r["ts"]) for r in runs]
    per_run: list[list[NodeEvent]] = [[] for _ in runs]
    for n in nodes:
        i = bisect.bisect_right(starts, n.ts_us) - 1
        if i >= 0 and n.ts_us <= starts[i] + float(runs[i]["dur"]):
            per_run[i].append(n)
    return per_run


def _assign_parents(nodes: list[NodeEvent]) -> tuple[NodeEvent, ...]:
    """Sort by start (the longer event first on a tie, so a parent precedes its body) and set ``parent``.

    The parent is the innermost If/Loop/Scan event on the same thread that starts no later than the node,
    ends no earlier, and is not the node itself (the start must also be before the parent's end, so that a
    zero-length kernel right after the control-flow node stays at top level).
    """
    ordered = sorted(nodes, key=lambda n: (n.ts_us, -n.dur_us))
    flows = [n for n in ordered if n.op_type in CONTROL_FLOW_OPS]
    out = []
    for n in ordered:
        enclosing = [f for f in flows if f is not n and f.tid == n.tid and f.ts_us <= n.ts_us
                     and n.end_us <= f.end_us and n.ts_us < f.end_us]
        parent = min(enclosing, key=lambda f: f.dur_us).name if enclosing else None
        out.append(replace(n, parent=parent))
    return tuple(out)


def node_statistics(recording: ProfileRecording) -> list[NodeStat]:
    """Per executed node (keyed by parent and name), statistics over the kept runs, in execution order.

    A node's time in a run is the sum of its calls in that run (a Loop body runs several times); a run where
    the node did not execute (the other branch of an If) counts as 0 µs, so that the means of the top-level
    nodes add up to the mean ``kernel_sum_us``. ``calls`` is the mean number of calls per run, rounded, at
    least 1. Shapes, types and sizes come from the node's first call; ``start_offset_us`` is the median, over
    the runs where it ran, of its first start relative to the run's start. Execution order is the first kept
    run's order; a node first seen in a later run is inserted just before the first node that followed it in
    that run (so an If's other branch lands next to the branch seen first).
    """
    groups: dict[tuple[str | None, str], dict[str, Any]] = {}
    order: list[tuple[str | None, str]] = []
    n_runs = len(recording.runs)
    for r_pos, run in enumerate(recording.runs):
        keys: dict[tuple[str | None, str], None] = {}  # the run's keys in first-call order (a dict: no list scan)
        for ev in run.nodes:
            key = (ev.parent, ev.name)
            g = groups.setdefault(key, {"first": ev, "events": [], "dur": np.zeros(n_runs), "offsets": {}})
            g["events"].append(ev)
            g["dur"][r_pos] += ev.dur_us
            g["offsets"].setdefault(r_pos, ev.ts_us - run.start_us)
            keys.setdefault(key)
        _merge_order(order, list(keys))
    return [_node_stat(i, groups[key], n_runs) for i, key in enumerate(order)]


def node_run_times(recording: ProfileRecording, stats: list[NodeStat]) -> list[list[float]]:
    """Each node's time in every kept run (µs; 0 where it did not run), in the order of `stats`: the per-run
    figures its medians per process are taken from (a mean over one process's runs is what one preempted run
    makes it: 609 µs against a median of 5.5 µs)."""
    index = {(s.parent, s.node_name): i for i, s in enumerate(stats)}
    times = np.zeros((len(stats), len(recording.runs)))
    for r, run in enumerate(recording.runs):
        for ev in run.nodes:
            i = index.get((ev.parent, ev.name))
            if i is not None:
                times[i, r] += ev.dur_us
    return [[float(x) for x in row] for row in times]


def _merge_order(order: list[Any], keys: list[Any]) -> None:
    """Insert the keys of one run missing from ``order`` before the next key of that run already placed."""
    placed = set(order)
    # The next key already placed after each position, found in one pass from the end (a search from each
    # missing key was quadratic in a model's nodes: the first run places them all). Keys placed in this call
    # come before the position looked at, so the placed keys after it are the ones placed before the call.
    following: list[Any] = [None] * len(keys)
    after = None
    for pos in range(len(keys) - 1, -1, -1):
        following[pos] = after
        if keys[pos] in placed:
            after = keys[pos]
    for pos, key in enumerate(keys):
        if key in placed:
            continue
        after = following[pos]
        order.insert(order.index(after) if after is not None else len(order), key)
        placed.add(key)


def _node_stat(exec_order: int, g: dict[str, Any], n_runs: int) -> NodeStat:
    first: NodeEvent = g["first"]
    dur: np.ndarray = g["dur"]
    events: list[NodeEvent] = g["events"]
    shares = [e.pool_share for e in events if e.pool_share is not None]
    in_types = [t for t, _ in first.input_type_shape]
    out_types = [t for t, _ in first.output_type_shape]
    return NodeStat(
        exec_order=exec_order, node_name=first.name, op_type=first.op_type, provider=first.provider,
        parent=first.parent, calls=max(1, round(len(events) / n_runs)),
        dur_mean_us=float(dur.mean()), dur_p50_us=float(np.median(dur)), dur_min_us=float(dur.min()),
        dur_max_us=float(dur.max()), dur_std_us=float(dur.std(ddof=1)) if n_runs > 1 else 0.0,
        input_shapes=_json([list(s) for _, s in first.input_type_shape]),
        output_shapes=_json([list(s) for _, s in first.output_type_shape]),
        input_types=_json(in_types), output_types=_json(out_types),
        runtime_precision=runtime_precision(first.op_type, in_types, out_types),
        activation_bytes=first.activation_bytes, parameter_bytes=first.parameter_bytes,
        output_bytes=first.output_bytes, pool_share=float(np.mean(shares)) if shares else None,
        thread_id=Counter(e.tid for e in events).most_common(1)[0][0],
        start_offset_us=float(np.median(list(g["offsets"].values()))), node_index=first.node_index,
    )


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
