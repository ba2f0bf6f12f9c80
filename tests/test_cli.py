"""The command line: exit codes, one-paragraph errors, help text, and the docs naming every command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from support.cli import ROOT, perfsite, write_spec
from support.models import matmul_model

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
        assert "error: No such option: --no-such-option. Run `perfsite --help`" in out.stderr or \
            "error: No such option: --no-such-option. Run `perfsite run --help`" in out.stderr


def test_missing_spec_file_is_a_user_error(tmp_path):
    out = perfsite("run", str(tmp_path / "nope.yaml"))
    assert out.returncode == 1 and "nope.yaml" in out.stderr and "Traceback" not in out.stderr


def test_build_with_no_results_says_what_to_do(tmp_path):
    out = perfsite("build", "--results", str(tmp_path / "none"), "--site", str(tmp_path / "site"), cwd=tmp_path)
    assert out.returncode == 1 and "perfsite run" in out.stderr


def test_build_results_that_is_a_file_says_so(tmp_path, monkeypatch, capsys):
    from generator.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("not results\n")
    monkeypatch.setattr(sys, "argv", ["perfsite", "build", "--results", "README.md", "--site", "site"])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_.value.code == 1 and "The results directory README.md is a file, not a folder." in err, err
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "86401"])
def test_profile_max_seconds_must_be_finite_and_in_range(tmp_path, monkeypatch, capsys, value):
    """NaN fails every comparison: a range on the option reported it as above the maximum."""
    from generator.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["perfsite", "profile", "m.onnx", "--max-seconds", value])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_.value.code == 1 and "allowed: a finite number of seconds from 0.01 to 86,400" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_is_documented(command):
    out = perfsite(command, "--help")
    assert out.returncode == 0 and "Usage" in out.stdout
    docs = (ROOT / "docs" / "cli.md").read_text()
    assert f"perfsite {command}" in docs
    assert f"perfsite {command}" in (ROOT / "README.md").read_text()


# Options whose value may be left out (generator.cli.app.optional_ray_address): alone, they are complete.
OPTIONAL_VALUES = ("--ray",)


def _malformed_command_lines() -> list[tuple[list[str], str]]:
    """For every command (read from the app, so new ones are covered): an unknown option, a missing argument,
    each option without its value, and each number option with a word for a value; with the fragment of the
    message that says what is wrong."""
    import typing

    import typer

    from generator.cli import app

    cases: list[tuple[list[str], str]] = [(["nosuch"], "No such command 'nosuch'"),
                                           (["--no-such-option"], "No such option: --no-such-option")]
    for name, command in typer.main.get_command(app).commands.items():
        hints = typing.get_type_hints(command.callback)
        arguments = [p for p in command.params if p.param_type_name == "argument" and p.required]
        given = ["x"] * len(arguments)
        cases.append(([name, *given, "--no-such-option"], "No such option: --no-such-option"))
        if arguments:
            cases.append(([name], "Missing argument"))
        for option in (p for p in command.params if p.param_type_name == "option" and not p.is_flag):
            if option.opts[0] not in OPTIONAL_VALUES:
                cases.append(([name, *given, option.opts[0]], f"Option '{option.opts[0]}' requires an argument"))
            base = {t for t in typing.get_args(hints[option.name]) or (hints[option.name],)} - {type(None)}
            if base & {int, float}:
                cases.append(([name, *given, option.opts[0], "abc"], f"Invalid value for '{option.opts[0]}'"))
            # A number option at its extremes: just below its minimum (`--trend 0`) and far above its maximum
            # (`profile --max-seconds 1e9`, which the operating system's timers cannot even represent).
            limits = (getattr(option, "min", None), getattr(option, "max", None))  # typer keeps them on the option
            for value in ([limits[0] - 1] if limits[0] is not None else []) + \
                         ([limits[1] * 1e4] if limits[1] is not None else []):
                cases.append(([name, *given, option.opts[0], str(value)],
                              f"Invalid value for '{option.opts[0]}': Input should be"))
    return cases


def _main_exit(main, args: list[str], monkeypatch, capsys) -> tuple[int, str]:
    """perfsite's main() in-process on `args`: its exit status and what it wrote to stderr."""
    monkeypatch.setattr(sys, "argv", ["perfsite", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    return exit_.value.code, capsys.readouterr().err.strip()


def test_every_malformed_command_line_is_one_paragraph_and_exit_1(tmp_path, monkeypatch, capsys):
    """Walked in-process through main(): exit 1 (2 and 3 are diff verdicts), `error:`, one paragraph naming the
    problem and the command's --help, never a traceback."""
    from generator.cli import main

    monkeypatch.chdir(tmp_path)
    cases = _malformed_command_lines()
    assert len(cases) > 60  # every command and option, not a sample
    for args, fragment in cases:
        code, err = _main_exit(main, args, monkeypatch, capsys)
        assert code == 1, (args, err)
        assert err.startswith("error: ") and "\n\n" not in err and "Traceback" not in err, (args, err)
        flat = " ".join(err.split())
        assert fragment in flat and "--help` for the arguments and options it takes." in flat, (args, err)


def test_plain_perfsite_prints_the_commands():
    """No command at all is a request for the list of commands, not a mistake: help on stdout, exit 0."""
    out = perfsite()
    assert out.returncode == 0 and "Usage: perfsite" in out.stdout and "run" in out.stdout
    assert "Traceback" not in out.stderr


def test_example_models_into_a_file_is_a_user_error(tmp_path):
    (tmp_path / "cnn.onnx").write_bytes(b"a model already")
    out = perfsite("example-models", "cnn.onnx", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "error: cnn.onnx is a file; the example models go into a folder." in " ".join(out.stderr.split())


def test_example_models_never_replace_a_file_perfsite_did_not_write(tmp_path):
    """`perfsite example-models DIR` replaced a user's own `cnn.onnx` there without a word (exit 0). Now a file of
    that name that is not an example model perfsite wrote stops the command before anything is written; the
    example models of an earlier run are brought up to date as before."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "transformer.onnx").write_bytes(b"my own transformer, not ONNX at all")
    out = perfsite("example-models", "mine", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr and "\n\n" not in out.stderr.strip()
    flat = " ".join(out.stderr.split())
    assert flat.startswith("error: mine/transformer.onnx already exists and is not a model perfsite wrote; writing "
                           "the example model there would replace it. Nothing was written. Allowed:"), flat
    assert (mine / "transformer.onnx").read_bytes() == b"my own transformer, not ONNX at all"
    assert not (mine / "cnn.onnx").exists()  # every file is checked before any is written
    (mine / "transformer.onnx").unlink()
    first = perfsite("example-models", "mine", cwd=tmp_path)
    again = perfsite("example-models", "mine", cwd=tmp_path)
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["cnn.onnx", "decoder.onnx", "transformer.onnx"]


def test_nothing_is_written_where_the_next_build_empties(tmp_path):
    """`perfsite run --results .perfsite/build/res` stored its trials, and the next `perfsite build` removed
    `.perfsite/build` whole, results with it (the page caches under `.perfsite/cache` are pruned the same way).
    Both folders are refused as a built site is, by `run` and by `example-models`, before anything is written."""
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    write_spec(tmp_path, "name: tiny\nmodels:\n  fp32: {path: models/tiny.onnx}\ninputs:\n  x: {shape: [batch, 4]}\n")
    for where in (".perfsite/build/res", ".perfsite/cache/res"):
        out = perfsite("run", "spec.yaml", "--quick", "--results", where, cwd=tmp_path)
        flat = " ".join(out.stderr.split())
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        folder = tmp_path / where.rsplit("/", 1)[0]
        assert flat.startswith(f"error: Cannot write results to {where}/tiny: it is inside {folder}, perfsite's own "
                               "scratch folder, which every `perfsite build` empties. Allowed:"), flat
        assert not (tmp_path / where).exists()
    models = perfsite("example-models", ".perfsite/build/models", cwd=tmp_path)
    flat = " ".join(models.stderr.split())
    assert models.returncode == 1 and "Traceback" not in models.stderr
    assert flat.startswith(f"error: .perfsite/build/models is inside {tmp_path / '.perfsite' / 'build'}, perfsite's "
                           "own scratch folder, which every `perfsite build` empties: the models would be lost."), flat


def test_an_output_file_never_replaces_an_input_or_another_output(tmp_path):
    """`perfsite count base.onnx cand.onnx --json base.onnx` wrote the verdict over the baseline model, two output
    options naming one file kept only the last one written, and `perfsite diff` wrote its outputs into the results
    folders it read. All are refused before anything runs."""
    (tmp_path / "models").mkdir()
    base = matmul_model(tmp_path / "models" / "base.onnx")
    cand = matmul_model(tmp_path / "models" / "cand.onnx", before="Relu")
    model = base.read_bytes()
    for table in ("trials", "specs"):
        (tmp_path / "results" / "tiny" / table).mkdir(parents=True)
    # Two checkouts for `diff --measure`: its outputs must not replace a spec or a file a spec names.
    for side in ("co-base", "co-cand"):
        (tmp_path / side / "e" / "models").mkdir(parents=True)
        matmul_model(tmp_path / side / "e" / "models" / "tiny.onnx")
    # The candidate's model keeps its weight in an external-data file, a file the model's readers read too.
    weights = onnx.load(str(tmp_path / "co-cand" / "e" / "models" / "tiny.onnx"))
    onnx.save_model(weights, str(tmp_path / "co-cand" / "e" / "models" / "tiny.onnx"), save_as_external_data=True,
                    location="tiny.data", size_threshold=0)
    for side in ("co-base", "co-cand"):
        (tmp_path / side / "e" / "x.npy").write_bytes(b"not read before the check")
        (tmp_path / side / "e" / "s.yaml").write_text("name: s\nmodels: {fp32: {path: models/tiny.onnx}}\n"
                                                      "inputs: {x: {file: x.npy}}\n")
    checkouts = {p: p.read_bytes() for p in (tmp_path / "co-base").rglob("*") if p.is_file()}
    cases = [
        (["count", "models/base.onnx", "models/cand.onnx", "--json", "models/base.onnx"],
         "error: --json models/base.onnx is the baseline model, which this command reads: writing there would "
         "replace it. Nothing was measured or written. Allowed: a file of its own for --json"),
        (["count", "models/base.onnx", "models/cand.onnx", "--markdown", str(cand)],
         f"error: --markdown {cand} is the candidate model, which this command reads"),
        (["count", "models/base.onnx", "models/cand.onnx", "--json", "out.txt", "--markdown", "./out.txt"],
         "error: --json and --markdown both name out.txt: one would replace the other. Allowed: a file of its "
         "own for each output option."),
        (["diff", "a", "b", "--markdown", "out.txt", "--bencher-json", "out.txt"],
         "error: --markdown and --bencher-json both name out.txt: one would replace the other."),
        # Inside a results folder the diff reads: `--json res/cnn/trials/K.parquet` replaced a trial (exit 0).
        (["diff", "git:HEAD", "res", "--json", "res/cnn/trials/K.parquet"],
         "error: --json res/cnn/trials/K.parquet is inside the candidate res, which this command reads: a file "
         "written there would replace or sit among the results perfsite stores. Nothing was measured or written. "
         "Allowed: a file outside every results store for --json."),
        (["diff", "a", "b", "--measure", "e/*.yaml", "--markdown", "b/.perfsite/paired/out.txt"],
         "error: --markdown b/.perfsite/paired/out.txt is inside the store b/.perfsite/paired of the measured "
         "results, which this command reads"),
        # A measured diff read its specs and wrote the verdict over one (`--json experiments/s.yaml`), exit 0.
        (["diff", "co-base", "co-cand", "--measure", "e/*.yaml", "--quick", "--json", "co-cand/e/s.yaml"],
         "error: --json co-cand/e/s.yaml is the candidate's spec co-cand/e/s.yaml, which this command reads: "
         "writing there would replace it. Nothing was measured or written."),
        (["diff", "co-base", "co-cand", "--measure", "e/*.yaml", "--markdown", "co-base/e/models/tiny.onnx"],
         "error: --markdown co-base/e/models/tiny.onnx is the file at `models.fp32.path` in the baseline's spec "
         "co-base/e/s.yaml, which this command reads: writing there would replace it. Nothing was measured or "
         "written."),
        (["diff", "co-base", "co-cand", "--measure", "e/*.yaml", "--json", "co-cand/e/models/tiny.data"],
         "error: --json co-cand/e/models/tiny.data is external data of the model at `models.fp32.path` in the "
         "candidate's spec co-cand/e/s.yaml, which this command reads"),
        (["count", "models/base.onnx", "co-cand/e/models/tiny.onnx", "--markdown", "co-cand/e/models/tiny.data"],
         "error: --markdown co-cand/e/models/tiny.data is external data of the candidate model (tiny.data), which "
         "this command reads: writing there would replace it."),
        (["diff", "co-base", "co-cand", "--measure", "e/*.yaml", "--bencher-json", "co-cand/e/x.npy"],
         "error: --bencher-json co-cand/e/x.npy is the file at `inputs.x.file` in the candidate's spec "
         "co-cand/e/s.yaml, which this command reads"),
        # A command that reads no store does not write into one either (an experiment folder: trials/, specs/).
        (["count", "models/base.onnx", "models/cand.onnx", "--json", "results/tiny/trials/K.parquet"],
         f"error: --json results/tiny/trials/K.parquet is inside {tmp_path}/results/tiny, an experiment's results "
         "folder that `perfsite run` writes: a file written there could replace a trial's. Nothing was measured or "
         "written. Allowed: a file outside every results store for --json."),
    ]
    for args, first_words in cases:
        out = perfsite(*args, cwd=tmp_path)
        flat = " ".join(out.stderr.split())
        assert out.returncode == 1 and "Traceback" not in out.stderr and flat.startswith(first_words), (args, flat)
    assert base.read_bytes() == model and not (tmp_path / "out.txt").exists()
    assert not list((tmp_path / "results").rglob("*.*"))
    assert {p: p.read_bytes() for p in (tmp_path / "co-base").rglob("*") if p.is_file()} == checkouts
    assert not (tmp_path / "co-cand" / ".perfsite").exists()  # nothing measured


def test_only_with_one_value_the_spec_lacks_is_refused_not_dropped(tmp_path):
    """`--only version=fp32,version=int8-statc` ran fp32 alone and said nothing of the misspelt version: a key
    named twice means either value, and a value no trial has matched nothing. Each value must be planned."""
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    matmul_model(tmp_path / "models" / "int8.onnx", before="Relu")  # a file: nothing to quantize in a forked child
    write_spec(tmp_path, "name: tiny\nmodels:\n  fp32: {path: models/tiny.onnx}\n"
                         "  int8-static: {path: models/int8.onnx}\n"
                         "inputs:\n  x: {shape: [batch, 4]}\nsweep: {batch: [1, 2]}\n")
    out = perfsite("run", "spec.yaml", "--dry-run", "--only", "version=fp32,version=int8-statc,batch=2", cwd=tmp_path)
    flat = " ".join(out.stderr.split())
    assert out.returncode == 1 and "Traceback" not in out.stderr and "to measure" not in out.stdout
    assert flat.startswith(f"error: --only 'version=fp32,version=int8-statc,batch=2': no planned trial of "
                           f"{tmp_path / 'spec.yaml'} has version=int8-statc; the other values would run without "
                           "it. The values the spec's sweep has for those keys are version: fp32, int8-static; "
                           "batch: 1, 2;"), flat
    fine = perfsite("run", "spec.yaml", "--dry-run", "--only", "version=fp32,version=int8-static,batch=2",
                    cwd=tmp_path)
    assert fine.returncode == 0 and "2 to measure" in fine.stdout, fine.stderr


def test_perfsite_quick_false_means_a_full_measurement(tmp_path):
    """`PERFSITE_QUICK=False` (Python's str of a bool) or `off` turned quick mode *on*: anything but "", 0, false
    and no did. The words are now read case-insensitively, and a value that says neither is refused."""
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    write_spec(tmp_path, "name: tiny\nmodels:\n  fp32: {path: models/tiny.onnx}\ninputs:\n  x: {shape: [batch, 4]}\n")

    def key(value: str | None, *flags: str) -> str:
        env = {"PERFSITE_QUICK": value} if value is not None else {}
        out = perfsite("run", "spec.yaml", "--dry-run", *flags, cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr
        return re.search(r"\b[0-9a-f]{20}\b", out.stdout)[0]

    full, quick = key(""), key("", "--quick")
    assert full != quick
    assert [key(v) for v in ("False", "OFF", "no", "0")] == [full] * 4
    assert [key(v) for v in ("True", "on", "1")] == [quick] * 3
    refused = perfsite("run", "spec.yaml", "--dry-run", cwd=tmp_path, env={"PERFSITE_QUICK": "maybe"})
    flat = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert flat.startswith("error: PERFSITE_QUICK='maybe' says neither on nor off. Allowed: 1, true, yes, on"), flat


def test_control_and_bidi_characters_in_an_error_message_are_shown_escaped(tmp_path):
    """Error paragraphs quote file, node and input names that others chose: an escape sequence (clear the
    screen) or a right-to-left override (reverse what follows on the line) is shown, not obeyed."""
    spec = tmp_path / "sneaky\x1b[2J\u202e.yaml"
    spec.write_text("name: sneaky\nmodels:\n  fp32: {path: m.onnx}\nmesure: {warmup: 1}\n", encoding="utf-8")
    out = perfsite("validate", str(spec))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "\x1b" not in out.stderr and "\u202e" not in out.stderr
    assert "sneaky\\x1b[2J\\u202e.yaml" in out.stderr and "did you mean `measure`" in " ".join(out.stderr.split())
    # The same name on a valid spec: `validate` lists it escaped too.
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "cnn.onnx").write_bytes((ROOT / "experiments" / "models" / "cnn.onnx").read_bytes())
    spec.write_text((ROOT / "experiments" / "quickstart.yaml").read_text(), encoding="utf-8")
    out = perfsite("validate", str(spec))
    assert out.returncode == 0 and "\x1b" not in out.stdout and "sneaky\\x1b[2J\\u202e.yaml" in out.stdout


def test_a_device_given_as_a_model_is_named_as_such_not_as_missing():
    """`perfsite profile /dev/zero` said `no such model file` for a path the user can see: it names what it is."""
    from generator.errors import ModelError
    from generator.oneshot.shapes import model_inputs

    with pytest.raises(ModelError) as refused:
        model_inputs(Path("/dev/null"))
    assert str(refused.value) == ("/dev/null: not a regular file (a device, a pipe or a socket), not a model file. "
                                  "Give the path of an ONNX model (.onnx).")


def test_a_loop_of_links_given_as_a_model_is_named_as_such(tmp_path):
    """A link loop was "no such model file" for a name `ls` shows (a hostile tour, 2026-12-07)."""
    from generator.errors import ModelError
    from generator.oneshot.shapes import model_inputs

    (tmp_path / "a.onnx").symlink_to("b.onnx")
    (tmp_path / "b.onnx").symlink_to("a.onnx")
    with pytest.raises(ModelError) as refused:
        model_inputs(tmp_path / "a.onnx")
    assert str(refused.value) == (f"{tmp_path / 'a.onnx'}: a broken symbolic link or a loop of them, not a model "
                                  "file. Give the path of an ONNX model (.onnx).")


def test_a_file_where_a_folder_is_expected_is_named_as_a_file(tmp_path):
    """A file given as a results folder was reported as missing (`does not exist`), and a folder given as a model
    file as `no such model file`: the user looked, saw it there, and was misled."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "models").mkdir()
    diff = perfsite("diff", "afile", "afile", cwd=tmp_path)
    query = perfsite("query", "select 1", "--results", "afile", cwd=tmp_path)
    count = perfsite("count", "models", "afile", cwd=tmp_path)
    # ... and a file given as the site to serve, a folder as a spec's model or input file ("does not exist").
    serve = perfsite("serve", "--site", "afile", cwd=tmp_path)
    write_spec(tmp_path, "name: f\nmodels:\n  fp32: {path: models}\ninputs:\n  x: {shape: [batch, 4]}\n")
    spec = perfsite("run", "spec.yaml", "--dry-run", cwd=tmp_path)
    spec_path = tmp_path / "spec.yaml"
    for result, start in ((diff, "error: The results directory afile is a file, not a folder. Give a folder"),
                          (query, "error: The results store afile is a file, not a folder. Allowed for --results"),
                          (count, f"error: {tmp_path / 'models'}: a folder, not a model file. Give the path of"),
                          (serve, "error: afile is a file, not a site folder: it is not a built site."),
                          (spec, f"error: {spec_path}: models.fp32.path: the model file {tmp_path / 'models'} is a "
                                 "folder, not a model file, (relative to the spec file). Allowed: an ONNX file")):
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert " ".join(result.stderr.split()).startswith(start), result.stderr


def test_an_output_file_below_a_file_or_that_is_a_folder_is_refused_before_any_work(tmp_path):
    """`query SQL --output site/x.csv` where `site` is a file said only "Cannot write site/x.csv: File exists",
    and `diff A B --measure … --json site/x.json` said so after measuring both checkouts. Now the output's place
    is checked with the other output checks, before anything is read or measured, and named."""
    (tmp_path / "site").write_text("mine")
    (tmp_path / "out").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    query = perfsite("query", "SELECT 1", "--results", "missing", "--output", "site/x.csv", cwd=tmp_path)
    diff = perfsite("diff", "missing", "missing2", "--json", "site/deep/x.json", cwd=tmp_path)
    count = perfsite("count", "a.onnx", "b.onnx", "--markdown", "link/c.md", cwd=tmp_path)
    folder = perfsite("query", "SELECT 1", "--results", "missing", "--output", "out", cwd=tmp_path)
    for result, start in (
            (query, f"error: --output site/x.csv: {tmp_path / 'site'} is a file, not a folder, so no file can be "
                    "created inside it. Nothing was measured or written. Allowed: a path of a file for --output, "
                    "whose folder exists or can be created (it is then created)."),
            (diff, f"error: --json site/deep/x.json: {tmp_path / 'site'} is a file, not a folder, so no file"),
            (count, f"error: --markdown link/c.md: {tmp_path / 'link'} is a broken link, not a folder, so no file"),
            (folder, "error: --output out: it is a folder, and the output is a file; name a file in it (e.g. "
                     "out/answer.txt). Nothing was measured or written.")):
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert " ".join(result.stderr.split()).startswith(start), result.stderr
    assert (tmp_path / "site").read_text() == "mine" and not any((tmp_path / "out").iterdir())


def test_a_warning_is_printed_once_however_often_it_is_said(capsys):
    """The two sides of a paired run meet the same unusable cache folder: the terminal says it once. Other
    messages (progress lines) are never merged."""
    from generator.cli.terminal import ProgressBar

    bar = ProgressBar("tiny")
    warning = "Warning: cannot use the cache folder /x (it is a file, not a folder); derived models are built ..."
    for text in (warning, "tiny (paired): 2 trials to measure", warning, "tiny (paired): 2 trials to measure"):
        bar.message(text)
    said = capsys.readouterr().err
    assert said.count("Warning: cannot use the cache folder /x") == 1, said
    assert said.count("tiny (paired): 2 trials to measure") == 2, said


def _closed_pipe_run(args: list[str], stream: str, cwd) -> tuple[int, str]:
    """`perfsite ARGS` in a fresh interpreter whose stdout (or stderr) is a pipe nobody reads any more, as after
    `| head -1`; returns the exit status and what the other stream got."""
    import os
    import subprocess

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write meets the broken pipe
    streams = {"stdout": write_end, "stderr": subprocess.PIPE} if stream == "stdout" else \
        {"stdout": subprocess.PIPE, "stderr": write_end}
    try:
        done = subprocess.run([sys.executable, "-m", "generator.cli", *args], cwd=cwd, timeout=60, **streams)
    finally:
        os.close(write_end)
    other = done.stderr if stream == "stdout" else done.stdout
    return done.returncode, other.decode(errors="backslashreplace")


@pytest.mark.parametrize(("args", "stream"), [
    (["--help"], "stdout"),             # typer's help, drawn by a rich console
    (["run", "--help"], "stdout"),
    (["schema"], "stdout"),             # typer.echo
    (["validate", "spec.yaml"], "stdout"),
    (["validate", "missing.yaml"], "stderr"),  # the error paragraph, written by main() itself
])
def test_a_reader_that_stops_reading_ends_perfsite_quietly_with_141(tmp_path, args, stream):
    """`perfsite --help | head -1`: typer and rich caught the broken pipe and exited 1, perfsite's status for a user
    error, and a write of main()'s own (an error paragraph for a closed stderr) was a traceback. Now perfsite ends
    as a Unix tool that SIGPIPE ends: status 141 (128 + 13), and not a word on the other stream."""
    write_spec(tmp_path, "name: tiny\nmodels:\n  fp32: {path: m.onnx}\ninputs:\n  x: {shape: [batch, 4]}\n")
    code, other = _closed_pipe_run(args, stream, tmp_path)
    assert code == 141, (args, code, other)
    assert other == "", (args, other)  # no traceback, no "Exception ignored" from the flush at exit


def test_a_broken_pipe_of_another_pipe_is_an_error_not_a_reader_gone():
    """Only a closed stdout or stderr ends perfsite quietly with 141: a broken pipe to a measurement worker or a
    socket is an error of its own, which must reach the user, not be swallowed as a reader that stopped."""
    import os

    from generator.cli import pipes

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        assert not pipes.standard_output_closed()
        with pytest.raises(BrokenPipeError), pipes.output_closed_is_raised():
            os.write(write_end, b"to a worker that died")
    finally:
        os.close(write_end)


def test_run_of_several_specs_checks_every_one_before_measuring_any(tmp_path, monkeypatch):
    """`perfsite run a.yaml b.yaml` measured a, then found that b's input does not fit its model: the error came
    minutes late, after a run the user may not have wanted without b. Every spec is planned first now."""
    from typer.testing import CliRunner

    (tmp_path / ".git").mkdir()
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    for name, shape in (("a", "[batch, 4]"), ("b", "[batch, 5]")):
        write_spec(tmp_path, f"name: {name}\nmodels:\n  fp32: {{path: models/tiny.onnx}}\ninputs:\n"
                             f"  x: {{shape: {shape}}}\n", name=f"{name}.yaml")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(app, ["run", "a.yaml", "b.yaml", "--quick"])
    assert out.exit_code == 1 and " ".join(str(out.exception).split()).startswith(
        f"{tmp_path / 'b.yaml'}: inputs.x: shape [batch, 5] has 5 on axis 1 where the model fixes 4."), out.output
    assert not (tmp_path / "results").exists()  # a was not measured


def test_only_selects_across_several_specs_is_repeatable_and_never_empty(tmp_path, monkeypatch):
    """Over several specs `--only` had to hold for each (a sweep axis of one spec was an unknown key for the
    other, and the error named neither); a second --only replaced the first, and `--only ""` ran everything."""
    from typer.testing import CliRunner

    (tmp_path / ".git").mkdir()
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    models = "models:\n  fp32: {path: models/tiny.onnx}\n  other: {path: models/tiny.onnx}\ninputs:\n"
    write_spec(tmp_path, f"name: a\n{models}  x: {{shape: [batch, 4]}}\nsweep: {{batch: [1, 2]}}\n", name="a.yaml")
    write_spec(tmp_path, f"name: b\n{models}  x: {{shape: [n, 4]}}\nsweep: {{n: [3, 4]}}\n", name="b.yaml")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def dry(*only: str):
        out = runner.invoke(app, ["run", "a.yaml", "b.yaml", "--dry-run", "--quick",
                                  *(w for o in only for w in ("--only", o))])
        return out.exit_code, " ".join(out.output.split()), " ".join(str(out.exception or "").split())

    code, text, _ = dry("n=3")
    assert code == 0 and f"Skipped {tmp_path / 'a.yaml'}: none of its trials matches --only 'n=3'." in text
    assert "b: 2 trials" in text and "a: " not in text.replace("Skipped", "")
    code, text, _ = dry("version=fp32", "batch=2")  # repeated: joined, so b (no batch axis) is left out
    assert code == 0 and "a: 1 trial" in text and f"Skipped {tmp_path / 'b.yaml'}" in text
    code, _, error = dry("n=5")
    assert code == 1 and error == (f"--only 'n=5': no planned trial of any spec has n=5. The specs plan n in "
                                   f"{tmp_path / 'b.yaml'}: 3, 4.")
    code, _, error = dry("")
    assert code == 1 and error.startswith("--only is empty (''): it selects nothing to narrow.")


def test_a_dry_run_gives_the_duration_a_busy_machine_may_take(tmp_path, monkeypatch):
    """The estimate counted each trial's minimum processes only: "about 6 s" for a run that took 50 s on a busy
    machine, where trials measure until measure.budget_s. The upper end is said too."""
    from typer.testing import CliRunner

    monkeypatch.delenv("PERFSITE_QUICK")
    (tmp_path / ".git").mkdir()
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    write_spec(tmp_path, "name: a\nmodels:\n  fp32: {path: models/tiny.onnx}\ninputs:\n  x: {shape: [batch, 4]}\n"
                         "sweep: {batch: [1, 2]}\nmeasure: {budget_s: 30}\n")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(app, ["run", "spec.yaml", "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "2 to measure, about 13 s (up to 1 min 02 s if every trial needs its whole measure.budget_s)" in \
        " ".join(out.output.split())


def test_nothing_measured_is_judged_on_trials_stored_ok_also_when_ray_lost_some():
    """A Ray task lost again and again puts its trials in `failed` only (never stored): two trials measured
    and three lost was "all 3 trials failed … the failures are stored". Only no trial stored ok is refused."""
    from generator.cli.app import _refuse_nothing_measured
    from generator.errors import RunError
    from generator.runner.sides import RunSummary

    ray = RunSummary("e", "r", [], 1.0, measured=["k1", "k2"], failed=[("b1", "lost")] * 3, unstored_failures=3)
    assert ray.ok_count == 2
    _refuse_nothing_measured([ray])  # no error
    lost = RunSummary("e", "r", [], 1.0, failed=[("b1 t1 c1 (any node)", "the Ray task failed")], unstored_failures=1)
    with pytest.raises(RunError) as err:
        _refuse_nothing_measured([lost])
    assert str(err.value).endswith("Nothing was stored; fix the model or the spec's inputs (a generative spec's "
                                   "`generate:` lengths) and run again.")
    local = RunSummary("e", "r", [], 1.0, measured=["k1"], failed=[("b1 t1 c1", "SIGSEGV")])
    with pytest.raises(RunError, match="the one trial to measure failed .* The failures are stored"):
        _refuse_nothing_measured([local])


def test_urls_where_a_local_folder_is_read_are_refused_without_their_credentials(tmp_path):
    """`compare --results`, a side of `diff` and `build --baseline` read local folders only: given an
    `s3://KEY:SECRET@bucket/path` URL they folded it into `s3:/…`, called it a missing folder and printed the
    secret. And `s3://bucket//path` was written under keys nothing could read back."""
    url = "s3://AKIAX:TopSecret@perf/main"
    (tmp_path / "r").mkdir()
    for args, what in ((["compare", "--a", "a", "--results", url], "`perfsite compare --results`"),
                       (["diff", url, "r"], "A side of `perfsite diff` (and `build --baseline`)"),
                       (["build", "--results", "r", "--baseline", url], "`perfsite build --baseline`")):
        out = perfsite(*args, cwd=tmp_path)
        message = " ".join(out.stderr.split())
        assert out.returncode == 1 and "TopSecret" not in out.stderr + out.stdout, out.stderr
        assert message.startswith(f"error: {what} reads a results folder on this machine, and s3://perf/main is a "
                                  "URL. Allowed: a local folder; copy the store first"), message
    out = perfsite("query", "select 1", "--results", "s3://perf//twice", cwd=tmp_path)
    assert out.returncode == 1 and " ".join(out.stderr.split()).startswith(
        "error: The results store s3://perf//twice has an empty path segment (`//`), which an object store keeps "
        "in its keys: what is written there is not found again."), out.stderr


@pytest.mark.parametrize("command", [["run", "spec.yaml", "--dry-run"], ["query", "select 1"]])
def test_results_given_twice_to_a_one_store_command_is_refused(tmp_path, command):
    """`query … --results r1 --results r2` read r2 only, and `run` measured into the last one, without a word."""
    out = perfsite(*command, "--results", "r1", "--results", "r2", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert " ".join(out.stderr.split()).startswith("error: Invalid value for '--results': given 2 times (r1, r2); "
                                                   "this command takes one store"), out.stderr


def test_run_and_validate_take_a_folder_of_specs_alike(tmp_path, monkeypatch, capsys):
    """`perfsite validate specs/` checked every spec in the folder, and `perfsite run specs/` refused the folder
    (`specs` is a folder, not a spec file). Both take it now, for its `*.yaml` and `*.yml` files; and both refuse
    a folder that holds none, naming it."""
    from typer.testing import CliRunner

    (tmp_path / ".git").mkdir()  # the project root: the specs' folder and the models' beside it
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("a", "b"):
        write_spec(specs, f"name: {name}\nmodels:\n  fp32: {{path: ../models/tiny.onnx}}\ninputs:\n"
                          "  x: {shape: [batch, 4]}\n", name=f"{name}.yaml")
    (specs / "notes.txt").write_text("not a spec")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    validated = runner.invoke(app, ["validate", "specs"])
    planned = runner.invoke(app, ["run", "specs", "--dry-run", "--quick"])
    assert validated.exit_code == 0 and planned.exit_code == 0, (validated.output, planned.output)
    assert validated.output.count("ok  ") == 2 and validated.output.count("1 version, 1 trial\n") == 2
    assert "a: 1 trial" in planned.output and "b: 1 trial" in planned.output and "1 trials" not in planned.output
    assert not (tmp_path / "results").exists()  # a dry run measures and writes nothing
    (tmp_path / "empty").mkdir()
    for command in ("validate", "run"):
        out = runner.invoke(app, [command, "empty"])
        assert out.exit_code == 1 and "Traceback" not in out.output
        assert " ".join(str(out.exception).split()) == (
            "The folder `empty` holds no spec file. Allowed: spec files, or folders holding them: a folder stands "
            "for its `*.yaml` and `*.yml` files (its subfolders are not searched).")
        # `perfsite run "$SPEC"` with the variable unset: typer's Path made "" the current folder, every spec
        # of which would have been measured.
        out = runner.invoke(app, [command, ""])
        assert out.exit_code == 1 and " ".join(str(out.exception).split()) == (
            "A spec argument is empty (''): it names no file. Allowed: spec files, or folders holding them (a folder "
            "stands for its `*.yaml` and `*.yml` files).")


def test_a_folder_of_specs_and_a_measure_glob_leave_hidden_files_out(tmp_path):
    """A folder of specs copied from a Mac holds `._a.yaml` beside `a.yaml` (binary metadata): `perfsite run
    specs/` and `validate` failed on it (``Spec `specs/._a.yaml` is not valid YAML``), and `diff --measure
    'specs/*.yaml'` took it for a spec, as `**/*.yaml` took the workflows under `.github/`. Hidden files are left
    out, as a shell's `*` leaves them out, unless the pattern names the dot itself."""
    from generator.runner.paired import spec_files

    (tmp_path / ".git").mkdir()
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    specs = tmp_path / "specs"
    specs.mkdir()
    write_spec(specs, "name: a\nmodels:\n  fp32: {path: ../models/tiny.onnx}\ninputs:\n  x: {shape: [batch, 4]}\n",
               name="a.yaml")
    (specs / "._a.yaml").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yaml").write_text("on: push\n")
    out = perfsite("validate", "specs", cwd=tmp_path)
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == f"ok  {specs / 'a.yaml'}: experiment 'a', 1 version, 1 trial\n"
    assert spec_files(tmp_path, ["specs/*.yaml"]) == [specs / "a.yaml"]
    assert spec_files(tmp_path, ["**/*.yaml"]) == [specs / "a.yaml"]
    assert spec_files(tmp_path, [".github/*/*.yaml"]) == [tmp_path / ".github" / "workflows" / "ci.yaml"]


def test_example_models_go_to_the_project_from_any_folder_of_it(tmp_path, monkeypatch):
    """The default folder was `experiments/models` relative to the current folder: from `experiments/` it made
    experiments/experiments/models, where no example spec looks. It is now <project>/experiments/models, as the
    site and the results default to the project's, from any folder of it."""
    from typer.testing import CliRunner

    (tmp_path / ".git").mkdir()
    (tmp_path / "experiments").mkdir()
    monkeypatch.chdir(tmp_path / "experiments")
    out = CliRunner().invoke(app, ["example-models"])
    models = tmp_path / "experiments" / "models"
    assert out.exit_code == 0, out.output
    assert out.output.split() == ["wrote", str(models / "cnn.onnx"), "wrote", str(models / "transformer.onnx"),
                                  "wrote", str(models / "decoder.onnx")]
    assert not (tmp_path / "experiments" / "experiments").exists()


def _empty_value_command_lines() -> list[tuple[list[str], str]]:
    """For every command and every parameter that takes a value (read from the app, so new ones are covered),
    the command line giving it an empty word, with the option as the message names it; the parameters whose
    command refuses an empty value in words of its own (generator.cli.empty_values.OWN_REFUSAL) are left out."""
    import typer

    from generator.cli import app
    from generator.cli.empty_values import OWN_REFUSAL

    cases = []
    for name, command in typer.main.get_command(app).commands.items():
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        given = ["x"] * len(arguments)
        for i, param in enumerate(arguments):
            if (name, param.name) not in OWN_REFUSAL:
                cases.append(([name, *given[:i], "", *given[i + 1:]], param.name.upper()))
        for option in (p for p in command.params if p.param_type_name == "option" and not p.is_flag):
            if (name, option.name) not in OWN_REFUSAL:
                cases.append(([name, *given, f"{option.opts[0]}="], option.opts[0]))
                if option.opts[0] not in OPTIONAL_VALUES:
                    cases.append(([name, *given, option.opts[0], " "], option.opts[0]))
    return cases


def test_an_empty_value_is_refused_by_the_name_of_its_option(tmp_path, monkeypatch, capsys):
    """`--out "$DIR"` with the variable unset: typer made "" the current folder (`example-models ""` wrote the
    models there, `compare --results ""` read it as the store, `diff --json ""` said "Cannot write ."), and a
    text option tested for truth was ignored (`compare --config ""`, `build --baseline ""` built no changes
    page). Every command refuses it, naming the option, before anything runs."""
    from generator.cli import main

    monkeypatch.chdir(tmp_path)
    cases = _empty_value_command_lines()
    assert len(cases) > 60  # every command and option, not a sample
    for args, named in cases:
        code, err = _main_exit(main, args, monkeypatch, capsys)
        flat = " ".join(err.split())
        assert code == 1 and "Traceback" not in err and "\n\n" not in err, (args, err)
        word = " " if " " in args else ""
        assert flat.startswith(f"error: Invalid value for '{named}': got {word!r}, which names "), (args, flat)
        assert flat.endswith(f"Run `perfsite {args[0]} --help` for the arguments and options it takes."), flat
    assert list(tmp_path.iterdir()) == []
    # --ray's address is optional: an empty word after it is its value, not a spec argument.
    code, err = _main_exit(main, ["run", "spec.yaml", "--ray", ""], monkeypatch, capsys)
    assert code == 1 and " ".join(err.split()).startswith("error: Invalid value for '--ray': got ''"), err
    monkeypatch.setattr(sys, "argv", ["perfsite", "compare", "--a", "fp32", "--config", ""])
    with pytest.raises(SystemExit):
        main()
    assert " ".join(capsys.readouterr().err.split()) == (
        "error: Invalid value for '--config': got '', which names nothing (an unset variable in a script?); "
        "allowed: a value for --config (Layer sections at e.g. batch=1,threads=2 (default: A's sweet spot); "
        "repeated, its items are joined), or "
        "no --config at all. Run `perfsite compare --help` for the arguments and options it takes.")


def test_an_option_that_takes_one_value_given_twice_is_refused_by_its_name(tmp_path, monkeypatch, capsys):
    """click kept the last of two values and dropped the other without a word: `profile m.onnx --threads 1
    --threads 4` measured 4 threads only, `run spec.yaml --target arm --target x86` sent every trial to x86.
    Every single-value option of every command (read from the app) is refused when given two values, naming
    both, before anything runs; options that take several values, repeated flags and a repeated value are not."""
    import typer

    from generator.cli import app, main

    monkeypatch.chdir(tmp_path)
    cases = 0
    for name, command in typer.main.get_command(app).commands.items():
        given = ["x"] * sum(p.param_type_name == "argument" for p in command.params)
        for option in command.params:
            if option.param_type_name != "option" or option.is_flag or option.multiple:
                continue
            opt = option.opts[0]
            # `--ray 1` is `--ray=auto 1` (a word that is not an address is no value of --ray), so `--ray=1`.
            first = [f"{opt}=1"] if opt in OPTIONAL_VALUES else [opt, "1"]
            code, err = _main_exit(main, [name, *given, *first, f"{opt}=2"], monkeypatch, capsys)
            flat = " ".join(err.split())
            assert code == 1 and flat.startswith(
                f"error: Invalid value for '{opt}': given 2 times ('1', '2'); it takes one value, and only the last "
                "would have been used. Give it once"), (name, opt, flat)
            assert flat.endswith(f"Run `perfsite {name} --help` for the arguments and options it takes."), flat
            cases += 1
    assert cases > 30  # every command and option, not a sample
    assert list(tmp_path.iterdir()) == []
    code, err = _main_exit(main, ["run", "s.yaml", "--target", "arm", "--target", "x86"], monkeypatch, capsys)
    assert "Give it once (to measure on several targets, list them in the spec's `targets:`, docs/ray.md)" in (
        " ".join(err.split()))
    # Several values where the option takes them, a repeated flag and the same value twice (a script's default
    # and its override agreeing) go on to the command itself.
    code, err = _main_exit(main, ["run", "s.yaml", "--only", "a", "--only", "b", "--quick", "--quick", "--target",
                                  "arm", "--target=arm"], monkeypatch, capsys)
    assert code == 1 and err == "error: Spec file `s.yaml` does not exist.", err


@pytest.mark.parametrize("args", [["run", "spec.yaml", "--dry-run"], ["build", "--site", "site"],
                                  ["query", "SELECT 1"]])
def test_an_empty_results_option_is_refused_not_read_as_some_folder(tmp_path, monkeypatch, capsys, args):
    """`--results "$RESULTS"` with the variable unset: `run` measured into the default store, `build` took the
    current folder for the store (and refused the site as inside it), `query` said the store did not exist."""
    from generator.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["perfsite", *args, "--results", ""])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_.value.code == 1 and "Traceback" not in err, err
    assert err == (f"error: Invalid value for '--results': got '', which names no store; allowed: a results folder or "
                   "a URL such as s3://bucket/results, or no --results at all for <project>/results. Run `perfsite "
                   f"{args[0]} --help` for the arguments and options it takes."), err
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_caught_inside_an_evaluated_string_still_exits_130_under_python_m(tmp_path):
    # CPython marks a KeyboardInterrupt that ends a string exec/eval (typing and pydantic evaluate annotation
    # strings) as unhandled even when caught, and `python -m` then ended the process by SIGINT (-2) after perfsite
    # had printed its note and chosen 130. Here the command is interrupted inside such an evaluation.
    (tmp_path / "interrupted_in_eval.py").write_text(
        "import sys\n"
        "import generator.cli\n"
        "cli = sys.modules['generator.cli.app']  # the module; the package's `app` is the Typer application\n"
        "def interrupted(**kwargs):\n"
        "    exec('raise KeyboardInterrupt', {})\n"
        "cli.app = interrupted\n"
        "sys.argv = ['perfsite', 'validate', 'spec.yaml']\n"
        "cli.main()\n")
    done = subprocess.run([sys.executable, "-m", "interrupted_in_eval"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Interrupted" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_ctrl_c_while_a_version_is_built_says_what_was_kept(tmp_path):
    """Ctrl-C while `perfsite run` built a version (quantization) exited 130 with only an empty line: the run's
    summary, which says so for a Ctrl-C while measuring, was never printed."""
    matmul_model(tmp_path / "tiny.onnx")
    write_spec(tmp_path, """\
        name: tiny
        models:
          fp32: {path: tiny.onnx}
          int8: {from: fp32, quantize: {mode: dynamic}}
        inputs:
          x: {shape: [1, 4]}
        """)
    (tmp_path / "ctrl_c_in_build.py").write_text(
        "import sys\n"
        "import generator.cli\n"
        "import generator.runner.orchestrate as orchestrate\n"
        "def building(loaded, cache, progress=None):\n"
        "    progress('building int8 (quantize dynamic)')\n"
        "    raise KeyboardInterrupt\n"
        "orchestrate.prepare_versions = building\n"
        "sys.argv = ['perfsite', 'run', 'spec.yaml', '--quick']\n"
        "generator.cli.main()\n")
    done = subprocess.run([sys.executable, "ctrl_c_in_build.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT), "PERFSITE_CACHE_DIR": str(tmp_path)})
    flat = " ".join(done.stderr.split())
    assert done.returncode == 130, (done.returncode, done.stderr)
    spec = tmp_path / "spec.yaml"
    assert f"Interrupted outside measuring, in tiny ({spec}): while its model versions were built" in flat
    assert "run the same command again to finish" in flat and "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists()


def test_a_ctrl_c_python_had_to_ignore_is_raised_again(tmp_path):
    # A KeyboardInterrupt raised in a weakref callback (as when Ctrl-C lands in the import system's module-lock
    # callback) cannot propagate: Python printed "Exception ignored" and the command ran on to its end.
    (tmp_path / "ignored_interrupt.py").write_text(
        "import sys, time, weakref\n"
        "import generator.cli\n"
        "cli = sys.modules['generator.cli.app']\n"
        "class Thing: pass\n"
        "def interrupted(**kwargs):\n"
        "    thing = Thing()\n"
        "    def callback(_):\n"
        "        raise KeyboardInterrupt\n"
        "    ref = weakref.ref(thing, callback)\n"
        "    del thing\n"
        "    time.sleep(5)\n"
        "    print('ran on to the end')\n"
        "cli.app = interrupted\n"
        "sys.argv = ['perfsite', 'build']\n"
        "cli.main()\n")
    done = subprocess.run([sys.executable, "ignored_interrupt.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 130, (done.returncode, done.stdout, done.stderr)
    assert "ran on to the end" not in done.stdout and "Exception ignored" not in done.stderr, done.stderr
    assert "Interrupted" in done.stderr, done.stderr


@pytest.mark.parametrize("command", [["run", "spec.yaml", "--quick"], ["build", "--results", "r"],
                                     ["query", "select 1"]])
def test_a_store_in_the_process_memory_is_refused_before_measuring(tmp_path, command):
    """`run --results memory://bucket/x` measured into fsspec's in-process filesystem, printed "Results in
    memory://bucket/x/tiny", exited 0 and kept nothing: the next `build` found no such store."""
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    write_spec(tmp_path, "name: tiny\nmodels:\n  fp32: {path: models/tiny.onnx}\ninputs:\n  x: {shape: [batch, 4]}\n")
    out = perfsite(*command, "--results", "memory://bucket/x", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert " ".join(out.stderr.split()).startswith(
        "error: --results memory://bucket/x names a store in this process's memory, gone when the command ends: "
        "nothing written there would be found again"), out.stderr
    assert "Allowed for --results: a local folder, or an fsspec URL" in " ".join(out.stderr.split())
    assert not (tmp_path / "results").exists() and not (tmp_path / ".perfsite").exists()  # nothing measured
    from generator.errors import ResultsError
    from generator.results.location import open_location

    with pytest.raises(ResultsError, match="in this process's memory"):  # the library's one door to a store, too
        open_location("memory://bucket/x/tiny")


def test_a_tilde_no_shell_expanded_means_home_not_a_folder_named_tilde(tmp_path, monkeypatch):
    """Issue 35, the unexpanded-path class: `--out=~/x`, a quoted `'~/x'` and `PERFSITE_CACHE_DIR: ~/.cache` in a
    CI file reach perfsite as typed, and it made a folder named `~` in the current folder."""
    from generator.paths import cache_root

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    out = perfsite("example-models", "~/models", cwd=work, env={"HOME": str(home)})
    assert out.returncode == 0, out.stderr
    assert (home / "models" / "cnn.onnx").is_file() and not (work / "~").exists()
    assert f"{home}/models" in out.stdout
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PERFSITE_CACHE_DIR", "~/.cache/perfsite")
    assert cache_root() == home / ".cache" / "perfsite"
