"""The experiment spec: loading, every validation rule's message, JSON Schema, docs, and a fuzz test."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from support.cli import perfsite

import generator.spec as spec_package
from generator.errors import PerfsiteError, SpecError
from generator.spec import (
    TRANSFORM_FIELDS,
    Fp16Options,
    LoadedSpec,
    QuantizeOptions,
    load_spec,
    load_spec_text,
    spec_from_json,
    spec_json_schema,
    spec_to_json,
    validate_specs,
)

REPO = Path(__file__).resolve().parents[1]

EXAMPLE = """\
name: cnn-int8
description: Does static INT8 pay off for the example CNN?
models:
  fp32:        {path: models/cnn.onnx}
  int8-static: {from: fp32, quantize: {mode: static_qdq, calibration: {samples: 16}}}
  int8-dyn:    {from: fp32, quantize: {mode: dynamic}}
  ocr:         {package: rapidocr_onnxruntime, path: models/ch_PP-OCRv4_det_infer.onnx}
  half:        {from: fp32, fp16: {keep_io_types: true}}
inputs:
  input: {shape: [batch, 3, 64, 64], dtype: float32}
  ids:   {shape: [batch, seq_len], dtype: int64, range: [0, 1000]}
  sr:    {value: 16000, dtype: int64}
  img:   {file: data/img.npz, key: x}
sweep:
  batch: [1, 4, 8]
  threads: [1, 2]
  concurrency: [1, 2]
  optimization_level: [all]
  provider: [cpu]
  spinning: [true]
  inter_op_threads: [1]
  seq_len: [64, 128]
exclude:
  - {batch: 8, concurrency: 2}
measure: {warmup: 10, min_iterations: 50, min_seconds: 1.0, max_seconds: 60, percentile: p90, repeats: 3}
latency_threshold_ms: 20
compare:
  - {a: fp32, b: int8-static}
  - {a: fp32}
  - {a: fp32, b: int8-dyn, config: {batch: 1, threads: 2}}
profile:
  - {batch: 1, threads: 2}
regression: {latency_ratio: 1.05, throughput_ratio: 0.95}
whatif: {Conv: 2.0}
tolerance: {max_abs: 0.01, cosine_min: 0.999}
"""

MINIMAL = """\
name: tiny
models:
  fp32: {path: models/tiny.onnx}
inputs:
  x: {shape: [batch, 4], dtype: float32}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "experiments").mkdir()
    return root


@pytest.fixture
def spec_file(project: Path) -> Path:
    return project / "experiments" / "cnn.yaml"


def _load(spec_file: Path, text: str, allow_outside: bool = False) -> LoadedSpec:
    spec_file.write_text(text)
    return load_spec(spec_file, allow_outside=allow_outside)


def _error(spec_file: Path, text: str) -> str:
    with pytest.raises(SpecError) as err:
        _load(spec_file, text)
    return str(err.value)


