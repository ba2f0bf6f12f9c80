"""Concrete input shapes for a one-shot profile: the model's declarations bound by ``--dim`` and ``--shape``.

A model declares each input dim as a number, a name (``dim_param``: ``batch``, ``seq_len``, ``H``) or nothing.
``--dim NAME=VALUE`` binds a name wherever it appears; ``--shape INPUT=1,3,224,224`` gives one input's whole
shape (the only way to set an unnamed dim), and binds the names it covers for the other inputs. A symbolic
first axis left unbound is the batch and defaults to 1; any other dim without a value is a user error that
names it and the options that set it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx

from generator.errors import ModelError, RunError, given_twice
from generator.inputs import ModelInput, describe_model_inputs, empty_axis_problem, format_input, make_feeds

DEFAULT_BATCH = 1
_NAME_VALUE = re.compile(r"^\s*([^=]+?)\s*=\s*(.+?)\s*$")


class ShapeError(RunError):
    """Input dims or shapes for `perfsite profile` or `perfsite count` are missing, malformed or contradict the
    model."""


@dataclass(frozen=True)
class ResolvedInput:
    """One model input at the shape it is profiled with."""

    name: str
    dtype: str
    declared: tuple[int | str | None, ...] | None  # as the model declares it (None: unknown rank)
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ResolvedInputs:
    inputs: tuple[ResolvedInput, ...]
    dims: dict[str, int]  # every named dim's value, given or defaulted
    defaulted: tuple[str, ...]  # names that took DEFAULT_BATCH because nothing set them
    batch: int  # items per request: the first input's first axis (1 for a scalar input)


def parse_dims(items: Sequence[str], model_path: Path) -> dict[str, int]:
    """``["seq_len=128", "H=224"]`` -> ``{"seq_len": 128, "H": 224}``; ShapeError on bad syntax or values."""
    dims: dict[str, int] = {}
    for item in items:
        match = _NAME_VALUE.match(item)
        value = _positive(match.group(2)) if match else None
        if match is None or value is None:
            raise ShapeError(
                f"{model_path}: --dim {item!r} is not NAME=VALUE with VALUE a positive integer; write for example "
                "--dim seq_len=128 (NAME is a dim name the model declares, such as batch, seq_len or H)."
            )
        if dims.get(match.group(1), value) != value:
            raise ShapeError(f"{model_path}: {given_twice('--dim', match.group(1), dims[match.group(1)], value)}")
        dims[match.group(1)] = value
    return dims


def parse_shapes(items: Sequence[str], model_path: Path) -> dict[str, tuple[int, ...]]:
    """``["input=1,3,224,224"]`` -> ``{"input": (1, 3, 224, 224)}``; ShapeError on bad syntax or values."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in items:
        # Input names may contain "=": the shape is after the last one.
        name, sep, text = item.rpartition("=")
        sizes = [_positive(s) for s in text.replace("x", ",").split(",")] if sep and name else [None]
        if any(s is None for s in sizes):
            raise ShapeError(
                f"{model_path}: --shape {item!r} is not INPUT=D1,D2,... with positive integer sizes; write for "
                "example --shape input=1,3,224,224 (INPUT is the model's input name)."
            )
        shape = tuple(int(s) for s in sizes if s is not None)
        if shapes.get(name, shape) != shape:
            raise ShapeError(f"{model_path}: {given_twice('--shape', name, _csv(shapes[name]), _csv(shape))}")
        shapes[name] = shape
    return shapes


def _positive(text: str) -> int | None:
    text = text.strip()
    # isascii: "²".isdigit() is true, and int("²") raises
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None


def check_model_kind(model_path: Path) -> None:
    """ModelError unless `model_path` is a regular file: before anything reads it, since reading a pipe waits for
    a writer and /dev/zero never ends."""
    if not os.path.isfile(model_path):
        what = ("a folder, not a model file" if os.path.isdir(model_path) else
                "not a regular file (a device, a pipe or a socket), not a model file" if os.path.exists(model_path)
                else "a broken symbolic link or a loop of them, not a model file" if os.path.islink(model_path)
                else "no such model file")
        raise ModelError(f"{model_path}: {what}. Give the path of an ONNX model (.onnx).")


