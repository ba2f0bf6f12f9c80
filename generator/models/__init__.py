"""Example models built from code (no downloads): a small ResNet-style CNN and a small transformer encoder.

Files are deterministic: the same code writes byte-identical files, and an identical file is left untouched so
that its modification time (and any cache keyed on it) survives a re-run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx

from generator.models.builder import model_bytes, write_if_changed
from generator.models.cnn import build_cnn
from generator.models.transformer import build_transformer

EXAMPLE_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "cnn.onnx": build_cnn,
    "transformer.onnx": build_transformer,
}


def build_example_models(out_dir: Path) -> list[Path]:
    """Write every example model into ``out_dir`` (created if needed); returns their paths in fixed order."""
    out_dir = Path(out_dir)
    paths = []
    for file_name, build in EXAMPLE_MODELS.items():
        path = out_dir / file_name
        write_if_changed(path, model_bytes(build()))
        paths.append(path)
    return paths


__all__ = ["build_example_models", "build_cnn", "build_transformer", "EXAMPLE_MODELS"]
