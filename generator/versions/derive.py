"""Derived versions: a registered transform applied to a parent version, through the content-hash cache."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from generator.errors import ModelError, PerfsiteError
from generator.versions.cache import cache_key, cached_model_path, intact, model_digest, read_notes, store
from generator.versions.checks import check_model_file, check_runtime_loads
from generator.versions.registry import ModelVersion, Transform, TransformContext

Progress = Callable[[str], None]


def derived_version(
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
    sha256, size = model_digest(dst) if dst.is_file() else ("", 0)
    if not sha256 or not intact(dst, sha256):
        if progress is not None:
            damaged = " again: its cached file was damaged" if sha256 else ""
            progress(f"building {name} ({transform.describe(options)}){damaged}")
        _build(base, dst, wanted, context, label)
        sha256, size = model_digest(dst)
    return ModelVersion(
        name, dst, sha256, size, f"{label} → {transform.label(options)}", chain, read_notes(dst)
    )


def _build(
    base: ModelVersion, dst: Path, wanted: tuple[str, Transform, Any], context: TransformContext, label: str
) -> None:
    """Run the transform in a scratch folder beside the cache and move the checked result into place."""
    try:
        _build_in_scratch(base, dst, wanted, context, label)
    except Exception as e:
        if not _disk_full(e):
            raise
        raise ModelError(
            f"{context.loaded.path}: {context.field}: building version {context.version!r} needs room in the model "
            f"cache {dst.parent}, and its disk is full ({e.strerror}). Nothing was measured yet. Free space there, or "
            "set PERFSITE_CACHE_DIR to a folder on a disk with room (the built versions are cached there: about "
            "the size of the model's weights each, and as much again while one is built).") from e


def _build_in_scratch(
    base: ModelVersion, dst: Path, wanted: tuple[str, Transform, Any], context: TransformContext, label: str
) -> None:
    field_name, transform, options = wanted
    dst.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_builds(dst.parent)
    with tempfile.TemporaryDirectory(dir=dst.parent, prefix=f"{BUILD_PREFIX}{_host()}-{os.getpid()}-") as work:
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
                with contextlib.chdir(context.work_dir), _temporary_files_in(context.work_dir):
                    transform.apply(base.path, built, options, context)
            except PerfsiteError:
                raise
            except Exception as e:  # any failure of the underlying tool is a problem with this model or options
                if _disk_full(e):
                    raise  # the disk's, not the options': said by _build
                raise _build_failed(e, [str(w.message) for w in warned], base, wanted, context, label) from e
        what = f"{context.loaded.path}: {context.field}: the {field_name} transform"
        if not built.is_file():
            raise ModelError(f"{what} wrote no model for version {context.version!r}.")
        _, checker_notes = check_model_file(built, what)
        check_runtime_loads(built, f"{what} made an invalid model for version {context.version!r}")
        about = {"version": context.version, "source_sha256": base.sha256, "transform": field_name,
                 "model_sha256": model_digest(built)[0]}
        store(built, dst, [*context.notes, *checker_notes], about)


@contextlib.contextmanager
def _temporary_files_in(folder: Path) -> Iterator[None]:
    """Python's temporary files in `folder` meanwhile: onnxruntime's static quantization writes an augmented copy
    of the model into `/tmp/ort.quant.*`, which a kill left behind for ever; in the scratch folder, the next
    build removes it (remove_stale_builds)."""
    before = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = before


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


FULL_DISK = (errno.ENOSPC, errno.EDQUOT)  # no room left on the cache's disk, or in the user's quota there


def _disk_full(error: BaseException) -> bool:
    """No room on the cache's disk: an OSError saying so, or a tool's own exception quoting the system's words
    (onnx and onnxruntime wrap some write failures in exceptions of their own)."""
    if isinstance(error, OSError) and error.errno in FULL_DISK:
        return True
    return any(words in str(error) for words in ("No space left on device", "Disk quota exceeded"))

# A build's scratch folder beside the cache: `.build-<host>-<pid>-<random>`. A build killed (SIGTERM, kill -9, a
# cancelled CI job) leaves it behind with a preprocessed model as large as the weights, and a CI cache kept in
# PERFSITE_CACHE_DIR grew with every cancelled job; the next build removes it.
BUILD_PREFIX = ".build-"
# A scratch folder of another machine (a cache on a shared disk) or of an older perfsite (no host and pid in
# its name) is removed once it is this old: no build of the small models perfsite quantizes takes a day.
STALE_AFTER_S = 24 * 3600


def remove_stale_builds(folder: Path) -> list[Path]:
    """Remove the scratch folders in `folder` left by builds that no longer run; returns them."""
    removed = []
    for path in folder.glob(f"{BUILD_PREFIX}*"):
        if path.is_dir() and not path.is_symlink() and _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _abandoned(path: Path) -> bool:
    host, _, rest = path.name[len(BUILD_PREFIX):].rpartition("-")[0].rpartition("-")
    if host == _host() and rest.isdigit():
        return not _alive(int(rest))
    try:
        return time.time() - path.stat().st_mtime > STALE_AFTER_S
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _host() -> str:
    """This machine's name as it may appear in a folder name (no `-`, which separates the name's parts)."""
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname()) or "host"
