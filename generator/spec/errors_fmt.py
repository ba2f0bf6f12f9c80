"""Turn validation failures into the one-paragraph messages users read.

Pydantic reports locations as tuples that mix YAML keys with schema tags (union members, `[key]` for a
bad mapping key). This module maps them back to YAML paths (`sweep.batch[2]`), finds the line each one was
written on, phrases each error as "got X; expected Y", adds "did you mean" for unknown keys, and keeps at
most a handful so the message stays readable.

Rules that join several fields report through :func:`fail`, which carries the exact YAML path of each
problem below the record that raised it (pydantic would otherwise point at the whole record).
"""

from __future__ import annotations

import difflib
import json
import re
import reprlib
import types
import typing
from collections.abc import Mapping
from typing import Any, NamedTuple, NoReturn

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

MAX_PROBLEMS = 5


class _NoValue:
    """Marks an issue whose message already says everything (no `got ...`)."""

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()

Loc = tuple[Any, ...]
Position = tuple[int, int]  # (line, column), 1-based


class Issue(NamedTuple):
    """One problem found by a cross-field rule: YAML path below the record, message, offending value."""

    loc: Loc
    message: str
    value: Any = NO_VALUE


class Problem(NamedTuple):
    """One problem ready to print: cleaned YAML path, message, offending value."""

    loc: Loc
    message: str
    value: Any = NO_VALUE


def fail(*issues: Issue) -> NoReturn:
    """Raise the issues from inside a pydantic validator, keeping each one's YAML path."""
    summary = "; ".join(f"{yaml_path(i.loc) or 'here'}: {i.message}" for i in issues)
    raise PydanticCustomError("spec_issues", "{summary}", {"summary": summary, "issues": tuple(issues)})


def expect(message: str) -> NoReturn:
    """Raise from a field validator: the value is wrong and `message` says what is expected."""
    raise PydanticCustomError("spec_value", "expected {expected}", {"expected": message})


def suggest(word: Any, choices: typing.Iterable[str]) -> str:
    """`; did you mean `x`?` when a choice is close to `word`, else an empty string."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def yaml_path(loc: Loc) -> str:
    """`sweep.batch[2]` for ("sweep", "batch", 2); keys that are not plain words are quoted."""
    out = ""
    for seg in loc:
        if isinstance(seg, int) and not isinstance(seg, bool):
            out += f"[{seg}]"
        elif isinstance(seg, str) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", seg) and "." not in seg:
            out += f".{seg}" if out else seg
        else:
            out += f"[{show(seg)}]"
    return out


def show(value: Any, width: int = 60) -> str:
    """A short YAML/JSON-looking rendering of a value for a message."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = reprlib.repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


_TYPE_PHRASES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string (put it in quotes if YAML reads it as something else)",
    "tuple_type": "a list, e.g. `[1, 2]`",
    "list_type": "a list, e.g. `[1, 2]`",
    "dict_type": "a mapping of `key: value` entries",
    "model_type": "a mapping of `key: value` entries",
    "model_attributes_type": "a mapping of `key: value` entries",
    "none_required": "nothing (null)",
    "invalid_key": "a string key",
}


