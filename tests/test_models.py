"""The example models: valid ONNX, runnable at every optimization level, PyTorch-like names, deterministic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from generator.models import build_example_models
from generator.models.builder import IR_VERSION, OPSET
from generator.models.cnn import IMAGE_SIZE, NUM_CLASSES
from generator.models.transformer import HIDDEN, VOCAB

LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    paths = build_example_models(tmp_path_factory.mktemp("models"))
    return {p.stem: p for p in paths}


def _session(path: Path, level: str, optimized: Path | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = LEVELS[level]
    options.intra_op_num_threads = 1
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def test_writes_every_example_model(models: dict[str, Path]) -> None:
    assert sorted(models) == ["cnn", "decoder", "transformer"]
    for path in models.values():
        model = onnx.load(str(path))
        onnx.checker.check_model(model, full_check=True)
        assert model.ir_version == IR_VERSION
        assert [(o.domain, o.version) for o in model.opset_import] == [("", OPSET)]


@pytest.mark.parametrize("level", LEVELS)
def test_cnn_runs_at_every_level(models: dict[str, Path], level: str) -> None:
    x = np.random.default_rng(0).standard_normal((3, 3, IMAGE_SIZE, IMAGE_SIZE)).astype(np.float32)
    (logits,) = _session(models["cnn"], level).run(None, {"input": x})
    assert logits.shape == (3, NUM_CLASSES)
    assert np.isfinite(logits).all()


@pytest.mark.parametrize("level", LEVELS)
def test_transformer_runs_at_every_level(models: dict[str, Path], level: str) -> None:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCAB, (2, 7), dtype=np.int64)
    mask = np.ones((2, 7), np.int64)
    mask[1, 4:] = 0
    (hidden,) = _session(models["transformer"], level).run(None, {"input_ids": ids, "attention_mask": mask})
    assert hidden.shape == (2, 7, HIDDEN)
    assert np.isfinite(hidden).all()


def test_levels_agree(models: dict[str, Path]) -> None:
    x = np.random.default_rng(1).standard_normal((1, 3, IMAGE_SIZE, IMAGE_SIZE)).astype(np.float32)
    outputs = [_session(models["cnn"], level).run(None, {"input": x})[0] for level in LEVELS]
    for out in outputs[1:]:
        np.testing.assert_allclose(out, outputs[0], rtol=1e-3, atol=1e-3)


def test_dynamic_dims_are_named(models: dict[str, Path]) -> None:
    cnn = onnx.load(str(models["cnn"])).graph
    assert cnn.input[0].name == "input"
    assert [d.dim_param or d.dim_value for d in cnn.input[0].type.tensor_type.shape.dim] == [
        "batch", 3, IMAGE_SIZE, IMAGE_SIZE,
    ]
    encoder = onnx.load(str(models["transformer"])).graph
    dims = {i.name: [d.dim_param for d in i.type.tensor_type.shape.dim] for i in encoder.input}
    assert dims == {"input_ids": ["batch", "seq_len"], "attention_mask": ["batch", "seq_len"]}
    assert [o.name for o in encoder.output] == ["last_hidden_state"]


def test_names_look_like_pytorch_exports(models: dict[str, Path]) -> None:
    cnn = onnx.load(str(models["cnn"])).graph
    nodes = {n.name for n in cnn.node}
    weights = {t.name for t in cnn.initializer}
    assert {"/conv1/Conv", "/layer1/layer1.0/conv1/Conv", "/layer2/layer2.0/downsample/downsample.0/Conv",
            "/layer1/layer1.0/Add", "/fc/Gemm"} <= nodes
    assert {"layer1.0.conv1.weight", "layer1.0.bn1.running_mean", "layer2.0.downsample.1.running_var",
            "fc.weight"} <= weights
    encoder = onnx.load(str(models["transformer"])).graph
    assert "/encoder/layer.0/attention/self/query/MatMul" in {n.name for n in encoder.node}
    assert {"encoder.layer.1.attention.self.query.weight", "encoder.layer.0.intermediate.dense.bias",
            "embeddings.word_embeddings.weight"} <= {t.name for t in encoder.initializer}


def test_gelu_is_fused_by_onnxruntime(models: dict[str, Path], tmp_path: Path) -> None:
    optimized = tmp_path / "optimized.onnx"
    _session(models["transformer"], "extended", optimized)
    ops = {n.op_type for n in onnx.load(str(optimized)).graph.node}
    assert ops & {"Gelu", "BiasGelu"}
    assert "Erf" not in ops


def test_files_are_deterministic_and_not_rewritten(models: dict[str, Path], tmp_path: Path) -> None:
    again = {p.stem: p for p in build_example_models(tmp_path / "again")}
    for name, path in models.items():
        assert again[name].read_bytes() == path.read_bytes()
    mtimes = {name: p.stat().st_mtime_ns for name, p in again.items()}
    build_example_models(tmp_path / "again")
    assert {name: p.stat().st_mtime_ns for name, p in again.items()} == mtimes
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == ["cnn.onnx", "decoder.onnx", "transformer.onnx"]


def test_module_entry_point(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "generator.models", str(tmp_path / "out")],
        capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1],
    )
    out = tmp_path / "out"
    assert done.stdout.split() == [str(out / "cnn.onnx"), str(out / "transformer.onnx"), str(out / "decoder.onnx")]
