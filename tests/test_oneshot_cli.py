"""`perfsite profile` end to end with real onnxruntime (quick mode, a few requests): the example models and a
model with dynamic height and width; the printed figures are the JSON's; the JSON matches its schema; the
timeline adds up to the profiled kernel time."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import perfsite
from support.models import dynamic_conv_model, embedding_model

from generator.oneshot.schema import profile_schema_errors
from generator.oneshot.text import NAME_WIDTH, num, preempted_text
from generator.runner.measure import MIN_CORES_WALL_S
from generator.terminal_text import safe


@pytest.fixture(scope="module")
def env(_probe_cache) -> dict[str, str]:
    # The machine probe is cached per user: keep the tests out of the real cache. The suite's cache folder, named
    # here because the module fixtures below are made before the autouse fixture that names it for each test:
    # an empty cache of the module's own made the first profile probe the machine (about 4 s on 2 cores).
    return {"PERFSITE_QUICK": "1", "PERFSITE_CACHE_DIR": str(_probe_cache)}


def _profile(env: dict[str, str], cwd: Path, *args: str):
    run = perfsite("profile", *args, "--iterations", "12", "--warmup", "2", "--profile-iterations", "3",
                   cwd=cwd, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


@pytest.fixture(scope="module")
def cnn_run(tmp_path_factory, example_models, env):
    cwd = tmp_path_factory.mktemp("cnn-profile")
    run = _profile(env, cwd, str(example_models["cnn"]), "--threads", "1")
    return run, json.loads((cwd / "cnn.perf.json").read_text()), cwd


@pytest.fixture(scope="module")
def conv_run(tmp_path_factory, env):
    cwd = tmp_path_factory.mktemp("conv-profile")
    model = dynamic_conv_model(cwd / "conv.onnx")
    run = _profile(env, cwd, "conv.onnx", "--dim", "H=40", "--dim", "W=24", "--out", "reports")
    return run, json.loads((cwd / "reports" / "conv.perf.json").read_text()), model


def _line(text: str, label: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip().startswith(label)]
    assert len(lines) == 1, f"no single {label!r} line in:\n{text}"
    return lines[0].strip()[len(label):]


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])", text)]


def test_printed_figures_equal_the_json(cnn_run):
    run, data, _ = cnn_run
    s, out = data["summary"], run.stdout
    cores = s["cores_used"] if s["cores_used"] is not None else MIN_CORES_WALL_S  # "— (not told: … under 0.25 s)"
    assert _numbers(_line(out, "measured")) == [s["iterations"], s["timed_s"], s["batch"], cores]
    assert _numbers(_line(out, "throughput")) == [s["throughput_ips"]]
    latency = dict(re.findall(r"(mean|p50|p90|p95|p99) (\S+)", _line(out, "latency ms")))
    assert latency == {k: num(v) for k, v in s["latency_ms"].items()}
    assert all(v is not None for k, v in s["latency_ms"].items() if k != "p99")
    assert _numbers(_line(out, "cold start")) == [s["cold_start_ms"], s["load_ms"], s["first_run_ms"]]
    # The sweep's noise rules and preempted share, judged on the clean requests.
    noise = s["noise"]
    assert set(noise) == {"noisy", "reasons", "preemption_known", "preempted_share", "clean_figures"}
    assert preempted_text(noise) in out  # and in the page: test_the_json_matches_its_schema_and_describes_the_run
    # On a busy machine a second warning (a disturbed limits probe) may follow: the noise line is the one
    # that names the noise.
    noise_lines = [ln for ln in out.splitlines() if ln.strip().startswith(("warning", "noise"))
                   and "preempted by other processes" in ln]
    assert len(noise_lines) == 1 or not noise["preemption_known"], out
    label = "warning" if noise["noisy"] else "noise"
    assert not noise_lines or noise_lines[0].strip().startswith(label)
    if noise["noisy"]:
        assert all(reason in out for reason in noise["reasons"])
    compute = [s["total_gflop"], s["achieved_gops"], s["peak_share_pct"], s["peak_gflops"]]
    assert _numbers(_line(out, "compute")) == compute and s["total_gflop"] > 0 and s["peak_gflops"] > 0
    profiled = _numbers(_line(out, "profiled"))
    assert profiled == [s["profiled_model_run_us"], s["profiled_kernel_sum_us"], s["profiled_nodes"]]
    rows = out.split("bound\n", 1)[1].splitlines()[: len(s["slowest_layers"])]
    assert 1 <= len(s["slowest_layers"]) <= 10
    for row, layer in zip(rows, s["slowest_layers"], strict=True):
        *_, dur, share, bound = row.split()
        assert (dur, share, bound) == (num(layer["dur_us"]), num(layer["share_pct"]), layer["bound"])
        assert row.strip().startswith(safe(layer["node"], NAME_WIDTH))  # a long name cut in its middle
    assert f"wrote         {data['files']['json']}" in out and f"wrote         {data['files']['html']}" in out


@pytest.mark.parametrize(("noise", "said"), [
    ({"preemption_known": True, "preempted_share": 0.125, "clean_figures": True},
     "12.5 % of requests preempted by other processes (left out of the figures)"),
    ({"preemption_known": True, "preempted_share": 0.0, "clean_figures": True},
     "0.0 % of requests preempted by other processes"),
    # No process kept enough clean requests: the figures are every request's, the preempted ones too.
    ({"preemption_known": True, "preempted_share": 0.9, "clean_figures": False},
     "90.0 % of requests preempted by other processes (counted in the figures: no process kept enough clean "
     "requests)"),
    ({"preemption_known": False, "preempted_share": None, "clean_figures": False},
     "preemption unknown on this system (every request counted)"),
])
def test_the_preempted_share_says_what_the_figures_did_with_those_requests(noise, said):
    assert preempted_text(noise) == said


def test_the_json_matches_its_schema_and_describes_the_run(cnn_run):
    _, data, cwd = cnn_run
    assert profile_schema_errors(data) == []
    # A file of an earlier release, before the noise object had clean_figures, is still version 1.
    earlier = json.loads(json.dumps(data))
    del earlier["summary"]["noise"]["clean_figures"]
    assert profile_schema_errors(earlier) == []
    assert data["format"] == "perfsite.profile" and data["version"] == 1
    assert data["inputs"] == [{"name": "input", "dtype": "float32", "declared": ["batch", 3, 64, 64],
                               "shape": [1, 3, 64, 64]}]
    assert data["defaulted_dims"] == ["batch"] and data["settings"]["threads"] == 1 and data["settings"]["quick"]
    assert data["latencies"]["count"] == data["summary"]["iterations"] == len(data["latencies"]["samples_ms"])
    assert Path(data["files"]["json"]) == cwd / "cnn.perf.json" and (cwd / "cnn.perf.html").is_file()
    page = (cwd / "cnn.perf.html").read_text(encoding="utf-8")
    assert f"<th>Preempted requests</th><td>{preempted_text(data['summary']['noise'])}" in page
    assert data["limits"]["bandwidth_gbs"] > 0 and data["environment"]["fingerprint"]
    bounds = {row["bound"] for row in data["layers"]}
    assert "compute" in bounds and any(row["original_nodes"] for row in data["layers"])
    assert len(data["temporal"]["traffic_gbs"]) == 100 and data["temporal"]["total_flops"] > 0


def test_schema_errors_point_at_the_bad_field(cnn_run):
    _, data, _ = cnn_run
    broken = json.loads(json.dumps(data))
    broken["summary"]["latency_ms"]["p50"] = "fast"
    del broken["timeline"]["events"][0]["dur_us"]
    errors = profile_schema_errors(broken)
    assert any(e.startswith("summary/latency_ms/p50:") for e in errors)
    assert any(e.startswith("timeline/events/0:") and "dur_us" in e for e in errors)


def test_timeline_top_level_adds_up_to_the_kernel_time(cnn_run):
    _, data, _ = cnn_run
    tl = data["timeline"]
    top = [e["dur_us"] for e in tl["events"] if e["parent"] is None]
    assert top and sum(top) == pytest.approx(tl["kernel_sum_us"], rel=1e-9)
    assert tl["kernel_sum_us"] <= tl["model_run_us"]
    assert len(data["layers"]) == len(tl["events"])


def test_dynamic_height_and_width(conv_run):
    run, data, model = conv_run
    assert profile_schema_errors(data) == []
    assert data["inputs"][0]["shape"] == [1, 3, 40, 24] and data["dims"] == {"H": 40, "W": 24, "N": 1}
    # 8 output channels × 40 × 24 positions: 27 multiply-adds (2 FLOPs each) in the Conv, 1 FLOP in the Relu.
    assert data["summary"]["total_gflop"] == pytest.approx(8 * 40 * 24 * (27 * 2 + 1) / 1e9, rel=1e-3)
    assert "x float32[1,3,40,24]" in _line(run.stdout, "inputs")


def test_transformer_with_its_sequence_length(tmp_path, example_models, env):
    run = _profile(env, tmp_path, str(example_models["transformer"]), "--dim", "seq_len=8", "--threads", "1")
    data = json.loads((tmp_path / "transformer.perf.json").read_text())
    assert profile_schema_errors(data) == []
    assert [i["shape"] for i in data["inputs"]] == [[1, 8], [1, 8]]
    assert _numbers(_line(run.stdout, "throughput")) == [data["summary"]["throughput_ips"]]


def test_missing_dims_exit_1_with_one_paragraph(tmp_path, env):
    model = dynamic_conv_model(tmp_path / "conv.onnx")
    run = perfsite("profile", str(model), cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 1 and run.stdout == ""
    text = " ".join(run.stderr.split())
    assert text.startswith("error: ") and "Traceback" not in run.stderr
    for piece in (str(model), "'H'", "'W'", "--dim H=VALUE", "--shape x="):
        assert piece in text
    assert not list(tmp_path.glob("*.perf.*"))


@pytest.mark.parametrize(("args", "message"), [
    (["--dim", "H"], "is not NAME=VALUE"),
    (["--shape", "image=1,3,8,8"], "names the input 'image'"),
    # The advice names the option, not a spec's sweep.provider or --only (which `profile` has neither of).
    (["--provider", "cuda"], "--provider: the execution provider `cuda` (CUDAExecutionProvider) is not available in "
                             "this onnxruntime build"),
    (["--provider", "cuda"], "(e.g. onnxruntime-gpu for cuda), or choose --provider cpu."),
    (["--optimization-level", "max"], "--optimization-level is 'max'; allowed: disable, basic, extended, all"),
    # It said "Configuration field `provider` is 'CPU'", naming no option.
    (["--provider", "CPU"], "error: --provider is 'CPU'; allowed: cpu, cuda,"),
])
def test_bad_options_exit_1(tmp_path, env, args, message):
    model = dynamic_conv_model(tmp_path / "conv.onnx")
    run = perfsite("profile", str(model), "--dim", "W=8", *args, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 1, run.stdout
    assert message in " ".join(run.stderr.split()) and "Traceback" not in run.stderr


def test_a_dim_or_shape_given_twice_with_two_values_is_refused(tmp_path, env):
    """`--dim H=8 --dim H=16` profiled at 16 without a word (the last one won); `--shape` likewise. A repeat of
    the same value is still allowed."""
    model = dynamic_conv_model(tmp_path / "conv.onnx")
    for args, said in ((["--dim", "W=8", "--dim", "H=8", "--dim", "H=16"],
                        "--dim gives H two values, 8 and 16 (in `--dim H=…` given twice); give one value."),
                       (["--shape", "x=1,3,8,8", "--shape", "x=1,3,8,9"],
                        "--shape gives x two values, 1,3,8,8 and 1,3,8,9 (in `--shape x=…` given twice); give one "
                        "value.")):
        run = perfsite("profile", str(model), *args, cwd=tmp_path, env=env, timeout=120)
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        assert " ".join(run.stderr.split()) == f"error: {model}: {said}"
    assert not list(tmp_path.glob("*.perf.*"))
    from generator.oneshot.shapes import parse_dims, parse_shapes

    assert parse_dims(["H=8", "H=8"], model) == {"H": 8}
    assert parse_shapes(["x=1,3,8,8", "x=1,3,8,8"], model) == {"x": (1, 3, 8, 8)}


def test_not_an_onnx_file_exits_1(tmp_path, env):
    (tmp_path / "model.onnx").write_bytes(b"PK\x03\x04 a zip, not a model")
    run = perfsite("profile", "model.onnx", cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "model.onnx: not a readable ONNX model" in " ".join(run.stderr.split())


def test_an_onnxruntime_crash_is_reported_not_lost(tmp_path, env):
    model = dynamic_conv_model(tmp_path / "conv.onnx")
    run = perfsite("profile", str(model), "--dim", "H=8", "--dim", "W=8", cwd=tmp_path, timeout=120,
                   env={**env, "PERFSITE_TEST_FAULT": "crash"})
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "the timed runs failed: the measurement process crashed (SIGSEGV" in " ".join(run.stderr.split())


def test_real_inputs_from_npy_and_npz_files(tmp_path, env):
    """`--input NAME=FILE`: the file's array is the input (its shape sets N, H and W), as a spec's `file:`."""
    import numpy as np

    dynamic_conv_model(tmp_path / "conv.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(1).standard_normal((2, 3, 16, 12)).astype(np.float32))
    _profile(env, tmp_path, "conv.onnx", "--input", "x=x.npy")
    data = json.loads((tmp_path / "conv.perf.json").read_text())
    assert profile_schema_errors(data) == []
    assert data["inputs"][0]["shape"] == [2, 3, 16, 12] and data["dims"] == {"N": 2, "H": 16, "W": 12}
    assert data["input_files"] == {"x": {"file": str(tmp_path / "x.npy"), "key": None, "shape": [2, 3, 16, 12]}}
    np.savez(tmp_path / "batch.npz", small=np.zeros((1, 3, 8, 8), np.float32), big=np.ones((3, 3, 8, 8)))
    _profile(env, tmp_path, "conv.onnx", "--input", "x=batch.npz:big", "--out", "npz")
    data = json.loads((tmp_path / "npz" / "conv.perf.json").read_text())
    assert data["inputs"][0]["shape"] == [3, 3, 8, 8] and data["input_files"]["x"]["key"] == "big"


@pytest.mark.parametrize(("files", "args", "message"), [
    ({}, ["--input", "x=missing.npy"], "--input x: {tmp}/missing.npy does not exist"),
    ({"a.npy": (1, 3, 8, 8)}, ["--input", "image=a.npy"], "--input 'image=a.npy' names the input 'image'"),
    ({"a.npy": (1, 3, 8, 8)}, ["--input", "x"], "--input 'x' is not NAME=FILE"),
    ({"a.npy": (3, 8, 8)}, ["--input", "x=a.npy"], "holds an array of rank 3 (shape [3, 8, 8]); allowed"),
    ({"a.npy": (1, 4, 8, 8)}, ["--input", "x=a.npy"], "has 4 on axis 1 where the model fixes 3"),
    ({"a.npy": (0, 3, 8, 8)}, ["--input", "x=a.npy"], "holds an array of shape [0, 3, 8, 8]; allowed"),
    ({"a.npy": (1, 3, 8, 8)}, ["--input", "x=a.npy", "--shape", "x=1,3,8,8"], "has both --input and --shape"),
    ({"a.npy": "complex"}, ["--input", "x=a.npy"], "holds complex128 data, which does not convert to float32"),
    # The advice was the spec's ("`--input x.key`: … set `key:` to one of them"); the option has a syntax of its own.
    ({"xs.npz": (1, 3, 8, 8)}, ["--input", "x=xs.npz"],
     "--input x: {tmp}/xs.npz holds the arrays ['a', 'b']; name one as --input x=xs.npz:KEY."),
    ({"xs.npz": (1, 3, 8, 8)}, ["--input", "x=xs.npz:c"], "name one as --input x=xs.npz:KEY (not 'c')."),
])
def test_bad_input_files_exit_1_naming_the_option_and_the_file(tmp_path, monkeypatch, capsys, files, args, message):
    import sys

    import numpy as np

    from generator.cli import main

    model = dynamic_conv_model(tmp_path / "conv.onnx")
    for name, shape in files.items():
        array = np.ones((1, 3, 8, 8), np.complex128) if shape == "complex" else np.ones(shape, np.float32)
        if name.endswith(".npz"):
            np.savez(tmp_path / name, a=array, b=array)
        else:
            np.save(tmp_path / name, array)
    # In-process through main(): each of these fails before anything is measured.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["perfsite", "profile", str(model), *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    text = " ".join(err.split())
    assert exit_.value.code == 1 and text.startswith("error: ") and "Traceback" not in err
    assert message.format(tmp=tmp_path) in text, text


def test_a_mostly_integer_model_is_set_against_the_int8_peak(tmp_path):
    """The report's compute limit is the peak of the model's precision, as on the site's profile page
    (generator.timeline.view): an integer MatMul is set against the INT8 peak, not the FP32 one."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    from support.models import onnx_model, save

    from generator.oneshot import ProfileOptions, profile_model, summary_text
    from generator.oneshot.record import sig

    weight = numpy_helper.from_array(np.random.default_rng(0).integers(0, 255, (256, 256), dtype=np.uint8), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["x", "w"], ["y"], name="imatmul")], "int8",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, ["N", 256])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["N", 256])], [weight])
    model = save(onnx_model(graph), tmp_path / "int8.onnx")
    options = ProfileOptions(threads=1, iterations=5, warmup=1, profile_iterations=2, quick=True)
    record = profile_model(model, options, out_dir=tmp_path).record
    limits, s = record["limits"], record["summary"]
    assert profile_schema_errors(record) == []
    assert limits["peak_precision"] == "INT8" and s["total_int_gop"] == sig(2 * 256 * 256 / 1e9)
    assert s["peak_gflops"] == sig(limits["peak_gops_int8"] * limits["thread_scale"]) != sig(
        limits["peak_gflops_fp32"] * limits["thread_scale"])
    assert {row["bound"] for row in record["layers"]} <= {"compute", "memory"}
    assert f"of the measured INT8 peak {num(s['peak_gflops'])} GOP/s" in summary_text(record)
    # The page's compute rate is integer operations too: its temporal chart and text say INT8 GOP/s.
    page = (tmp_path / "int8.perf.html").read_text(encoding="utf-8")
    assert "Compute rate (INT8 GOP/s)" in page and "Compute rate (GFLOP/s)" not in page
    assert re.search(r"peak compute\s+[\d.,]+ INT8 GOP/s\.", page)


