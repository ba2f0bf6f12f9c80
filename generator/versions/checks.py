"""Checks of a model file before anything measures it: readable ONNX, external data present, loadable by
onnxruntime on the CPU (remembered per file and onnxruntime version in the cache)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import onnx
import onnxruntime

from generator.errors import ModelError
from generator.machine.session import onnxruntime_reason

CHECKER_NOTE_CHARS = 300
ONNX_FILE_HINT = (
    "Allowed: a complete ONNX model file (a serialized onnx.ModelProto, as torch.onnx.export or "
    "onnx.save write it); a truncated download or a file of another format gives this error."
)


def check_model_file(path: Path, where: str) -> tuple[list[Path], list[str]]:
    """Refuse a file that is not a loadable ONNX model; returns its external-data files and checker notes.

    ``onnx.checker`` is strict about details onnxruntime accepts (contrib ops, old exporters), so its
    complaints become notes rather than errors; a file protobuf cannot parse, or one with no graph, is
    refused.
    """
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf raises DecodeError and friends, which onnx does not wrap
        raise ModelError(
            f"{where}: {path} is not a readable ONNX model ({type(e).__name__}: {e}). {ONNX_FILE_HINT}"
        ) from e
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.output:
        raise ModelError(f"{where}: {path} is not an ONNX model (no IR version or no graph outputs). {ONNX_FILE_HINT}")
    external = external_data_files(model, path, where)
    try:
        onnx.checker.check_model(str(path))
        notes = []
    except Exception as e:  # ValidationError, or a C++ error text for oddities it cannot check
        notes = [f"onnx.checker: {str(e).strip()[:CHECKER_NOTE_CHARS]}"]
    return external, notes


def external_data_files(model: onnx.ModelProto, path: Path, where: str) -> list[Path]:
    """The external-data files a model uses; each must exist inside the model's own folder."""
    folder = path.parent.resolve()
    files: list[Path] = []
    for tensor in _tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = {e.key: e.value for e in tensor.external_data}.get("location", "")
        try:
            target = (folder / location).resolve()
        except (OSError, ValueError) as e:  # a NUL or a name too long, written in the model file
            raise ModelError(f"{where}: {path} keeps tensor {tensor.name!r} in external data at {location!r}, "
                             f"which cannot be a file name ({e}).") from e
        if not location or not target.is_relative_to(folder):
            raise ModelError(
                f"{where}: {path} keeps tensor {tensor.name!r} in external data at {location!r}, outside the "
                "model's folder; perfsite only reads external data stored beside the model."
            )
        if not os.path.isfile(target):
            raise ModelError(f"{where}: {path} needs the external-data file {target}, which does not exist.")
        if target not in files:
            files.append(target)
    return files


def model_files(path: Path) -> list[Path]:
    """A model file and the external-data files it names: what a command reads when it reads the model, so
    what an output option must not name (`--json model.onnx.data` replaced the weights). A model that cannot be
    read gives itself alone: the stage that loads it says why."""
    try:
        model = onnx.load(str(path), load_external_data=False)
        return [path, *external_data_files(model, path, str(path))]
    except Exception:  # not a readable model, or external data perfsite would refuse: said when it is loaded
        return [path]


def check_runtime_loads(path: Path, what: str) -> None:
    """Refuse a model onnxruntime's CPU provider rejects as invalid (a missing kernel is not our concern here:
    the model may target another provider)."""
    error = cpu_load_error(path)
    if error is not None:
        raise ModelError(f"{what}: {onnxruntime_reason(error)}. Check the options under this field.") from error


def cpu_load_error(path: Path) -> Exception | None:
    """Why onnxruntime's CPU provider cannot load the model (unoptimized), or None. A missing kernel
    (NOT_IMPLEMENTED) is not an error here: the sweep may ask for a provider that has it."""
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's pybind errors share no useful base class
        return None if "NOT_IMPLEMENTED" in str(e) else e
    return None


def check_root_loads(path: Path, sha256: str, cache_dir: Path, where: str) -> None:
    """Refuse, before the sweep, a model file this onnxruntime cannot load (an IR version or opset newer than
    it supports, an unknown operator domain): otherwise every trial of the version would fail alike.
    A marker in the cache remembers models already checked, so a re-run does not load big models again."""
    marker = Path(cache_dir) / f"{sha256}.loads-in-onnxruntime-{onnxruntime.__version__}.json"
    if marker.is_file():
        return
    error = cpu_load_error(path)
    if error is not None:
        raise ModelError(
            f"{where}: onnxruntime {onnxruntime.__version__} cannot load {path}: {onnxruntime_reason(error)}. "
            "Allowed: a model this onnxruntime supports (its IR version, opsets and operator domains); "
            "convert the model (onnx.version_converter, or export it again with a lower opset) or install "
            "a newer onnxruntime."
        ) from error
    with contextlib.suppress(OSError):  # the marker only saves loading the model again next time
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"model_sha256": sha256, "onnxruntime": onnxruntime.__version__}))


def _tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield from (sparse.values, sparse.indices)
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for sub in attr.graphs:
                yield from _tensors(sub)
