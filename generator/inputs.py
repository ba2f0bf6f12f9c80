"""Input tensors for one configuration: random data, fixed values or arrays from ``.npy``/``.npz`` files.

The spec's ``inputs`` are checked against what the model declares (names, dtypes, ranks, fixed dims) so that a
mistake is reported with the spec file, the ``inputs.<name>`` entry and the model's own declaration,
instead of an onnxruntime error from deep inside a child process.
"""

from __future__ import annotations

import functools
import math
import os
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import onnx

from generator.errors import RunError, SpecError
from generator.index_inputs import index_problem, index_tables
from generator.paths import data_file_problem

DEFAULT_INT_RANGE = (0, 100)
Dim = int | str | None


class ModelInput(NamedTuple):
    """One input the model declares: dims are ints (fixed), names (``dim_param``) or None (unnamed)."""

    name: str
    dtype: np.dtype | None
    shape: tuple[Dim, ...] | None


def describe_model_inputs(model_path: Path) -> list[ModelInput]:
    """The inputs a caller must feed (graph inputs that no initializer provides), in the model's order."""
    return [i for i, optional in _declared(Path(model_path)) if not optional]


def empty_axis_problem(decl: ModelInput) -> str | None:
    """Why an input the model fixes to an empty tensor (a dim of 0) cannot be measured, or None. Such a dim was
    taken for an unnamed one: `perfsite profile` asked for a --shape it then refused (sizes are positive), and a
    spec's shape reached onnxruntime, whose 'Expected: 0' failed the trial."""
    axis = next((i for i, d in enumerate(decl.shape or ()) if isinstance(d, int) and d == 0), None)
    if axis is None:
        return None
    return (f"the model fixes axis {axis} of {decl.name!r} to 0 ({format_input(decl)}): an empty tensor, and perfsite "
            "measures no empty input, since there is nothing to time. Allowed: a model whose inputs hold at least "
            "one element; export it with that dim named (dim_param) or set to the size you feed")


def format_input(decl: ModelInput) -> str:
    """``input_ids: int64 [batch, seq_len]`` (``?`` for unnamed dims)."""
    dtype = decl.dtype.name if decl.dtype is not None else "non-tensor"
    dims = (
        "unknown rank"
        if decl.shape is None
        else "[" + ", ".join("?" if d is None else str(d) for d in decl.shape) + "]"
    )
    return f"{decl.name}: {dtype} {dims}"