def _edit(old: str, new: str, text: str = EXAMPLE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# --- the good spec ---------------------------------------------------------------------------------------


def test_example_spec_loads_into_typed_records(spec_file: Path, project: Path) -> None:
    loaded = _load(spec_file, EXAMPLE)
    spec = loaded.spec
    assert loaded.path == spec_file and loaded.root == project.resolve() and not loaded.allow_outside
    assert list(spec.models) == ["fp32", "int8-static", "int8-dyn", "ocr", "half"]
    assert spec.models["int8-static"].from_ == "fp32"
    assert spec.models["int8-static"].quantize == QuantizeOptions(mode="static_qdq")
    assert spec.models["half"].transform() == ("fp16", Fp16Options())
    assert spec.models["fp32"].transform() is None
    assert spec.models["ocr"].package == "rapidocr_onnxruntime"
    assert spec.inputs["ids"].range == (0.0, 1000.0) and spec.inputs["ids"].placeholders == (
        "batch",
        "seq_len",
    )
    assert spec.sweep.batch == (1, 4, 8) and spec.sweep.placeholders == {"seq_len": (64, 128)}
    assert list(spec.sweep.axes())[-1] == "seq_len"
    assert spec.exclude == ({"batch": 8, "concurrency": 2},)
    assert spec.measure.profile_iterations == 20 and spec.measure.timeout_s == 600.0
    assert spec.compare[1].b is None and spec.compare[2].config == {"batch": 1, "threads": 2}
    assert spec.whatif == {"Conv": 2.0} and spec.tolerance.cosine_min == 0.999
    assert spec.version_chain("half") == ("fp32", "half")
    assert TRANSFORM_FIELDS == ("quantize", "fp16")


def test_defaults_of_a_minimal_spec(spec_file: Path) -> None:
    spec = _load(spec_file, MINIMAL).spec
    assert (spec.sweep.batch, spec.sweep.threads, spec.sweep.concurrency) == ((1,), (1,), (1,))
    assert spec.sweep.optimization_level == ("all",) and spec.sweep.provider == ("cpu",)
    assert spec.sweep.spinning == (True,) and spec.sweep.inter_op_threads == (1,)
    m = spec.measure
    assert (m.warmup, m.min_iterations, m.min_seconds, m.max_seconds) == (10, 50, 1.0, 60.0)
    assert (m.percentile, m.repeats, m.profile_iterations, m.timeout_s) == ("p90", 3, 20, 600.0)
    assert spec.exclude == () and spec.compare == () and spec.profile == () and spec.tolerance is None
    assert spec.latency_threshold_ms is None and spec.regression.latency_ratio == 1.05
    q = QuantizeOptions(mode="static_qdq")
    assert (q.calibration.samples, q.calibration.seed, q.calibration.data) == (16, 0, None)
    assert (q.weight_type, q.activation_type, q.per_channel, q.reduce_range, q.preprocess) == (
        "int8",
        "uint8",
        False,
        False,
        True,
    )
    assert q.op_types is None and q.exclude_nodes == ()


def test_records_are_frozen(spec_file: Path) -> None:
    spec = _load(spec_file, MINIMAL).spec
    with pytest.raises(ValueError):
        spec.name = "other"  # type: ignore[misc]


def test_fp16_true_means_default_options(spec_file: Path) -> None:
    spec = _load(spec_file, _edit("fp16: {keep_io_types: true}", "fp16: true")).spec
    assert spec.models["half"].fp16 == Fp16Options(keep_io_types=True, op_block_list=None)


def test_sha256_is_of_the_canonical_json_and_ignores_formatting(spec_file: Path) -> None:
    loaded = _load(spec_file, EXAMPLE)
    assert loaded.sha256 == hashlib.sha256(loaded.canonical_json().encode()).hexdigest()
    canonical = json.loads(loaded.canonical_json())
    assert list(canonical) == sorted(canonical)
    reformatted = _load(spec_file, "# a comment\n" + yaml.safe_dump(yaml.safe_load(EXAMPLE), sort_keys=True))
    assert reformatted.sha256 == loaded.sha256
    assert _load(spec_file, _edit("warmup: 10", "warmup: 11")).sha256 != loaded.sha256


def test_stored_copies_read_back_equal(spec_file: Path) -> None:
    spec = _load(spec_file, EXAMPLE).spec
    assert spec_from_json(spec_to_json(spec)) == spec
    assert list(spec_from_json(spec_to_json(spec)).models) == list(spec.models)  # report order kept
    assert spec_from_json(LoadedSpec.of(spec, spec_file).canonical_json()) == spec
    assert spec_from_json(spec.model_dump(mode="json", by_alias=True)) == spec


@pytest.mark.parametrize(
    ("stored", "message"),
    [("{not json", "not valid JSON"), ("[1, 2]", "must be a JSON object"), ('{"name": "x"}', "`models`")],
)
def test_bad_stored_copies_are_spec_errors(stored: str, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        spec_from_json(stored)


def test_resolve_goes_through_the_project_rules(spec_file: Path, project: Path) -> None:
    loaded = _load(spec_file, EXAMPLE)
    assert loaded.resolve("models/cnn.onnx", "models.fp32.path") == project / "experiments/models/cnn.onnx"
    assert loaded.model_file("fp32") == (project / "experiments/models/cnn.onnx").resolve()
    with pytest.raises(SpecError, match="outside the project root"):
        loaded.resolve("../../x.onnx", "inputs.x.file")


# --- file-level errors -----------------------------------------------------------------------------------


def test_missing_file_and_folder(project: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(project / "nope.yaml")
    with pytest.raises(SpecError, match="is a folder"):
        load_spec(project / "experiments")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(spec_file: Path) -> None:
    spec_file.write_text(MINIMAL)
    spec_file.chmod(0)
    with pytest.raises(SpecError, match="cannot be read"):
        load_spec(spec_file)


def test_not_utf8(spec_file: Path) -> None:
    spec_file.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(SpecError, match="not UTF-8"):
        load_spec(spec_file)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("- a\n- b\n", "not a list"),
        ("just text\n", "not a str"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
    ],
)
def test_empty_and_non_mapping_files(spec_file: Path, text: str, message: str) -> None:
    assert message in _error(spec_file, text)


def test_yaml_syntax_error_has_line_and_column(spec_file: Path) -> None:
    message = _error(spec_file, _edit("batch: [1, 4, 8]", "batch: [1, 4, 8"))
    assert "cnn.yaml" in message and "not valid YAML" in message
    assert re.search(r"line 16, column \d+", message)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            EXAMPLE + "name: again\n",
            f"line {EXAMPLE.count(chr(10)) + 1}, column 1: duplicate key `name` in `top level` (first at",
        ),
        (
            _edit("  concurrency: [1, 2]", "  concurrency: [1, 2]\n  batch: [2]"),
            "line 18, column 3: duplicate key `batch` in `sweep` (first at line 15)",
        ),
        (
            _edit("  ocr:", "  fp32: {path: other.onnx}\n  ocr:"),
            "line 7, column 3: duplicate key `fp32` in `models` (first at line 4)",
        ),
        (
            _edit("{mode: dynamic}", "{mode: dynamic, mode: static_qdq}"),
            "duplicate key `mode` in `models.int8-dyn.quantize`",
        ),
    ],
)
def test_duplicate_keys_are_refused_at_any_depth(spec_file: Path, text: str, where: str) -> None:
    message = _error(spec_file, text)
    assert where in message and "cnn.yaml" in message


