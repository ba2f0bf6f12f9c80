"""Example models built from code (no downloads): a small ResNet-style CNN, a small transformer encoder and a
small decoder with a KV cache (generative experiments).

Files are deterministic: the same code writes byte-identical files, and an identical file is left untouched so
that its modification time (and any cache keyed on it) survives a re-run. A file of the same name that perfsite
did not write (a model of the user's called `cnn.onnx`) is never replaced: it was, silently.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx

from generator.errors import ModelError
from generator.models.builder import model_bytes, write_if_changed
from generator.models.cnn import build_cnn
from generator.models.decoder import build_decoder
from generator.models.transformer import build_transformer

EXAMPLE_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "cnn.onnx": build_cnn,
    "transformer.onnx": build_transformer,
    "decoder.onnx": build_decoder,
}


def build_example_models(out_dir: Path) -> list[Path]:
    """Write every example model into ``out_dir`` (created if needed); returns their paths in fixed order."""
    out_dir = Path(out_dir)
    built = {out_dir / file_name: model_bytes(build()) for file_name, build in EXAMPLE_MODELS.items()}
    for path in built:  # every file checked before any is written
        check_replaceable(path)
    for path, data in built.items():
        write_if_changed(path, data)
    return list(built)


PRODUCER = "perfsite"


def check_replaceable(path: Path) -> None:
    """ModelError unless `path` is absent or an example model an earlier perfsite wrote (its producer_name)."""
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or not path.is_file():
        what = "a symbolic link" if path.is_symlink() else "a folder"
        raise ModelError(f"{path} is {what}, where the example model {path.name} would be written. Allowed: a "
                         "folder where that name is free or holds an example model perfsite wrote (default: "
                         "experiments/models).")
    try:
        producer = onnx.load_model(str(path), load_external_data=False).producer_name
    except Exception:  # anything that does not parse as an ONNX model is not ours
        producer = None
    if producer != PRODUCER:
        theirs = f"a model made by {producer!r}" if producer else "not a model perfsite wrote"
        raise ModelError(f"{path} already exists and is {theirs}; writing the example model there would replace "
                         "it. Nothing was written. Allowed: a folder where cnn.onnx and transformer.onnx are free or "
                         "hold the example models of an earlier `perfsite example-models` (they are brought up to "
                         "date), e.g. `perfsite example-models experiments/models`.")


__all__ = ["build_example_models", "check_replaceable", "build_cnn", "build_transformer", "EXAMPLE_MODELS"]
