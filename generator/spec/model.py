"""The experiment spec as frozen pydantic records: everything a file under `experiments/` may say.

Validation happens once, here (STYLE 4): types and ranges on each field, rules joining fields in each
record's validator, and rules across the whole spec (version references, placeholders, sweep values) in
`Spec`. Rules report through `errors_fmt.fail` with the YAML path below the record, so the loader can name
the line. Scalars are strict (YAML `"4"` is not the batch size 4, `1` is not `true`). After loading, code
trusts these records.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator
from pydantic.functional_validators import AfterValidator

from generator.spec.errors_fmt import Issue, expect, fail, suggest

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
QuantizeMode = Literal["dynamic", "static_qdq", "static_qoperator"]
QuantType = Literal["int8", "uint8"]
DTYPES: tuple[str, ...] = get_args(DType)
BUILTIN_AXES: tuple[str, ...] = (
    "batch", "threads", "concurrency", "optimization_level", "provider", "spinning", "inter_op_threads",
)


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
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
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


def _unique(values: tuple[Any, ...]) -> tuple[Any, ...]:
    seen: set[tuple[type, Any]] = set()
    for i, v in enumerate(values):
        if (type(v), v) in seen:
            fail(Issue((i,), "this value is listed twice; each value of a sweep axis must be unique", v))
        seen.add((type(v), v))
    return values


def _axis(item: Any) -> Any:
    """A sweep axis: a non-empty list of unique values."""
    return Annotated[tuple[item, ...], Field(min_length=1), AfterValidator(_unique)]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)


class Calibration(_Record):
    """Calibration data for static quantization."""

    samples: PositiveInt = Field(16, description="Number of calibration samples (one model feed each).")
    data: PathText | None = Field(
        None,
        description="`.npz` file of calibration inputs (one array per input name, first axis = sample), "
        "relative to the spec file. Omitted: random inputs generated like the `inputs` section says.",
    )
    seed: NonNegativeInt = Field(0, description="Random seed for generated calibration inputs.")

    @model_validator(mode="after")
    def _npz_only(self) -> Calibration:
        if self.data is not None and not self.data.endswith(".npz"):
            fail(Issue(("data",), "calibration data is a `.npz` file (one array per input name)", self.data))
        return self


class QuantizeOptions(_Record):
    """INT8 quantization with onnxruntime.quantization."""

    mode: QuantizeMode = Field(
        description="`dynamic` (weights only, activations at run time), `static_qdq` (QuantizeLinear/"
        "DequantizeLinear pairs, calibrated) or `static_qoperator` (quantized operators, calibrated)."
    )
    calibration: Calibration = Field(
        default_factory=Calibration, description="Calibration settings; static modes only."
    )
    per_channel: Flag = Field(False, description="Quantize weights per output channel instead of per tensor.")
    weight_type: QuantType = Field("int8", description="Integer type of quantized weights.")
    activation_type: QuantType = Field("uint8", description="Integer type of activations; static modes only.")
    reduce_range: Flag = Field(False, description="Use 7-bit weights (helps on CPUs without VNNI).")
    preprocess: Flag = Field(
        True, description="Run `quant_pre_process` (shape inference, graph cleanup) before quantizing."
    )
    op_types: tuple[NonEmptyText, ...] | None = Field(
        None, min_length=1, description="Only quantize these operator types (default: all supported)."
    )
    exclude_nodes: tuple[NonEmptyText, ...] = Field((), description="Node names to leave in floating point.")

    @model_validator(mode="after")
    def _static_only_fields(self) -> QuantizeOptions:
        if self.mode == "dynamic":
            # Compared with the defaults, not `model_fields_set`: stored copies spell every default out.
            defaults = {"calibration": Calibration(), "activation_type": "uint8"}
            given = [f for f, default in defaults.items() if getattr(self, f) != default]
            if given:
                message = "only static modes use it; remove it or choose mode `static_qdq`"
                fail(*(Issue((f,), message) for f in given))
        return self


class Fp16Options(_Record):
    """Conversion of float32 weights and operators to float16 (onnxconverter-common style)."""

    keep_io_types: Flag = Field(True, description="Keep float32 model inputs and outputs (casts inserted).")
    op_block_list: tuple[NonEmptyText, ...] | None = Field(
        None, description="Operator types to keep in float32 (default: the converter's own list)."
    )


def _fp16_flag(value: Any) -> Any:
    if value is True:
        return {}
    if value is False:
        expect("`true` or a mapping of options; to keep the model as it is, remove `fp16`")
    return value


def _allow_fp16_true(schema: dict[str, Any]) -> None:
    flag = {"const": True, "description": "FP16 with default options"}
    schema["properties"]["fp16"]["anyOf"].insert(0, flag)


class ModelSpec(_Record):
    """One model version: a source (a file, or another version) and at most one transform."""

    model_config = ConfigDict(json_schema_extra=_allow_fp16_true)

    path: PathText | None = Field(
        None,
        description="ONNX file: relative to the spec file (must stay inside the project unless "
        "`--allow-outside`), or relative to the installed package named by `package`.",
    )
    package: PackageName | None = Field(
        None, description="Installed Python package (import name) whose folder `path` is relative to."
    )
    from_: str | None = Field(None, alias="from", description="Name of the version this one transforms.")
    quantize: QuantizeOptions | None = Field(None, description="Quantize the `from` model to INT8.")
    fp16: Annotated[Fp16Options | None, BeforeValidator(_fp16_flag)] = Field(
        None, description="Convert the `from` model to float16; `true` means default options."
    )

    @model_validator(mode="after")
    def _one_source_one_transform(self) -> ModelSpec:
        issues = _source_issues(self)
        transforms = [f for f in TRANSFORM_FIELDS if getattr(self, f) is not None]
        if len(transforms) > 1:
            both = " and ".join(transforms)
            message = f"one transform per version ({both} given); chain versions with `from`"
            issues.append(Issue((transforms[1],), message))
        if self.from_ is not None and not transforms:
            issues.append(Issue(("from",), f"a version made `from` another needs a transform "
                                f"({' or '.join(TRANSFORM_FIELDS)}); otherwise it is the same model"))
        if issues:
            fail(*issues)
        return self

    def transform(self) -> tuple[str, BaseModel] | None:
        """(field name, options) of this version's transform, or None for a plain file."""
        for name in TRANSFORM_FIELDS:
            options = getattr(self, name)
            if options is not None:
                return name, options
        return None