def test_merge_keys_may_be_overridden(spec_file: Path) -> None:
    text = _edit(
        "quantize: {mode: static_qdq, calibration: {samples: 16}}",
        "quantize: &q {mode: static_qdq, per_channel: true, reduce_range: true}",
    )
    text = _edit("quantize: {mode: dynamic}", "quantize: {<<: *q, mode: dynamic, per_channel: false}", text)
    options = _load(spec_file, text).spec.models["int8-dyn"].quantize
    assert (options.mode, options.per_channel, options.reduce_range) == ("dynamic", False, True)


def test_alias_bombs_and_recursion_are_refused(spec_file: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)
    )
    assert "aliases are expanded" in _error(spec_file, bomb)
    assert "refers to the collection containing it" in _error(spec_file, "a: &a [*a]\n")
    assert "nested" in _error(spec_file, "a: " + "[" * 2000 + "]" * 2000 + "\n")


def test_a_spec_file_without_end_or_far_beyond_a_hand_written_one_is_refused(tmp_path: Path) -> None:
    """`perfsite validate /dev/zero` read without end and ended in a MemoryError traceback; a file of gigabytes
    took as long to be refused. At most 10 MB is read: a spec is YAML written by hand."""
    big = tmp_path / "dump.yaml"
    big.write_bytes(b"# " + b"x" * 10_000_000 + b"\n")
    for path in (Path("/dev/zero"), big):
        with pytest.raises(SpecError) as err:
            load_spec(path)
        assert " ".join(str(err.value).split()) == (
            f"Spec file `{path}` holds more than 10,000,000 bytes, far beyond a spec written by hand. Allowed: a "
            "YAML spec file (docs/spec.md); give large input data as a `file:` (.npy or .npz) rather than a "
            "`value:`.")