def _phrase(err: Mapping[str, Any]) -> str:
    """What was expected, for one pydantic error (used after `got X; expected ...`)."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in _TYPE_PHRASES:
        return _TYPE_PHRASES[kind]
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
    if kind in bounds:
        limit = next(iter(ctx.values()), "?")
        return f"a number {bounds[kind]} {limit}"
    if kind == "literal_error":
        return f"one of {ctx.get('expected', '?')}{_literal_hint(err)}"
    if kind in ("too_short", "string_too_short"):
        return f"at least {ctx.get('min_length', 1)} item(s)" if kind == "too_short" else "a non-empty string"
    if kind in ("too_long", "string_too_long"):
        unit = "item(s)" if kind == "too_long" else "characters"
        return f"at most {ctx.get('max_length', '?')} {unit}"
    if kind == "spec_value":
        return str(ctx.get("expected"))
    return str(err.get("msg", kind)).removeprefix("Value error, ").removeprefix("Input should be ")


def _literal_hint(err: Mapping[str, Any]) -> str:
    allowed = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
    return suggest(err.get("input"), allowed)


def _clean_loc(loc: Loc, data: Any, keep_last: bool) -> tuple[Loc, bool]:
    """Keep the segments that exist in the data (drop schema tags); report whether a key was bad."""
    out: list[Any] = []
    node, is_key = data, False
    for i, seg in enumerate(loc):
        if seg == "[key]":
            is_key = True
            break
        if isinstance(node, dict) and _has_key(node, seg):
            out.append(seg)
            node = node[seg]
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            out.append(seg)
            node = node[seg]
        elif keep_last and i == len(loc) - 1 and isinstance(seg, str):
            out.append(seg)
    return tuple(out), is_key


def _has_key(node: dict, seg: Any) -> bool:
    try:
        return seg in node
    except TypeError:
        return False


def _problems_of(err: Mapping[str, Any], data: Any, root: type[BaseModel]) -> list[Problem]:
    """One pydantic error -> problems with clean YAML paths (a `spec_issues` error holds several)."""
    kind = err["type"]
    if kind == "spec_issues":
        base, _ = _clean_loc(tuple(err["loc"]), data, keep_last=False)
        return [Problem(base + tuple(i.loc), i.message, i.value) for i in err["ctx"]["issues"]]
    if _after_validation_artifact(err):
        return []
    loc, is_key = _clean_loc(tuple(err["loc"]), data, keep_last=kind in ("missing", "extra_forbidden"))
    if kind == "missing":
        return [Problem(loc, f"required key `{loc[-1] if loc else '?'}` is missing")]
    if kind == "extra_forbidden":
        return [Problem(loc, _unknown_key_message(loc, root))]
    if kind == "recursion_loop":
        return [Problem(loc, "an alias refers to itself; write the value out instead")]
    if is_key:
        return [Problem(loc, f"the name `{err.get('input')}` is not allowed; expected {_phrase(err)}")]
    return [Problem(loc, f"got `{show(err.get('input'))}`; expected {_phrase(err)}")]


def _after_validation_artifact(err: Mapping[str, Any]) -> bool:
    """Pydantic adds "at least 1 item after validation" when every item of a list failed: noise."""
    value, ctx = err.get("input"), err.get("ctx") or {}
    if err["type"] != "too_short" or not isinstance(value, list | tuple | dict):
        return False
    return len(value) >= ctx.get("min_length", 0)


def _unknown_key_message(loc: Loc, root: type[BaseModel]) -> str:
    key = loc[-1] if loc else "?"
    model = model_at(root, loc[:-1])
    allowed = [f.alias or name for name, f in model.model_fields.items()] if model else []
    hint = suggest(key, allowed)
    listing = f" (allowed here: {', '.join(allowed)})" if allowed else ""
    return f"unknown key `{key}`{listing}{hint}"


def model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The record class that validates the mapping at YAML path `loc`, if that is a record."""
    annotation: Any = root
    for seg in loc:
        model = _as_model(annotation)
        if model is not None and isinstance(seg, str):
            field = next((f for n, f in model.model_fields.items() if seg in (n, f.alias)), None)
            if field is None:
                return None
            annotation = field.annotation
            continue
        annotation = _element_type(annotation)
        if annotation is None:
            return None
    return _as_model(annotation)


def _unwrap(annotation: Any) -> list[Any]:
    """The alternatives of an annotation, with Annotated and Optional removed."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [a for arg in typing.get_args(annotation) for a in _unwrap(arg)]
    return [annotation]


def _as_model(annotation: Any) -> type[BaseModel] | None:
    for alt in _unwrap(annotation):
        if isinstance(alt, type) and issubclass(alt, BaseModel):
            return alt
    return None


def _element_type(annotation: Any) -> Any:
    """The value type of a dict or the item type of a list/tuple annotation."""
    for alt in _unwrap(annotation):
        origin, args = typing.get_origin(alt), typing.get_args(alt)
        if origin is dict and len(args) == 2:
            return args[1]
        if origin in (list, tuple) and args:
            return args[0]
    return None


def position_of(loc: Loc, positions: Mapping[Loc, Position]) -> Position | None:
    """Where the longest written prefix of `loc` is in the file."""
    for end in range(len(loc), -1, -1):
        pos = positions.get(tuple(loc[:end]))
        if pos is not None:
            return pos
    return None


def collect_problems(err: ValidationError, data: Any, root: type[BaseModel]) -> list[Problem]:
    """All problems of a ValidationError, de-duplicated, in the order pydantic found them."""
    seen: dict[tuple[str, str], Problem] = {}
    for e in err.errors(include_url=False):
        for p in _problems_of(e, data, root):
            seen.setdefault((yaml_path(p.loc), p.message), p)
    return list(seen.values())


def describe_problem(p: Problem, positions: Mapping[Loc, Position]) -> str:
    """`line 7, `sweep.batch[2]`: got `-1`; expected a number >= 1`."""
    pos = position_of(p.loc, positions)
    where = f"line {pos[0]}, " if pos else ""
    path = yaml_path(p.loc) or "top level"
    value = "" if p.value is NO_VALUE else f" (got `{show(p.value)}`)"
    return f"{where}`{path}`: {p.message}{value}"


def format_problems(source: str, problems: list[Problem], positions: Mapping[Loc, Position]) -> str:
    """One paragraph naming the file and up to MAX_PROBLEMS problems, sorted by line."""
    def line_of(p: Problem) -> int:
        pos = position_of(p.loc, positions)
        return pos[0] if pos else 0

    ordered = sorted(problems, key=line_of)
    shown = [describe_problem(p, positions) for p in ordered[:MAX_PROBLEMS]]
    if len(problems) == 1:
        return _end(f"Spec {source} is invalid: {shown[0]}")
    more = f"; and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
    listed = "; ".join(f"({i}) {text.rstrip('.')}" for i, text in enumerate(shown, 1))
    return _end(f"Spec {source} has {len(problems)} problems: {listed}{more}")


def _end(sentence: str) -> str:
    return sentence if sentence.endswith((".", "?", "!")) else sentence + "."
