"""What reaches a trial's key, end to end through the runner's planning (`perfsite run --dry-run`): each of the
five things that change a measurement without changing the spec's text must give new keys, or `run` would say
"already stored" and the site would keep the old figures."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest

from generator import plan
from generator.machine import environment
from generator.models.builder import FLOAT, GraphBuilder
from generator.runner.orchestrate import RunOptions, run_experiment
from generator.spec.loader import load_spec_text

SPEC = """\
name: keys
models:
  fp32: {path: models/mm.onnx}
  int8: {from: fp32, quantize: {mode: static_qdq, preprocess: false, calibration: {samples: 2, data: calib.npz}}}
inputs:
  x: {file: x.npy}
"""


def _model(folder: Path, weight_scale: float = 1.0) -> None:
    """A MatMul whose weight lives in external data beside the model."""
    b = GraphBuilder("mm", seed=0)
    x = b.input("x", FLOAT, ["batch", 16])
    y = b.node("MatMul", [x, b.weight("w", np.full((16, 16), weight_scale, np.float32))], "/mm")
    b.output(y, "y", FLOAT, ["batch", 16])
    onnx.save_model(b.build(), str(folder / "mm.onnx"), save_as_external_data=True, location="mm.onnx.data",
                    size_threshold=0)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "models").mkdir()
    _model(tmp_path / "models")
    np.save(tmp_path / "x.npy", np.ones((1, 16), np.float32))
    np.savez(tmp_path / "calib.npz", x=np.ones((2, 16), np.float32))
    return tmp_path


def _keys(project: Path) -> dict[str, str]:
    loaded = load_spec_text(SPEC, project / "spec.yaml")
    options = RunOptions(results_dir=project / "results", dry_run=True, cache_dir=project / "cache")
    return {p.trial.version: p.key for p in run_experiment(loaded, options).planned}


def test_an_input_file_changed_in_place_gives_new_keys(project):
    before = _keys(project)
    np.save(project / "x.npy", np.full((1, 16), 2.0, np.float32))  # same path, same shape, new contents
    assert _keys(project)["fp32"] != before["fp32"]


def test_a_new_measurement_method_gives_new_keys(project, monkeypatch):
    before = _keys(project)
    monkeypatch.setattr(plan, "MEASUREMENT_VERSION", plan.MEASUREMENT_VERSION + 1)
    assert set(_keys(project).values()).isdisjoint(before.values())


def test_new_calibration_data_gives_the_quantized_version_new_keys(project):
    before = _keys(project)
    np.savez(project / "calib.npz", x=np.linspace(-4, 4, 32, dtype=np.float32).reshape(2, 16))
    after = _keys(project)
    assert after["int8"] != before["int8"] and after["fp32"] == before["fp32"]


def test_changed_external_data_gives_new_keys(project):
    before = _keys(project)
    _model(project / "models", weight_scale=0.5)  # mm.onnx itself is unchanged: only mm.onnx.data differs
    assert _keys(project)["fp32"] != before["fp32"]


def test_another_onnxruntime_version_gives_new_keys(project, monkeypatch):
    before = _keys(project)
    real = environment.capture_environment

    def other_runtime():
        env = real()
        return dataclasses.replace(env, onnxruntime="0.0.1-other",
                                   fingerprint=environment.fingerprint({**env.__dict__, "onnxruntime": "0.0.1-other"}))

    monkeypatch.setattr("generator.runner.orchestrate.capture_environment", other_runtime)
    assert set(_keys(project).values()).isdisjoint(before.values())
