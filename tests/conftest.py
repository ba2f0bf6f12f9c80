"""Shared fixtures: example models built once per session, small projects with specs, quick mode."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from perfsite_testing import write_spec

from generator.models import build_example_models


@pytest.fixture(scope="session")
def example_models(tmp_path_factory) -> dict[str, Path]:
    """The example CNN and transformer, built from code once for the whole session."""
    out = tmp_path_factory.mktemp("example-models")
    return {p.stem: p for p in build_example_models(out)}


@pytest.fixture(scope="session")
def _probe_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("perfsite-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, _probe_cache):
    # The machine-limits cache is per user (generator.runner.probe.probe_cache_dir): tests must never read or
    # write the real one in the home folder. One folder for the whole session, so that the suite probes once.
    monkeypatch.setenv("PERFSITE_CACHE_DIR", str(_probe_cache))


@pytest.fixture(autouse=True)
def _quick_mode(monkeypatch):
    # Tests measure in quick mode so that `make test` stays near ten minutes; tests that need the spec's own
    # settings unset it.
    monkeypatch.setenv("PERFSITE_QUICK", "1")


@pytest.fixture
def cnn_project(tmp_path, example_models) -> Path:
    """A project folder (not in git) with the example CNN under models/ and a two-version spec."""
    (tmp_path / "models").mkdir()
    shutil.copy(example_models["cnn"], tmp_path / "models" / "cnn.onnx")
    write_spec(tmp_path, """\
        name: tiny
        description: two versions, two batch sizes
        models:
          fp32: {path: models/cnn.onnx}
          int8: {from: fp32, quantize: {mode: static_qdq, calibration: {samples: 2}}}
        inputs:
          input: {shape: [batch, 3, 64, 64], dtype: float32}
        sweep:
          batch: [1, 2]
        measure: {warmup: 2, min_iterations: 5, min_seconds: 0.02, repeats: 2, profile_iterations: 2}
        latency_threshold_ms: 50
        """)
    return tmp_path