# --- validation messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("  threads: [1, 2]", "  thread: [1, 2]", ["line 16", "`sweep.thread`", "did you mean `threads`?"]),
        ("measure:", "measur:", ["line 25", "unknown key `measur`", "did you mean `measure`?"]),
        (
            "quantize: {mode: dynamic}",
            "quantise: {mode: dynamic}",
            [
                "line 6",
                "`models.int8-dyn.quantise`",
                "did you mean `quantize`?",
                "allowed here: path, package, from",
            ],
        ),
        (
            "calibration: {samples: 16}",
            "calibration: {sample: 16}",
            ["`models.int8-static.quantize.calibration.sample`", "did you mean `samples`?"],
        ),
        (
            "batch: [1, 4, 8]",
            'batch: [1, "4", -8]',
            [
                '`sweep.batch[1]`: got `"4"`; expected an integer',
                "`sweep.batch[2]`: got `-8`; expected a number >= 1",
            ],
        ),
        ("repeats: 3", "repeats: 2.5", ["line 25", "`measure.repeats`", "expected an integer"]),
        ("spinning: [true]", "spinning: [1]", ["`sweep.spinning[0]`", "expected true or false"]),
        ("threads: [1, 2]", "threads: []", ["line 16", "`sweep.threads`", "at least 1 item"]),
        ("threads: [1, 2]", "threads: [2, 2]", ["`sweep.threads[1]`", "listed twice; each value of a sweep axis"]),
        # `targets` is no sweep axis: the message named one.
        ("latency_threshold_ms: 20", "latency_threshold_ms: 20\ntargets: [a, a]",
         ["`targets[1]`", "listed twice; each value of `targets` must be unique"]),
        ("threads: [1, 2]", "threads: 2", ["`sweep.threads`", "expected a list"]),
        ("provider: [cpu]", "provider: [cpux]", ["`sweep.provider[0]`", "'cuda'", "did you mean `cpu`?"]),
        ("seq_len: [64, 128]", "seq_len: [64, 0]", ["`sweep.seq_len[1]`", ">= 1"]),
        (
            "[batch, seq_len]",
            "[batch, seqlen]",
            [
                "line 11",
                "`inputs.ids.shape[1]`",
                "placeholder `seqlen` is not bound",
                "did you mean `seq_len`?",
                "`sweep.seq_len`: `seq_len` is not a sweep axis and no input shape uses it",
            ],
        ),
        ("[batch, seq_len]", "[batch, threads]", ["`inputs.ids.shape[1]`", "session setting"]),
        (
            "[batch, 3, 64, 64]",
            "[batch, -3, 64, 6.4]",
            ["`inputs.input.shape[1]`: got `-3`", "`inputs.input.shape[3]`"],
        ),
        (
            "{batch: 8, concurrency: 2}",
            "{batch: 16, concurency: 2}",
            [
                "line 24",
                "`exclude[0].batch`",
                "not among the values of sweep.batch (1, 4, 8)",
                "got `16`",
                "`exclude[0].concurency`",
                "did you mean `concurrency`?",
            ],
        ),
        ("{batch: 8, concurrency: 2}", "{}", ["`exclude[0]`", "would match every configuration"]),
        ("- {batch: 1, threads: 2}", "- {batch: 1, threads: 3}", ["`profile[0].threads`", "(1, 2)"]),
        (
            "config: {batch: 1, threads: 2}",
            "config: {batch: 1, spinning: false}",
            ["`compare[2].config.spinning`", "true"],
        ),
        (
            "{a: fp32, b: int8-static}",
            "{a: fp32, b: int8-statc}",
            ["`compare[0].b`", "`int8-statc` is not a version", "did you mean `int8-static`?"],
        ),
        ("{a: fp32}", "{a: fp32, b: fp32}", ["`compare[1].b`", "compared with itself"]),
        # The same pair twice made the same page twice (`-2` suffixed), accepted without a word.
        ("{a: fp32}", "{a: fp32, b: int8-static}",
         ["`compare[1]`", "the same pair as compare[0]: it would give the same page twice; remove one"]),
        (
            "fp32:        {path: models/cnn.onnx}",
            "fp32: {from: half, quantize: {mode: dynamic}}",
            ["line 4", "`models.fp32.from`", "cycle fp32 -> half -> fp32"],
        ),
        (
            "{from: fp32, quantize: {mode: dynamic}}",
            "{from: fp3, quantize: {mode: dynamic}}",
            ["`models.int8-dyn.from`", "`fp3` is not a version", "did you mean `fp32`?"],
        ),
        (
            "{from: fp32, quantize: {mode: dynamic}}",
            "{from: fp32}",
            ["`models.int8-dyn.from`", "needs a transform"],
        ),
        (
            "{from: fp32, quantize: {mode: dynamic}}",
            "{path: a.onnx, from: fp32, quantize: {mode: dynamic}}",
            ["`models.int8-dyn.from`", "either `path` or `from`"],
        ),
        (
            "{from: fp32, quantize: {mode: dynamic}}",
            "{package: foo}",
            ["`models.int8-dyn.package`", "needs `path`"],
        ),
        (
            "{from: fp32, quantize: {mode: dynamic}}",
            "{quantize: {mode: dynamic}}",
            ["`models.int8-dyn`", "a source"],
        ),
        (
            "fp16: {keep_io_types: true}",
            "fp16: true, quantize: {mode: dynamic}",
            ["`models.half.fp16`", "one transform per version"],
        ),
        ("fp16: {keep_io_types: true}", "fp16: false", ["`models.half.fp16`", "remove `fp16`"]),
        (
            "quantize: {mode: dynamic}",
            "quantize: {mode: dynamic, calibration: {samples: 4}}",
            ["`models.int8-dyn.quantize.calibration`", "only static modes"],
        ),
        (
            "quantize: {mode: dynamic}",
            "quantize: {mode: int2}",
            ["`models.int8-dyn.quantize.mode`", "'dynamic'"],
        ),
        (
            "quantize: {mode: dynamic}",
            "quantize: {per_channel: true}",
            ["`models.int8-dyn.quantize.mode`", "required key `mode` is missing"],
        ),
        (
            "calibration: {samples: 16}",
            "calibration: {samples: 16, data: cal.npy}",
            ["calibration.data`", "`.npz`"],
        ),
        ("name: cnn-int8", "name: CNN int8", ["line 1", "`name`", "lowercase letters"]),
        ("  ocr:", "  OCR v4:", ['`models["OCR v4"]`', "the name `OCR v4` is not allowed"]),
        (
            "{value: 16000, dtype: int64}",
            "{value: 16000, dtype: int8}",
            ["`inputs.sr.value`", "int8 holds [-128, 127]"],
        ),
        (
            "{value: 16000, dtype: int64}",
            "{value: [[1, 2], [3]], dtype: int64}",
            ["`inputs.sr.value`", "equal-length"],
        ),
        (
            "{value: 16000, dtype: int64}",
            "{value: 1.5, dtype: int64}",
            ["`inputs.sr.value`", "integer values"],
        ),
        (
            "{file: data/img.npz, key: x}",
            "{file: data/img.npy, key: x}",
            ["`inputs.img.key`", "only with `file: x.npz`"],
        ),
        ("{file: data/img.npz, key: x}", "{file: data/img.png}", ["`inputs.img.file`", "`.npy` or `.npz`"]),
        ("{file: data/img.npz, key: x}", "{shape: [1], value: 2}", ["`inputs.img`", "exactly one of"]),
        ("range: [0, 1000]", "range: [10, 5]", ["`inputs.ids.range`", "low < high"]),
        ("range: [0, 1000]", "range: [0.5, 10]", ["`inputs.ids.range`", "integer range"]),
        ("max_seconds: 60", "max_seconds: 0.5", ["`measure.max_seconds`", "min_seconds"]),
        # Only one of two ordered keys written: the message names it, not its neighbour's default (`min_seconds:
        # 100` alone was reported as `measure.max_seconds` (got `60.0`), a key the spec never wrote).
        ("min_seconds: 1.0, max_seconds: 60,", "min_seconds: 100,",
         ["line 25, `measure.min_seconds`: must be <= max_seconds (60.0, its default; set max_seconds too to time "
          "longer) (got `100.0`)"]),
        ("min_seconds: 1.0, max_seconds: 60,", "max_seconds: 1000,",
         ["line 25, `measure.max_seconds`: must be < timeout_s (600.0, its default) so a process can finish before "
          "it is killed; set timeout_s too to time longer (got `1000.0`)"]),
        ("min_seconds: 1.0", "min_seconds: .nan", ["`measure.min_seconds`", "finite number"]),
        ("percentile: p90", "percentile: p42", ["`measure.percentile`", "'p99'"]),
        ("latency_threshold_ms: 20", "latency_threshold_ms: 0", ["`latency_threshold_ms`", "> 0"]),
        ("latency_ratio: 1.05", "latency_ratio: 0.9", ["`regression.latency_ratio`", ">= 1.0"]),
        ("{Conv: 2.0}", "{Conv: -1}", ["`whatif.Conv`", "> 0"]),
        (
            "tolerance: {max_abs: 0.01, cosine_min: 0.999}",
            "tolerance: {}",
            ["`tolerance`", "`max_abs`, `cosine_min`"],
        ),
        (
            "  input: {shape: [batch, 3, 64, 64], dtype: float32}",
            "  input: {shape: [batch, 3], dtype: float128}",
            ["`inputs.input.dtype`", "'float16'"],
        ),
    ],
)
def test_validation_messages_name_file_line_path_and_fix(
    spec_file: Path, old: str, new: str, expected: list[str]
) -> None:
    message = _error(spec_file, _edit(old, new))
    assert "cnn.yaml" in message and "\n" not in message
    for part in expected:
        assert part in message, (part, message)


