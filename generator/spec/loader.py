"""Load experiment specs: YAML text -> validated, frozen records in a `LoadedSpec`.

The YAML loader is PyYAML's safe loader plus three things PyYAML does not do: it refuses duplicate keys
(PyYAML silently keeps the last one), it remembers the line of every key and list item so validation
errors can say `line 7`, and it refuses alias bombs and absurd nesting before anything walks the data.
Every problem with the input text becomes a SpecError; any other exception is a bug.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from generator.errors import SpecError
from generator.paths import project_root, resolve_in_project, resolve_package_path
from generator.spec.errors_fmt import Loc, Position, collect_problems, format_problems, position_of, yaml_path
from generator.spec.model import Spec

MAX_YAML_NODES = 100_000  # a real spec has a few hundred; more means an alias bomb or a data dump
MAX_YAML_DEPTH = 64
_MERGE_TAG = "tag:yaml.org,2002:merge"


# Specs are read with YAML 1.2's core schema, not PyYAML's YAML 1.1 one: under 1.1 `1:30` was the number 90
# (sexagesimal), `yes`/`no`/`on`/`off` booleans, `1_000` a thousand, `010` eight (octal) and `1e1` a string
# (1.1 floats need a dot). Under 1.2 those are strings, which the spec's strict types refuse with their
# allowed values, `010` is ten, `1e1` is ten and a date is text.
_BOOL, _INT, _FLOAT = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"  # 1.2 core has none: `2026-01-01` stays text
_CORE_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_CORE_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_CORE_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                         r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


class _Refused(Exception):
    """A structural problem found while reading the YAML (message without the file name)."""


class SpecYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses duplicate keys and records where each key and item was written."""

    def load_with_positions(self) -> tuple[Any, dict[Loc, Position]]:
        """(data, {YAML path: (line, column)}) of the single document; data is None for an empty one."""
        node = self.get_single_node()
        if node is None:
            return None, {}
        self._check_size(node)
        positions: dict[Loc, Position] = {(): _pos(node)}
        self._index(node, (), positions)
        return self.construct_document(node), positions

    def _check_size(self, root: Node) -> None:
        """Count nodes with aliases expanded (memoized, so linear) and refuse cycles and bombs."""
        sizes: dict[int, int] = {}
        open_nodes: set[int] = set()

        def size(node: Node, depth: int) -> int:
            if id(node) in sizes:
                return sizes[id(node)]
            if id(node) in open_nodes:
                raise _Refused(f"line {_pos(node)[0]}: an alias refers to the collection containing it")
            if depth > MAX_YAML_DEPTH:
                raise _Refused(f"line {_pos(node)[0]}: nested more than {MAX_YAML_DEPTH} levels deep")
            open_nodes.add(id(node))
            total = 1 + sum(size(child, depth + 1) for child in _children(node))
            if total > MAX_YAML_NODES:
                raise _Refused(f"more than {MAX_YAML_NODES} values once aliases are expanded")
            open_nodes.discard(id(node))
            sizes[id(node)] = total
            return total

        size(root, 0)

    def _index(self, node: Node, loc: Loc, positions: dict[Loc, Position]) -> None:
        if isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                positions[(*loc, i)] = _pos(item)
                self._index(item, (*loc, i), positions)
        elif isinstance(node, MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue  # merged keys keep the position of the mapping they are merged into
                key = self._key(key_node, loc)
                if key in first_line:
                    line, column = _pos(key_node)
                    where = yaml_path(loc) or "top level"
                    raise _Refused(
                        f"line {line}, column {column}: duplicate key `{key}` in `{where}` (first at line "
                        f"{first_line[key]}); YAML would silently keep the last one, so remove or rename one"
                    )
                first_line[key] = _pos(key_node)[0]
                positions[(*loc, key)] = _pos(key_node)
                self._index(value_node, (*loc, key), positions)

    def _key(self, key_node: Node, loc: Loc) -> Any:
        if not isinstance(key_node, ScalarNode):
            line, column = _pos(key_node)
            raise _Refused(f"line {line}, column {column}: a key in `{yaml_path(loc) or 'top level'}` is a "
                           "list or mapping; keys are plain names")
        return self.construct_object(key_node)

    def construct_core_int(self, node: ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        try:
            if text.startswith(("0o", "0x")):
                return int(text[2:], 8 if text[1] == "o" else 16)
            return int(text, 10)  # leading zeros are decimal in YAML 1.2
        except ValueError:  # an explicit `!!int` on other text (0b101, 1:30)
            raise yaml.constructor.ConstructorError(
                None, None, f"`!!int {text}` is not a YAML 1.2 integer; allowed: decimal digits, 0o… or 0x…",
                node.start_mark) from None


SpecYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
SpecYamlLoader.add_implicit_resolver(_BOOL, _CORE_BOOL, list("tTfF"))
SpecYamlLoader.add_implicit_resolver(_INT, _CORE_INT, list("-+0123456789"))
SpecYamlLoader.add_implicit_resolver(_FLOAT, _CORE_FLOAT, list("-+0123456789."))
SpecYamlLoader.add_constructor(_INT, SpecYamlLoader.construct_core_int)


def _check_depth(text: str) -> None:
    """Refuse absurd nesting from the event stream (the parser is iterative; the composer would recurse)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                line = event.start_mark.line + 1
                raise _Refused(f"line {line}: nested more than {MAX_YAML_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _pos(node: Node) -> Position:
    return node.start_mark.line + 1, node.start_mark.column + 1


def parse_yaml(text: str, source: str) -> tuple[Any, dict[Loc, Position]]:
    """Parse spec text into plain data and positions; SpecError for anything that is not clean YAML."""
    loader = None
    try:
        _check_depth(text)
        loader = SpecYamlLoader(text)
        return loader.load_with_positions()
    except _Refused as exc:
        raise SpecError(f"Spec {source} cannot be read: {exc}.") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise SpecError(f"Spec {source} is not valid YAML: line {line}, column {column}: character "
                        f"#x{exc.character:04x} is not allowed in YAML text.") from None
    except yaml.MarkedYAMLError as exc:
        raise SpecError(f"Spec {source} is not valid YAML: {_yaml_error_text(exc)}.") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"Spec {source} is not valid YAML: {exc}.") from None
    finally:
        if loader is not None:
            loader.dispose()


def _yaml_error_text(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    context = ""
    if exc.context and exc.context_mark and exc.context_mark is not mark:
        context = f" ({exc.context} at line {exc.context_mark.line + 1})"
    return f"{where}{exc.problem or exc.context or 'syntax error'}{context}"


def canonical_json(spec: Spec) -> str:
    """The spec as JSON with sorted keys and no spaces: the text its sha256 is taken of."""
    data = spec.model_dump(mode="json", by_alias=True)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_to_json(spec: Spec) -> str:
    """The spec as indented JSON keeping the spec's order (versions in report order), for storing."""
    return json.dumps(spec.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec and where it came from; spec-relative paths resolve through `resolve`."""

    spec: Spec
    path: Path  # the spec file, absolute
    root: Path  # project root: git top level holding the spec's real path, or its folder
    allow_outside: bool
    sha256: str  # of canonical_json()

    @classmethod
    def of(cls, spec: Spec, path: Path, allow_outside: bool = False) -> LoadedSpec:
        """Wrap an already validated spec read from `path`."""
        return cls(spec, Path(os.path.abspath(path)), project_root(Path(path)), allow_outside,
                   hashlib.sha256(canonical_json(spec).encode()).hexdigest())

    @property
    def base_dir(self) -> Path:
        """The folder spec-relative paths start from: the spec file's real folder."""
        return Path(os.path.realpath(self.path)).parent

    def canonical_json(self) -> str:
        return canonical_json(self.spec)

    def resolve(self, rel: str, what: str, *, must_exist: bool = False) -> Path:
        """Real path of `rel` (relative to the spec file); `what` is the YAML path named in errors."""
        return resolve_in_project(self.base_dir, rel, self.root, self.allow_outside, what, self.path,
                                  must_exist=must_exist)

    def model_file(self, version: str, *, must_exist: bool = False) -> Path:
        """The ONNX file of a version that has `path` (inside its `package` when it names one)."""
        model = self.spec.models[version]
        if model.path is None:
            raise ValueError(f"version {version!r} is made from {model.from_!r}; it has no file of its own")
        what = yaml_path(("models", version, "path"))
        if model.package is not None:
            return resolve_package_path(model.package, model.path, what, self.path, must_exist=must_exist)
        return self.resolve(model.path, what, must_exist=must_exist)


    def model_files(self) -> set[Path]:
        """The model files the spec measures (its `path:` versions), resolved; one that cannot be is left out."""
        found = set()
        for name, model in self.spec.models.items():
            if model.path is not None:
                with contextlib.suppress(Exception):
                    found.add(self.model_file(name).resolve())
        return found

    def named_files(self) -> dict[str, Path]:
        """Every project file the spec names (model files, calibration data, input files), resolved, by its YAML
        path (`models.fp32.path`); one that cannot be resolved is left out: the stage that reads it names it."""
        found = {}
        for loc, rel in _spec_paths(self.spec):
            with contextlib.suppress(SpecError):
                found[yaml_path(loc)] = self.resolve(rel, yaml_path(loc))
        return found

    def same_file(self, other: LoadedSpec) -> bool:
        """The same spec twice in one command: one file (given twice, or through a link), or the same text."""
        return os.path.realpath(self.path) == os.path.realpath(other.path) or self.sha256 == other.sha256

    def same_experiment(self, other: LoadedSpec) -> bool:
        """Whether two specs are one experiment, as two specs of one name in a results folder must be: the same
        file (given twice, or through a link), or specs that measure a model file in common (a spec moved,
        copied, edited or checked out twice). In common means the same file or the same bytes: two worktrees of
        one repository hold two copies of each model, and their specs (a branch that adds `batch: 2`) were
        refused as "two unrelated models"."""
        if os.path.realpath(self.path) == os.path.realpath(other.path):
            return True
        mine, theirs = self.model_files(), other.model_files()
        return bool(mine & theirs) or bool(_contents(mine) & _contents(theirs))


def _contents(files: Iterable[Path]) -> set[str]:
    """The sha256 of each readable file (a model that cannot be read counts for nothing here)."""
    found = set()
    for path in files:
        digest = hashlib.sha256()
        with contextlib.suppress(OSError), open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
            found.add(digest.hexdigest())
    return found


def same_name_at_once(first: LoadedSpec, other: LoadedSpec) -> str:
    """Two different specs of one name given to one command: over time, an edited or copied spec stays its
    experiment (same_experiment), but two at once would both write into one results folder, mixing their
    versions and settings under one description."""
    return (f"Specs `{first.path}` and `{other.path}` both have `name: {first.spec.name}` and say different things: "
            "measured in one command they would write into one results folder, and its pages would mix their "
            "versions and settings under one description. Allowed: one spec per name in a command; rename one of "
            "them (`name:`), or leave the other one out.")


# A spec is YAML written by hand, a few kilobytes; data goes in input files. The cap is read, not asked of the file
# system: `perfsite validate /dev/zero` read without end and ended in a MemoryError traceback.
MAX_SPEC_BYTES = 10_000_000


def load_spec(path: Path, allow_outside: bool = False) -> LoadedSpec:
    """Read, parse and validate the spec file at `path`; SpecError for any problem with it."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_SPEC_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(f"Spec file `{path}` does not exist.") from None
    except IsADirectoryError:
        raise SpecError(f"`{path}` is a folder, not a spec file; give a `.yaml` file.") from None
    except OSError as exc:
        raise SpecError(f"Spec file `{path}` cannot be read: {exc.strerror or exc}.") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"Spec file `{path}` holds more than {MAX_SPEC_BYTES:,} bytes, far beyond a spec written by "
                        "hand. Allowed: a YAML spec file (docs/spec.md); give large input data as a `file:` "
                        "(.npy or .npz) rather than a `value:`.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"Spec file `{path}` is not UTF-8 text (byte {raw[exc.start]:#04x} at offset "
                        f"{exc.start}); save it as UTF-8.") from None
    return load_spec_text(text, path, allow_outside)


def load_spec_text(text: str, path: Path, allow_outside: bool = False) -> LoadedSpec:
    """Parse and validate spec `text` as if read from `path` (used for messages and relative paths)."""
    source = f"`{path}`"
    try:
        data, positions = parse_yaml(text, source)
        spec = _validate(data, positions, source)
    except RecursionError:
        raise SpecError(f"Spec {source} is nested too deeply to be an experiment spec.") from None
    loaded = LoadedSpec.of(spec, Path(path), allow_outside)
    _check_paths(loaded, positions)
    return loaded


def _validate(data: Any, positions: dict[Loc, Position], source: str) -> Spec:
    if data is None:
        raise SpecError(f"Spec {source} is empty; a spec is a YAML mapping with at least `name`, `models` "
                        "and `inputs` (see docs/spec.md).")
    if not isinstance(data, dict):
        raise SpecError(f"Spec {source} must be a mapping of keys (`name: ...`, `models: ...`) at the top "
                        f"level, not a {type(data).__name__}.")
    try:
        return Spec.model_validate(data)
    except ValidationError as err:
        raise SpecError(format_problems(source, collect_problems(err, data, Spec), positions)) from None


def _spec_paths(spec: Spec) -> Iterable[tuple[Loc, str]]:
    """(YAML path, written path) of every project file the spec names."""
    for name, model in spec.models.items():
        if model.path is not None and model.package is None:
            yield ("models", name, "path"), model.path
        if model.quantize is not None and model.quantize.calibration.data is not None:
            yield ("models", name, "quantize", "calibration", "data"), model.quantize.calibration.data
    for name, tensor in spec.inputs.items():
        if tensor.file is not None:
            yield ("inputs", name, "file"), tensor.file


def _check_paths(loaded: LoadedSpec, positions: Mapping[Loc, Position]) -> None:
    """Refuse paths leaving the project now (existence is checked by the stage that reads the file)."""
    for loc, rel in _spec_paths(loaded.spec):
        pos = position_of(loc, positions)
        resolve_in_project(loaded.base_dir, rel, loaded.root, loaded.allow_outside, yaml_path(loc),
                           loaded.path, line=pos[0] if pos else None)


def spec_from_json(data: str | bytes | Mapping[str, Any], source: str = "stored spec") -> Spec:
    """Validate a stored copy of a spec (from `spec_to_json` or `canonical_json`) back into a `Spec`."""
    if isinstance(data, str | bytes | bytearray):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise SpecError(f"The {source} is not valid JSON: {exc}.") from None
    if not isinstance(data, Mapping):
        raise SpecError(f"The {source} must be a JSON object, not a {type(data).__name__}.")
    data = dict(data)
    try:
        return Spec.model_validate(data, context={"stored": True})
    except ValidationError as err:
        raise SpecError(format_problems(f"`{source}`", collect_problems(err, data, Spec), {})) from None
    except RecursionError:
        raise SpecError(f"The {source} is nested too deeply to be a spec.") from None


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec file, with a description on every field, for editors."""
    schema = Spec.model_json_schema(by_alias=True, mode="validation")
    schema["title"] = "perfsite experiment spec"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


SPEC_SUFFIXES = (".yaml", ".yml")


def spec_files(paths: Iterable[Path | str]) -> list[Path]:
    """The spec files `perfsite run` and `perfsite validate` take: each file as given, and for a folder its
    `*.yaml` and `*.yml` files in name order (not hidden ones, nor its subfolders'). A folder without one is a
    SpecError, and so is an empty word (an unset variable in `perfsite run "$SPEC"`), which Path would read as the
    current folder."""
    files: list[Path] = []
    for given in paths:
        if isinstance(given, str) and not given.strip():
            raise SpecError(f"A spec argument is empty ({given!r}): it names no file. Allowed: spec files, or "
                            "folders holding them (a folder stands for its `*.yaml` and `*.yml` files).")
        path = Path(given)
        if not path.is_dir():
            files.append(path)
            continue
        # Not hidden files, as a shell's `*.yaml` leaves them out: macOS's `._spec.yaml` (binary metadata that a
        # copy or tar from a Mac leaves beside each file) made the whole folder fail as "not valid YAML".
        found = sorted(p for p in path.iterdir()
                       if p.suffix in SPEC_SUFFIXES and not p.name.startswith(".") and p.is_file())
        if not found:
            raise SpecError(f"The folder `{path}` holds no spec file. Allowed: spec files, or folders holding "
                            "them: a folder stands for its `*.yaml` and `*.yml` files (its subfolders are not "
                            "searched).")
        files += found
    return files


def validate_specs(paths: Iterable[Path | str], allow_outside: bool = False) -> list[LoadedSpec]:
    """Load every spec (folders: their `*.yaml`/`*.yml` files); one SpecError listing every bad file.

    Two specs with the same `name` are an error too: they would write into the same results folder.
    """
    files = spec_files(paths)
    loaded, errors = [], []
    for file in files:
        try:
            loaded.append(load_spec(file, allow_outside))
        except SpecError as exc:
            errors.append(str(exc))
    # The rule of `perfsite run` (one experiment per name in a results folder, LoadedSpec.same_experiment), for
    # each spec's default results folder <project root>/results: validate refused a spec given twice, or a link
    # to it, that run measures.
    by_name: dict[tuple[str, Path], LoadedSpec] = {}
    for item in loaded:
        first = by_name.setdefault((item.spec.name, item.root), item)
        if not first.same_experiment(item):
            errors.append(f"Specs `{first.path}` and `{item.path}` both have `name: {item.spec.name}` and measure "
                          f"different model files: in {item.root / 'results' / item.spec.name} a site would show "
                          "one experiment mixing two unrelated models. Allowed: one spec per name in a results "
                          "folder; rename one of them (`name:`), or run it with its own --results DIR.")
        elif not first.same_file(item):
            errors.append(same_name_at_once(first, item))
    if errors:
        raise SpecError("\n".join(errors))
    return loaded
