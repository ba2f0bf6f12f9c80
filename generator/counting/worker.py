"""The count mode's worker, run under valgrind: ``valgrind --tool=callgrind ... python -m
generator.counting.worker JOB.json``.

Order of work, so that only steady-state inferences are counted and nothing of one version's warm-up leaks
into another's counts:

1. switch onnxruntime's telemetry events off: ``InferenceSession::Run`` checks wall-clock timers and, every
   few seconds per session, does ~6,300 instructions of telemetry bookkeeping (measured on a small MLP: with
   2.5 s between rounds one count in three was +1.1 %; with the events off, none);
2. load every version's session (1 intra-op thread, no spinning) with its inputs bound once (IO binding: the
   counted call is one Python call into onnxruntime, not a conversion of numpy feeds);
3. warm every version up through the very callable that is counted later (onnxruntime's first runs allocate
   and plan memory, and Python specialises the call's bytecode on its first calls);
4. switch instrumentation on, then count ``settle`` rounds that are thrown away (a guard for anything that
   happens once on the first instrumented call) and ``iterations`` rounds that are kept, alternating versions
   (A B A B ...) within each round;
5. each round also counts an empty call (``lambda: None``), the floor that perfsite's marker and the Python
   call add to every count.

Every counted call is a dump labelled ``kind:version:round``; the parent reads the dumps. The worker writes
JOB's ``result_path``: ``{"onnxruntime": version}``, or ``{"error": message}`` for a user error (exit 1).
Progress lines go to stdout.
"""

from __future__ import annotations

import ctypes
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from generator.errors import PerfsiteError, RunError
from generator.machine.session import onnxruntime_reason, open_session

EMPTY = "empty"


def count_label(kind: str, version: int | str, round_: int) -> str:
    return f"{kind}:{version}:{round_}"


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    result_path = Path(job["result_path"])
    try:
        run_job(job)
    except PerfsiteError as e:
        result_path.write_text(json.dumps({"error": str(e)}))
        return 1
    result_path.write_text(json.dumps({"onnxruntime": ort.__version__}))
    return 0


def run_job(job: dict[str, Any]) -> None:
    marker = _load_marker(job["marker"])
    ort.disable_telemetry_events()
    config = {"threads": 1, "inter_op_threads": 1, "spinning": False,
              "optimization_level": job.get("optimization_level", "all")}
    calls = {str(i): _bound_inference(v["model_path"], v["feeds_path"], config)
             for i, v in enumerate(job["versions"])}
    calls[EMPTY] = lambda: None
    _say(f"loaded {len(job['versions'])} versions; warming up ({time.process_time():.0f} s)")
    for _ in range(int(job["warmup"])):
        for call in calls.values():
            call()
    # A collection in the middle of a counted call would be charged to whichever version triggered it.
    gc.collect()
    gc.disable()
    marker.perfsite_start_instrumentation()
    settle, iterations = int(job["settle"]), int(job["iterations"])
    for round_ in range(settle + iterations):
        kind = "settle" if round_ < settle else "count"
        for name, call in calls.items():
            marker.count(call, count_label(kind, name, round_ - settle if kind == "count" else round_))
        if kind == "count":
            _say(f"counted round {round_ - settle + 1}/{iterations} ({time.process_time():.0f} s)")


class _Marker:
    """The compiled marker (generator.counting.marker), loaded with the GIL held (PyDLL): its C function calls
    back into Python."""

    def __init__(self, path: str) -> None:
        self._lib = ctypes.PyDLL(path)
        self._lib.perfsite_counted_inference.restype = ctypes.c_void_p
        self._lib.perfsite_counted_inference.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p]
        self._call = ctypes.cast(ctypes.pythonapi.PyObject_CallObject, ctypes.c_void_p)
        self.perfsite_start_instrumentation = self._lib.perfsite_start_instrumentation
        self.running_on_valgrind = self._lib.perfsite_running_on_valgrind

    def count(self, call: Callable[[], object], label: str) -> None:
        # The call's result (a new reference to None) is dropped as a bare pointer: one reference to None
        # leaked per counted call. An exception inside the call is raised here by ctypes (PyDLL).
        self._lib.perfsite_counted_inference(self._call, call, label.encode())


def _load_marker(path: str) -> _Marker:
    marker = _Marker(path)
    if not marker.running_on_valgrind():
        raise RunError("generator.counting.worker counts instructions only under valgrind (callgrind); run it "
                       "through `perfsite count`.")
    return marker


def _bound_inference(model_path: str, feeds_path: str, config: dict[str, Any]) -> Callable[[], None]:
    session, _load_ms = open_session(model_path, config)
    binding = session.io_binding()
    with np.load(feeds_path) as loaded:
        feeds = {name: np.ascontiguousarray(loaded[name]) for name in loaded.files}
    for name, array in feeds.items():
        binding.bind_cpu_input(name, array)
    for output in session.get_outputs():
        binding.bind_output(output.name)  # onnxruntime allocates the outputs, as in an ordinary run

    def inference(_bound_arrays: dict[str, np.ndarray] = feeds) -> None:
        # The default argument keeps the arrays alive: the binding points at their memory, it holds no copy.
        session.run_with_iobinding(binding)

    try:
        inference()  # fail here, with onnxruntime's message, rather than inside the marker
    except Exception as e:  # onnxruntime's pybind exception types
        raise RunError(f"onnxruntime could not run {model_path}: {onnxruntime_reason(e)}.") from e
    return inference


def _say(text: str) -> None:
    print(text, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