def test_a_profile_entry_or_compare_config_that_exclude_leaves_nothing_of_is_refused(spec_file: Path) -> None:
    # Both passed `validate`; the profile page then said "No trial with this configuration" and the compare page
    # "These versions cannot be compared".
    text = _edit("  - {batch: 1, threads: 2}\nregression", "  - {batch: 8, concurrency: 2}\nregression")
    spec_file.write_text(text)
    result = perfsite("validate", str(spec_file), "--allow-outside")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    message = " ".join(result.stderr.split())
    assert message.startswith(f"error: Spec `{spec_file}` is invalid: line 32, `profile[0]`: matches only "
                              "configurations that `exclude` leaves out of the plan (exclude[0]), so it would select "
                              "no trial; name a configuration the plan keeps, or change `exclude` (got "), message
    compare = _edit("config: {batch: 1, threads: 2}", "config: {batch: 8, concurrency: 2, threads: 1}")
    assert "line 30, `compare[2].config`: matches only configurations" in _error(spec_file, compare)
    assert _load(spec_file, _edit("{batch: 1, threads: 2}\nregression", "{batch: 8}\nregression")).spec.profile
    # Results stored under such a spec stay readable.
    stored = json.loads(spec_to_json(_load(spec_file, EXAMPLE).spec))
    stored["profile"] = [{"batch": 8, "concurrency": 2}]
    assert spec_from_json(json.dumps(stored)).profile == ({"batch": 8, "concurrency": 2},)


def test_batch_axis_without_a_batch_placeholder(spec_file: Path) -> None:
    text = _edit("[batch, 4]", "[2, 4]", MINIMAL) + "sweep: {batch: [1, 2]}\n"
    assert "no input shape uses the `batch` placeholder" in _error(spec_file, text)
    assert _load(spec_file, _edit("[batch, 4]", "[2, 4]", MINIMAL)).spec.sweep.batch == (1,)
    # A file's rows are repeated or cut to the batch size: it follows the axis (as `perfsite profile --input`'s).
    from_file = _edit("{shape: [batch, 4], dtype: float32}", "{file: x.npy}", MINIMAL) + "sweep: {batch: [1, 2]}\n"
    assert _load(spec_file, from_file).spec.sweep.batch == (1, 2)


def test_at_most_five_problems_are_listed(spec_file: Path) -> None:
    message = _error(spec_file, _edit("batch: [1, 4, 8]", "batch: [0, -1, x, 2.5, true, -2, -3]"))
    assert message.startswith(f"Spec `{spec_file}` has 7 problems: (1) line 15, `sweep.batch[0]`")
    assert "(5) " in message and "(6) " not in message and "and 2 more" in message