def model_inputs(model_path: Path) -> list[ModelInput]:
    """The inputs the model needs; ModelError when the file is missing or not an ONNX model."""
    check_model_kind(model_path)
    # An empty file parses as an empty protobuf message: onnx.load accepts it as a model without a graph.
    if os.path.getsize(model_path) == 0:
        raise _not_a_model(model_path, "the file is empty: 0 bytes")
    try:
        onnx.load(str(model_path), load_external_data=False)
        declared = describe_model_inputs(model_path)
    except Exception as e:  # protobuf's DecodeError, onnx's own errors, OSError: the file is not a model
        raise _not_a_model(model_path, " ".join(str(e).split()) or type(e).__name__) from e
    if not declared:
        # The measurement loop feeds inputs and reads the batch off the first one; a constant graph has neither.
        raise ModelError(
            f"{model_path}: the model has no graph inputs (every value it computes is a constant). `perfsite "
            "profile` and `perfsite count` measure a model with at least one input (a graph input that is not "
            "an initializer): export it with its inputs, for example torch.onnx.export(model, (x,), ...)."
        )
    return declared


def _not_a_model(model_path: Path, reason: str) -> ModelError:
    return ModelError(
        f"{model_path}: not a readable ONNX model ({reason}). `perfsite profile` and `perfsite count` take an ONNX "
        "model file (.onnx) as written by torch.onnx.export, onnx.save or a model zoo."
    )


def resolve_inputs(model_path: Path, declared: Sequence[ModelInput], dims: Mapping[str, int],
                   shapes: Mapping[str, tuple[int, ...]]) -> ResolvedInputs:
    """Bind every declared input to a concrete shape (see the module docstring); ShapeError names what is
    missing or contradicts the model."""
    by_name = {d.name: d for d in declared}
    untyped = [d.name for d in declared if d.dtype is None]
    if untyped:
        raise ShapeError(f"{model_path}: the input {untyped[0]!r} is not a tensor (a sequence, map or optional); "
                         "`perfsite profile` and `perfsite count` can only feed tensor inputs.")
    for decl in declared:
        if (empty := empty_axis_problem(decl)) is not None:
            raise ShapeError(f"{model_path}: {empty}.")
    unknown = [n for n in shapes if n not in by_name]
    if unknown:
        known = "; ".join(format_input(d) for d in declared) or "no inputs"
        raise ShapeError(f"{model_path}: --shape names the input {unknown[0]!r}, which the model does not have. "
                         f"It declares: {known}.")
    bound = dict(dims)
    for name, shape in shapes.items():
        _learn(model_path, by_name[name], shape, bound)
    defaulted = [d.shape[0] for d in declared if d.name not in shapes and d.shape and isinstance(d.shape[0], str)
                 and d.shape[0] not in bound]
    for name in dict.fromkeys(defaulted):
        bound[name] = DEFAULT_BATCH
    _check_unused(model_path, declared, dims)
    resolved = [_resolve_one(d, shapes.get(d.name), bound) for d in declared]
    missing = [(d, r) for d, r in zip(declared, resolved, strict=True) if r is None]
    if missing:
        raise _missing_error(model_path, [d for d, _ in missing], bound)
    inputs = tuple(r for r in resolved if r is not None)
    first = inputs[0].shape if inputs else ()
    return ResolvedInputs(inputs, bound, tuple(dict.fromkeys(defaulted)), int(first[0]) if first else 1)


