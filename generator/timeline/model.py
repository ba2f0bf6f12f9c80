"""One representative inference of a profiled trial, as a timeline of kernel calls.

The profiled pass records K inferences; the timeline keeps ONE of them, the one whose onnxruntime
``model_run`` duration is the median (the lower median for an even K, so that it is a real inference and not
an average of two). Times are relative to that inference's ``model_run`` start. Every kernel call is an event,
sub-graph calls (If/Loop/Scan bodies) included, each naming its enclosing control-flow node in ``parent``: a
control-flow call's duration already holds its body's calls, so only top-level events add up to
``kernel_sum_us``.

Capture (:func:`timeline_rows`, in the profiled worker) writes the inference to the ``timeline`` results table;
:func:`timeline_from_table` reads it back (for the site's profile pages and the one-shot ``perfsite profile``
alike, which measures through the runner).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from generator.machine.profiling import NodeEvent, ProfileRecording, ProfileRun

# pandas only names the type of a stored table here: the profiled pass builds timeline rows without it, and
# importing pandas was half of that child process's time.
if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class TimelineEvent:
    """One kernel call of the inference. Times in µs from the inference's model_run start.

    ``read_bytes`` is onnxruntime's activation size of the call + its weights (the static analysis' bytes where
    the node has one, else onnxruntime's parameter size; None when neither size is known),
    ``written_bytes`` its output size; ``flops`` the static operations (FLOPs + integer operations) attributed
    to this executed node, when known. Names and op types are untrusted text.
    """

    exec_order: int
    node_name: str
    op_type: str
    provider: str | None
    parent: str | None
    thread_id: int | None
    start_us: float
    dur_us: float
    pool_share: float | None
    input_shapes: str
    output_shapes: str
    read_bytes: int | None
    written_bytes: int | None
    flops: float | None

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us

    @property
    def moved_bytes(self) -> int | None:
        """Bytes read + written (None when onnxruntime reported no size at all)."""
        if self.read_bytes is None and self.written_bytes is None:
            return None
        return (self.read_bytes or 0) + (self.written_bytes or 0)


@dataclass(frozen=True)
class Timeline:
    """The kernel calls of one inference in start order, with that inference's onnxruntime figures."""

    events: tuple[TimelineEvent, ...]
    model_run_us: float
    kernel_sum_us: float  # sum of the top-level events' durations

    @property
    def top_level(self) -> tuple[TimelineEvent, ...]:
        return tuple(e for e in self.events if e.parent is None)

    @property
    def span_us(self) -> float:
        """The time the timeline covers: model_run, or the last event's end if a clock skew puts it later."""
        return max([self.model_run_us, *(e.end_us for e in self.events)])

    @cached_property
    def _control_parents(self) -> dict[str, str | None]:
        return {e.node_name: e.parent for e in self.events if e.op_type in ("If", "Loop", "Scan")}

    def depth(self, event: TimelineEvent) -> int:
        """Nesting depth of an event: 0 at top level, 1 inside an If/Loop/Scan, 2 inside a nested one."""
        parents = self._control_parents
        depth, parent, seen = 0, event.parent, set()
        while parent is not None and parent not in seen:
            seen.add(parent)
            depth, parent = depth + 1, parents.get(parent)
        return depth