def test_missing_top_level_keys(spec_file: Path) -> None:
    message = _error(spec_file, "name: x\n")
    assert "required key `models` is missing" in message and "required key `inputs` is missing" in message


def test_non_string_keys(spec_file: Path) -> None:
    assert "expected a string key" in _error(spec_file, MINIMAL + "1: 2\n")


# --- paths named by the spec -----------------------------------------------------------------------------


def test_path_outside_the_project_is_refused_and_allowed_with_allow_outside(spec_file: Path) -> None:
    text = _edit("models/tiny.onnx", "../../outside.onnx", MINIMAL)
    message = _error(spec_file, text)
    assert "line 3" in message and "`models.fp32.path`" in message and "--allow-outside" in message
    loaded = _load(spec_file, text, allow_outside=True)
    assert loaded.allow_outside and loaded.resolve("../../outside.onnx", "x").name == "outside.onnx"


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("{file: data/img.npz, key: x}", "{file: ../../img.npz, key: x}", "`inputs.img.file`"),
        (
            "calibration: {samples: 16}",
            "calibration: {data: /etc/cal.npz}",
            "`models.int8-static.quantize.calibration.data`",
        ),
    ],
)
def test_every_spec_path_is_checked(spec_file: Path, old: str, new: str, field: str) -> None:
    assert field in _error(spec_file, _edit(old, new))


def test_symlink_escaping_the_project_is_refused(spec_file: Path, project: Path) -> None:
    (project.parent / "outside.onnx").write_bytes(b"x")
    (project / "experiments" / "models").mkdir()
    (project / "experiments" / "models" / "tiny.onnx").symlink_to(project.parent / "outside.onnx")
    assert "outside the project root" in _error(spec_file, MINIMAL)


def test_package_paths_are_not_resolved_at_load(spec_file: Path) -> None:
    # The package need not be installed where specs are validated or pages built.
    loaded = _load(spec_file, EXAMPLE)
    assert loaded.spec.models["ocr"].path == "models/ch_PP-OCRv4_det_infer.onnx"


# --- several files ---------------------------------------------------------------------------------------


def test_validate_specs_lists_every_bad_file_and_shared_names(project: Path) -> None:
    folder = project / "experiments"
    (folder / "a.yaml").write_text(MINIMAL)
    (folder / "b.yml").write_text(MINIMAL.replace("tiny.onnx", "other.onnx"))
    (folder / "c.yaml").write_text("name: [\n")
    (folder / "notes.txt").write_text("not a spec")
    with pytest.raises(SpecError) as err:
        validate_specs([folder])
    message = " ".join(str(err.value).split())
    assert "c.yaml` is not valid YAML" in message
    assert (f"Specs `{folder / 'a.yaml'}` and `{folder / 'b.yml'}` both have `name: tiny` and measure different "
            "model files") in message
    (folder / "c.yaml").unlink()
    (folder / "b.yml").write_text(MINIMAL.replace("name: tiny", "name: tiny2"))
    assert [s.spec.name for s in validate_specs([folder])] == ["tiny", "tiny2"]
    with pytest.raises(SpecError, match=f"The folder `{re.escape(str(project / '.git'))}` holds no spec file"):
        validate_specs([project / ".git"])


@pytest.mark.parametrize("path", sorted((REPO / "experiments").glob("*.yaml")), ids=lambda p: p.name)
def test_every_experiment_in_the_repository_is_valid(path: Path) -> None:
    assert load_spec(path).spec.name


# --- JSON Schema and docs --------------------------------------------------------------------------------


def _models() -> list[type[BaseModel]]:
    """Every public record of the spec, whichever module of generator.spec defines it."""
    return [
        v
        for v in vars(spec_package).values()
        if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__.startswith("generator.spec.")
    ]


def test_schema_is_valid_json_schema_and_accepts_the_example() -> None:
    schema = spec_json_schema()
    json.dumps(schema)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(yaml.safe_load(EXAMPLE))
    validator.validate(yaml.safe_load(_edit("fp16: {keep_io_types: true}", "fp16: true")))
    for bad in (
        _edit("  ocr:", "  OCR:"),
        _edit("measure:", "measur:"),
        _edit("seq_len: [64, 128]", "seq_len: [0]"),
    ):
        assert not validator.is_valid(yaml.safe_load(bad))


def test_every_schema_property_has_a_description() -> None:
    schema = spec_json_schema()
    for name, definition in [("Spec", schema), *schema["$defs"].items()]:
        for prop, body in definition.get("properties", {}).items():
            assert body.get("description"), f"{name}.{prop} has no description"


def test_docs_mention_every_field_of_every_model() -> None:
    docs = (REPO / "docs" / "spec.md").read_text()
    assert len(_models()) >= 11
    missing = [
        f"{m.__name__}.{f.alias or name}"
        for m in _models()
        for name, f in m.model_fields.items()
        if f"`{f.alias or name}`" not in docs
    ]
    assert not missing, f"docs/spec.md does not mention {missing}"
    for allowed in (*spec_package.DTYPES, "static_qoperator", "tensorrt", "extended", "p95", "--allow-outside"):
        assert allowed in docs


