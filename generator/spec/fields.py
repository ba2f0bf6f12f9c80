"""The building blocks of the spec's records: strict scalar types, name patterns, sweep axes, the base record.

Shared by `sources` (model versions and inputs) and `model` (the sweep, measurement and the whole spec), so
that every record rejects the same things the same way: YAML `"4"` is not the size 4, `1` is not `true`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic.functional_validators import AfterValidator

from generator.axes import AXES
from generator.bounds import (  # re-exported: the spec's limits
    MAX_ITERATIONS,
    MAX_REPEATS,
    MAX_SAMPLES,
    MAX_SEED,
    MAX_SIZE,
    MAX_THREADS,
    MAX_WARMUP,
)
from generator.spec.errors_fmt import Issue, expect, fail

# The fields of ModelSpec that transform a model; generator.versions keys its registry on these names.
TRANSFORM_FIELDS: tuple[str, ...] = ("quantize", "fp16")

SLUG_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
SLUG_MAX_LENGTH = 64
PLACEHOLDER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
SLUG_HELP = "lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit"

DType = Literal["float32", "float16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]
OptimizationLevel = Literal["disable", "basic", "extended", "all"]
Provider = Literal["cpu", "cuda", "tensorrt", "openvino", "dml", "coreml", "rocm"]
Percentile = Literal["p50", "p90", "p95", "p99"]
# Each percentile name's quantile: the one map the runner, the analysis and `perfsite generate` read.
QUANTILES: dict[str, float] = {name: int(name[1:]) / 100 for name in get_args(Percentile)}
QuantizeMode = Literal["dynamic", "static_qdq", "static_qoperator", "int4"]
QuantType = Literal["int8", "uint8"]
DTYPES: tuple[str, ...] = get_args(DType)
BUILTIN_AXES: tuple[str, ...] = AXES


def _matching(pattern: str, help_text: str) -> BeforeValidator:
    def check(value: Any) -> Any:
        if not isinstance(value, str) or not re.fullmatch(pattern, value):
            expect(help_text)
        return value

    return BeforeValidator(check)


Text = Annotated[str, Strict()]
NonEmptyText = Annotated[str, Strict(), Field(min_length=1)]
Flag = Annotated[bool, Strict()]
PositiveInt = Annotated[int, Strict(), Field(ge=1)]
# Sweep values are stored in int64 columns and passed to onnxruntime as C ints: 2**63 validated, then failed
# its trial and ended `run` in an overflow traceback when the failed row was written. Sizes (batch, placeholder
# dims) stop at the largest int32, thread and request counts at what any machine could run.
SizeValue = Annotated[int, Strict(), Field(ge=1, le=MAX_SIZE)]
ThreadCount = Annotated[int, Strict(), Field(ge=1, le=MAX_THREADS)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
WarmupCount = Annotated[int, Strict(), Field(ge=0, le=MAX_WARMUP)]
IterationCount = Annotated[int, Strict(), Field(ge=1, le=MAX_ITERATIONS)]
RepeatCount = Annotated[int, Strict(), Field(ge=1, le=MAX_REPEATS)]
SampleCount = Annotated[int, Strict(), Field(ge=1, le=MAX_SAMPLES)]
Seed = Annotated[int, Strict(), Field(ge=0, le=MAX_SEED)]
PositiveFloat = Annotated[float, Strict(), Field(gt=0)]
NonNegativeFloat = Annotated[float, Strict(), Field(ge=0)]
Slug = Annotated[
    str, Field(pattern=SLUG_PATTERN, max_length=SLUG_MAX_LENGTH), _matching(SLUG_PATTERN, SLUG_HELP)
]
# Mapping keys: the pattern goes into the schema as `propertyNames` (pydantic would emit `patternProperties`,
# which lets other names through).
VersionName = Annotated[str, Field(max_length=SLUG_MAX_LENGTH), _matching(SLUG_PATTERN, SLUG_HELP)]
PlaceholderName = Annotated[
    str, Field(pattern=PLACEHOLDER_PATTERN), _matching(PLACEHOLDER_PATTERN, "letters, digits and `_`")
]
PACKAGE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
PackageName = Annotated[str, _matching(PACKAGE_PATTERN, "a Python import name, e.g. `rapidocr_onnxruntime`")]
PathText = Annotated[
    str, Field(min_length=1), _matching(r"[^\x00]+", "a non-empty file path, relative to the spec file")
]


def _check_dim(value: Any) -> Any:
    is_size = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if not is_size and not (isinstance(value, str) and re.fullmatch(PLACEHOLDER_PATTERN, value)):
        expect("a size (an integer >= 1) or a placeholder name such as `batch` or `seq_len`")
    return value


def _check_axis_value(value: Any) -> Any:
    if not isinstance(value, bool | int | str):
        expect("a value of that sweep axis: an integer, a string or true/false")
    return value


Dim = Annotated[PositiveInt | PlaceholderName, BeforeValidator(_check_dim)]
AxisValue = Annotated[Flag | Annotated[int, Strict()] | Text, BeforeValidator(_check_axis_value)]
Selection = dict[Text, AxisValue]


def _unique(what: str) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A check that each value of a list is listed once; `what` names the list's values in the message (a
    sweep axis, the targets), so that it speaks of the field the user wrote."""
    def check(values: tuple[Any, ...]) -> tuple[Any, ...]:
        seen: set[tuple[type, Any]] = set()
        for i, v in enumerate(values):
            if (type(v), v) in seen:
                fail(Issue((i,), f"this value is listed twice; each value of {what} must be unique", v))
            seen.add((type(v), v))
        return values

    return check


def axis(item: Any) -> Any:
    """A sweep axis: a non-empty list of unique values."""
    return Annotated[tuple[item, ...], Field(min_length=1), AfterValidator(_unique("a sweep axis"))]


def unique_list(item: Any, what: str) -> Any:
    """A list of unique values, possibly empty (the spec's `targets`); `what` names its values in messages."""
    return Annotated[tuple[item, ...], AfterValidator(_unique(what))]


class Record(BaseModel):
    """Every spec record: immutable, unknown keys refused (the loader turns them into "did you mean"), no NaN."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)


def _check_tensor_value(value: Any) -> Any:
    try:
        array = np.asarray(value)
    except (ValueError, TypeError, OverflowError, RecursionError):
        array = None
    if array is None or array.dtype.kind not in "biuf" or isinstance(value, dict):
        expect("a number, true/false, or a (nested) list of them with equal-length rows")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        # JSON has no NaN or infinity: the stored spec would hold `null` and no later build could read it.
        expect("finite numbers (not .nan, .inf or -.inf); for a tensor of NaNs, use an input `file:` (.npy)")
    return value


TensorValue = Annotated[
    Any,
    BeforeValidator(_check_tensor_value),
    Field(json_schema_extra={"anyOf": [{"type": "number"}, {"type": "boolean"}, {"type": "array"}]}),
]