def _learn(model_path: Path, decl: ModelInput, shape: tuple[int, ...], bound: dict[str, int]) -> None:
    """Check a --shape against the declaration and bind the names it covers."""
    if decl.shape is None:
        return
    if len(shape) != len(decl.shape):
        raise ShapeError(f"{model_path}: --shape {decl.name}={_csv(shape)} has rank {len(shape)}; the model "
                         f"declares {format_input(decl)} (rank {len(decl.shape)}).")
    for axis, (size, dim) in enumerate(zip(shape, decl.shape, strict=True)):
        if isinstance(dim, int) and dim > 0 and size != dim:
            raise ShapeError(f"{model_path}: --shape {decl.name}={_csv(shape)} has {size} on axis {axis} where "
                             f"the model fixes {dim} ({format_input(decl)}).")
        if isinstance(dim, str) and bound.setdefault(dim, size) != size:
            raise ShapeError(f"{model_path}: the dim {dim!r} is {bound[dim]} (from --dim or another --shape) but "
                             f"--shape {decl.name}={_csv(shape)} gives it {size}; give one value.")


def _check_unused(model_path: Path, declared: Sequence[ModelInput], dims: Mapping[str, int]) -> None:
    names = {d for i in declared for d in i.shape or () if isinstance(d, str)}
    unused = [n for n in dims if n not in names]
    if unused:
        known = ", ".join(sorted(names)) or "none (every dim is fixed or unnamed)"
        raise ShapeError(f"{model_path}: --dim {unused[0]}=... names a dim the model does not declare. Its named "
                         f"dims are: {known}.")


def _resolve_one(decl: ModelInput, given: tuple[int, ...] | None, bound: Mapping[str, int]) -> ResolvedInput | None:
    dtype = decl.dtype.name if decl.dtype is not None else "non-tensor"
    if given is not None:
        return ResolvedInput(decl.name, dtype, decl.shape, given)
    if decl.shape is None:
        return None
    sizes = [d if isinstance(d, int) and d > 0 else bound.get(d) if isinstance(d, str) else None
             for d in decl.shape]
    if any(s is None for s in sizes):
        return None
    return ResolvedInput(decl.name, dtype, decl.shape, tuple(int(s) for s in sizes if s is not None))


def _missing_error(model_path: Path, missing: Sequence[ModelInput], bound: Mapping[str, int]) -> ShapeError:
    names = sorted({d for i in missing for d in i.shape or () if isinstance(d, str) and d not in bound})
    listed = "; ".join(format_input(d) for d in missing)
    first = missing[0]
    example = ",".join(_example_dim(d, bound) for d in first.shape or ("N",))
    whole = f"--shape {first.name}={example}"
    if not names:
        return ShapeError(f"{model_path}: some input dims have neither a name nor a value ({listed}). Give the "
                          f"whole shape of each such input with {whole}.")
    quoted = ", ".join(repr(n) for n in names)
    subject = f"the input dim {quoted} has" if len(names) == 1 else f"the input dims {quoted} have"
    return ShapeError(f"{model_path}: {subject} no value ({listed}). Set "
                      f"{'it' if len(names) == 1 else 'each'} with {' '.join(f'--dim {n}=VALUE' for n in names)}, "
                      f"or give whole shapes with {whole} (one option per dim or input).")


def _example_dim(dim: int | str | None, bound: Mapping[str, int]) -> str:
    if isinstance(dim, int) and dim > 0:
        return str(dim)
    if isinstance(dim, str):
        return str(bound[dim]) if dim in bound else dim.upper()
    return "N"


def _csv(shape: Sequence[int]) -> str:
    return ",".join(str(s) for s in shape)


def make_input_feeds(model_path: Path, resolved: ResolvedInputs, seed: int = 0,
                     files: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """Random arrays for every input at its resolved shape, and the arrays of `--input` files
    (generator.oneshot.files), through generator.inputs.make_feeds (dtype per model, one random stream per
    input name)."""
    from generator.oneshot.files import file_specs
    from generator.spec.sources import InputSpec

    specs: dict[str, Any] = {i.name: InputSpec(shape=i.shape) for i in resolved.inputs}
    specs.update(file_specs(files or {}))
    # make_feeds takes a loaded spec; its errors name `loaded.path`, here the model file itself. File paths
    # come from the command line, already absolute.
    loaded = SimpleNamespace(path=model_path, spec=SimpleNamespace(inputs=specs),
                             resolve=lambda file, _field: Path(file))
    return make_feeds(loaded, model_path, resolved.dims, seed=seed)