def _declared(model_path: Path) -> tuple[tuple[ModelInput, bool], ...]:
    stat = model_path.stat()
    return _declared_cached(str(model_path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _declared_cached(path: str, _mtime_ns: int, _size: int) -> tuple[tuple[ModelInput, bool], ...]:
    # The weights are not needed to read the declarations: skip external data, keep memory small.
    graph = onnx.load(path, load_external_data=False).graph
    with_default = {t.name for t in graph.initializer}
    return tuple((_model_input(v), v.name in with_default) for v in graph.input)


def _model_input(value: onnx.ValueInfoProto) -> ModelInput:
    if not value.type.HasField("tensor_type"):
        return ModelInput(value.name, None, None)
    tensor = value.type.tensor_type
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    if not tensor.HasField("shape"):
        return ModelInput(value.name, dtype, None)
    dims: list[Dim] = []
    for d in tensor.shape.dim:
        kind = d.WhichOneof("value")
        dims.append(d.dim_value if kind == "dim_value" else d.dim_param if kind == "dim_param" else None)
    return ModelInput(value.name, dtype, tuple(dims))


class _Feeder:
    """Builds the feeds of one model for one binding; knows where it is, to word its errors."""

    def __init__(self, loaded: Any, model_path: Path, binding: Mapping[str, int], seed: int) -> None:
        self.loaded, self.model_path, self.seed = loaded, Path(model_path), seed
        self.binding = dict(binding)
        # Sizes of the model's named dims learnt from the tensors made so far (N of `input [N, 3, H, W]`),
        # so that a fixed value or an undescribed input sharing that dim gets the same size.
        self.dims: dict[str, int] = dict(binding)

    def fail(self, name: str, problem: str, decl: ModelInput | None = None) -> RunError:
        declared = f" The model {self.model_path} declares {format_input(decl)}." if decl else ""
        return RunError(f"{self.loaded.path}: inputs.{name}: {problem}.{declared}")

    def rng(self, name: str) -> np.random.Generator:
        # One stream per input name: adding an input to the spec does not change the others' data.
        return np.random.default_rng([self.seed, zlib.crc32(name.encode())])

    def learn(self, decl: ModelInput, array: np.ndarray) -> None:
        for dim, size in zip(decl.shape or (), array.shape, strict=False):
            if isinstance(dim, str):
                self.dims.setdefault(dim, int(size))

    def target_dtype(self, name: str, spec: Any, decl: ModelInput) -> np.dtype:
        if decl.dtype is None or decl.dtype.kind in "OUS":
            raise self.fail(name, "perfsite can only feed numeric and bool tensors", decl)
        # No dtype (allowed with `file`) follows the model. Between float types the model wins too: one spec
        # feeds an fp32 version and an fp16 version made without `keep_io_types`.
        if getattr(spec, "dtype", None) is not None:
            wanted = _spec_dtype(self, name, spec.dtype)
            if wanted != decl.dtype and not (wanted.kind == "f" and decl.dtype.kind == "f"):
                raise self.fail(
                    name, f"dtype {spec.dtype} does not match the model's {decl.dtype.name}", decl
                )
        return decl.dtype

    def check_shape(self, name: str, shape: Sequence[int], decl: ModelInput, what: str) -> None:
        if decl.shape is None:
            return
        if len(shape) != len(decl.shape):
            raise self.fail(
                name,
                f"{what} has rank {len(shape)} {list(shape)}, the model wants rank {len(decl.shape)}",
                decl,
            )
        if (empty := empty_axis_problem(decl)) is not None:
            raise self.fail(name, empty)
        for axis, (size, dim) in enumerate(zip(shape, decl.shape, strict=True)):
            if isinstance(dim, int) and dim > 0 and size != dim:
                raise self.fail(name, f"{what} has {size} on axis {axis} where the model fixes {dim}", decl)

    def model_shape(self, decl: ModelInput) -> tuple[int, ...] | None:
        """The declared shape with named dims bound; None if a dim cannot be bound."""
        if decl.shape is None:
            return None
        out = []
        for dim in decl.shape:
            if isinstance(dim, int) and dim > 0:
                out.append(dim)
            elif isinstance(dim, str) and dim in self.dims:
                out.append(int(self.dims[dim]))
            else:
                return None
        return tuple(out)


def _spec_dtype(feeder: _Feeder, name: str, dtype: str) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise feeder.fail(
            name, f"dtype {dtype!r} is not a numpy dtype name (float32, int64, bool, ...)"
        ) from e


def make_feeds(
    loaded: Any, model_path: Path, binding: Mapping[str, int], seed: int = 0
) -> dict[str, np.ndarray]:
    """Arrays for every input the model needs, in the model's input order; the same arguments give equal data.

    Spec inputs come first (``shape`` -> random, ``value`` -> broadcast, ``file`` -> loaded), then the model's
    other inputs get random data when every dim is bound by ``binding`` or by a dim learnt from the others.
    Arrays take the model's dtype: a spec dtype must match it, except that any float type feeds any other.
    """
    feeder = _Feeder(loaded, model_path, binding, seed)
    declared = {decl.name: decl for decl, _ in _declared(feeder.model_path)}
    required = [d.name for d in describe_model_inputs(feeder.model_path)]
    specs = dict(loaded.spec.inputs)
    _check_names(feeder, specs, declared)
    # Fixed values last: broadcasting one may need a dim learnt from a random or file input.
    ordered = sorted(specs.items(), key=lambda item: getattr(item[1], "value", None) is not None)
    feeds = {name: _from_spec(feeder, name, spec, declared[name]) for name, spec in ordered}
    missing = [declared[n] for n in required if n not in feeds]
    for decl in missing:
        array = _undescribed(feeder, decl)
        if array is not None:
            feeds[decl.name] = array
            feeder.learn(decl, array)
    unbound = [d for d in missing if d.name not in feeds]
    if unbound:
        raise _unbound_error(feeder, unbound)
    order = [d.name for d, _ in _declared(feeder.model_path)]
    return {name: feeds[name] for name in order if name in feeds}


def _check_names(feeder: _Feeder, specs: Mapping[str, Any], declared: Mapping[str, ModelInput]) -> None:
    unknown = [n for n in specs if n not in declared]
    if unknown:
        known = "; ".join(format_input(d) for d in declared.values()) or "no inputs"
        raise RunError(
            f"{feeder.loaded.path}: inputs.{unknown[0]}: the model {feeder.model_path} has no input named "
            f"{unknown[0]!r}. It declares: {known}. Rename or remove the entry."
        )


def _from_spec(feeder: _Feeder, name: str, spec: Any, decl: ModelInput) -> np.ndarray:
    dtype = feeder.target_dtype(name, spec, decl)
    if getattr(spec, "file", None) is not None:
        array = _from_file(feeder, name, spec, decl, dtype)
    elif getattr(spec, "value", None) is not None:
        array = _from_value(feeder, name, spec.value, decl, dtype)
    else:
        array = _random_from_spec(feeder, name, spec, decl, dtype)
    feeder.learn(decl, array)
    return array


def _random_from_spec(feeder: _Feeder, name: str, spec: Any, decl: ModelInput, dtype: np.dtype) -> np.ndarray:
    shape = []
    for i, dim in enumerate(spec.shape or []):
        if isinstance(dim, str):
            if dim not in feeder.binding:
                raise SpecError(
                    f"{feeder.loaded.path}: inputs.{name}.shape[{i}] is the placeholder {dim!r}, which the "
                    f"sweep does not bind. Add `sweep.{dim}: [...]` or write a number."
                )
            dim = feeder.binding[dim]
        shape.append(int(dim))
    written = "[" + ", ".join(str(d) for d in spec.shape or []) + "]"  # as in the spec, not a Python tuple
    feeder.check_shape(name, shape, decl, f"shape {written}")
    bounds = index_bounds(feeder, name, dtype, getattr(spec, "range", None))
    return random_array(feeder.rng(name), dtype, tuple(shape), bounds, feeder.fail, name)


def index_bounds(feeder: _Feeder, name: str, dtype: np.dtype, bounds: Sequence[float] | None
                 ) -> Sequence[float] | None:
    """The range of an integer input that indexes a table (generator.index_inputs): [0, rows) capped at the
    default range when the spec gives none; a spec range past the table is refused, naming the node."""
    table = index_tables(feeder.model_path).get(name) if dtype.kind in "iu" else None
    if table is None:
        return bounds
    if bounds is None:
        return (0, min(table.rows, DEFAULT_INT_RANGE[1]))
    if int(bounds[0]) < -table.rows or int(bounds[1]) > table.rows:
        raise feeder.fail(name, f"range [{bounds[0]:g}, {bounds[1]:g}) goes past the table this input indexes: "
                                f"{table.op_type} node {table.node!r} reads a table of {table.rows} rows, so the "
                                f"model accepts values from 0 to {table.rows - 1}; use e.g. range: [0, {table.rows}]")
    return bounds


def check_size(name: str, shape: Sequence[int], dtype: np.dtype, fail: Any) -> None:
    """Refuse, before allocating, an input larger than half the memory available now: numpy's MemoryError
    came out as a traceback, or the kernel's out-of-memory killer ended the process."""
    size = math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
    available = _available_bytes()
    if available is not None and size > available / 2:
        raise fail(f"shape {list(shape)} of {np.dtype(dtype).name} is {size / 2**30:,.1f} GiB, more than half of "
                   f"the {available / 2**30:,.1f} GiB of memory available; use a smaller shape or batch")


def _available_bytes() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def random_array(
    rng: np.random.Generator,
    dtype: np.dtype,
    shape: tuple[int, ...],
    bounds: Sequence[float] | None,
    fail: Any,
    name: str,
) -> np.ndarray:
    """Standard normal floats (uniform in ``bounds`` if given), uniform ints in [low, high), fair bools."""
    check_size(name, shape, dtype, lambda problem: fail(name, problem))
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        low, high = bounds if bounds is not None else DEFAULT_INT_RANGE
        info = np.iinfo(dtype)
        if int(low) < info.min or int(high) - 1 > info.max or int(high) <= int(low):
            raise fail(name, f"range [{low}, {high}) does not fit {dtype.name} ({info.min}..{info.max})")
        return rng.integers(int(low), int(high), shape, dtype=dtype)
    if dtype.kind == "f":
        if bounds is not None:
            low, high = float(bounds[0]), float(bounds[1])
            # A range past the type's limits became inf silently (0..1e5 in float16); one wider than float64
            # can span made numpy raise OverflowError.
            largest = float(np.finfo(dtype).max)
            if max(abs(low), abs(high)) > largest or not np.isfinite(high - low):
                raise fail(name, f"range [{low:g}, {high:g}] does not fit {dtype.name} (±{largest:.4g}), the "
                                 "model's type for this input")
            return rng.uniform(low, high, shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)
    raise fail(name, f"cannot make random {dtype.name} data")


def _from_value(feeder: _Feeder, name: str, value: Any, decl: ModelInput, dtype: np.dtype) -> np.ndarray:
    try:
        with np.errstate(over="ignore"):  # a float too large for the type becomes inf: refused just below
            array = np.asarray(value, dtype=dtype)
    except OverflowError as e:
        info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
        raise feeder.fail(name, f"value {value!r} does not fit {dtype.name} ({info.min}..{info.max}), the "
                          "model's type for this input", decl) from e
    except (TypeError, ValueError) as e:
        raise feeder.fail(name, f"value {value!r} cannot be read as {dtype.name}: {e}", decl) from e
    if dtype.kind == "f" and not np.isfinite(array).all():  # 1e39 becomes inf in float32, silently
        info = np.finfo(dtype)
        raise feeder.fail(name, f"value {value!r} does not fit {dtype.name} (±{info.max:.4g}), the model's type "
                          "for this input", decl)
    rank = len(decl.shape) if decl.shape is not None else array.ndim
    if array.ndim == rank:
        feeder.check_shape(name, array.shape, decl, f"value of shape {list(array.shape)}")
        return array
    if array.ndim > rank:
        raise feeder.fail(name, f"value has rank {array.ndim}, more than the model's {rank}", decl)
    shape = feeder.model_shape(decl)
    if shape is None:
        raise feeder.fail(
            name,
            "the value must be broadcast to the model's shape, but some of its dims are not bound by the "
            "sweep; give the value with its full shape, or use `shape:` with placeholders",
            decl,
        )
    check_size(name, shape, dtype, lambda problem: feeder.fail(name, problem, decl))
    try:
        return np.broadcast_to(array, shape).copy()
    except ValueError as e:
        raise feeder.fail(
            name, f"value of shape {list(array.shape)} cannot be broadcast to {list(shape)}", decl
        ) from e


def _from_file(feeder: _Feeder, name: str, spec: Any, decl: ModelInput, dtype: np.dtype) -> np.ndarray:
    array = load_array_file(feeder.loaded, spec.file, getattr(spec, "key", None), spec_array_field(name))
    if not np.can_cast(array.dtype, dtype, casting="same_kind"):
        raise feeder.fail(
            name,
            f"file {spec.file} holds {array.dtype.name} data, which does not convert to "
            f"{dtype.name} without changing its kind; save it as {dtype.name}",
            decl,
        )
    if array.size == 0:
        # Zero rows used to be stored as an `ok` trial at batch 1 with a throughput for items never processed.
        raise feeder.fail(
            name,
            f"file {spec.file} holds an empty array (shape {list(array.shape)}): there is nothing to measure; "
            "save at least one row (the rows are repeated or cut to the batch size)",
            decl,
        )
    array = array.astype(dtype, copy=False)
    problem = index_problem(feeder.model_path, name, array)
    if problem:
        raise feeder.fail(name, f"file {spec.file} {problem}", decl)
    if decl.shape and array.ndim >= 1 and not (isinstance(decl.shape[0], int) and decl.shape[0] > 0):
        first = decl.shape[0]
        batch = (
            feeder.binding.get(first)
            if isinstance(first, str) and first in feeder.binding
            else feeder.binding.get("batch")
        )
        if batch is not None:
            array = fit_first_dim(array, int(batch))
    feeder.check_shape(name, array.shape, decl, f"the array of shape {list(array.shape)} from {spec.file}")
    return array


def fit_first_dim(array: np.ndarray, size: int) -> np.ndarray:
    """Repeat the rows (tile) when there are fewer than ``size``, keep the first ``size`` when more."""
    n = array.shape[0]
    if n == size or n == 0:
        return array
    if n > size:
        return array[:size]
    reps = -(-size // n)
    return np.concatenate([array] * reps, axis=0)[:size]


class ArrayField(NamedTuple):
    """Where an input's array file was named, in the words of that place, for its messages: a spec's
    `inputs.x` (fields `file:` and `key:`) or the command line's `--input x=FILE.npz:KEY`."""

    file: str  # how a message names the file: `inputs.x.file`, `--input x`
    key: str  # how it names the .npz member
    choose_key: str  # how to pick one of several members there


def spec_array_field(name: str) -> ArrayField:
    return ArrayField(f"inputs.{name}.file", f"inputs.{name}.key", "set `key:` to one of them")


def load_array_file(loaded: Any, file: str, key: str | None, field: ArrayField) -> np.ndarray:
    """Read an array from a spec-relative ``.npy``, or ``.npz`` (member ``key``, or its only member)."""
    path = loaded.resolve(file, field.file)
    problem = data_file_problem(path)
    if problem is not None:
        raise RunError(f"{loaded.path}: {field.file}: {path} {problem}; allowed: a .npy or .npz file (paths are "
                       "relative to the spec file).")
    def unreadable(e: Exception) -> RunError:
        why = "it holds Python objects, which perfsite does not unpickle" if "allow_pickle" in str(e) else str(e)
        return RunError(f"{loaded.path}: {field.file}: {path} is not a readable .npy or .npz file "
                        f"({type(e).__name__}: {why}). Allowed: numeric arrays saved with numpy.save or "
                        "numpy.savez.")

    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise unreadable(e) from e
    if isinstance(data, np.ndarray):
        return data
    with data:
        keys = list(data.files)
        if key is None and len(keys) == 1:
            key = keys[0]
        if key not in keys:
            raise RunError(
                f"{loaded.path}: {field.key}: {path} holds the arrays {keys}; {field.choose_key}"
                + (f" (not {key!r})." if key is not None else ".")
            )
        try:
            return data[key]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:  # a damaged member, an object array
            raise unreadable(e) from e


def _undescribed(feeder: _Feeder, decl: ModelInput) -> np.ndarray | None:
    """Random data for an input the spec does not mention, when its whole shape is known."""
    shape = feeder.model_shape(decl)
    if shape is None or decl.dtype is None or decl.dtype.kind not in "biuf":
        return None
    bounds = index_bounds(feeder, decl.name, decl.dtype, None)
    return random_array(feeder.rng(decl.name), decl.dtype, shape, bounds, feeder.fail, decl.name)


def _unbound_error(feeder: _Feeder, unbound: Sequence[ModelInput]) -> RunError:
    listed = "; ".join(format_input(d) for d in unbound)
    bound = ", ".join(f"{k}={v}" for k, v in sorted(feeder.dims.items())) or "nothing"
    return RunError(
        f"{feeder.loaded.path}: inputs: the model {feeder.model_path} needs inputs the spec does not "
        f"describe and whose shape perfsite cannot derive ({listed}; bound dims: {bound}). Describe each "
        "under `inputs:` with `shape` (placeholders such as batch are bound by the sweep), `value` or `file`."
    )