def test_docs_example_is_a_valid_spec(spec_file: Path, example_models: dict[str, Path]) -> None:
    """And one that plans against the example CNN: it fed a CNN and an OCR model one `inputs:` section with
    inputs the CNN lacks (`ids`, `sr`, `img`), so `run --dry-run` refused it."""
    docs = (REPO / "docs" / "spec.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", docs, flags=re.S)
    assert blocks, "docs/spec.md has no yaml example"
    loaded = _load(spec_file, max(blocks, key=len))
    assert len(loaded.spec.models) >= 3
    (spec_file.parent / "models").mkdir()
    shutil.copy(example_models["cnn"], spec_file.parent / "models" / "cnn.onnx")
    out = perfsite("run", str(spec_file), "--dry-run", cwd=spec_file.parent)
    assert out.returncode == 0 and "to measure, about" in out.stdout, out.stderr


# --- fuzz: nothing but PerfsiteError, whatever the text --------------------------------------------------

_WORDS = [
    "name",
    "models",
    "inputs",
    "sweep",
    "batch",
    "seq_len",
    "from",
    "path",
    "quantize",
    "fp16",
    "mode",
    "shape",
    "dtype",
    "exclude",
    "compare",
    "profile",
    "a",
    "b",
    "fp32",
    "x",
    "value",
    "file",
    "key",
    "measure",
    "range",
    "calibration",
    "dynamic",
    "static_qdq",
    "int64",
    "cpu",
    "true",
    "1",
    "-1",
    "1.5",
]
_TOKENS = [
    *_WORDS,
    ": ",
    "\n",
    "  ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    ", ",
    "&a ",
    "*a",
    "<<: ",
    "? ",
    "!!str ",
    "'",
    '"',
    "#",
    "|",
    ">",
    "---",
    "...",
    "~",
    "null",
    ".nan",
    ".inf",
    "\t",
    "%YAML 1.1\n",
    "!!python/name:x ",
]

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True),
    st.sampled_from(_WORDS),
    st.text(max_size=8),
)
_structures = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_WORDS) | _scalars, inner, max_size=4)
    ),
    max_leaves=25,
)
# PERFSITE_FUZZ_EXAMPLES=5000 for a long hunt; the default keeps the suite fast.
_FUZZ = settings(
    max_examples=int(os.environ.get("PERFSITE_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _never_anything_but_perfsite_error(text: str, path: Path) -> None:
    try:
        loaded = load_spec_text(text, path)
    except PerfsiteError as err:
        assert str(err).strip()
    else:
        assert spec_from_json(loaded.canonical_json()) == loaded.spec


@_FUZZ
@given(st.text(max_size=300))
def test_fuzz_random_text(spec_file: Path, text: str) -> None:
    _never_anything_but_perfsite_error(text, spec_file)


@_FUZZ
@given(st.lists(st.sampled_from(_TOKENS), max_size=60))
def test_fuzz_yaml_like_tokens(spec_file: Path, tokens: list[str]) -> None:
    _never_anything_but_perfsite_error("".join(tokens), spec_file)


@_FUZZ
@given(_structures)
def test_fuzz_random_structures(spec_file: Path, data: object) -> None:
    _never_anything_but_perfsite_error(yaml.safe_dump(data), spec_file)


def _paths(node: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@_FUZZ
@given(st.data())
def test_fuzz_mutations_of_the_example(spec_file: Path, data: st.DataObject) -> None:
    doc = yaml.safe_load(EXAMPLE)
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(_paths(doc)[1:]))
        parent = doc
        for seg in where[:-1]:
            parent = parent[seg]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent[where[-1]] = data.draw(_structures)
    _never_anything_but_perfsite_error(yaml.safe_dump(doc, sort_keys=False), spec_file)


@pytest.mark.parametrize(("old", "new", "field", "limit"), [
    ("samples: 16", "samples: 99999999999999999999999", "calibration.samples", "<= 100000"),
    ("samples: 16", "samples: 16, seed: 4294967296", "calibration.seed", "<= 4294967295"),
    ("warmup: 10", "warmup: 100001", "measure.warmup", "<= 100000"),
    ("min_iterations: 50", "min_iterations: 10000001", "measure.min_iterations", "<= 10000000"),
    ("repeats: 3", "repeats: 1001", "measure.repeats", "<= 1000"),
])
def test_counts_beyond_any_sensible_use_are_refused_before_anything_runs(spec_file, old, new, field, limit):
    """A typo of a few extra zeros used to pass `validate` and hang `run --dry-run` (1e23 calibration
    samples filled 7 GB); each count has a documented maximum (docs/spec.md)."""
    message = _error(spec_file, _edit(old, new))
    assert field in message and limit in message, message


@pytest.mark.parametrize(("old", "new", "fragments"), [
    ("batch: [1, 4, 8]", "batch: [1:30]", ["`sweep.batch[0]`", 'got `"1:30"`']),  # YAML 1.1: 90
    ("spinning: [true]", "spinning: [yes]", ["`sweep.spinning[0]`", 'got `"yes"`', "expected true or false"]),
    ("batch: [1, 4, 8]", "batch: [1_000]", ["`sweep.batch[0]`", 'got `"1_000"`']),
])
def test_yaml_1_1_number_and_boolean_forms_are_text_not_silent_values(spec_file, old, new, fragments):
    """Under PyYAML's YAML 1.1 rules `1:30` was 90 and `yes` true, silently; specs follow YAML 1.2's core
    schema, where they are text that the strict types refuse."""
    message = " ".join(_error(spec_file, _edit(old, new)).split())
    assert all(f in message for f in fragments), message


def test_yaml_1_2_numbers_read_as_written(spec_file):
    """`1e1` was a string under YAML 1.1 (a float needs a dot there) and `010` was eight."""
    spec = _load(spec_file, _edit("latency_threshold_ms: 20", "latency_threshold_ms: 1e1",
                                  _edit("batch: [1, 4, 8]", "batch: [1, 4, 8, 010]"))).spec
    assert spec.latency_threshold_ms == 10.0 and spec.sweep.batch == (1, 4, 8, 10)


def test_an_explicit_int_tag_on_other_text_is_a_spec_error(spec_file):
    """`!!int 0b101` loaded under YAML 1.1; under the 1.2 core schema it raised a bare ValueError."""
    message = " ".join(_error(spec_file, _edit("batch: [1, 4, 8]", "batch: [!!int 0b101]")).split())
    assert "`!!int 0b101` is not a YAML 1.2 integer; allowed: decimal digits, 0o… or 0x…" in message


def test_validate_takes_one_experiment_given_twice_as_run_does(project: Path) -> None:
    """`perfsite validate spec.yaml spec.yaml` (or a link to it beside it, or a copy) said the specs "share the
    name; rename one" while `perfsite run` measured them as the one experiment they are. Both commands follow
    one rule: the same file or the same text is one spec. An edited copy measuring the same model stays the
    experiment over time (LoadedSpec.same_experiment), but given with the original to one command it would
    write both into one folder, their versions and settings mixed under one description: refused (a hostile
    tour's `run .` over a.yaml and b.yaml, 2026-11-27)."""
    folder = project / "experiments"
    spec = folder / "a.yaml"
    spec.write_text(MINIMAL)
    (folder / "link.yaml").symlink_to(spec)
    (folder / "copy.yaml").write_text(MINIMAL)
    loaded = validate_specs([spec, spec, folder / "link.yaml", folder / "copy.yaml"])
    assert [s.spec.name for s in loaded] == ["tiny"] * 4
    edited = folder / "edited.yaml"
    edited.write_text(MINIMAL.replace("dtype: float32", "dtype: float32, range: [0, 1]"))
    with pytest.raises(SpecError) as err:
        validate_specs([spec, edited])
    assert " ".join(str(err.value).split()).startswith(
        f"Specs `{spec}` and `{edited}` both have `name: tiny` and say different things: measured in one command")
    assert loaded[0].same_experiment(load_spec(edited)) and not loaded[0].same_experiment(
        load_spec_text(MINIMAL.replace("tiny.onnx", "other.onnx"), folder / "other.yaml"))


def test_two_worktrees_of_one_project_are_one_experiment(project: Path) -> None:
    """Two worktrees sharing a store, the branch adding `batch: 2`: their specs measure two copies of one model
    file, and were refused as "two unrelated models" (the check compared paths, not bytes)."""
    main, branch = project / "main", project / "branch"
    for tree, text in ((main, MINIMAL), (branch, MINIMAL + "sweep: {batch: [1, 2]}\n")):
        (tree / "models").mkdir(parents=True)
        (tree / "models" / "tiny.onnx").write_bytes(b"the same model's bytes in both worktrees")
        (tree / "spec.yaml").write_text(text)
    mine, theirs = load_spec(main / "spec.yaml"), load_spec(branch / "spec.yaml")
    assert mine.sha256 != theirs.sha256 and mine.same_experiment(theirs) and theirs.same_experiment(mine)
    (branch / "models" / "tiny.onnx").write_bytes(b"another model entirely")
    assert not mine.same_experiment(load_spec(branch / "spec.yaml"))


def test_a_compare_entry_without_b_in_a_one_version_spec_is_refused(spec_file: Path) -> None:
    """`compare: [{a: fp32}]` with one version passed validate; the page then said "cannot be compared"."""
    with pytest.raises(SpecError) as err:
        _load(spec_file, MINIMAL + "compare:\n  - {a: fp32}\n")
    assert "`compare[0].a`: no other version to compare with: `b` left out picks the best other version, and the " \
           "spec has one version; add a version to `models`" in " ".join(str(err.value).split())
