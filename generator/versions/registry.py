"""Model versions and the registry of transforms that derive one version from another.

A transform is keyed by the ``ModelSpec`` field that asks for it (``quantize``, ``fp16``): adding a kind of
version means writing one class and registering it, with no if-chain to extend (STYLE 7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class ModelVersion:
    """A model file that runs, as the spec names it.

    ``sha256`` and ``size_bytes`` cover the ``.onnx`` file and any external-data files it uses. ``source`` is
    human text (``models/cnn.onnx``, ``fp32 → quantize(static_qdq)``); ``chain`` lists the version names from
    the root source to this one. ``notes`` say how it was built when that matters to a reader (for example
    which pre-processing a quantization could use).
    """

    name: str
    path: Path
    sha256: str
    size_bytes: int
    source: str
    chain: tuple[str, ...]
    notes: tuple[str, ...] = ()


@dataclass
class TransformContext:
    """What a transform may need besides its options; ``notes`` collects what it wants to tell the user."""

    loaded: Any
    version: str
    field: str
    calibration_binding: dict[str, int]
    work_dir: Path
    notes: list[str] = field(default_factory=list)


class Transform(Protocol):
    """Builds ``dst`` from ``src``; deterministic given the options, the context and ``code_version``."""

    # Bump when the transform's output changes for the same input (it is part of the cache key).
    code_version: str

    def label(self, options: Any) -> str:
        """Short text for a version's source, e.g. ``quantize(static_qdq)``."""
        ...

    def describe(self, options: Any) -> str:
        """Text for progress messages, e.g. ``quantize static_qdq``."""
        ...

    def cache_token(self, options: Any, context: TransformContext) -> str:
        """Canonical JSON of everything besides the source model that the output depends on."""
        ...

    def apply(self, src: Path, dst: Path, options: Any, context: TransformContext) -> None: ...


TRANSFORMS: dict[str, Transform] = {}


def register(field_name: str, transform: Transform) -> None:
    """Make ``transform`` build the versions whose spec sets ``field_name``."""
    TRANSFORMS[field_name] = transform


def transform_of(model_spec: Any) -> tuple[str, Transform, Any] | None:
    """The (field name, transform, options) a version asks for, or None for a plain model file."""
    for field_name, transform in TRANSFORMS.items():
        options = getattr(model_spec, field_name, None)
        if options is not None:
            return field_name, transform, options
    return None


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def options_data(options: Any) -> Any:
    """Plain data of an options record (pydantic model, dataclass or namespace) for hashing."""
    if hasattr(options, "model_dump"):
        return options.model_dump(mode="json")
    if hasattr(options, "__dict__"):
        return {k: options_data(v) for k, v in vars(options).items() if not k.startswith("_")}
    if isinstance(options, list | tuple):
        return [options_data(v) for v in options]
    return options