def test_limits_that_did_not_settle_are_said_unknown_and_nothing_is_set_against_them(tmp_path, monkeypatch):
    """The one-shot follows the site's one rule (generator.analysis.limits): no peak share, bound or roofline
    figure over limits two probes did not agree on, and one line that says why."""
    from support.models import matmul_model

    from generator.machine import probe
    from generator.oneshot import ProfileOptions, profile_model, summary_text

    reason = "the undisturbed probes disagreed by more than 5 %: bandwidth 5.9 against 17.6 GB/s (2 undisturbed of 4)"
    unsettled = probe.MachineLimits(200.0, 400.0, 5.9, threads=2, quick=True, notes=(), settled=False, reason=reason,
                                    measured_at="2026-01-05T09:58:00+00:00", attempts=4, undisturbed=2)
    monkeypatch.setenv("PERFSITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(probe, "probe_machine", lambda quick, threads=None, isa=(): unsettled)
    options = ProfileOptions(threads=1, iterations=5, warmup=1, profile_iterations=1, quick=True)
    record = profile_model(matmul_model(tmp_path / "mm.onnx"), options, out_dir=tmp_path).record
    limits, s = record["limits"], record["summary"]
    assert profile_schema_errors(record) == []
    assert limits["settled"] is False and limits["unsettled_reason"] == reason
    assert limits["peak_gflops_fp32"] is limits["bandwidth_gbs"] is limits["peak_gflops_threads"] is None
    assert s["peak_share_pct"] is None and s["limits_exceeded"] == 0 and limits["note"] is None
    assert {row["bound"] for row in record["layers"]} == {"unknown"}
    text = summary_text(record)
    assert f"  limits        unknown on this machine: {reason}; no figure is set against them" in text
    assert "of the measured" not in text
    page = (tmp_path / "mm.perf.html").read_text(encoding="utf-8")
    assert 'id="limits-unknown">The machine\'s limits are unknown on this machine' in page.replace("&#39;", "'")


def test_a_model_onnxruntime_cannot_load_is_refused_before_measuring(tmp_path, monkeypatch, capsys):
    """The runner's check of a spec's model file (generator.versions.checks) now guards the one-shot too."""
    import sys

    from onnx import TensorProto, helper

    from generator.cli import main

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 99
    path = tmp_path / "too-new.onnx"
    path.write_bytes(model.SerializeToString())
    monkeypatch.setattr(sys, "argv", ["perfsite", "profile", str(path)])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    text = " ".join(err.split())
    assert exit_.value.code == 1 and "Traceback" not in err and not list(tmp_path.glob("*.perf.*"))
    assert text.startswith(f"error: {path}: models.model.path: onnxruntime"), text  # nothing said before it
    assert "Unsupported model IR version: 99" in text


def _refused_before_measuring(monkeypatch, capsys, cwd: Path, *args: str) -> str:
    """`perfsite profile ARGS` in-process through main(): exit 1, one paragraph, nothing measured or written."""
    import sys

    from generator.cli import main

    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["perfsite", "profile", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert "Measuring" not in err and not [p for p in cwd.rglob("*.perf.*") if p.is_file()], err
    return " ".join(err.split())


@pytest.mark.parametrize(("build", "message"), [
    ("constant", "{model}: the model has no graph inputs (every value it computes is a constant). `perfsite "
                 "profile` and `perfsite count` measure a model with at least one input"),
    ("empty", "{model}: not a readable ONNX model (the file is empty: 0 bytes). `perfsite profile` and "
              "`perfsite count` take an ONNX model file (.onnx)"),
])
def test_a_model_without_inputs_or_an_empty_file_is_refused_before_measuring(tmp_path, monkeypatch, capsys, build,
                                                                             message):
    from support.models import constant_model

    model = tmp_path / f"{build}.onnx"
    constant_model(model) if build == "constant" else model.write_bytes(b"")
    assert message.format(model=model) in _refused_before_measuring(monkeypatch, capsys, tmp_path, str(model))


@pytest.mark.parametrize(("out", "message"), [
    ("afile/sub", "--out afile/sub: cannot write the report there (Not a directory). Allowed: --out with a folder "
                  "you can write to (created if missing)"),
    ("afile", "--out afile: it is a file, not a folder. Allowed:"),
    ("taken", "--out taken: taken/conv.perf.html is a folder, and the report is written to that path."),
    # Where the next `perfsite build` empties or replaces everything (results and example models are refused
    # there too): the report was written, exit 0, and went with the next build.
    (".perfsite/build", "--out .perfsite/build: it is inside {tmp}/.perfsite/build, perfsite's own scratch folder, "
                        "which every `perfsite build` empties: the report would be lost. Allowed: --out with a "
                        "folder you can write to (created if missing) outside .perfsite/build and .perfsite/cache"),
    (".perfsite/cache/pages/x", "--out .perfsite/cache/pages/x: it is inside {tmp}/.perfsite/cache, perfsite's own "
                                "scratch folder"),
    ("scratch-link", "--out scratch-link: it is inside {tmp}/.perfsite/build, perfsite's own scratch folder"),
    # A results store, as `count --json`, `diff --json` and `query --output` refuse it: the report sat among the
    # trials, and `query` read it as one.
    ("results/tiny/trials", "--out results/tiny/trials: it is inside {tmp}/results/tiny, an experiment's results "
                            "folder that `perfsite run` writes"),
])
def test_an_unusable_out_folder_is_refused_before_measuring(tmp_path, monkeypatch, capsys, out, message):
    dynamic_conv_model(tmp_path / "conv.onnx")
    (tmp_path / "afile").write_text("a file")
    (tmp_path / "taken" / "conv.perf.html").mkdir(parents=True)
    (tmp_path / "scratch-link").symlink_to(tmp_path / ".perfsite" / "build")  # a link to a folder not made yet
    for table in ("trials", "specs"):
        (tmp_path / "results" / "tiny" / table).mkdir(parents=True)
    text = _refused_before_measuring(monkeypatch, capsys, tmp_path, "conv.onnx", "--dim", "H=8", "--dim", "W=8",
                                     "--out", out)
    assert message.format(tmp=tmp_path) in text, text
    assert not (tmp_path / ".perfsite").exists()  # refused before the folder was made


def test_a_missing_external_data_file_is_refused_before_the_machine_is_probed(tmp_path, monkeypatch, capsys):
    """A model whose external-data file is missing was refused only after `perfsite profile` said it was measuring
    the machine's peak and bandwidth. The runner now announces the probe when it starts it, after the model file's
    checks (as `perfsite run` orders them), so the refusal comes first and alone."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], [weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, tmp_path / "ext.onnx", save_as_external_data=True, location="ext.bin", size_threshold=0)
    (tmp_path / "ext.bin").unlink()
    monkeypatch.setenv("PERFSITE_CACHE_DIR", str(tmp_path / "no-probe-cached-yet"))
    text = _refused_before_measuring(monkeypatch, capsys, tmp_path, "ext.onnx")
    assert text.startswith(f"error: {tmp_path}/ext.onnx: models.model.path: {tmp_path}/ext.onnx needs the "
                           f"external-data file {tmp_path}/ext.bin, which does not exist."), text
    assert "peak and bandwidth" not in text


def test_a_report_file_perfsite_did_not_write_is_refused_before_measuring(tmp_path, monkeypatch, capsys):
    """`echo mine > conv.perf.json; perfsite profile conv.onnx` replaced the user's file (and a page of theirs
    named conv.perf.html), exit 0, as `perfsite example-models` refuses to do with a cnn.onnx of theirs."""
    from generator.cli import main

    dynamic_conv_model(tmp_path / "conv.onnx")
    monkeypatch.chdir(tmp_path)
    theirs = {"conv.perf.json": "mine\n", "conv.perf.html": "<!DOCTYPE html>\n<h1>mine</h1>\n"}
    for name, text in theirs.items():
        (tmp_path / name).write_text(text)
        monkeypatch.setattr(sys, "argv", ["perfsite", "profile", "conv.onnx", "--dim", "H=8", "--dim", "W=8"])
        with pytest.raises(SystemExit) as exit_:
            main()
        err = " ".join(capsys.readouterr().err.split())
        assert exit_.value.code == 1 and "Traceback" not in err and "Measuring" not in err, err
        assert err.startswith(f"error: {tmp_path / name} already exists and is not a report perfsite wrote; writing "
                              "the profile there would replace it. Nothing was measured. Allowed: remove or rename "
                              "that file, or write the report elsewhere with --out DIR; a conv.perf.json or "
                              "conv.perf.html an earlier `perfsite profile` wrote is replaced."), err
        assert (tmp_path / name).read_text() == text
        (tmp_path / name).unlink()
    (tmp_path / "conv.perf.json").symlink_to(tmp_path / "conv.onnx")  # replaced by the report, not written through
    with pytest.raises(SystemExit):
        main()
    assert f"error: {tmp_path / 'conv.perf.json'} is a symbolic link, which the report would replace;" in " ".join(
        capsys.readouterr().err.split())


def test_a_report_perfsite_wrote_is_replaced(cnn_run, tmp_path):
    """The other side of the refusal above: the JSON and page of an earlier `perfsite profile` are its own."""
    from generator.oneshot import check_output_folder

    _, _, cwd = cnn_run
    for name in ("cnn.perf.json", "cnn.perf.html"):
        shutil.copy(cwd / name, tmp_path / name)
    check_output_folder(tmp_path / "cnn.perf.json", tmp_path / "cnn.perf.html", given=True)


@pytest.fixture(scope="module")
def scalar_run(tmp_path_factory, env):
    """A scalar model profiled with PERFSITE_CACHE_DIR naming a file (as a read-only folder): one profile for
    the two tests below (the probe then runs uncached, as that test wants). (The run, its folder.)"""
    from support.models import scalar_model

    cwd = tmp_path_factory.mktemp("scalar-profile")
    scalar_model(cwd / "scalar.onnx")
    (cwd / "afile").write_text("a file")
    return _profile({**env, "PERFSITE_CACHE_DIR": str(cwd / "afile")}, cwd, "scalar.onnx", "--threads", "1"), cwd


def test_a_scalar_model_is_profiled_and_a_page_that_fails_keeps_the_json(scalar_run, env):
    """Rank-0 input and output: the compute chart's bins are all 0 (its limit was divided by the highest bin, a
    ZeroDivisionError after the measurement). Then a page that fails to render (the test hook) keeps the JSON,
    written first, and names it."""
    _, tmp_path = scalar_run
    data = json.loads((tmp_path / "scalar.perf.json").read_text())
    assert profile_schema_errors(data) == [] and data["inputs"][0]["shape"] == []
    # The limit's label over all-zero bins; this run probes for real (uncached), and a busy machine's limits may
    # not settle, when no limit is drawn at all.
    shown = "every bin is 0, above this chart" in (tmp_path / "scalar.perf.html").read_text()
    assert shown == data["limits"]["settled"]
    run = perfsite("profile", "scalar.onnx", "--iterations", "5", "--warmup", "1", "--profile-iterations", "1",
                   "--out", "kept", cwd=tmp_path, env={**env, "PERFSITE_TEST_FAULT": "render"}, timeout=300)
    text = " ".join(run.stderr.split())
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert ("error: The measurement is kept in kept/scalar.perf.json, but rendering the report page "
            "kept/scalar.perf.html failed (RuntimeError: a rendering failure the tests asked for, at ") in text
    assert "This is a bug in perfsite: please report it with that JSON file" in text
    assert profile_schema_errors(json.loads((tmp_path / "kept" / "scalar.perf.json").read_text())) == []
    assert not (tmp_path / "kept" / "scalar.perf.html").exists()


def test_an_unwritable_cache_folder_is_one_warning_and_the_profile_goes_on(scalar_run):
    """PERFSITE_CACHE_DIR naming a file (as a read-only folder): the probe is used uncached, with one warning."""
    run, tmp_path = scalar_run
    warnings = [line for line in run.stderr.splitlines() if line.startswith("Warning: cannot use the cache")]
    assert warnings == [f"Warning: cannot use the cache folder {tmp_path / 'afile' / 'probe'} (Not a directory); "
                        "the machine's limits are measured without caching. Set PERFSITE_CACHE_DIR to a writable "
                        "folder to keep the cache."], run.stderr
    assert profile_schema_errors(json.loads((tmp_path / "scalar.perf.json").read_text())) == []


def test_ctrl_c_while_measuring_exits_130_and_writes_no_report_file(tmp_path, example_models, env):
    shutil.copy(example_models["cnn"], tmp_path / "cnn.onnx")
    proc = subprocess.Popen([sys.executable, "-m", "generator.cli", "profile", "cnn.onnx", "--threads", "1"],
                            cwd=tmp_path, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    said = []
    for line in proc.stderr:  # the progress lines: interrupt once the measurement is under way (not the probe)
        said.append(line)
        if re.match(r"Measuring \d+ requests", line):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    err = " ".join("".join(said + [err]).split())
    assert proc.returncode == 130, err
    assert "Interrupted. A report file is written only whole: MODEL.perf.json once the measurement ends" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    # Interrupted while measuring: no report file, and no half file or temporary one either.
    assert {p.name for p in tmp_path.iterdir()} == {"cnn.onnx"}


def test_ids_that_index_a_table_stay_inside_it_and_the_range_is_said(tmp_path, env):
    """Issue 35, item 12: `token_type_ids` got integers in [0, 100) against a 2-row table, and onnxruntime's
    Gather error said nothing of --input. Now the ids stay under each table's rows, and the command says so."""
    embedding_model(tmp_path / "encoder.onnx")
    run = _profile(env, tmp_path, "encoder.onnx", "--dim", "seq=8")
    said = " ".join(run.stderr.split())
    assert ("token_type_ids: random integers in [0, 2), under the 2 rows of the table that Gather node "
            "'type_gather' indexes") in said
    assert "input_ids: random integers in [0, 30), under the 30 rows of the table that Gather node 'word_gather'" \
        in said
    assert json.loads((tmp_path / "encoder.perf.json").read_text())["summary"]["latency_ms"]["p50"] > 0
