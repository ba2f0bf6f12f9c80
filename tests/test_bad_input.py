"""Every row of docs/errors.md: a bad input given to the real `perfsite` command line.

Each test asserts exit status 1, no traceback, and one message that names the file (spec, model, results file
or folder), the field or path at fault, and what is allowed. The last tests fuzz the onnxruntime profile parser
(the spec loader's fuzz tests are in tests/test_spec.py) and keep the docs table and these tests in step.

Each row's files are made by a `setup_<row>` function; the module fixture `rows` runs every row's commands in
its own project folder (each command in a child process of its own), and each `test_<row>` checks what its
commands printed.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from support.cli import ROOT, in_forks, perfsite, write_spec
from support.models import matmul_model, onnx_model, save
from support.results import write_results

from generator.errors import ModelError, RunError
from generator.machine.profiling import node_statistics, parse_profile
from generator.machine.session import check_providers
from generator.results.schema import METADATA_KEY, SCHEMA_VERSION
from generator.spec import load_spec
from generator.versions import prepare_versions

# budget_s: one process a trial, as the rows expect (adaptive measurement would add more). A trial's budget counts
# its processes' whole time, start-up included: 0.5 s let one to three processes run (2026-11-27).
MEASURE = ("measure: {warmup: 1, min_iterations: 3, min_seconds: 0.01, max_seconds: 1, repeats: 1, "
           "budget_s: 0.01, profile_iterations: 1, timeout_s: 30}")
SPEC = f"""\
name: tiny
models:
  fp32: {{path: models/tiny.onnx}}
inputs:
  x: {{shape: [batch, 4], dtype: float32}}
