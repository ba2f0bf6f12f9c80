"""The command line: exit codes, one-paragraph errors, help text, and the docs naming every command."""

from __future__ import annotations

import json

import pytest
from perfsite_testing import ROOT, perfsite, write_spec

from generator.cli import app

COMMANDS = sorted(c.name or c.callback.__name__ for c in app.registered_commands)


def test_version():
    out = perfsite("--version")
    assert out.returncode == 0 and out.stdout.startswith("perfsite ")


def test_misspelt_key_names_file_key_and_suggestion(tmp_path):
    spec = write_spec(tmp_path, """\
        name: typo
        models:
          fp32: {path: m.onnx}
        inputs:
          input: {shape: [batch, 3], dtype: float32}
        mesure: {warmup: 1}
        """)
    out = perfsite("validate", str(spec))
    assert out.returncode == 1
    message = " ".join(out.stderr.split())
    assert str(spec) in message
    assert "`mesure`" in message and "did you mean `measure`" in message
    assert "Traceback" not in out.stderr


def test_validate_accepts_the_examples():
    out = perfsite("validate", str(ROOT / "experiments"))
    assert out.returncode == 0, out.stderr
    assert "quickstart" in out.stdout and "transformer" in out.stdout


def test_schema_is_json_schema():
    out = perfsite("schema")
    assert out.returncode == 0
    schema = json.loads(out.stdout)
    assert "models" in schema["properties"] and "sweep" in schema["properties"]


def test_usage_errors_exit_1_not_2(tmp_path):
    # 2 and 3 are kept for `perfsite diff` verdicts, so CI can tell a typo from a regression.
    assert perfsite("run").returncode == 1
    assert perfsite("run", "--no-such-option", "x.yaml").returncode == 1
    # One paragraph on stderr, never a traceback (typer's own copy of click raises its own error class).
    for args in (("--no-such-option",), ("run", "--no-such-option", "x.yaml")):
        out = perfsite(*args)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert "Error: No such option: --no-such-option" in out.stderr


def test_missing_spec_file_is_a_user_error(tmp_path):
    out = perfsite("run", str(tmp_path / "nope.yaml"))
    assert out.returncode == 1 and "nope.yaml" in out.stderr and "Traceback" not in out.stderr


def test_build_with_no_results_says_what_to_do(tmp_path):
    out = perfsite("build", "--results", str(tmp_path / "none"), "--site", str(tmp_path / "site"), cwd=tmp_path)
    assert out.returncode == 1 and "perfsite run" in out.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_is_documented(command):
    out = perfsite(command, "--help")
    assert out.returncode == 0 and "Usage" in out.stdout
    docs = (ROOT / "docs" / "cli.md").read_text()
    assert f"perfsite {command}" in docs
    assert f"perfsite {command}" in (ROOT / "README.md").read_text()
