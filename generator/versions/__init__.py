"""Model versions: the files a spec names, and the versions derived from them by registered transforms.

``prepare_versions`` resolves each root file (``path``, optionally inside an installed ``package``), checks
it, then builds derived versions (``from:`` plus a transform field) in dependency order through the
content-hash cache, so that a re-run with unchanged inputs reuses every derived file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from generator.errors import SpecError
from generator.plan import STANDARD_AXES, spec_axes
from generator.versions import fp16 as _fp16  # noqa: F401  (registers the transform)
from generator.versions import quantize as _quantize  # noqa: F401  (registers the transform)
from generator.versions.checks import check_model_file
from generator.versions.derive import derived_version
from generator.versions.registry import (
    TRANSFORMS,
    ModelVersion,
    Transform,
    TransformContext,
    register,
    transform_of,
)
from generator.versions.roots import root_version

Progress = Callable[[str], None]


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
    axes = spec_axes(spec)
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
        base = root_version(loaded, name, model_spec, cache_dir)
        label, chain = base.source, (name,)
    wanted = transform_of(model_spec)
    if wanted is None:
        source = base.source if parent_name is None else f"{parent_name} (same file)"
        return ModelVersion(name, base.path, base.sha256, base.size_bytes, source, chain, base.notes)
    return derived_version(loaded, name, base, label, chain, wanted, cache_dir, binding, progress)


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
