"""The timeline as a Chrome trace (JSON object form), for ui.perfetto.dev and chrome://tracing.

One process, one lane (``tid``) per thread that ran kernel calls, a complete event (``ph: "X"``) per call and
one for the whole ``model_run``. Sub-graph calls sit inside their If/Loop/Scan call on the same lane, so the
viewers nest them under it. The intra-op pool's threads are not lanes: onnxruntime only reports, per call, the
share of its parallel work they ran (``args.pool_share``). Format reference:
https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
"""

from __future__ import annotations

import json
from typing import Any

from generator.timeline.model import Timeline, TimelineEvent

PID = 1
UNKNOWN_TID = 0


def thread_lanes(tl: Timeline) -> list[int | None]:
    """Threads that ran calls, in the order of their first call (the session's calling thread first)."""
    lanes: list[int | None] = []
    for e in tl.events:
        if e.thread_id not in lanes:
            lanes.append(e.thread_id)
    return lanes


def _tid(thread_id: int | None) -> int:
    return UNKNOWN_TID if thread_id is None else int(thread_id)


def _shapes(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _call(e: TimelineEvent) -> dict[str, Any]:
    args: dict[str, Any] = {
        "op_type": e.op_type, "provider": e.provider, "exec_order": e.exec_order,
        "input_shapes": _shapes(e.input_shapes), "output_shapes": _shapes(e.output_shapes),
        "pool_share": e.pool_share, "read_bytes": e.read_bytes, "written_bytes": e.written_bytes,
        "flops": e.flops,
    }
    if e.parent is not None:
        args["parent"] = e.parent
    return {"name": e.node_name, "cat": e.op_type or "kernel", "ph": "X", "ts": e.start_us, "dur": e.dur_us,
            "pid": PID, "tid": _tid(e.thread_id), "args": args}


def _metadata(tl: Timeline, title: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": PID, "tid": UNKNOWN_TID,
                                  "args": {"name": title}}]
    for rank, thread in enumerate(thread_lanes(tl)):
        label = "thread (unknown)" if thread is None else f"thread {thread}"
        if rank == 0:
            label += " · runs model_run"
        out.append({"name": "thread_name", "ph": "M", "pid": PID, "tid": _tid(thread), "args": {"name": label}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": _tid(thread),
                    "args": {"sort_index": rank}})
    return out


def chrome_trace(tl: Timeline, title: str) -> dict[str, Any]:
    """The Chrome trace of one inference: metadata (process and thread names), a ``model_run`` event on the
    first thread's lane, then every kernel call in execution order. Times in µs from model_run start."""
    lanes = thread_lanes(tl)
    events = _metadata(tl, title)
    if tl.events:
        events.append({"name": "model_run", "cat": "Session", "ph": "X", "ts": 0.0, "dur": tl.model_run_us,
                       "pid": PID, "tid": _tid(lanes[0]),
                       "args": {"kernel_sum_us": tl.kernel_sum_us, "calls": len(tl.events)}})
    events += [_call(e) for e in tl.events]
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"title": title, "model_run_us": tl.model_run_us, "kernel_sum_us": tl.kernel_sum_us,
                          "source": "perfsite: the median profiled inference of onnxruntime's profiler"}}


def chrome_trace_json(tl: Timeline, title: str) -> str:
    """:func:`chrome_trace` as deterministic compact JSON text (the file the site links to)."""
    return json.dumps(chrome_trace(tl, title), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
