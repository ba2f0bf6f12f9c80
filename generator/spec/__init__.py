"""The experiment spec: YAML loading, validation into frozen pydantic records, JSON Schema.

`load_spec(path)` is the entry point; after it returns, code trusts the records (STYLE 4).
"""

from generator.spec.fields import BUILTIN_AXES, DTYPES, TRANSFORM_FIELDS
from generator.spec.loader import (
    LoadedSpec,
    canonical_json,
    load_spec,
    load_spec_text,
    spec_files,
    spec_from_json,
    spec_json_schema,
    spec_to_json,
    validate_specs,
)
from generator.spec.model import ComparePair, Measure, Regression, Spec, Sweep, Tolerance
from generator.spec.sources import Calibration, Fp16Options, InputSpec, ModelSpec, QuantizeOptions

__all__ = [
    "BUILTIN_AXES",
    "DTYPES",
    "TRANSFORM_FIELDS",
    "Calibration",
    "ComparePair",
    "Fp16Options",
    "InputSpec",
    "LoadedSpec",
    "Measure",
    "ModelSpec",
    "QuantizeOptions",
    "Regression",
    "Spec",
    "Sweep",
    "Tolerance",
    "canonical_json",
    "load_spec",
    "load_spec_text",
    "spec_files",
    "spec_from_json",
    "spec_json_schema",
    "spec_to_json",
    "validate_specs",
]