def median_run(recording: ProfileRecording) -> tuple[int, ProfileRun]:
    """The kept run with the median model_run duration (lower median; the earliest run on a tie), with its
    position among the kept runs."""
    order = sorted(range(len(recording.runs)), key=lambda i: (recording.runs[i].dur_us, i))
    pos = order[(len(order) - 1) // 2]
    return pos, recording.runs[pos]


def _read_bytes(activation: int | None, parameter: int | None) -> int | None:
    return None if activation is None and parameter is None else (activation or 0) + (parameter or 0)


def _shapes_json(type_shapes: tuple[tuple[str, tuple[Any, ...]], ...]) -> str:
    return json.dumps([list(shape) for _, shape in type_shapes], separators=(",", ":"))


def timeline_rows(recording: ProfileRecording) -> list[dict[str, Any]]:
    """Rows of the ``timeline`` results table (without ``trial_key``) for the median inference."""
    index, run = median_run(recording)
    kernel_sum_us = run.kernel_sum_us  # once: a sum over every node, which each row repeats
    return [_row(i, n, run, index, kernel_sum_us) for i, n in enumerate(run.nodes)]


def _row(order: int, n: NodeEvent, run: ProfileRun, index: int, kernel_sum_us: float) -> dict[str, Any]:
    return {
        "exec_order": order, "node_name": n.name, "op_type": n.op_type, "provider": n.provider,
        "parent": n.parent, "thread_id": n.tid, "start_us": n.ts_us - run.start_us, "dur_us": n.dur_us,
        "pool_share": n.pool_share, "input_shapes": _shapes_json(n.input_type_shape),
        "output_shapes": _shapes_json(n.output_type_shape), "activation_bytes": n.activation_bytes,
        "parameter_bytes": n.parameter_bytes, "output_bytes": n.output_bytes, "run_index": index,
        "model_run_us": run.dur_us, "kernel_sum_us": kernel_sum_us,
    }


def timeline_from_table(rows: pd.DataFrame, flops_by_node: Mapping[str, float] | None = None,
                        weights_by_node: Mapping[str, float] | None = None) -> Timeline:
    """The timeline of one trial from its rows of the ``timeline`` table (any order; empty gives an empty
    timeline). ``flops_by_node`` maps an executed node name to its operations per inference; a node called
    several times in the inference (a Loop body) has them split evenly between its calls. ``weights_by_node``
    maps it to the bytes of its weights (static analysis), which each call reads: onnxruntime reports no
    parameter size for MatMul's weight, nor for any prepacked weight, so that a MatMul streaming 256 KiB of
    weights for a 1 KiB input looked compute-bound; its reported parameter size stands where none is known, and
    a call onnxruntime gave no activation size stays without a size (its weights alone are not its traffic)."""
    # Here, not at the top: the profiled worker imports this module to write rows, without pandas.
    from generator.results.records import records

    if rows.empty:
        return Timeline((), 0.0, 0.0)
    rows = rows.sort_values("exec_order", kind="stable")
    calls = Counter(rows["node_name"].astype(str))
    events = tuple(_event(r, flops_by_node or {}, calls, weights_by_node or {}) for r in records(rows))
    model_run = _float(rows["model_run_us"].iloc[0])
    kernel_sum = float(sum(e.dur_us for e in events if e.parent is None))
    return Timeline(events, model_run if model_run is not None else kernel_sum, kernel_sum)


def _event(r: Mapping[str, Any], flops_by_node: Mapping[str, float], calls: Counter,
           weights_by_node: Mapping[str, float]) -> TimelineEvent:
    name = str(r["node_name"])
    flops = _float(flops_by_node.get(name))
    weights, activation = weights_by_node.get(name), _int(r.get("activation_bytes"))
    # Weights alone are not the call's traffic: where onnxruntime reported no sizes, it stays unknown.
    parameter = _int(r.get("parameter_bytes")) if weights is None or activation is None else int(weights)
    return TimelineEvent(
        exec_order=int(r["exec_order"]), node_name=name, op_type=str(r["op_type"]),
        provider=_str(r.get("provider")), parent=_str(r.get("parent")), thread_id=_int(r.get("thread_id")),
        start_us=float(r["start_us"]), dur_us=float(r["dur_us"]), pool_share=_float(r.get("pool_share")),
        input_shapes=_str(r.get("input_shapes")) or "[]", output_shapes=_str(r.get("output_shapes")) or "[]",
        read_bytes=_read_bytes(activation, parameter),
        written_bytes=_int(r.get("output_bytes")),
        flops=flops / calls[name] if flops is not None else None,
    )


def _missing(v: Any) -> bool:
    # pandas.NA by its type's name: the value only comes from a DataFrame, and pandas is not imported here.
    return v is None or type(v).__name__ == "NAType" or (isinstance(v, float) and math.isnan(v))


def _float(v: Any) -> float | None:
    return None if _missing(v) else float(v)


def _int(v: Any) -> int | None:
    return None if _missing(v) else int(v)


def _str(v: Any) -> str | None:
    return None if _missing(v) else str(v)
