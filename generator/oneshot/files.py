"""`perfsite profile --input NAME=FILE`: real data for an input of the one-shot profile.

FILE is a `.npy`, or a `.npz` with one array or `FILE.npz:KEY` naming the member. The array's shape becomes the
input's shape (as `--shape` would set it), and its data reaches the model through generator.inputs, the same
route as a spec's `inputs: {NAME: {file: ...}}`: the same dtype rule (any float feeds any float; no change of
kind), the same refusal of empty arrays, objects and damaged files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from generator.errors import RunError
from generator.index_inputs import index_problem
from generator.inputs import ArrayField, ModelInput, format_input, load_array_file
from generator.paths import data_file_problem


@dataclass(frozen=True)
class InputFile:
    """One `--input NAME=FILE[:KEY]`."""

    name: str
    path: Path
    key: str | None
    shape: tuple[int, ...]


def parse_input_files(items: Sequence[str], model_path: Path, declared: Sequence[ModelInput]) -> dict[str, InputFile]:
    """Every `--input` item checked and its array's shape read; RunError names the option, the file and what
    is allowed."""
    known = {d.name for d in declared}
    out: dict[str, InputFile] = {}
    for item in items:
        name, typed, path, key = _split(item, model_path)
        if name not in known:
            inputs = "; ".join(format_input(d) for d in declared) or "no inputs"
            raise RunError(f"{model_path}: --input {item!r} names the input {name!r}, which the model does not "
                           f"have. It declares: {inputs}.")
        if name in out:
            raise RunError(f"{model_path}: --input gives the input {name!r} twice; give each input one file.")
        where = ArrayField(f"--input {name}", f"--input {name}", f"name one as --input {name}={typed}:KEY")
        array = load_array_file(_Here(model_path), str(path), key, where)
        decl = next(d for d in declared if d.name == name)
        _check_shape(model_path, name, path, array, decl)
        problem = index_problem(model_path, name, array)
        if problem:
            raise RunError(f"{model_path}: --input {name}: {path} {problem}.")
        out[name] = InputFile(name, path, key, tuple(int(n) for n in array.shape))
    return out


def _check_shape(model_path: Path, name: str, path: Path, array: np.ndarray, decl: ModelInput) -> None:
    """The array must be non-empty and fit the model's declaration: its rank, and every fixed size."""
    allowed = f"allowed: a non-empty array shaped as the model declares ({format_input(decl)})"
    if array.size == 0 or array.ndim == 0:
        raise RunError(f"{model_path}: --input {name}: {path} holds an array of shape {list(array.shape)}; {allowed}.")
    if decl.shape is None:
        return
    if array.ndim != len(decl.shape):
        raise RunError(f"{model_path}: --input {name}: {path} holds an array of rank {array.ndim} (shape "
                       f"{list(array.shape)}); {allowed}.")
    for axis, (size, dim) in enumerate(zip(array.shape, decl.shape, strict=True)):
        if isinstance(dim, int) and dim > 0 and size != dim:
            raise RunError(f"{model_path}: --input {name}: {path} has {size} on axis {axis} where the model fixes "
                           f"{dim}; {allowed}.")


def _split(item: str, model_path: Path) -> tuple[str, str, Path, str | None]:
    """NAME=FILE[.npz:KEY] as (NAME, FILE as typed, its absolute path, KEY or None)."""
    name, sep, rest = item.partition("=")
    file, _, key = rest.partition(".npz:") if ".npz:" in rest else (rest, "", "")
    file = file + ".npz" if key else file
    if not sep or not name or not file or not file.endswith((".npy", ".npz")):
        raise RunError(f"{model_path}: --input {item!r} is not NAME=FILE with FILE a .npy or .npz file (for an "
                       ".npz with several arrays, NAME=FILE.npz:KEY); write for example --input input=batch.npy.")
    path = Path(file).expanduser().absolute()
    problem = data_file_problem(path)
    if problem is not None:
        raise RunError(f"{model_path}: --input {name}: {path} {problem}; allowed: a .npy or .npz file (a path "
                       "relative to the current folder).")
    return name, file, path, key or None


class _Here(SimpleNamespace):
    """What generator.inputs.load_array_file needs of a spec: its path (for messages) and path resolution
    (command-line paths are already absolute)."""

    def __init__(self, model_path: Path) -> None:
        super().__init__(path=model_path)

    @staticmethod
    def resolve(file: str, _field: str) -> Path:
        return Path(file)


def file_specs(files: Mapping[str, InputFile]) -> dict[str, object]:
    """The spec inputs that feed these files through generator.inputs.make_feeds."""
    from generator.spec.sources import InputSpec

    return {name: InputSpec(file=str(f.path), key=f.key) for name, f in files.items()}


def describe(files: Mapping[str, InputFile]) -> dict[str, dict[str, object]]:
    """For the JSON report: which input came from which file, at which shape."""
    return {name: {"file": str(f.path), "key": f.key, "shape": list(f.shape)} for name, f in files.items()}

