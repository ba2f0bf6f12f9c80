"""onnxruntime session options and session creation from one configuration of the sweep.

A configuration is the flat dict of ``generator.plan.Configuration.as_dict()``: the standard axes (batch,
threads, concurrency, optimization_level, provider, spinning, inter_op_threads) plus the other shape
placeholders, which only the inputs use and which are ignored here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import onnxruntime as ort

from generator.errors import RunError

OPTIMIZATION_LEVELS: dict[str, ort.GraphOptimizationLevel] = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

PROVIDERS: dict[str, str] = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "dml": "DmlExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "rocm": "ROCMExecutionProvider",
}
CPU_PROVIDER = PROVIDERS["cpu"]


def session_options(config: Mapping[str, Any]) -> tuple[ort.SessionOptions, list[str]]:
    """SessionOptions and the provider list for a configuration (the CPU provider last, as the fallback)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(config.get("threads", 1))
    so.graph_optimization_level = _lookup(OPTIMIZATION_LEVELS, config.get("optimization_level", "all"),
                                          "optimization_level")
    spin = "1" if config.get("spinning", True) else "0"
    # Both pools: spinning trades CPU burnt between requests for lower back-to-back latency (a sweep axis).
    so.add_session_config_entry("session.intra_op.allow_spinning", spin)
    so.add_session_config_entry("session.inter_op.allow_spinning", spin)
    inter = int(config.get("inter_op_threads", 1))
    if inter > 1:
        so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        so.inter_op_num_threads = inter
    else:
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return so, _providers(config.get("provider", "cpu"))


def _lookup(table: Mapping[str, Any], value: object, field: str) -> Any:
    if value not in table:
        raise RunError(f"Configuration field `{field}` is {value!r}; allowed: {', '.join(table)}.")
    return table[value]


def _providers(name: object) -> list[str]:
    provider = _lookup(PROVIDERS, name, "provider")
    available = ort.get_available_providers()
    if provider not in available:
        raise RunError(
            f"The execution provider `{name}` ({provider}) is not available in this onnxruntime build "
            f"({ort.__version__}); available: {', '.join(available)}. Install the onnxruntime package that "
            f"ships it (e.g. onnxruntime-gpu for cuda) or remove `{name}` from sweep.provider."
        )
    return [provider] if provider == CPU_PROVIDER else [provider, CPU_PROVIDER]


def open_session(
    model_path: str | Path,
    config: Mapping[str, Any],
    profile_dir: str | Path | None = None,
    optimized_path: str | Path | None = None,
) -> tuple[ort.InferenceSession, float]:
    """Create the session; returns it and ``load_ms``, the wall time of model load + session creation.

    ``profile_dir`` turns onnxruntime's profiler on (files ``profile_*.json`` there); ``optimized_path`` saves
    the optimized graph, whose node names match the profile's.
    """
    so, providers = session_options(config)
    if profile_dir is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(profile_dir) / "profile")
    if optimized_path is not None:
        so.optimized_model_filepath = str(optimized_path)
    t0 = time.perf_counter_ns()
    try:
        session = ort.InferenceSession(str(model_path), sess_options=so, providers=providers)
    except Exception as e:  # onnxruntime raises its own pybind exception types (Fail, InvalidGraph, ...)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RunError(f"onnxruntime could not create a session for {model_path}: {first}") from e
    return session, (time.perf_counter_ns() - t0) / 1e6
