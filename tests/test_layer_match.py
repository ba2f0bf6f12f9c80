"""Matching layers across versions: the naming rules on small hand-written node tables, then the acceptance
criterion on real profiles of the example CNN and transformer (FP32 against INT8) at every optimization level."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.cli import write_spec

from generator.analysis.layer_match import match_layers
from generator.analysis.layer_names import closure, common_name, is_added_name, strip_candidates
from generator.results.cells import decoded

LEVELS = ("disable", "basic", "extended", "all")
COVERAGE_MIN = 0.98


def _node(order: int, name: str, op: str, dur: float, originals: list[str], weights: list[str] = (),
          precision: str = "FP32", shapes_in=([1, 8, 4, 4],), shapes_out=([1, 8, 4, 4],),
          method: str = "exact", parent: str | None = None) -> dict:
    return {"trial_key": "t", "exec_order": order, "node_name": name, "op_type": op, "dur_mean_us": dur,
            "dur_std_us": 0.0, "runtime_precision": precision, "original_nodes": tuple(originals),
            "weights": tuple(weights), "mapping_method": method, "parent": parent, "provider": "CPUExecutionProvider",
            # cells as load_experiment decodes them (generator.results.cells)
            "input_shapes": tuple(map(tuple, shapes_in)), "output_shapes": tuple(map(tuple, shapes_out))}


def _frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def _row(match, layer_start: str):
    return next(r for r in match.kernels if r.layer.startswith(layer_start))


def test_strip_candidates_remove_quantizer_additions_one_at_a_time():
    assert "/conv1/Conv" in strip_candidates("/conv1/Conv_quant")
    assert "bn1.bias" in strip_candidates("ConvBnFusion_BN_B_bn1.bias_quantized")
    assert "/fc/Gemm" in strip_candidates("/fc/Gemm_MatMul_quant")
    assert "/bn1/BatchNormalization" in strip_candidates("/bn1/BatchNormalization_output_0_bias_add")
    assert strip_candidates("conv1")[0] == "conv1"  # least stripped first
    # A form is only used when the other version knows it.
    other = closure(["/conv1/Conv", "conv1.weight"])
    assert common_name("/conv1/Conv_quant", other) == "/conv1/Conv"
    assert common_name("ConvBnFusion_W_conv1.weight_quantized", other) == "conv1.weight"
    assert common_name("/unrelated_quant", other) == "/unrelated_quant"


def test_added_names_are_the_transforms_conversions():
    for name in ("input_QuantizeLinear", "x_DequantizeLinear/duplicated", "/c/Conv_quant_scales_mul",
                 "/c/Conv_quant_output_scale_mul", "/bn/out_output_quantized_cast", "graph_input_cast0",
                 "InsertedPrecisionFreeCast_x"):
        assert is_added_name(name), name
    for name in ("/conv1/Conv", "/c/Conv_quant", "/bn/out_bias_add", "Cast_3"):
        assert not is_added_name(name), name


def test_qdq_version_matches_fused_layers_and_keeps_overhead_apart():
    a = _frame(
        _node(0, "conv1", "Conv", 100, ["conv1"], ["conv1.weight"]),
        _node(1, "bn1", "BatchNormalization", 10, ["bn1"], ["bn1.weight", "bn1.bias", "bn1.mean", "bn1.var"]),
        _node(2, "relu1", "Relu", 5, ["relu1"]),
        _node(3, "fc", "Gemm", 20, ["fc"], ["fc.weight"], shapes_in=([1, 128],), shapes_out=([1, 10],)),
    )
    b = _frame(
        _node(0, "input_QuantizeLinear", "QuantizeLinear", 4, ["input_QuantizeLinear"], precision="mixed"),
        _node(1, "conv1_token_3", "QLinearConv", 40, ["input_DequantizeLinear", "conv1", "relu1_out_QuantizeLinear"],
              ["ConvBnFusion_W_conv1.weight_quantized", "ConvBnFusion_BN_B_bn1.bias_quantized",
               "relu1_out_scale", "relu1_out_zero_point"], precision="INT8"),
        _node(2, "fc", "QGemm", 15, ["fc"], ["fc.weight_quantized"], precision="INT8"),
        _node(3, "logits_DequantizeLinear", "DequantizeLinear", 3, ["logits_DequantizeLinear"], precision="mixed"),
    )
    match = match_layers(a, b)
    conv = _row(match, "conv1")
    assert (conv.time_a_us, conv.time_b_us, conv.only_in) == (115, 40, None)
    assert conv.executed_a == ("conv1", "bn1", "relu1") and conv.executed_b == ("conv1_token_3",)
    assert conv.precision_a == "FP32" and conv.precision_b == "INT8" and conv.op_type == "Conv"
    assert conv.note == "3 kernels in A, 1 in B"
    assert match.overhead.time_b_us == 7 and match.overhead.by_op == {"QuantizeLinear": 4, "DequantizeLinear": 3}
    assert match.coverage.share_a == 1.0 and match.coverage.share_b == 1.0
    q = next(r for r in match.kernels if r.kind == "overhead" and r.op_type == "QuantizeLinear")
    assert q.only_in == "b" and q.note == "added by quantization (QuantizeLinear)"


def test_dynamic_version_links_renamed_nodes_by_name_and_weight():
    a = _frame(
        _node(0, "/conv/Conv", "Conv", 50, ["/conv/Conv"], ["conv.weight"]),
        _node(1, "/bn/BatchNormalization", "BatchNormalization", 8, ["/bn/BatchNormalization"],
              ["bn.weight", "bn.bias"]),
    )
    b = _frame(
        _node(0, "x_QuantizeLinear", "DynamicQuantizeLinear", 3, ["x_QuantizeLinear"], precision="mixed"),
        _node(1, "/conv/Conv_quant", "ConvInteger", 200, ["/conv/Conv_quant"],
              ["ConvBnFusion_W_conv.weight_quantized"], precision="INT8"),
        _node(2, "cast", "Cast", 2, ["/bn/BatchNormalization_output_0_output_quantized_cast"], precision="mixed"),
        _node(3, "mul", "Mul", 2, ["/conv/Conv_quant_scales_mul"]),
        _node(4, "Reshape_0", "Reshape", 1, ["Reshape_0"], ["ConvBnFusion_BN_B_bn.bias"]),
        _node(5, "add", "Add", 4, ["/bn/BatchNormalization_output_0_bias_add"], ["ConvBnFusion_BN_B_bn.bias"]),
    )
    match = match_layers(a, b)
    assert _row(match, "/conv/Conv").executed_b == ("/conv/Conv_quant",)
    bn = _row(match, "/bn/BatchNormalization")
    assert set(bn.executed_b) == {"Reshape_0", "add"} and bn.only_in is None
    assert match.overhead.by_op == {"DynamicQuantizeLinear": 3, "Cast": 2, "Mul": 2}
    assert match.coverage.share_a == 1.0 and match.coverage.share_b == 1.0


def test_removed_activation_joins_its_producer_and_unmatched_layers_say_so():
    a = _frame(
        _node(0, "conv", "Conv", 30, ["conv"], ["conv.w"], shapes_out=([1, 8, 4, 4],)),
        _node(1, "relu", "Relu", 3, ["relu"], shapes_in=([1, 8, 4, 4],)),
        _node(2, "gap", "GlobalAveragePool", 2, ["gap"], shapes_out=([1, 8, 1, 1],)),
        _node(3, "softmax", "Softmax", 2, ["softmax"], shapes_in=([1, 8],)),
    )
    b = _frame(
        _node(0, "conv", "Conv", 25, ["conv"], ["conv.w_quantized"]),
        _node(1, "gap", "GlobalAveragePool", 2, ["gap"]),
        _node(2, "extra", "Mul", 1, ["extra_node"]),
    )
    match = match_layers(a, b)
    assert _row(match, "conv").executed_a == ("conv", "relu")
    softmax = _row(match, "softmax")
    assert softmax.only_in == "a" and softmax.note.startswith("no counterpart in B")
    extra = _row(match, "extra_node")
    assert extra.only_in == "b" and extra.note == "only in B: added by the transform"
    assert match.coverage.share_a == pytest.approx(35 / 37)
    assert match.coverage.share_b == pytest.approx(27 / 28)


def test_unnamed_keys_match_across_versions_only_with_evidence():
    # Positions shift when a transform inserts nodes: `Relu_3` of B is not `Relu_3` of A unless the evidence
    # agrees (same weights, or weightless with the same op and input shapes).
    a = _frame(_node(0, "Relu_3", "Relu", 5, ["Relu_3"], shapes_in=([1, 4],)),
               _node(1, "Conv_4", "Conv", 9, ["Conv_4"], ["w1"]))
    b_shifted = _frame(_node(0, "Relu_3", "Relu", 5, ["Relu_3"], shapes_in=([1, 16],)),
                       _node(1, "Conv_4", "Conv", 9, ["Conv_4"], ["w2_quantized"]))
    match = match_layers(a, b_shifted)
    assert all(r.only_in for r in match.kernels)
    b_same = _frame(_node(0, "Relu_3", "Relu", 5, ["Relu_3"], shapes_in=([1, 4],)),
                    _node(1, "Conv_4", "Conv", 9, ["Conv_4"], ["w1_quantized"]))
    assert all(r.only_in is None for r in match_layers(a, b_same).kernels)


def test_sub_graph_nodes_do_not_count_and_ratios_come_with_intervals():
    from generator.analysis.records_compare import RatioCI

    a = _frame(_node(0, "if", "If", 100, ["if"]), _node(1, "inner", "Relu", 60, ["if::then_branch::r"], parent="if"))
    b = _frame(_node(0, "if", "If", 50, ["if"]))
    reference = RatioCI(0.5, 0.45, 0.55, True, processes_a=3, processes_b=3)
    match = match_layers(a, b, reference, iterations_a=10, iterations_b=10)
    assert match.coverage.total_a_us == 100 and len(match.kernels) == 1
    ratio = match.kernels[0].ratio
    assert ratio.point == 0.5 and ratio.low < 0.5 < ratio.high and ratio.significant


# --- acceptance: real profiles -------------------------------------------------------------------------------


def _profile_all_levels(project: Path, spec_text: str, versions: tuple[str, ...]) -> dict:
    """Real profiled passes (generator.runner.worker, in process) of each version at every level."""
    from generator.inputs import make_feeds
    from generator.runner import worker
    from generator.runner.protocol import WorkerJob
    from generator.spec import load_spec
    from generator.versions import prepare_versions

    loaded = load_spec(write_spec(project, spec_text))
    built = prepare_versions(loaded, project / "cache")
    out = {}
    for version in versions:
        path = built[version].path
        feeds_path = project / f"{version}.npz"
        binding = {"batch": 1, **{k: v[0] for k, v in loaded.spec.sweep.placeholders.items()}}
        np.savez(feeds_path, **make_feeds(loaded, path, binding, seed=0))
        for level in LEVELS:
            work = project / "work" / f"{version}-{level}"
            config = {"batch": 1, "threads": 1, "concurrency": 1, "optimization_level": level, "provider": "cpu",
                      "spinning": False, "inter_op_threads": 1, **binding}
            job = {"mode": "profile", "model_path": str(path), "original_model_path": str(path), "config": config,
                   "feeds_path": str(feeds_path), "measure": {"warmup": 1, "profile_iterations": 2},
                   "work_dir": str(work)}
            nodes = worker.profile_pass(WorkerJob(**job))["nodes"]
            rows = pd.DataFrame([{**n, "trial_key": f"{version}-{level}"} for n in nodes])
            out[(version, level)] = decoded("nodes", rows)  # as load_experiment gives them
    return out


@pytest.fixture(scope="module")
def cnn_profiles(example_models, tmp_path_factory) -> dict:
    project = tmp_path_factory.mktemp("match-cnn")
    (project / "models").mkdir()
    shutil.copy(example_models["cnn"], project / "models" / "cnn.onnx")
    return _profile_all_levels(project, """\
        name: match-cnn
        models:
          fp32: {path: models/cnn.onnx}
          int8-static: {from: fp32, quantize: {mode: static_qdq, calibration: {samples: 2}}}
        inputs:
          input: {shape: [batch, 3, 64, 64], dtype: float32}
        """, ("fp32", "int8-static"))


@pytest.fixture(scope="module")
def transformer_profiles(example_models, tmp_path_factory) -> dict:
    project = tmp_path_factory.mktemp("match-transformer")
    (project / "models").mkdir()
    shutil.copy(example_models["transformer"], project / "models" / "transformer.onnx")
    return _profile_all_levels(project, """\
        name: match-transformer
        models:
          fp32: {path: models/transformer.onnx}
          int8-dyn: {from: fp32, quantize: {mode: dynamic}}
          int8-static: {from: fp32, quantize: {mode: static_qdq, calibration: {samples: 2}}}
        inputs:
          input_ids: {shape: [batch, seq_len], dtype: int64, range: [0, 1000]}
          attention_mask: {value: 1, dtype: int64}
        sweep:
          seq_len: [16]
        """, ("fp32", "int8-dyn", "int8-static"))


@pytest.mark.parametrize("level", LEVELS)
def test_cnn_fp32_vs_static_qdq_matches_nearly_all_time(cnn_profiles, level):
    match = match_layers(cnn_profiles[("fp32", level)], cnn_profiles[("int8-static", level)])
    assert match.coverage.share_a >= COVERAGE_MIN, _unmatched(match)
    assert match.coverage.share_b >= COVERAGE_MIN, _unmatched(match)
    # Every Conv of the FP32 model is matched to an INT8-side kernel, one group per Conv.
    convs = [r for r in match.kernels if r.kind == "layer" and r.op_type == "Conv"]
    # (Once, under load, 14 rows: at level disable a group is [Conv, BatchNormalization, Relu], and its op type
    # was its longest member's; it is now the member that does the work, layer_match._work_first.)
    assert len(convs) == 15 and all(r.only_in is None for r in convs), ([r.layer for r in convs], _unmatched(match))
    assert all(r.layer.split(", ")[0].endswith("/Conv") for r in convs)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("version", ["int8-dyn", "int8-static"])
def test_transformer_fp32_vs_int8_matches_nearly_all_time(transformer_profiles, version, level):
    match = match_layers(transformer_profiles[("fp32", level)], transformer_profiles[(version, level)])
    assert match.coverage.share_a >= COVERAGE_MIN, _unmatched(match)
    assert match.coverage.share_b >= COVERAGE_MIN, _unmatched(match)
    # The linear layers (query, key, value, attention output, intermediate, output) of both encoder layers.
    linear = {r.layer.split(", ")[0] for r in match.kernels if r.only_in is None and
              r.layer.split(", ")[0].endswith(("query/MatMul", "key/MatMul", "value/MatMul", "dense/MatMul"))}
    assert len(linear) == 12, linear


def _unmatched(match) -> str:
    rows = [f"{r.only_in}: {r.layer} {r.op_type} {max(r.time_a_us, r.time_b_us):.1f} µs"
            for r in match.kernels if r.only_in and r.kind == "layer"]
    return "unmatched: " + "; ".join(rows)
