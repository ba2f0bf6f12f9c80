"""Root versions: the model files a spec names by `path`, in the project or inside an installed package."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from generator.errors import ModelError, SpecError
from generator.versions.cache import model_digest
from generator.versions.checks import check_model_file, check_root_loads
from generator.versions.registry import ModelVersion


def root_version(loaded: Any, name: str, model_spec: Any, cache_dir: Path) -> ModelVersion:
    path = _root_file(loaded, name, model_spec)
    where = f"{loaded.path}: models.{name}.path"
    external, notes = check_model_file(path, where)
    sha256, size = model_digest(path, external)
    check_root_loads(path, sha256, cache_dir, where)
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
    try:
        if package:
            base = _package_dir(loaded, name, package)
            path = (base / model_spec.path).resolve()
            if not path.is_relative_to(base):
                raise SpecError(f"{loaded.path}: {field}: {model_spec.path!r} leaves the package folder {base}.")
        else:
            path = Path(loaded.resolve(model_spec.path, field)).resolve()
    except RuntimeError as e:  # pathlib's answer to a symbolic-link loop
        raise ModelError(f"{loaded.path}: {field}: {model_spec.path!r} is a loop of symbolic links ({e}), not a "
                         "model file. Allowed: an ONNX file, or a link that ends at one.") from None
    if not os.path.isfile(path):
        where = (
            f"inside the package {package!r} ({path.parent})" if package else "(relative to the spec file)"
        )
        missing = ("is a folder, not a model file," if os.path.isdir(path)
                   else "is a device, a pipe or a socket, not a model file," if os.path.exists(path)
                   else "does not exist")
        raise ModelError(
            f"{loaded.path}: {field}: the model file {path} {missing} {where}. Allowed: an ONNX file "
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
