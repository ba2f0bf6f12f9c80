"""The content-hash cache of derived model files, and the hashing of model files with their external data.

A derived file lives at ``<cache_dir>/<key>.onnx`` where the key hashes the source model's content, the
transform, its options (and calibration data) and the transform's code version: a changed input gives a new
file, an unchanged one is built once and reused. Files are written under a temporary name and renamed into
place, so a run killed mid-build never leaves a half file that a later run would trust. A file damaged after it
was stored (a CI cache restored in part, a full disk, a hand edit) is found by the sha256 its sidecar records and
built again: it ended `perfsite run` in a protobuf DecodeError traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from generator.paths import atomic_write_bytes

CHUNK_BYTES = 1 << 20


def model_digest(model_path: Path, external_files: Sequence[Path] = ()) -> tuple[str, int]:
    """(sha256, total bytes) of a model file followed by its external-data files (in the order given)."""
    digest = hashlib.sha256()
    total = 0
    for path in (model_path, *external_files):
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                digest.update(chunk)
                total += len(chunk)
    return digest.hexdigest(), total


def file_sha256(path: Path) -> str:
    return model_digest(path)[0]


def cache_key(source_sha256: str, transform: str, token: str, code_version: str) -> str:
    payload = "\n".join([source_sha256, transform, token, code_version])
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def cached_model_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"{key}.onnx"


def read_notes(model_path: Path) -> tuple[str, ...]:
    """Notes stored beside a cached model by :func:`store`; empty when the sidecar is missing."""
    try:
        data = json.loads(model_path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    notes = data.get("notes") if isinstance(data, dict) else None
    return tuple(str(n) for n in notes) if isinstance(notes, list) else ()


def intact(model_path: Path, sha256: str) -> bool:
    """Whether a cached model still holds what was stored: its sha256 against the one its sidecar records. A
    sidecar of an earlier perfsite records none; such an entry is trusted if it parses as a model."""
    try:
        data = json.loads(model_path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    recorded = data.get("model_sha256") if isinstance(data, dict) else None
    if isinstance(recorded, str):
        return recorded == sha256
    try:
        import onnx

        onnx.load_model(str(model_path), load_external_data=False)
    except Exception:  # damaged bytes make protobuf raise DecodeError, or onnx a ValueError
        return False
    return True


def store(built: Path, dst: Path, notes: Sequence[str], about: dict) -> None:
    """Move ``built`` to ``dst`` (same file system) atomically, sidecar first: the model marks completion."""
    sidecar = dst.with_suffix(".json")
    atomic_write_bytes(sidecar, json.dumps({**about, "notes": list(notes)}, indent=1, sort_keys=True).encode())
    os.replace(built, dst)