def _source_issues(m: ModelSpec) -> list[Issue]:
    if m.package is not None and m.path is None:
        return [Issue(("package",), "`package` needs `path`: the model file inside that package")]
    if m.path is None and m.from_ is None:
        return [Issue((), "a version needs a source: `path` (an ONNX file) or `from` (another version)")]
    if m.path is not None and m.from_ is not None:
        return [Issue(("from",), "give either `path` or `from`, not both")]
    if m.package is not None and (m.path.startswith("/") or ".." in re.split(r"[\\/]", m.path)):
        return [Issue(("path",), "a path inside a package is relative and has no `..`", m.path)]
    return []


def _check_tensor_value(value: Any) -> Any:
    try:
        array = np.asarray(value)
    except (ValueError, TypeError, OverflowError, RecursionError):
        array = None
    if array is None or array.dtype.kind not in "biuf" or isinstance(value, dict):
        expect("a number, true/false, or a (nested) list of them with equal-length rows")
    return value


TensorValue = Annotated[
    Any,
    BeforeValidator(_check_tensor_value),
    Field(json_schema_extra={"anyOf": [{"type": "number"}, {"type": "boolean"}, {"type": "array"}]}),
]


class InputSpec(_Record):
    """How to feed one model input: random data of a shape, a fixed value, or a file."""

    shape: tuple[Dim, ...] | None = Field(
        None, description="Random data of this shape; names (e.g. `batch`, `seq_len`) are placeholders "
        "bound by sweep axes of the same name.",
    )
    dtype: DType | None = Field(
        None, description="Element type; omitted: the type the model declares for this input (when given, it "
        "must match the model).",
    )
    range: tuple[Annotated[float, Strict()], Annotated[float, Strict()]] | None = Field(
        None, description="Random values drawn uniformly from `[low, high)` (default: standard normal for "
        "floats, [0, 100) for integers); only with `shape`.",
    )
    value: TensorValue | None = Field(None, description="Fixed value: a number or a nested list.")
    file: PathText | None = Field(
        None, description="`.npy` or `.npz` file with the tensor, relative to the spec file."
    )
    key: NonEmptyText | None = Field(
        None, description="Array name inside an `.npz` file; required when the file holds several arrays."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> InputSpec:
        kinds = [k for k in ("shape", "value", "file") if getattr(self, k) is not None]
        if len(kinds) != 1:
            given = ", ".join(kinds) or "none"
            fail(Issue((), f"give exactly one of `shape`, `value` or `file` (given: {given})"))
        issues = _input_kind_issues(self)
        if issues:
            fail(*issues)
        return self

    @property
    def placeholders(self) -> tuple[str, ...]:
        """Placeholder names in the shape, in order, without repeats."""
        return tuple(dict.fromkeys(d for d in self.shape or () if isinstance(d, str)))


def _input_kind_issues(s: InputSpec) -> list[Issue]:
    issues = []
    if s.range is not None:
        issues += _range_issues(s)
    if s.key is not None and not (s.file or "").endswith(".npz"):
        issues.append(Issue(("key",), "`key` names an array inside an `.npz` file; only with `file: x.npz`"))
    if s.file is not None and not s.file.endswith((".npy", ".npz")):
        issues.append(Issue(("file",), "an input file must be `.npy` or `.npz`", s.file))
    if s.value is not None and s.dtype is not None:
        issues += _value_issues(s.value, s.dtype)
    return issues


def _range_issues(s: InputSpec) -> list[Issue]:
    low, high = s.range
    if s.shape is None:
        return [Issue(("range",), "`range` is only used with `shape` (random data)")]
    if s.dtype == "bool":
        return [Issue(("range",), "random booleans take no `range`")]
    if not low < high:
        return [Issue(("range",), "expected `[low, high]` with low < high", list(s.range))]
    if s.dtype is not None and s.dtype.startswith(("int", "uint")):
        info = np.iinfo(s.dtype)
        if not (float(low).is_integer() and float(high).is_integer()):
            return [Issue(("range",), f"an integer range for dtype {s.dtype}", list(s.range))]
        if low < info.min or high - 1 > info.max:
            return [Issue(("range",), f"{s.dtype} holds [{info.min}, {info.max}]", list(s.range))]
    return []


def _value_issues(value: Any, dtype: str) -> list[Issue]:
    array = np.asarray(value)
    if array.size == 0:  # numpy types an empty list float64: nothing to check
        return []
    if dtype == "bool" and array.dtype.kind != "b":
        return [Issue(("value",), "dtype bool needs true/false values", value)]
    if dtype.startswith(("int", "uint")):
        if array.dtype.kind == "f":
            return [Issue(("value",), f"dtype {dtype} needs integer values", value)]
        info = np.iinfo(dtype)
        if array.min() < info.min or array.max() > info.max:
            return [Issue(("value",), f"{dtype} holds [{info.min}, {info.max}]", value)]
    if dtype.startswith("float") and np.abs(array.astype(np.float64)).max() > np.finfo(dtype).max:
        return [Issue(("value",), f"too large for {dtype}", value)]
    return []


PlaceholderValues = _axis(PositiveInt)


def _no_misspelt_axes(data: Any) -> Any:
    """An unknown sweep key becomes a placeholder; catch misspelt built-in axes before that happens."""
    if isinstance(data, dict):
        issues = []
        for key in data:
            if key in BUILTIN_AXES:
                continue
            if not isinstance(key, str) or not re.fullmatch(PLACEHOLDER_PATTERN, key):
                issues.append(Issue((key,), "a placeholder name is made of letters, digits and `_`"))
            elif hint := suggest(key, BUILTIN_AXES):
                issues.append(Issue((key,), f"unknown sweep axis `{key}`{hint}"))
        if issues:
            fail(*issues)
    return data


class Sweep(_Record):
    """The configuration axes; the plan is their cartesian product minus `exclude`."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={"additionalProperties": {
            "description": "A placeholder used in an input shape (e.g. `seq_len`): its values.",
            "type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1, "uniqueItems": True,
        }},
    )
    # Extra keys are placeholders bound into input shapes; pydantic validates them with this type.
    __pydantic_extra__: dict[str, PlaceholderValues] = Field(init=False)

    batch: _axis(PositiveInt) = Field((1,), description="Batch sizes, bound to the `batch` placeholder.")
    threads: _axis(PositiveInt) = Field((1,), description="Intra-op thread counts of the session.")
    concurrency: _axis(PositiveInt) = Field(
        (1,), description="Requests in flight at once on one shared session."
    )
    optimization_level: _axis(OptimizationLevel) = Field(
        ("all",), description="Graph optimization levels: disable, basic, extended, all."
    )
    provider: _axis(Provider) = Field(
        ("cpu",), description="Execution providers: cpu, cuda, tensorrt, openvino, dml, coreml, rocm."
    )
    spinning: _axis(Flag) = Field((True,), description="Whether intra-op threads spin while waiting.")
    inter_op_threads: _axis(PositiveInt) = Field(
        (1,), description="Inter-op thread counts (parallel execution mode when > 1)."
    )

    _check_keys = model_validator(mode="before")(_no_misspelt_axes)

    @property
    def placeholders(self) -> dict[str, tuple[int, ...]]:
        """The extra axes (placeholders used in input shapes), in spec order."""
        return dict(self.model_extra or {})

    def axes(self) -> dict[str, tuple[Any, ...]]:
        """Every axis and its values: built-in axes first, then placeholders."""
        return {**{a: getattr(self, a) for a in BUILTIN_AXES}, **self.placeholders}


class Measure(_Record):
    """How each trial is timed."""

    warmup: NonNegativeInt = Field(10, description="Untimed requests before timing, per measurement process.")
    min_iterations: PositiveInt = Field(50, description="Timed requests at least, per measurement process.")
    min_seconds: NonNegativeFloat = Field(1.0, description="Keep timing at least this long, per process.")
    max_seconds: PositiveFloat = Field(
        60.0, description="Stop timing after this long even if `min_iterations` is not reached, per process."
    )
    percentile: Percentile = Field("p90", description="Tail latency reported next to the median: p50, p90, "
                                   "p95 or p99; also used by `latency_threshold_ms`.")
    repeats: PositiveInt = Field(3, description="Measurement processes per trial (the unit of repetition).")
    profile_iterations: PositiveInt = Field(20, description="Requests in the separate profiled pass.")
    timeout_s: PositiveFloat = Field(600.0, description="Kill a measurement process running longer.")

    @model_validator(mode="after")
    def _ordered_limits(self) -> Measure:
        issues = []
        if self.max_seconds < self.min_seconds:
            limit = f"must be >= min_seconds ({self.min_seconds})"
            issues.append(Issue(("max_seconds",), limit, self.max_seconds))
        if self.timeout_s <= self.max_seconds:
            limit = f"must be > max_seconds ({self.max_seconds}) so a process can finish before it is killed"
            issues.append(Issue(("timeout_s",), limit, self.timeout_s))
        if issues:
            fail(*issues)
        return self


class ComparePair(_Record):
    """Two versions to compare on the report's comparison page."""

    a: Text = Field(description="The baseline version.")
    b: Text | None = Field(None, description="The candidate version; omitted: the version with the best "
                           "throughput within `latency_threshold_ms`.")
    config: Selection | None = Field(None, description="Compare at this (partial) configuration only; "
                                     "omitted: at every configuration both versions ran.")


class Regression(_Record):
    """When a re-run counts as a regression against the stored results."""

    latency_ratio: Annotated[float, Strict(), Field(ge=1.0)] = Field(
        1.05, description="Regression when the new median latency exceeds the old one times this."
    )
    throughput_ratio: Annotated[float, Strict(), Field(gt=0.0, le=1.0)] = Field(
        0.95, description="Regression when the new throughput falls below the old one times this."
    )


class Tolerance(_Record):
    """How closely a version's outputs must agree with the version it was made from."""

    max_abs: NonNegativeFloat | None = Field(None, description="Largest allowed absolute difference.")
    cosine_min: Annotated[float, Strict(), Field(ge=-1.0, le=1.0)] | None = Field(
        None, description="Smallest allowed cosine similarity of flattened outputs."
    )

    @model_validator(mode="after")
    def _something(self) -> Tolerance:
        if self.max_abs is None and self.cosine_min is None:
            fail(Issue((), "give `max_abs`, `cosine_min` or both"))
        return self


class Spec(_Record):
    """An experiment: model versions, their inputs, the configuration sweep and what to report."""

    name: Slug = Field(description=f"Experiment name ({SLUG_HELP}); the results folder is named after it.")
    description: Text = Field("", description="The question the experiment answers; shown on its page.")
    models: dict[VersionName, ModelSpec] = Field(
        min_length=1,
        description="Model versions by name (names: " + SLUG_HELP + "), in report order.",
        json_schema_extra={"propertyNames": {"pattern": SLUG_PATTERN, "maxLength": SLUG_MAX_LENGTH}},
    )
    inputs: dict[NonEmptyText, InputSpec] = Field(
        min_length=1, description="Model inputs by name: how to feed each one."
    )
    sweep: Sweep = Field(default_factory=Sweep, description="Configuration axes and their values.")
    exclude: tuple[Selection, ...] = Field(
        (), description="Partial configurations to leave out; each removes every combination matching all "
        "of its items."
    )
    measure: Measure = Field(default_factory=Measure, description="Timing settings of every trial.")
    latency_threshold_ms: PositiveFloat | None = Field(
        None, description="Latency budget (at `measure.percentile`) for the sweet spot and best-throughput "
        "choices; omitted: no budget."
    )
    compare: tuple[ComparePair, ...] = Field((), description="Version pairs to compare.")
    profile: tuple[Selection, ...] = Field(
        (), description="Partial configurations to profile per node (each matched against the plan; `{}` "
        "profiles every configuration)."
    )
    regression: Regression = Field(default_factory=Regression, description="Regression thresholds.")
    whatif: dict[NonEmptyText, PositiveFloat] = Field(
        default_factory=dict, description="Operator type -> speed-up factor for the what-if estimate."
    )
    tolerance: Tolerance | None = Field(None, description="Output agreement required between versions.")

    @model_validator(mode="after")
    def _cross_field_rules(self) -> Spec:
        axes = self.sweep.axes()
        issues = [*_version_issues(self.models), *_placeholder_issues(self.inputs, self.sweep)]
        issues += _selection_issues("exclude", self.exclude, axes, allow_empty=False)
        issues += _selection_issues("profile", self.profile, axes, allow_empty=True)
        issues += _compare_issues(self.compare, self.models, axes)
        if issues:
            fail(*issues)
        return self

    def version_chain(self, name: str) -> tuple[str, ...]:
        """Version names from the root source file to `name`, e.g. ("fp32", "int8-static")."""
        chain = [name]
        while (parent := self.models[chain[0]].from_) is not None:
            chain.insert(0, parent)
        return tuple(chain)

    def version_order(self) -> tuple[str, ...]:
        """All version names, each after the one it is made from, otherwise in spec order."""
        ordered: dict[str, None] = {}
        for name in self.models:
            ordered.update(dict.fromkeys(self.version_chain(name)))
        return tuple(ordered)


def _version_issues(models: dict[str, ModelSpec]) -> list[Issue]:
    issues = []
    for name, m in models.items():
        if m.from_ is not None and m.from_ not in models:
            issues.append(Issue(("models", name, "from"), _not_a_version(m.from_, models)))
    if issues:
        return issues
    in_reported_cycle: set[str] = set()
    for name in models:
        seen = [name]
        while (parent := models[seen[-1]].from_) is not None and parent not in seen:
            seen.append(parent)
        if parent == name and name not in in_reported_cycle:
            in_reported_cycle.update(seen)
            cycle = " -> ".join([*seen, name])
            issues.append(Issue(("models", name, "from"), f"versions made `from` each other: cycle {cycle}"))
    return issues


def _not_a_version(name: str, models: dict[str, ModelSpec]) -> str:
    return f"`{name}` is not a version of this spec (versions: {', '.join(models)}){suggest(name, models)}"


def _placeholder_issues(inputs: dict[str, InputSpec], sweep: Sweep) -> list[Issue]:
    issues, used = [], set()
    for name, spec in inputs.items():
        for i, dim in enumerate(spec.shape or ()):
            if not isinstance(dim, str) or dim == "batch" or dim in sweep.placeholders:
                used.add(dim)
            elif dim in BUILTIN_AXES:
                message = f"`{dim}` is a session setting, not a size; use `batch` or your own placeholders"
                issues.append(Issue(("inputs", name, "shape", i), message))
            else:
                hint = suggest(dim, sweep.placeholders)
                message = f"placeholder `{dim}` is not bound: add `sweep.{dim}: [...]` with its values{hint}"
                issues.append(Issue(("inputs", name, "shape", i), message))
    for key in sweep.placeholders:
        if key not in used:
            hint = suggest(key, [*BUILTIN_AXES, *(u for u in used if isinstance(u, str))])
            message = f"`{key}` is not a sweep axis and no input shape uses it as a placeholder{hint}"
            issues.append(Issue(("sweep", key), message))
    if "batch" not in used and sweep.batch != (1,):
        message = ("no input shape uses the `batch` placeholder, so every batch size would feed the same "
                   "tensors; put `batch` in a shape or leave sweep.batch at [1]")
        issues.append(Issue(("sweep", "batch"), message))
    return issues


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _selection_issues(field: str, items: tuple[dict, ...], axes: dict[str, tuple], allow_empty: bool) -> list:
    issues = []
    for i, item in enumerate(items):
        if not item and not allow_empty:
            issues.append(Issue((field, i), "an empty entry would match every configuration; name some axes"))
        issues += _selection_item_issues((field, i), item, axes)
    return issues


def _selection_item_issues(loc: tuple, item: dict[str, Any], axes: dict[str, tuple]) -> list[Issue]:
    issues = []
    for key, value in item.items():
        if key not in axes:
            issues.append(Issue((*loc, key), f"`{key}` is not a sweep axis{suggest(key, axes)} (axes: "
                                f"{', '.join(axes)})"))
        elif not any(_same(value, v) for v in axes[key]):
            allowed = ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in axes[key])
            issues.append(Issue((*loc, key), f"not among the values of sweep.{key} ({allowed})", value))
    return issues


def _compare_issues(pairs: tuple[ComparePair, ...], models: dict[str, ModelSpec], axes: dict) -> list[Issue]:
    issues = []
    for i, pair in enumerate(pairs):
        for side in ("a", "b"):
            version = getattr(pair, side)
            if version is not None and version not in models:
                issues.append(Issue(("compare", i, side), _not_a_version(version, models)))
        if pair.a == pair.b:
            issues.append(Issue(("compare", i, "b"), "a version compared with itself; name another version"))
        issues += _selection_item_issues(("compare", i, "config"), pair.config or {}, axes)
    return issues
