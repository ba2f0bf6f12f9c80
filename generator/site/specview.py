"""What the pages need from an experiment's validated spec, read in one place.

Pages never walk the spec record themselves: if the spec's layout changes, only this module changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.plan import spec_axes


@dataclass(frozen=True)
class SpecView:
    """The parts of a spec a report shows."""

    description: str
    versions: tuple[str, ...]  # spec order
    sources: dict[str, str]  # version -> human text: `models/cnn.onnx`, `fp32 → quantize(static_qdq)`
    percentile: str | None
    latency_threshold_ms: float | None
    profile_entries: tuple[dict[str, Any], ...]
    first_values: dict[str, Any]  # first swept value of every axis (defaults of profiled configurations)


def version_source(model: Any) -> str:
    """A version's origin as text: its file (and package), or the version it transforms and how."""
    if getattr(model, "from_", None) is None:
        package = getattr(model, "package", None)
        return f"{model.path} (package {package})" if package else str(model.path)
    transform = model.transform() if hasattr(model, "transform") else None
    if transform is None:
        return str(model.from_)
    name, options = transform
    mode = getattr(options, "mode", None)
    return f"{model.from_} → {name}({mode})" if mode else f"{model.from_} → {name}"


def spec_view(spec: Any) -> SpecView:
    """Read a validated spec (generator.spec.Spec) into a SpecView."""
    models = dict(spec.models)
    axes = spec_axes(spec)
    threshold = getattr(spec, "latency_threshold_ms", None)
    return SpecView(
        description=str(getattr(spec, "description", None) or ""),
        versions=tuple(models),
        sources={name: version_source(model) for name, model in models.items()},
        percentile=getattr(getattr(spec, "measure", None), "percentile", None),
        latency_threshold_ms=float(threshold) if threshold is not None else None,
        profile_entries=tuple(dict(e) for e in (getattr(spec, "profile", None) or ())),
        first_values={axis: values[0] for axis, values in axes.items() if values},
    )
