"""Model versions: the files a spec names, and the versions derived from them by registered transforms.

``prepare_versions`` resolves each root file (``path``, optionally inside an installed ``package``), checks
it, then builds derived versions (``from:`` plus a transform field) in dependency order through the
content-hash cache, so that a re-run with unchanged inputs reuses every derived file.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import onnx
import onnxruntime

from generator.errors import ModelError, PerfsiteError, SpecError
from generator.machine.session import onnxruntime_reason
from generator.plan import STANDARD_AXES, sweep_axes
from generator.versions import fp16 as _fp16  # noqa: F401  (registers the transform)
from generator.versions import quantize as _quantize  # noqa: F401  (registers the transform)
from generator.versions.cache import cache_key, cached_model_path, model_digest, read_notes, store
from generator.versions.registry import (
    TRANSFORMS,
    ModelVersion,
    Transform,
    TransformContext,
    register,
    transform_of,
)

Progress = Callable[[str], None]
CHECKER_NOTE_CHARS = 300
ONNX_FILE_HINT = (
    "Allowed: a complete ONNX model file (a serialized onnx.ModelProto, as torch.onnx.export or "
    "onnx.save write it); a truncated download or a file of another format gives this error."
)


def prepare_versions(
    loaded: Any, cache_dir: Path, progress: Progress | None = None
) -> dict[str, ModelVersion]:
    """Every version of the spec, in spec order, each with a checked model file on disk."""
    cache_dir = Path(cache_dir).absolute()  # transforms may run in another working folder
    binding = calibration_binding(loaded.spec)
    versions: dict[str, ModelVersion] = {}
    for name in build_order(loaded):
        versions[name] = _prepare_one(loaded, name, versions, cache_dir, binding, progress)
    return {name: versions[name] for name in loaded.spec.models}


def calibration_binding(spec: Any) -> dict[str, int]:
    """Calibration batches hold one item; other placeholders take the first value of their sweep axis."""
    axes = sweep_axes(spec.sweep)
    binding = {name: values[0] for name, values in axes.items() if name not in STANDARD_AXES and values}
    binding["batch"] = 1
    return binding


def build_order(loaded: Any) -> list[str]:
    """Version names with every ``from:`` before the versions built from it; spec order otherwise."""
    models = loaded.spec.models
    order: list[str] = []

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in stack:
            cycle = " → ".join((*stack[stack.index(name) :], name))
            raise SpecError(
                f"{loaded.path}: models.{name}.from: the versions build from each other ({cycle})."
            )
        parent = getattr(models[name], "from_", None)
        if parent is not None:
            if parent not in models:
                raise SpecError(
                    f"{loaded.path}: models.{name}.from: there is no version {parent!r}; "
                    f"versions are: {', '.join(models)}."
                )
            visit(parent, (*stack, name))
        order.append(name)

    for name in models:
        visit(name, ())
    return order


def _prepare_one(
    loaded: Any,
    name: str,
    versions: dict[str, ModelVersion],
    cache_dir: Path,
    binding: dict[str, int],
    progress: Progress | None,
) -> ModelVersion:
    model_spec = loaded.spec.models[name]
    parent_name = getattr(model_spec, "from_", None)
    if parent_name is not None:
        base = versions[parent_name]
        label, chain = parent_name, (*base.chain, name)
    else:
        base = _root_version(loaded, name, model_spec, cache_dir)
        label, chain = base.source, (name,)
    wanted = transform_of(model_spec)
    if wanted is None:
        source = base.source if parent_name is None else f"{parent_name} (same file)"
        return ModelVersion(name, base.path, base.sha256, base.size_bytes, source, chain, base.notes)
    return _derived(loaded, name, base, label, chain, wanted, cache_dir, binding, progress)


def _root_version(loaded: Any, name: str, model_spec: Any, cache_dir: Path) -> ModelVersion:
    path = _root_file(loaded, name, model_spec)
    where = f"{loaded.path}: models.{name}.path"
    external, notes = check_model_file(path, where)
    sha256, size = model_digest(path, external)
    _check_root_loads(path, sha256, cache_dir, where)
    package = getattr(model_spec, "package", None)
    if package:
        source = f"{package}:{model_spec.path}"
    elif path.is_relative_to(Path(loaded.root).resolve()):
        source = path.relative_to(Path(loaded.root).resolve()).as_posix()
    else:
        source = str(path)
    return ModelVersion(name, path, sha256, size, source, (name,), tuple(notes))


def _root_file(loaded: Any, name: str, model_spec: Any) -> Path:
    field = f"models.{name}.path"
    if not getattr(model_spec, "path", None):
        raise SpecError(f"{loaded.path}: models.{name}: a version needs `path` (a model file) or `from`.")
    package = getattr(model_spec, "package", None)
    if package:
        base = _package_dir(loaded, name, package)
        path = (base / model_spec.path).resolve()
        if not path.is_relative_to(base):
            raise SpecError(f"{loaded.path}: {field}: {model_spec.path!r} leaves the package folder {base}.")
    else:
        path = Path(loaded.resolve(model_spec.path, field)).resolve()
    if not os.path.isfile(path):
        where = (
            f"inside the package {package!r} ({path.parent})" if package else "(relative to the spec file)"
        )
        raise ModelError(
            f"{loaded.path}: {field}: the model file {path} does not exist {where}. Allowed: an ONNX file "
            "inside the project, relative to the spec's folder (or `package:` plus a path inside an installed "
            "Python package); `perfsite example-models DIR` writes the example models."
        )
    return path


def _package_dir(loaded: Any, name: str, package: str) -> Path:
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise ModelError(
            f"{loaded.path}: models.{name}.package: the Python package {package!r} is not installed. "
            f"Install it with `pip install {package.replace('_', '-')}` (the distribution name may differ "
            "from the import name), then run again."
        )
    if found.submodule_search_locations:
        return Path(next(iter(found.submodule_search_locations))).resolve()
    return Path(found.origin or ".").resolve().parent


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


def _check_root_loads(path: Path, sha256: str, cache_dir: Path, where: str) -> None:
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


def _derived(
    loaded: Any,
    name: str,
    base: ModelVersion,
    label: str,
    chain: tuple[str, ...],
    wanted: tuple[str, Transform, Any],
    cache_dir: Path,
    binding: dict[str, int],
    progress: Progress | None,
) -> ModelVersion:
    field_name, transform, options = wanted
    # work_dir becomes a fresh scratch folder if the version must be built (see _build).
    context = TransformContext(loaded, name, f"models.{name}.{field_name}", binding, cache_dir)
    key = cache_key(base.sha256, field_name, transform.cache_token(options, context), transform.code_version)
    dst = cached_model_path(cache_dir, key)
    if not dst.is_file():
        if progress is not None:
            progress(f"building {name} ({transform.describe(options)})")
        _build(base, dst, wanted, context, label)
    sha256, size = model_digest(dst)
    return ModelVersion(
        name, dst, sha256, size, f"{label} → {transform.label(options)}", chain, read_notes(dst)
    )


def _build(
    base: ModelVersion, dst: Path, wanted: tuple[str, Transform, Any], context: TransformContext, label: str
) -> None:
    """Run the transform in a scratch folder beside the cache and move the checked result into place."""
    field_name, transform, options = wanted
    dst.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dst.parent, prefix=".build-") as work:
        context.work_dir = Path(work)
        built = context.work_dir / "model.onnx"
        # The tools' numpy warnings would print through the progress bar; they are quoted if the build fails
        # (onnxruntime's calibrator fails with "scale issue" and only its warning says the activations were NaN).
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                # Tools may drop files into the working folder: onnxruntime's symbolic shape inference saves
                # `sym_shape_infer_temp.onnx` and a weights-sized `<uuid>.data` there when it fails
                # (onnxruntime/tools/symbolic_shape_infer.py). Keep them in the scratch folder, out of the user's.
                with contextlib.chdir(context.work_dir):
                    transform.apply(base.path, built, options, context)
            except PerfsiteError:
                raise
            except Exception as e:  # any failure of the underlying tool is a problem with this model or options
                raise _build_failed(e, [str(w.message) for w in warned], base, wanted, context, label) from e
        what = f"{context.loaded.path}: {context.field}: the {field_name} transform"
        if not built.is_file():
            raise ModelError(f"{what} wrote no model for version {context.version!r}.")
        _, checker_notes = check_model_file(built, what)
        check_runtime_loads(built, f"{what} made an invalid model for version {context.version!r}")
        about = {"version": context.version, "source_sha256": base.sha256, "transform": field_name}
        store(built, dst, [*context.notes, *checker_notes], about)


def _build_failed(
    error: Exception, warned: list[str], base: ModelVersion, wanted: tuple[str, Transform, Any],
    context: TransformContext, label: str,
) -> ModelError:
    _, transform, options = wanted
    reason = f"{type(error).__name__}: {str(error).strip() or 'no message'}"
    said = list(dict.fromkeys(warned))[:3]
    if said:
        reason += f" (after these warnings: {'; '.join(said)})"
    return ModelError(
        f"{context.loaded.path}: {context.field}: building version {context.version!r} "
        f"({transform.describe(options)}) from {label} ({base.path}) failed: {reason}. Check the "
        f"options under {context.field}, or exclude the failing nodes or op types."
    )


__all__ = [
    "ModelVersion",
    "TRANSFORMS",
    "Transform",
    "TransformContext",
    "build_order",
    "calibration_binding",
    "check_model_file",
    "prepare_versions",
    "register",
]
