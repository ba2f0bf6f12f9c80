"""onnxruntime session options and session creation from one configuration of the sweep.

A configuration is the flat dict of ``generator.plan.Configuration.as_dict()``: the standard axes (batch,
threads, concurrency, optimization_level, provider, spinning, inter_op_threads) plus the other shape
placeholders, which only the inputs use and which are ignored here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
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
# onnxruntime's messages carry a C++ source location and a function signature before the sentence that matters:
# "[ONNXRuntimeError] : 1 : FAIL : Load model from m.onnx failed:/src/.../model.cc:256 onnxruntime::Model::Model(
# onnx::ModelProto&&, ...) Unsupported model IR version: 14, max supported IR version: 13".
# Callers name the model themselves, so "Load model from <path> failed:" goes too.
_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : (?:Load model from .*? failed:)?")
_ORT_LOCATION = re.compile(r"(?:[A-Za-z]:)?[/\\]\S+\.(?:cc|cpp|h):\d+ (?:[^()]*\(.*?\) (?=[A-Z]))?")


def session_options(config: Mapping[str, Any]) -> tuple[ort.SessionOptions, list[str]]:
    """SessionOptions and the provider list for a configuration (the CPU provider last, as the fallback)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(config.get("threads", 1))
    so.graph_optimization_level = _lookup(OPTIMIZATION_LEVELS, config.get("optimization_level", "all"),
                                          "Configuration field `optimization_level`")
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


def _lookup(table: Mapping[str, Any], value: object, where: str) -> Any:
    """`where` names the value as the user gave it: `--provider`, `spec.yaml: sweep.provider`."""
    if value not in table:
        raise RunError(f"{where} is {value!r}; allowed: {', '.join(table)}.")
    return table[value]


def onnxruntime_reason(error: BaseException) -> str:
    """onnxruntime's error text on one line, without its error-code prefix and C++ source locations."""
    text = " ".join(str(error).split())
    text = _ORT_LOCATION.sub("", _ORT_PREFIX.sub("", text)).strip().rstrip(".")
    return text or type(error).__name__


def check_providers(names: Iterable[str], where: str) -> None:
    """Refuse, before any measurement, providers this onnxruntime build lacks (`where`: e.g. the spec's
    `sweep.provider` field); the worker would otherwise fail every trial that asks for them."""
    for name in sorted(set(names)):
        _providers(name, where)


def _providers(name: object, where: str = "sweep.provider") -> list[str]:
    provider = _lookup(PROVIDERS, name, where)
    available = ort.get_available_providers()
    if provider not in available:
        usable = sorted(short for short, full in PROVIDERS.items() if full in available)
        raise RunError(
            f"{where}: the execution provider `{name}` ({provider}) is not available in this onnxruntime build "
            f"({ort.__version__}); allowed here: {', '.join(usable)} (onnxruntime lists {', '.join(available)}). "
            f"Install the onnxruntime package that ships it (e.g. onnxruntime-gpu for cuda), or "
            + (f"choose --provider {' or '.join(usable)}." if where.startswith("--") else
               f"remove `{name}` from sweep.provider or leave it out with --only provider=...")
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
        raise RunError(f"onnxruntime could not create a session for {model_path}: {onnxruntime_reason(e)}") from e
    return session, (time.perf_counter_ns() - t0) / 1e6