sweep: {{batch: [1]}}
{MEASURE}
"""
PROFILE = ROOT / "tests" / "data" / "profile_tiny.json"
ROWS_AT_ONCE = 3
# The rows that take seconds (runs that measure, site builds, a probe without its cache; timed alone on 2 cores,
# 2026-11-27), started first, the longest first: in the order the rows are written the slowest came last, and
# the table's commands ended with one or two of them running alone. The others follow in the order written.
LONGEST_ROWS = (
    "spec_changed", "site_of_an_earlier_release", "cache_folder_is_read_only", "transform_that_fails",
    "stored_spec_this_perfsite_cannot_read", "corrupt_parquet_file_in_a_side_table",
)


# An IR version far beyond any released one: onnx.helper's own default (IR 14) was "too new" for onnxruntime 1.31
# and loads in 1.32, so the row must not hang on one release's limit.
TOO_NEW_IR = 99


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad-input-models")
    matmul_model(folder / "tiny.onnx")
    matmul_model(folder / "too-new.onnx", ir_version=TOO_NEW_IR)
    matmul_model(folder / "nan.onnx", before="Log")
    return folder


# ---- the rows' commands, run a few at a time -----------------------------------------------------------------

Command = tuple[list[str], dict[str, Any]]  # perfsite arguments, extra subprocess keywords


@dataclass
class Row:
    project: Path
    results: list[subprocess.CompletedProcess] = field(default_factory=list)
    skip: str | None = None

    @property
    def result(self) -> subprocess.CompletedProcess:
        return self.results[-1]

    @property
    def spec(self) -> Path:
        return self.project / "spec.yaml"

    @property
    def given(self) -> str:
        """The spec as named on the command line (`validate` rows): messages quote it so."""
        return "`spec.yaml`"


class _Skip(Exception):
    pass


SETUPS: dict[str, Callable[[Path], list[Command]]] = {}


def row_setup(fn: Callable[[Path], list[Command]]) -> Callable[[Path], list[Command]]:
    SETUPS[fn.__name__.removeprefix("setup_")] = fn
    return fn


def _project(folder: Path, models: Path) -> Path:
    (folder / "models").mkdir()
    for model in models.iterdir():
        (folder / "models" / model.name).write_bytes(model.read_bytes())
    write_spec(folder, SPEC)
    return folder


def _one_row(name: str, row: Row) -> Row:
    try:
        commands = SETUPS[name](row.project)
    except _Skip as e:
        row.skip = str(e)
        return row
    row.results = [perfsite(*args, **{"cwd": row.project, **kw}) for args, kw in commands]
    return row


@pytest.fixture(scope="module")
def rows(tmp_path_factory, models, _probe_cache) -> dict[str, Row]:
    # Each row in a forked child, a few at a time, its commands one after another (each command a fork of its
    # own, support.cli.perfsite): the process has imported perfsite already, so a command costs what it does,
    # not an interpreter's start, and the rows overlap their waits.
    assert set(LONGEST_ROWS) <= set(SETUPS), set(LONGEST_ROWS) - set(SETUPS)
    template = tmp_path_factory.mktemp("results-template") / "results"
    write_results(template)
    _RESULTS_TEMPLATE[:] = [template]
    order = [*LONGEST_ROWS, *(name for name in SETUPS if name not in LONGEST_ROWS)]
    made = {name: Row(_project(tmp_path_factory.mktemp(name), models)) for name in order}
    # A module fixture is made before the autouse fixtures that set these for each test (tests/conftest.py): the
    # rows' commands read and wrote the user's own cache folder, and measured outside quick mode.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PERFSITE_CACHE_DIR", str(_probe_cache))
        env.setenv("PERFSITE_QUICK", "1")
        done = in_forks([functools.partial(_one_row, name, row) for name, row in made.items()],
                        at_once=ROWS_AT_ONCE)
    return dict(zip(made, done, strict=True))


def _row(rows: dict[str, Row], name: str) -> Row:
    row = rows[name]
    if row.skip:
        pytest.skip(row.skip)
    return row


def _spec(project: Path, *edits: tuple[str, str], extra: str = "", name: str = "spec.yaml") -> Path:
    text = SPEC
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return write_spec(project, text + extra, name)


def _run(*args: str, results: str = "results", **kw: Any) -> list[Command]:
    return [(["run", "spec.yaml", "--results", results, *args], kw)]


def _validate(*args: str) -> list[Command]:
    # `perfsite run` loads the spec the same way first; `validate` skips importing the runner, so it is faster.
    return [(["validate", "spec.yaml", *args], {})]


def _build(site: str = "site", **kw: Any) -> list[Command]:
    return [(["build", "--results", "results", "--site", site], kw)]


def _refused(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 1, no traceback, one message holding every fragment (compared with whitespace folded)."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output, output
    message = " ".join(result.stderr.split())
    assert message.startswith("error:") or " error: " in message, message
    missing = [f for f in fragments if " ".join(f.split()) not in message]
    assert not missing, f"{missing} not in: {message}"
    return message


# ---- the spec file --------------------------------------------------------------------------------------------


@row_setup
def setup_yaml_syntax_error(p: Path) -> list[Command]:
    _spec(p, ("sweep: {batch: [1]}", "sweep: {batch: [1}"))
    return _validate()


def test_yaml_syntax_error(rows):
    row = _row(rows, "yaml_syntax_error")
    _refused(row.result, row.given, "not valid YAML", "line 6, column 18", "expected ',' or ']'")


@row_setup
def setup_unknown_key(p: Path) -> list[Command]:
    _spec(p, ("measure: {warmup", "measure: {warmpu"))
    return _validate()


def test_unknown_key(rows):
    row = _row(rows, "unknown_key")
    _refused(row.result, row.given, "line 7", "measure.warmpu", "did you mean `warmup`", "allowed here:")


@row_setup
def setup_wrong_type(p: Path) -> list[Command]:
    _spec(p, ("batch: [1]", 'batch: ["4"]'))
    return _validate()


def test_wrong_type(rows):
    row = _row(rows, "wrong_type")
    _refused(row.result, row.given, "line 6", "sweep.batch[0]", 'got `"4"`', "expected an integer")


@row_setup
def setup_empty_sweep(p: Path) -> list[Command]:
    _spec(p, ("batch: [1]", "batch: []"))
    return _validate()


def test_empty_sweep(rows):
    row = _row(rows, "empty_sweep")
    _refused(row.result, row.given, "sweep.batch", "got `[]`", "expected at least 1 item")


@row_setup
def setup_exclude_removes_everything(p: Path) -> list[Command]:
    """`validate` said "ok, 0 trials", and `run` refused with "--only None leaves no trial … are ."."""
    _spec(p, extra="exclude: [{batch: 1}]\n")
    return _validate() + _run("--dry-run")


def test_exclude_removes_everything(rows):
    row = _row(rows, "exclude_removes_everything")
    for result in row.results:
        _refused(result, "`exclude`: these entries remove every configuration of the sweep, so there is nothing "
                         "to measure; remove an entry, or add values to the sweep that no entry matches")
        assert "--only" not in result.stderr


@row_setup
def setup_duplicate_key(p: Path) -> list[Command]:
    _spec(p, extra="name: again\n")
    return _validate()


def test_duplicate_key(rows):
    row = _row(rows, "duplicate_key")
    _refused(row.result, row.given, "line 8, column 1", "duplicate key `name`", "first at line 1",
             "remove or rename one")


@row_setup
def setup_duplicate_version_name(p: Path) -> list[Command]:
    _spec(p, ("  fp32: {path: models/tiny.onnx}\n",
              "  fp32: {path: models/tiny.onnx}\n  fp32: {path: models/nan.onnx}\n"))
    return _validate()


def test_duplicate_version_name(rows):
    row = _row(rows, "duplicate_version_name")
    _refused(row.result, row.given, "line 4, column 3", "duplicate key `fp32` in `models`",
             "remove or rename one")


@row_setup
def setup_negative_threshold(p: Path) -> list[Command]:
    _spec(p, extra="latency_threshold_ms: -5\n")
    return _validate()


def test_negative_threshold(rows):
    row = _row(rows, "negative_threshold")
    _refused(row.result, row.given, "line 8", "latency_threshold_ms", "got `-5`", "expected a number > 0")


@row_setup
def setup_zero_iterations(p: Path) -> list[Command]:
    _spec(p, ("min_iterations: 3", "min_iterations: 0"))
    return _validate()


def test_zero_iterations(rows):
    row = _row(rows, "zero_iterations")
    _refused(row.result, row.given, "measure.min_iterations", "got `0`", "expected a number >= 1")


@row_setup
def setup_process_time_beyond_a_day(p: Path) -> list[Command]:
    """A timeout of 1e9 s passed validation and ended `run` in an OverflowError traceback (the operating
    system's timers stop at about 25 days)."""
    _spec(p, ("timeout_s: 30", "timeout_s: 1.0e+9"))
    return _validate()


def test_process_time_beyond_a_day(rows):
    row = _row(rows, "process_time_beyond_a_day")
    _refused(row.result, row.given, "measure.timeout_s", "expected a number <= 86400")


@row_setup
def setup_sweep_value_beyond_int64(p: Path) -> list[Command]:
    """threads: [2**63] validated, then failed its trial and ended `run` in an overflow traceback when the
    failed row was written to the int64 column."""
    _spec(p, ("sweep: {batch: [1]}", "sweep: {batch: [1], threads: [9223372036854775808]}"))
    return _validate()


def test_sweep_value_beyond_int64(rows):
    row = _row(rows, "sweep_value_beyond_int64")
    _refused(row.result, row.given, "sweep.threads[0]", "got `9223372036854775808`", "expected a number <= 4096")


@row_setup
def setup_empty_value(p: Path) -> list[Command]:
    """`value: []` was stored as an `ok` trial with a throughput, as a zero-row input file once was."""
    _spec(p, ("x: {shape: [batch, 4], dtype: float32}", "x: {dtype: float32, value: []}"))
    return _validate()


def test_empty_value(rows):
    row = _row(rows, "empty_value")
    _refused(row.result, row.given, "inputs.x.value", "an empty value; give at least one element")


@row_setup
def setup_random_range_beyond_the_type(p: Path) -> list[Command]:
    """A range wider than float64 spans made numpy raise OverflowError mid-run (and one beyond float16 became
    inf silently)."""
    _spec(p, ("x: {shape: [batch, 4], dtype: float32}",
              "x: {shape: [batch, 4], dtype: float32, range: [-1.0e+308, 1.0e+308]}"))
    return _run("--quick")


def test_random_range_beyond_the_type(rows):
    row = _row(rows, "random_range_beyond_the_type")
    _refused(row.result, "inputs.x", "range [-1e+308, 1e+308] does not fit float32 (±3.403e+38)")
    assert not list((row.project / "results").glob("*/trials/*.parquet"))


@row_setup
def setup_model_path_with_a_name_too_long(p: Path) -> list[Command]:
    """Python 3.11's is_file raises on ENAMETOOLONG (only "no such file" is False): a traceback."""
    _spec(p, ("models/tiny.onnx", "models/" + "m" * 300 + ".onnx"))
    return _run("--quick")


def test_model_path_with_a_name_too_long(rows):
    row = _row(rows, "model_path_with_a_name_too_long")
    _refused(row.result, "models.fp32.path", "does not exist")


@row_setup
def setup_stored_spec_with_a_zero_threshold(p: Path) -> list[Command]:
    """`perfsite diff` read the stored spec's regression thresholds unvalidated: 0 was a ZeroDivisionError."""
    stored = next((_results(p) / "specs").glob("*.json"))
    data = json.loads(stored.read_text())
    data.setdefault("regression", {})["throughput_ratio"] = 0
    stored.write_text(json.dumps(data))
    (p / "damaged").write_text(str(stored.relative_to(p)))
    return [(["diff", "results", "results"], {})]


def test_stored_spec_with_a_zero_threshold(rows):
    row = _row(rows, "stored_spec_with_a_zero_threshold")
    _refused(row.result, (row.project / "damaged").read_text(), "regression.throughput_ratio", "got `0`")


def _docs_with_a_dangling_link_and_a_loop(p: Path) -> None:
    """A link to a renamed file made copytree fail with a traceback; `docs/self -> ..` copied the project
    into itself level after level first."""
    (p / "docs").mkdir()
    (p / "docs" / "index.md").write_text("# Home\n")
    (p / "docs" / "CHANGELOG.md").symlink_to(p / "CHANGELOG-renamed.md")
    (p / "docs" / "self").symlink_to(p)


def test_docs_with_a_dangling_link_and_a_loop(rows):
    # These docs are in the row of the site of an earlier release: its two builds are the ones these links must
    # not stop (a site build of their own cost a second or two).
    row = _row(rows, "site_of_an_earlier_release")
    assert row.result.returncode == 0 and "Traceback" not in row.result.stderr, row.result.stderr
    site = row.project / "site"
    assert (site / "index.html").is_file() and not (site / "self").exists()
    assert not (row.project / ".perfsite" / "build" / "docs" / "self").exists()


@row_setup
def setup_path_leaving_the_project(p: Path) -> list[Command]:
    outside = p.parent / f"{p.name}-elsewhere.onnx"
    outside.write_bytes((p / "models" / "tiny.onnx").read_bytes())
    _spec(p, ("models/tiny.onnx", f"../{outside.name}"))
    return _validate("--allow-outside") + _validate()


def test_path_leaving_the_project(rows):
    row = _row(rows, "path_leaving_the_project")
    allowed, refused = row.results
    assert allowed.returncode == 0, allowed.stderr
    _refused(refused, str(row.spec), "line 3", "models.fp32.path", f"{row.project}-elsewhere.onnx",
             f"outside the project root `{row.project}`", "use `package:`", "pass `--allow-outside`")


@row_setup
def setup_only_with_an_unknown_key(p: Path) -> list[Command]:
    return _run("--only", "bach=1")


def test_only_with_an_unknown_key(rows):
    row = _row(rows, "only_with_an_unknown_key")
    _refused(row.result, "--only 'bach=1'", "is not KEY=VALUE with a known key",
             "Allowed keys: version, batch, threads")


@row_setup
def setup_ray_address_malformed(p: Path) -> list[Command]:
    return [cmd for address in ("127.0.0.1:99999", "head:abc", ":6379", "--ray=http://head:6379")
            for cmd in _run(*([address] if address.startswith("--") else ["--ray", address]))]


def test_ray_address_malformed(rows):
    """Refused on the command line, before a spec is read or Ray imported (this passes without Ray installed)."""
    row = _row(rows, "ray_address_malformed")
    port, word, host, scheme = row.results
    allowed = "Allowed: `--ray` alone or `--ray auto`"
    _refused(port, "error: --ray '127.0.0.1:99999' is not a Ray cluster's address: the port `99999` is not a "
             "number from 1 to 65535.", allowed, "`--ray HOST:PORT`, the address of a running Ray head as "
             "`ray start --head` prints it")
    _refused(word, "error: --ray 'head:abc' is not a Ray cluster's address: the port `abc` is not a number", allowed)
    _refused(host, "error: --ray ':6379' is not a Ray cluster's address: the host is empty.", allowed)
    _refused(scheme, "error: --ray 'http://head:6379' is not a Ray cluster's address: `http://` is not an address "
             "Ray joins.", allowed)


@row_setup
def setup_target_name_ray_cannot_use(p: Path) -> list[Command]:
    _spec(p, extra="targets: [x86, \"gpu:0\"]\n", name="targets.yaml")
    return [*_run("--ray", "--target", "a b"), *_run("--ray", "--target", ""), (["validate", "targets.yaml"], {})]


def test_target_name_ray_cannot_use(rows):
    """`--target` follows the rule of the spec's `targets:`, whose entries the spec's validation checks."""
    row = _row(rows, "target_name_ray_cannot_use")
    spaced, empty, spec = row.results
    allowed = ("Allowed: lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit, at most 64 "
               "characters, as in a spec's `targets:` (each is the Ray resource `target:NAME`")
    _refused(spaced, "error: --target 'a b' is not a target name.", allowed)
    _refused(empty, "error: --target '' is not a target name.", allowed)
    _refused(spec, "error: Spec `targets.yaml` is invalid: line 8, `targets[1]`: got `\"gpu:0\"`; expected "
             "lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit.")


# ---- model files ----------------------------------------------------------------------------------------------


@row_setup
def setup_missing_model_file(p: Path) -> list[Command]:
    _spec(p, ("models/tiny.onnx", "models/absent.onnx"))
    return _run()


def test_missing_model_file(rows):
    row = _row(rows, "missing_model_file")
    _refused(row.result, str(row.spec), "models.fp32.path", str(row.project / "models" / "absent.onnx"),
             "does not exist", "Allowed: an ONNX file inside the project, relative to the spec's folder")


@row_setup
def setup_file_that_is_not_onnx(p: Path) -> list[Command]:
    (p / "models" / "notes.onnx").write_text("these are my notes, not a model\n")
    _spec(p, ("models/tiny.onnx", "models/notes.onnx"))
    return _run()


def test_file_that_is_not_onnx(rows):
    row = _row(rows, "file_that_is_not_onnx")
    _refused(row.result, str(row.spec), "models.fp32.path", str(row.project / "models" / "notes.onnx"),
             "is not a readable ONNX model", "Allowed: a complete ONNX model file")


@row_setup
def setup_truncated_onnx_file(p: Path) -> list[Command]:
    data = (p / "models" / "tiny.onnx").read_bytes()
    (p / "models" / "cut.onnx").write_bytes(data[: len(data) // 2])
    _spec(p, ("models/tiny.onnx", "models/cut.onnx"))
    return _run()


def test_truncated_onnx_file(rows):
    row = _row(rows, "truncated_onnx_file")
    _refused(row.result, str(row.spec), "models.fp32.path", str(row.project / "models" / "cut.onnx"),
             "Allowed: a complete ONNX model file", "a truncated download")


def test_truncated_onnx_file_at_every_length_is_a_model_error(tmp_path, models):
    """Cut anywhere, a model file is refused before the sweep with a ModelError naming it, never a crash."""
    project = _project(tmp_path, models)
    data = (project / "models" / "tiny.onnx").read_bytes()
    loaded = load_spec(_spec(project, ("models/tiny.onnx", "models/cut.onnx")))
    for length in sorted({*range(0, len(data), max(1, len(data) // 40)), len(data) - 1}):
        (project / "models" / "cut.onnx").write_bytes(data[:length])
        with pytest.raises(ModelError, match=r"models\.fp32\.path: .*cut\.onnx"):
            prepare_versions(loaded, project / "cache")


@row_setup
def setup_model_too_new_for_onnxruntime(p: Path) -> list[Command]:
    _spec(p, ("models/tiny.onnx", "models/too-new.onnx"))
    return _run("--dry-run")


def test_model_too_new_for_onnxruntime(rows):
    row = _row(rows, "model_too_new_for_onnxruntime")
    _refused(row.result, str(row.spec), "models.fp32.path", "too-new.onnx", "cannot load",
             f"Unsupported model IR version: {TOO_NEW_IR}, max supported IR version:",
             "Allowed: a model this onnxruntime supports")


@row_setup
def setup_external_data_outside_the_model_folder(p: Path) -> list[Command]:
    model = onnx.load(str(p / "models" / "tiny.onnx"))
    weight = model.graph.initializer[0]
    weight.ClearField("raw_data")
    weight.ClearField("float_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="../secret.bin")
    (p / "secret.bin").write_bytes(np.eye(4, dtype=np.float32).tobytes())
    onnx.save(model, p / "models" / "external.onnx")
    _spec(p, ("models/tiny.onnx", "models/external.onnx"))
    return _run()


def test_external_data_outside_the_model_folder(rows):
    row = _row(rows, "external_data_outside_the_model_folder")
    _refused(row.result, str(row.spec), "models.fp32.path", "external.onnx",
             "external data at '../secret.bin', outside the model's folder",
             "only reads external data stored beside the model")


@row_setup
def setup_transform_that_fails(p: Path) -> list[Command]:
    # Log of negative calibration inputs gives NaN activations, which static quantization cannot scale.
    _spec(p, ("models/tiny.onnx}", "models/nan.onnx}\n  int8: {from: fp32, quantize: {mode: static_qdq}}"),
          ("dtype: float32}", "dtype: float32, range: [-2, -1]}"))
    return _run()


def test_transform_that_fails(rows):
    row = _row(rows, "transform_that_fails")
    _refused(row.result, str(row.spec), "models.int8.quantize", "building version 'int8'", "quantize static_qdq",
             "nan.onnx", "failed: AssertionError: scale issue (after these warnings: All-NaN axis encountered",
             "Check the options under models.int8.quantize")


# ---- inputs and providers -------------------------------------------------------------------------------------


@row_setup
def setup_input_name_the_model_does_not_have(p: Path) -> list[Command]:
    _spec(p, ("  x: {shape", "  pixels: {shape"))
    return _run()


def test_input_name_the_model_does_not_have(rows):
    row = _row(rows, "input_name_the_model_does_not_have")
    _refused(row.result, str(row.spec), "inputs.pixels", "has no input named 'pixels'",
             "It declares: x: float32 [batch, 4]", "Rename or remove the entry")


@row_setup
def setup_shape_the_model_rejects(p: Path) -> list[Command]:
    _spec(p, ("[batch, 4]", "[batch, 5]"))
    return _run("--dry-run") + _run()


def test_shape_the_model_rejects(rows):
    """Found when the sweep is planned: by a dry run too (it listed the trial as fine until 2026-11-27), and by
    a run before it writes anything."""
    row = _row(rows, "shape_the_model_rejects")
    for result in row.results:
        _refused(result, str(row.spec), "inputs.x", "shape [batch, 5] has 5 on axis 1 where the model fixes 4",
                 "declares x: float32 [batch, 4]", "(version fp32, configuration b1 t1 c1)")
    assert not (row.project / "results").exists()


@row_setup
def setup_dtype_the_model_rejects(p: Path) -> list[Command]:
    _spec(p, ("dtype: float32", "dtype: int64"))
    return _run()


def test_dtype_the_model_rejects(rows):
    row = _row(rows, "dtype_the_model_rejects")
    _refused(row.result, str(row.spec), "inputs.x", "dtype int64 does not match the model's float32",
             "declares x: float32 [batch, 4]")


def test_unavailable_provider_is_refused_by_name():
    with pytest.raises(RunError) as info:
        check_providers(["cpu", "cuda"], "spec.yaml: sweep.provider")
    message = str(info.value)
    assert "spec.yaml: sweep.provider" in message and "`cuda` (CUDAExecutionProvider)" in message
    assert "allowed here: cpu" in message and "--only provider=" in message
    check_providers(["cpu"], "spec.yaml: sweep.provider")


@row_setup
def setup_provider_not_available(p: Path) -> list[Command]:
    _spec(p, ("sweep: {batch: [1]}", "sweep: {batch: [1], provider: [cpu, cuda]}"))
    return _run()


def test_provider_not_available(rows):
    row = _row(rows, "provider_not_available")
    _refused(row.result, str(row.spec), "sweep.provider", "`cuda` (CUDAExecutionProvider) is not available",
             "allowed here: cpu")


# ---- results and output folders ------------------------------------------------------------------------------


# support.results' folder, written once by the `rows` fixture before it forks the rows (about 0.35 s a write on
# 2 cores, a copy 0.02 s; a dozen rows use it). Its files name no folder, so a copy is the same results.
_RESULTS_TEMPLATE: list[Path] = []


def _results(p: Path) -> Path:
    """A schema-correct results folder with synthetic figures, in the row's project (messages name its files
    relative to it, as `--results results` was given)."""
    shutil.copytree(_RESULTS_TEMPLATE[0], p / "results")
    return p / "results" / "cnn-int8"


def _first(experiment: Path, table: str) -> Path:
    return sorted((experiment / table).glob("*.parquet"))[0]


def _damage(p: Path, table: str) -> list[Command]:
    damaged = _first(_results(p), table)
    damaged.write_bytes(damaged.read_bytes()[:100])
    (p / "damaged").write_text(str(damaged.relative_to(p)))
    return _build()


def _check_damage_message(row: Row) -> None:
    damaged = Path((row.project / "damaged").read_text())
    _refused(row.result, str(damaged), "is not readable Parquet",
             f"allowed in {damaged.parent}: Parquet files written by perfsite",
             f"trials/{damaged.name}", f"nodes/{damaged.name}", "measures it again")
    # A first build that fails leaves no empty site folder, which looked like a site built with nothing in it.
    assert not (row.project / "site").exists()


@row_setup
def setup_corrupt_parquet_file(p: Path) -> list[Command]:
    return _damage(p, "trials")


def test_corrupt_parquet_file(rows):
    _check_damage_message(_row(rows, "corrupt_parquet_file"))


@row_setup
def setup_corrupt_parquet_file_in_a_side_table(p: Path) -> list[Command]:
    return _damage(p, "latencies")


def test_corrupt_parquet_file_in_a_side_table(rows):
    # Deleting the side table alone would leave the trial "stored" without its latencies: the message says so.
    _check_damage_message(_row(rows, "corrupt_parquet_file_in_a_side_table"))


@row_setup
def setup_results_from_a_newer_schema_version(p: Path) -> list[Command]:
    target = _first(_results(p), "trials")
    table = pq.read_table(target)
    metadata = {**table.schema.metadata, METADATA_KEY: str(SCHEMA_VERSION + 1).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), target)
    (p / "damaged").write_text(str(target.relative_to(p)))
    return _build()


def test_results_from_a_newer_schema_version(rows):
    row = _row(rows, "results_from_a_newer_schema_version")
    _refused(row.result, (row.project / "damaged").read_text(), "was written by a newer perfsite",
             f"(results schema version {SCHEMA_VERSION + 1}); this perfsite reads versions 1 to {SCHEMA_VERSION}",
             "Upgrade perfsite")


@row_setup
def setup_stored_spec_this_perfsite_cannot_read(p: Path) -> list[Command]:
    stored = next((_results(p) / "specs").glob("*.json"))
    data = json.loads(stored.read_text())
    data["measure"]["warmup_s"] = 3  # a field a newer perfsite might have added
    stored.write_text(json.dumps(data))
    (p / "damaged").write_text(str(stored.relative_to(p)))
    return _build()


def test_stored_spec_this_perfsite_cannot_read(rows):
    row = _row(rows, "stored_spec_this_perfsite_cannot_read")
    _refused(row.result, (row.project / "damaged").read_text(), "measure.warmup_s", "unknown key", "allowed here:")


# Resolved here, not in the forked child: the rows run from threads, and a child must not take loader locks.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
_PRCTL, _CAPGET, _CAPSET = (_LIBC.prctl, _LIBC.capget, _LIBC.capset) if _LIBC is not None else (None,) * 3
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE = 24, 1
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _without_root_override() -> None:
    """In the child: make root respect file permissions, so a read-only folder is read-only for it too. Drops
    CAP_DAC_OVERRIDE from the bounding set (a program it execs, a measurement process, never gets it back) and
    from its own effective and permitted sets (the command runs in this very process: support.cli.perfsite
    forks it and calls this before the command, where subprocess would call it before exec)."""
    if os.geteuid() != 0 or _PRCTL is None:
        return
    _PRCTL(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0)
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if _CAPGET(ctypes.byref(header), data) == 0:
        data[0].effective &= ~(1 << CAP_DAC_OVERRIDE)
        data[0].permitted &= ~(1 << CAP_DAC_OVERRIDE)
        _CAPSET(ctypes.byref(header), data)


def _read_only(p: Path) -> Path:
    folder = p / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    probe = [sys.executable, "-c", f"open({str(folder / 'probe')!r}, 'w')"]
    if subprocess.run(probe, preexec_fn=_without_root_override, capture_output=True).returncode == 0:
        raise _Skip("this process cannot make a folder read-only (root without CAP_SETPCAP)")
    return folder


@row_setup
def setup_results_folder_is_a_file(p: Path) -> list[Command]:
    (p / "taken").write_text("a file where the results should go\n")
    return _run(results="taken")


def test_results_folder_is_a_file(rows):
    row = _row(rows, "results_folder_is_a_file")
    _refused(row.result, "Cannot write results to taken/tiny", "taken is a file, not a folder",
             "Allowed: a folder perfsite can create and write", "--results DIR")


@row_setup
def setup_results_root_is_an_experiment_folder(p: Path) -> list[Command]:
    """`--results results/cnn-int8`, the folder `build` and `compare` take for one experiment: `run` measured
    into results/cnn-int8/tiny, an experiment nested in another's folder that no build or query finds."""
    experiment = _results(p)
    (p / "before").write_text("\n".join(sorted(str(f.relative_to(p)) for f in experiment.rglob("*"))))
    return _run(results="results/cnn-int8")


def test_results_root_is_an_experiment_folder(rows):
    row = _row(rows, "results_root_is_an_experiment_folder")
    _refused(row.result, "The results root results/cnn-int8 is the results folder of the experiment `cnn-int8` "
             "(it holds trials/*.parquet), not a folder of experiments", "results/cnn-int8/tiny",
             "Nothing was measured.", "Allowed for --results: the folder that holds the experiments' folders, "
             "here --results results")
    after = sorted(str(f.relative_to(row.project)) for f in (row.project / "results" / "cnn-int8").rglob("*"))
    assert "\n".join(after) == (row.project / "before").read_text()  # no tiny/ inside, nothing changed


@row_setup
def setup_results_folder_is_read_only(p: Path) -> list[Command]:
    return _run(results=str(_read_only(p)), preexec_fn=_without_root_override)


def test_results_folder_is_read_only(rows):
    row = _row(rows, "results_folder_is_read_only")
    _refused(row.result, f"Cannot write results to {row.project / 'read-only' / 'tiny'}", "Permission denied",
             "Allowed: a folder perfsite can create and write", "--results DIR")


@row_setup
def setup_cache_folder_is_read_only(p: Path) -> list[Command]:
    """PERFSITE_CACHE_DIR read-only, a spec with a derived (fp16) version: both caches are unusable."""
    _spec(p, ("  fp32: {path: models/tiny.onnx}", "  fp32: {path: models/tiny.onnx}\n  half: {from: fp32, fp16: true}"))
    cache = _read_only(p)
    # The derived version alone: building it is what uses the models cache, and one trial measured shows that
    # the run went on.
    return _run("--quick", "--only", "version=half", env={"PERFSITE_CACHE_DIR": str(cache)},
                preexec_fn=_without_root_override)


def test_cache_folder_is_read_only(rows):
    """A cache only saves time: the run goes on without it, and says so once per cache."""
    row = _row(rows, "cache_folder_is_read_only")
    assert row.result.returncode == 0 and "Traceback" not in row.result.stderr, row.result.stderr
    text = " ".join(row.result.stderr.split())
    cache = row.project / "read-only"
    for folder, what in ((cache / "models", "derived models are built"),
                         (cache / "probe", "the machine's limits are measured")):
        assert text.count(f"Warning: cannot use the cache folder {folder} (Permission denied); {what} without "
                          "caching. Set PERFSITE_CACHE_DIR to a writable folder to keep the cache.") == 1, text
    assert "tiny: 1 measured, 0 already stored" in row.result.stdout and not list(cache.iterdir())


@row_setup
def setup_profile_out_folder_is_read_only(p: Path) -> list[Command]:
    return [(["profile", "models/tiny.onnx", "--out", str(_read_only(p))], {"preexec_fn": _without_root_override})]


def test_profile_out_folder_is_read_only(rows):
    row = _row(rows, "profile_out_folder_is_read_only")
    _refused(row.result, f"--out {row.project / 'read-only'}: cannot write the report there (Permission denied). "
             "Allowed: --out with a folder you can write to (created if missing)")
    assert "Measuring" not in row.result.stderr


@row_setup
def setup_site_folder_is_a_file(p: Path) -> list[Command]:
    _results(p)
    (p / "site").write_text("a file where the site should go\n")
    return _build()


def test_site_folder_is_a_file(rows):
    row = _row(rows, "site_folder_is_a_file")
    _refused(row.result, f"Cannot write the site to {row.project / 'site'}", "it is a file, not a folder",
             "Allowed: a folder perfsite can create and write", "--site DIR")


@row_setup
def setup_site_folder_is_read_only(p: Path) -> list[Command]:
    _results(p)
    return _build(str(_read_only(p) / "site"), preexec_fn=_without_root_override)


def test_site_folder_is_read_only(rows):
    row = _row(rows, "site_folder_is_read_only")
    _refused(row.result, f"Cannot write the site to {row.project / 'read-only' / 'site'}", "Permission denied",
             "Allowed: a folder perfsite can create and write", "--site DIR")


@row_setup
def setup_site_folder_is_another_website(p: Path) -> list[Command]:
    _results(p)
    (p / "site" / "blog").mkdir(parents=True)
    (p / "site" / "index.html").write_text("<h1>my blog</h1>\n")
    (p / "site" / "blog" / "post.html").write_text("<p>a post</p>\n")
    return _build()


def test_site_folder_is_another_website(rows):
    """mkdocs would empty it (it did: every file and sub-folder deleted, exit 0): refused, left as it was."""
    row = _row(rows, "site_folder_is_another_website")
    _refused(row.result, f"The site folder {row.project / 'site'} holds files perfsite did not write",
             "no .perfsite-site marker", "Allowed: a new or empty folder, or a site perfsite built", "--site")
    assert (row.project / "site" / "index.html").read_text() == "<h1>my blog</h1>\n"
    assert (row.project / "site" / "blog" / "post.html").read_text() == "<p>a post</p>\n"
    assert sorted(p.name for p in (row.project / "site").iterdir()) == ["blog", "index.html"]


@row_setup
def setup_site_of_an_earlier_release(p: Path) -> list[Command]:
    """A site built before the marker existed: index.html beside perfsite's own assets."""
    _results(p)
    (p / "site" / "assets" / "perfsite").mkdir(parents=True)
    (p / "site" / "index.html").write_text("<p>old perfsite site</p>")
    (p / "site" / "assets" / "perfsite" / "perfsite.css").write_text("/* old */")
    (p / "site" / "stale-page.html").write_text("gone after the build")
    _docs_with_a_dangling_link_and_a_loop(p)  # for test_docs_with_a_dangling_link_and_a_loop
    return _build() + _build()


def test_site_of_an_earlier_release_is_accepted_once_and_marked(rows):
    row = _row(rows, "site_of_an_earlier_release")
    first, again = row.results
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    site = row.project / "site"
    assert (site / ".perfsite-site").is_file() and "cnn-int8" in (site / "reports" / "index.html").read_text()
    assert not (site / "stale-page.html").exists()
    assert not [e.name for e in row.project.iterdir() if ".perfsite-" in e.name]  # no staging folder left


@row_setup
def setup_site_folder_is_a_symlink(p: Path) -> list[Command]:
    _results(p)
    (p / "elsewhere").mkdir()
    (p / "elsewhere" / "keep.txt").write_text("mine")
    (p / "site").symlink_to(p / "elsewhere")
    return _build()


def test_site_folder_is_a_symlink(rows):
    row = _row(rows, "site_folder_is_a_symlink")
    _refused(row.result, f"The site folder {row.project / 'site'} is a symbolic link", "does not follow a link",
             "Pass the link's target with --site")
    assert (row.project / "elsewhere" / "keep.txt").read_text() == "mine"


@row_setup
def setup_site_folder_inside_the_docs(p: Path) -> list[Command]:
    """Inside docs/ every build copied the last site into the next one, nesting deeper each time; the same for
    a docs_dir that the project's mkdocs.yml names."""
    _results(p)
    (p / "docs").mkdir()
    (p / "docs" / "index.md").write_text("# Home\n")
    custom = p / "custom"
    (custom / "pages").mkdir(parents=True)
    (custom / "mkdocs.yml").write_text("site_name: custom\ndocs_dir: pages\n")
    return _build("docs/site") + [(["build", "--results", "../results", "--site", "pages/out"], {"cwd": custom})]


def test_site_folder_inside_the_docs(rows):
    row = _row(rows, "site_folder_inside_the_docs")
    first, custom = row.results
    _refused(first, f"The site folder {row.project / 'docs' / 'site'} is inside the docs folder "
                    f"{row.project / 'docs'}", "every build would read the last site back in", "--site")
    _refused(custom, f"is inside the docs folder {row.project / 'custom' / 'pages'}")
    assert not (row.project / "docs" / "site").exists() and not (row.project / "custom" / "pages" / "out").exists()


@row_setup
def setup_site_folder_is_the_home_folder(p: Path) -> list[Command]:
    _results(p)
    return _build(str(Path.home()))


def test_site_folder_is_the_home_folder(rows):
    row = _row(rows, "site_folder_is_the_home_folder")
    _refused(row.result, f"The site folder {Path.home().resolve()} would contain", "or be the home or root folder",
             "Choose a separate folder with --site")


def _second_spec_named_tiny(p: Path) -> None:
    """Another experiment in its own folder that happens to be called `tiny` too, of another model (a copy of the
    same bytes would be the same experiment checked out twice: LoadedSpec.same_experiment)."""
    (p / "other").mkdir()
    _project(p / "other", p / "models")
    model = onnx.load(str(p / "other" / "models" / "tiny.onnx"))
    model.doc_string = "another model"
    onnx.save(model, p / "other" / "models" / "tiny.onnx")
    (p / "other" / "spec.yaml").write_text(SPEC.replace("name: tiny", "name: tiny\ndescription: another model"))


@row_setup
def setup_two_specs_with_one_name_in_one_run(p: Path) -> list[Command]:
    _second_spec_named_tiny(p)
    return [(["run", "spec.yaml", "other/spec.yaml", "--results", "results", "--quick"], {})]


def test_two_specs_with_one_name_in_one_run(rows):
    row = _row(rows, "two_specs_with_one_name_in_one_run")
    _refused(row.result, f"The specs {row.project / 'other' / 'spec.yaml'} and {row.project / 'spec.yaml'} both "
             "have `name: tiny`", f"one results folder {row.project / 'results' / 'tiny'}",
             "rename one of them (`name:`) or give it its own --results DIR")
    assert not (row.project / "results").exists()  # refused before measuring anything


def test_two_specs_with_one_name_one_after_the_other(rows):
    # The spec_changed row runs the other spec right after its first run: a measured run of its own cost a second
    # or two.
    row = _row(rows, "spec_changed")
    first, second = row.results[:2]
    assert first.returncode == 0, first.stderr
    _refused(second, f"The specs {row.project / 'other' / 'spec.yaml'} and {row.project / 'spec.yaml'} both "
             "have `name: tiny`", "one experiment mixing two unrelated models")
    # The first run's trial and the renamed version's (test_spec_changed_...), none of the other spec's.
    assert len(list((row.project / "results" / "tiny" / "trials").glob("*.parquet"))) == 2


@row_setup
def setup_non_finite_value(p: Path) -> list[Command]:
    _spec(p, ("x: {shape: [batch, 4], dtype: float32}", "x: {value: [1.0, .nan, .inf, 2.0], dtype: float32}"))
    return _validate() + _run("--quick")


def test_non_finite_value(rows):
    """`.nan` passed validate and run, was stored as null, and every later build of the results failed."""
    row = _row(rows, "non_finite_value")
    for result in row.results:
        _refused(result, "`inputs.x.value`", "expected finite numbers (not .nan, .inf or -.inf)", "input `file:`")
    assert not (row.project / "results").exists()


@row_setup
def setup_input_file_with_zero_rows(p: Path) -> list[Command]:
    np.save(p / "empty.npy", np.zeros((0, 4), np.float32))
    _spec(p, ("x: {shape: [batch, 4], dtype: float32}", "x: {file: empty.npy}"))
    return _run("--quick")


def test_input_file_with_zero_rows(rows):
    """It was stored as an `ok` trial at batch 1, with a throughput for items never processed."""
    row = _row(rows, "input_file_with_zero_rows")
    _refused(row.result, f"{row.project / 'spec.yaml'}: inputs.x: file empty.npy holds an empty array (shape [0, 4])",
             "save at least one row")
    assert not list((row.project / "results").glob("*/trials/*.parquet"))


@row_setup
def setup_sweep_too_large(p: Path) -> list[Command]:
    values = list(range(1, 301))
    _spec(p, ("x: {shape: [batch, 4], dtype: float32}", "x: {shape: [batch, n], dtype: float32}"),
          ("sweep: {batch: [1]}", f"sweep: {{batch: {values}, threads: {values}, concurrency: {values}, n: {values}}}"))
    return _validate()


def test_sweep_too_large(rows):
    """Four axes of 300 values: validate built 8.1e9 configurations and ran out of memory."""
    row = _row(rows, "sweep_too_large")
    _refused(row.result, "`sweep`: the sweep plans 8,100,000,000 trials",
             "(batch 300 × threads 300 × concurrency 300 × n 300 values × 1 version(s))",
             "more than the 100,000 one spec may plan")


def _io_model(path: Path, elem_type: int, dims: list) -> None:
    """x -> Cast to float -> y, with x of `elem_type` and shape `dims`."""
    x = helper.make_tensor_value_info("x", elem_type, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "g", [x], [y])
    save(onnx_model(graph), path)


@row_setup
def setup_value_does_not_fit_the_input_type(p: Path) -> list[Command]:
    _io_model(p / "models" / "u8.onnx", TensorProto.UINT8, ["batch", 4])
    _spec(p, ("{path: models/tiny.onnx}", "{path: models/u8.onnx}"),
          ("x: {shape: [batch, 4], dtype: float32}", "x: {value: 300}"))
    _spec(p, ("x: {shape: [batch, 4], dtype: float32}", "x: {value: 1.0e+39}"), name="huge.yaml")
    return _run("--quick") + [(["run", "huge.yaml", "--results", "results-huge", "--quick"], {})]


def test_value_does_not_fit_the_input_type(rows):
    row = _row(rows, "value_does_not_fit_the_input_type")
    uint8, float32 = row.results
    _refused(uint8, "inputs.x: value 300 does not fit uint8 (0..255), the model's type for this input",
             "declares x: uint8 [batch, 4]")
    # 1e39 became inf in float32, silently.
    _refused(float32, "inputs.x: value 1e+39 does not fit float32 (±3.403e+38), the model's type")


@row_setup
def setup_input_larger_than_memory(p: Path) -> list[Command]:
    _io_model(p / "models" / "free.onnx", TensorProto.FLOAT, ["batch", "n"])
    _spec(p, ("{path: models/tiny.onnx}", "{path: models/free.onnx}"),
          ("x: {shape: [batch, 4], dtype: float32}", "x: {shape: [batch, 100000000000], dtype: float32}"))
    return _run("--quick") + [(["profile", "models/free.onnx", "--shape", "x=1,100000000000", "--quick"], {})]


def test_input_larger_than_memory(rows):
    """numpy's MemoryError was a traceback (or the OOM killer ended the process)."""
    row = _row(rows, "input_larger_than_memory")
    for result in row.results:
        _refused(result, "inputs.x: shape [1, 100000000000] of float32 is 372.5 GiB, more than half of the",
                 "use a smaller shape or batch")


@row_setup
def setup_unreadable_npz_inputs(p: Path) -> list[Command]:
    (p / "corrupt.npz").write_bytes(b"PK\x03\x04 not a zip archive")
    np.savez(p / "objects.npz", x=np.array([{"a": 1}], dtype=object))
    commands = []
    for name in ("corrupt", "objects"):
        _spec(p, ("x: {shape: [batch, 4], dtype: float32}", f"x: {{file: {name}.npz}}"), name=f"{name}.yaml")
        commands.append((["run", f"{name}.yaml", "--results", "results", "--quick"], {}))
    return commands


def test_unreadable_npz_inputs(rows):
    row = _row(rows, "unreadable_npz_inputs")
    corrupt, objects = row.results
    _refused(corrupt, f"inputs.x.file: {row.project / 'corrupt.npz'} is not a readable .npy or .npz file "
             "(BadZipFile: File is not a zip file)", "Allowed: numeric arrays saved with numpy.save")
    _refused(objects, f"inputs.x.file: {row.project / 'objects.npz'} is not a readable .npy or .npz file "
             "(ValueError: it holds Python objects, which perfsite does not unpickle)")


@row_setup
def setup_serve_on_a_port_that_does_not_exist(p: Path) -> list[Command]:
    return [(["serve", "--port", "99999"], {}), (["serve", "--port", "-1"], {})]


def test_serve_on_a_port_that_does_not_exist(rows):
    row = _row(rows, "serve_on_a_port_that_does_not_exist")
    for result, port in zip(row.results, ("99999", "-1"), strict=True):
        _refused(result, f"--port {port} is not a TCP port. Allowed: 1 to 65535 (0: any free port")


# ---- a spec changed since its results were measured -----------------------------------------------------------


@row_setup
def setup_spec_changed(p: Path) -> list[Command]:
    """Version `fp32` measured, then the spec renamed it `candidate` and ran again: both trials are stored.
    Between the two, another spec named `tiny` is refused (test_two_specs_with_one_name_one_after_the_other)."""
    _second_spec_named_tiny(p)
    other = [(["run", "other/spec.yaml", "--results", "results", "--quick"], {})]
    renamed = _spec(p, ("  fp32: {path", "  candidate: {path"), name="changed.yaml")
    rerun = [(["run", str(renamed), "--results", "results"], {})]
    only = [(["run", str(renamed), "--results", "results", "--only", "version=fp32"], {})]
    return _run() + other + rerun + _build() + only


def test_spec_changed_build_renders_every_trial_and_names_the_older_ones(rows):
    row = _row(rows, "spec_changed")
    first, _, rerun, build, _ = row.results
    assert first.returncode == 0 and rerun.returncode == 0, first.stderr + rerun.stderr
    assert build.returncode == 0, build.stderr
    message = " ".join(build.stderr.split())
    assert "tiny: 1 stored trial(s) are of versions no longer in its newest spec (fp32)" in message
    page = (row.project / "site" / "reports" / "tiny" / "index.html").read_text()
    assert "fp32" in page and "candidate" in page  # nothing measured is thrown away


def test_spec_changed_only_names_a_version_no_longer_in_the_spec(rows):
    row = _row(rows, "spec_changed")
    _refused(row.result, str(row.project / "changed.yaml"), "--only", "version=fp32", "candidate")


# ---- fuzzing: onnxruntime profiles (the spec loader's fuzz tests live in tests/test_spec.py) -----------------


def _parses_or_names_the_file(path: Path) -> None:
    """A damaged profile either still parses or raises RunError naming it; nothing else escapes."""
    try:
        recording = parse_profile(path)
        node_statistics(recording)
    except RunError as e:
        assert str(path) in str(e)


_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_PROFILE_BYTES = PROFILE.read_bytes()


@_FUZZ
@given(cut=st.integers(min_value=0, max_value=len(_PROFILE_BYTES)))
def test_fuzz_truncated_profile(tmp_path, cut):
    path = tmp_path / "profile.json"
    path.write_bytes(_PROFILE_BYTES[:cut])
    _parses_or_names_the_file(path)


@_FUZZ
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=len(_PROFILE_BYTES) - 1), st.binary(max_size=8)),
                min_size=1, max_size=6))
def test_fuzz_garbled_profile(tmp_path, patches):
    data = bytearray(_PROFILE_BYTES)
    for offset, garbage in patches:
        data[offset : offset + len(garbage)] = garbage
    path = tmp_path / "profile.json"
    path.write_bytes(bytes(data))
    _parses_or_names_the_file(path)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.sampled_from([10**400, -1, "3072", "", "_kernel_time"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@_FUZZ
@given(st.data())
def test_fuzz_mutated_profile_fields(tmp_path, data):
    """Valid JSON with wrong values where onnxruntime writes numbers, strings and nested statistics."""
    events = json.loads(PROFILE.read_text())
    for _ in range(data.draw(st.integers(min_value=1, max_value=5))):
        event = events[data.draw(st.integers(min_value=0, max_value=len(events) - 1))]
        holder = event["args"] if isinstance(event.get("args"), dict) and data.draw(st.booleans()) else event
        keys = sorted(holder) + ["thread_scheduling_stats", "node_index"]
        holder[data.draw(st.sampled_from(keys))] = data.draw(_JSON_VALUES)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(events, allow_nan=True, default=str))
    _parses_or_names_the_file(path)


# ---- the docs table -------------------------------------------------------------------------------------------

DOCS = ROOT / "docs" / "errors.md"
_CITED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)")


def test_every_row_of_the_docs_table_names_an_existing_test():
    lines = DOCS.read_text().splitlines()
    rows = [line for line in lines if line.startswith("| ") and "`tests/" in line]
    assert len(rows) >= 25
    # Every row belongs to a table: a row after a non-table line would render as a paragraph of pipes.
    for before, line, after in zip([""] + lines[:-1], lines, lines[1:] + [""], strict=True):
        if line.startswith("|") and not before.startswith("|"):
            assert after.startswith("|---") or after.startswith("| ---"), f"a table row without a header: {line[:80]}"
    for row in rows:
        cited = _CITED.findall(row)
        assert cited, f"no test named in: {row}"
        if row.count(" | ") >= 3:  # the bad-input and fault tables have an exit status column (2 and 3: diff's)
            assert re.search(r"\| (0|1|2|3|130|141) \|", row), f"no exit status in: {row}"
        for file, name in cited:
            source = (ROOT / file).read_text()
            assert re.search(rf"^def {name}\(", source, re.M), f"{file}::{name} (cited in docs/errors.md) not found"


def test_every_test_here_is_in_the_docs_table():
    cited = {name for _, name in _CITED.findall(DOCS.read_text())}
    here = set(re.findall(r"^def (test_\w+)\(", Path(__file__).read_text(), re.M))
    internal = {"test_every_row_of_the_docs_table_names_an_existing_test", "test_every_test_here_is_in_the_docs_table"}
    assert here - internal - cited == set()
