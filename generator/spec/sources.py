"""Where a model version comes from (a file, a package, another version plus a transform) and how each input
is fed (random data of a shape, a fixed value, a file), as frozen records with their own rules."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

from generator.spec.errors_fmt import Issue, expect, fail
from generator.spec.fields import (
    TRANSFORM_FIELDS,
    Dim,
    DType,
    Flag,
    NonEmptyText,
    PackageName,
    PathText,
    QuantizeMode,
    QuantType,
    Record,
    SampleCount,
    Seed,
    TensorValue,
)


class Calibration(Record):
    """Calibration data for static quantization."""

    samples: SampleCount = Field(16, description="Number of calibration samples (one model feed each).")
    data: PathText | None = Field(
        None,
        description="`.npz` file of calibration inputs (one array per input name, first axis = sample), "
        "relative to the spec file. Omitted: random inputs generated like the `inputs` section says.",
    )
    seed: Seed = Field(0, description="Random seed for generated calibration inputs.")

    @model_validator(mode="after")
    def _npz_only(self) -> Calibration:
        if self.data is not None and not self.data.endswith(".npz"):
            fail(Issue(("data",), "calibration data is a `.npz` file (one array per input name)", self.data))
        return self


class QuantizeOptions(Record):
    """INT8 quantization with onnxruntime.quantization."""

    mode: QuantizeMode = Field(
        description="`dynamic` (weights only, activations at run time), `static_qdq` (QuantizeLinear/"
        "DequantizeLinear pairs, calibrated), `static_qoperator` (quantized operators, calibrated) or `int4` "
        "(4-bit weights of MatMul nodes in blocks, onnxruntime's MatMulNBits: weight-only, for decoders)."
    )
    # Left out of the stored spec at its default, so that specs written before `int4` keep their sha256.
    block_size: Annotated[int, Strict(), Field(ge=16, le=256)] = Field(
        32, exclude_if=lambda value: value == 32,
        description="`int4` only: weights per quantization block (a power of two, 16 to 256); smaller blocks keep "
                    "more precision and cost more scales.")
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
        if self.block_size & (self.block_size - 1):
            fail(Issue(("block_size",), "a power of two: 16, 32, 64, 128 or 256", self.block_size))
        if self.mode != "int4" and self.block_size != 32:
            fail(Issue(("block_size",), "only mode `int4` uses it; remove it or choose mode `int4`"))
        if self.mode == "int4":
            # MatMulNBits quantizes MatMul weights per block: the INT8 modes' settings do not apply.
            defaults = {"calibration": Calibration(), "activation_type": "uint8", "per_channel": False,
                        "weight_type": "int8", "reduce_range": False, "op_types": None}
            given = [f for f, default in defaults.items() if getattr(self, f) != default]
            if given:
                fail(*(Issue((f,), "mode `int4` quantizes MatMul weights in blocks of `block_size` and does not use "
                             "it; remove it") for f in given))
        if self.mode == "dynamic":
            # Compared with the defaults, not `model_fields_set`: stored copies spell every default out.
            defaults = {"calibration": Calibration(), "activation_type": "uint8"}
            given = [f for f, default in defaults.items() if getattr(self, f) != default]
            if given:
                message = "only static modes use it; remove it or choose mode `static_qdq`"
                fail(*(Issue((f,), message) for f in given))
        return self


class Fp16Options(Record):
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


class ModelSpec(Record):
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
    engine: Literal["onnxruntime", "genai"] | None = Field(
        None, description="What generates this version's tokens in a generative experiment: `onnxruntime` "
        "(perfsite's own decode loop; the default) or `genai` (onnxruntime-genai's generator, installed with "
        "`perfsite[genai]`). A version made `from` another with only `engine` runs the same file on that engine.",
    )

    @model_validator(mode="after")
    def _one_source_one_transform(self) -> ModelSpec:
        issues = _source_issues(self)
        transforms = [f for f in TRANSFORM_FIELDS if getattr(self, f) is not None]
        if len(transforms) > 1:
            both = " and ".join(transforms)
            message = f"one transform per version ({both} given); chain versions with `from`"
            issues.append(Issue((transforms[1],), message))
        if self.from_ is not None and not transforms and self.engine is None:
            issues.append(Issue(("from",), f"a version made `from` another needs a transform "
                                f"({' or '.join(TRANSFORM_FIELDS)}) or an `engine`; otherwise it is the same model "
                                "run the same way"))
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


class InputSpec(Record):
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
    if array.size == 0:  # as a file of zero rows: an `ok` trial with a throughput of items never processed
        return [Issue(("value",), "an empty value; give at least one element", value)]
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
