"""Executed nodes mapped back to the original model, on real onnxruntime sessions and saved optimized graphs.

Tiny models built here (a CNN with Conv+BatchNormalization+Relu, a residual Add, pooling and a Gemm, some
nodes unnamed; an attention-like MatMul/Softmax block with Constant nodes) are quantized with
onnxruntime.quantization (static QDQ after quant_pre_process, static QOperator, dynamic) and profiled at
every graph optimization level with the production profile parser.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.models import graph_model

from generator.errors import ModelError
from generator.layers import (
    ExecutedNode,
    NodeMapping,
    map_executed_nodes,
    mapping_coverage,
    runtime_precision,
)
from generator.layers.anchors import base_op
from generator.layers.graph_index import load_graph_index
from generator.machine.profiling import node_statistics, parse_profile

LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
MIN_COVERAGE = 0.98


# -- tiny models ------------------------------------------------------------------------------------------


def _weight(rng, name, shape, scale=0.1, low=None):
    values = rng.uniform(low, 1.5, shape) if low is not None else rng.standard_normal(shape) * scale
    return numpy_helper.from_array(values.astype(np.float32), name)


def build_cnn() -> onnx.ModelProto:
    """conv1+bn1+relu1, pool, a residual block with unnamed nodes, conv+relu, GAP, unnamed Flatten, Gemm."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def conv(name, x, y, cin, cout, stride=1, named=True):
        inits.append(_weight(rng, f"{name}.weight", (cout, cin, 3, 3)))
        inits.append(_weight(rng, f"{name}.bias", (cout,)))
        nodes.append(helper.make_node("Conv", [x, f"{name}.weight", f"{name}.bias"], [y],
                                      name=name if named else "", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      strides=[stride, stride]))

    def bn(name, x, y, c, named=True):
        inits.extend([_weight(rng, f"{name}.scale", (c,), low=0.5), _weight(rng, f"{name}.b", (c,)),
                      _weight(rng, f"{name}.mean", (c,)), _weight(rng, f"{name}.var", (c,), low=0.5)])
        ins = [x] + [f"{name}.{p}" for p in ("scale", "b", "mean", "var")]
        nodes.append(helper.make_node("BatchNormalization", ins, [y], name=name if named else ""))

    def relu(name, x, y):
        nodes.append(helper.make_node("Relu", [x], [y], name=name))

    conv("conv1", "input", "conv1_out", 3, 16)
    bn("bn1", "conv1_out", "bn1_out", 16)
    relu("relu1", "bn1_out", "relu1_out")
    nodes.append(helper.make_node("MaxPool", ["relu1_out"], ["pool_out"], name="pool", kernel_shape=[2, 2],
                                  strides=[2, 2]))
    conv("layer1.conv1", "pool_out", "l1c1", 16, 16)
    bn("layer1.bn1", "l1c1", "l1b1", 16, named=False)
    relu("", "l1b1", "l1r1")
    conv("layer1.conv2", "l1r1", "l1c2", 16, 16, named=False)
    bn("layer1.bn2", "l1c2", "l1b2", 16)
    nodes.append(helper.make_node("Add", ["l1b2", "pool_out"], ["l1add"], name="layer1.add"))
    relu("", "l1add", "l1out")
    conv("layer2.conv1", "l1out", "l2c1", 16, 32, stride=2)
    relu("layer2.relu1", "l2c1", "l2r1")
    nodes.append(helper.make_node("GlobalAveragePool", ["l2r1"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="", axis=1))
    inits.extend([_weight(rng, "fc.weight", (10, 32)), _weight(rng, "fc.bias", (10,))])
    nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1))
    return graph_model(nodes, [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])],
                       [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])], inits, "cnn")


def build_attention() -> onnx.ModelProto:
    """LayerNorm, q/k/v MatMul+Add (v's Add unnamed), k Transpose, scores, scale by a Constant node,
    unnamed Softmax, context, output projection whose weight is a Constant node, residual, FFN."""
    rng = np.random.default_rng(1)
    d, seq = 32, 16
    nodes, inits = [], [_weight(rng, "ln.gamma", (d,), 1.0), _weight(rng, "ln.beta", (d,))]
    nodes.append(helper.make_node("LayerNormalization", ["x", "ln.gamma", "ln.beta"], ["ln_out"], name="ln"))
    for p in "qkv":
        inits += [_weight(rng, f"{p}.weight", (d, d)), _weight(rng, f"{p}.bias", (d,))]
        nodes.append(helper.make_node("MatMul", ["ln_out", f"{p}.weight"], [f"{p}_mm"], name=f"{p}_proj"))
        nodes.append(helper.make_node("Add", [f"{p}_mm", f"{p}.bias"], [f"{p}_out"],
                                      name="" if p == "v" else f"{p}_bias"))
    scale = numpy_helper.from_array(np.array(1 / np.sqrt(d), np.float32))
    nodes += [
        helper.make_node("Transpose", ["k_out"], ["kT"], name="k_T", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q_out", "kT"], ["scores"], name="scores"),
        helper.make_node("Constant", [], ["scale_c"], name="", value=scale),
        helper.make_node("Mul", ["scores", "scale_c"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="", axis=-1),
        helper.make_node("MatMul", ["probs", "v_out"], ["ctx"], name="ctx"),
        helper.make_node("Constant", [], ["o.weight"], name="o_w", value=_weight(rng, "o", (d, d))),
        helper.make_node("MatMul", ["ctx", "o.weight"], ["o_mm"], name="o_proj"),
        helper.make_node("Add", ["o_mm", "x"], ["res"], name="residual"),
    ]
    inits += [_weight(rng, "ff1.weight", (d, 4 * d)), _weight(rng, "ff1.bias", (4 * d,)),
              _weight(rng, "ff2.weight", (4 * d, d)), _weight(rng, "ff2.bias", (d,))]
    nodes += [
        helper.make_node("MatMul", ["res", "ff1.weight"], ["ff1_mm"], name="ff1"),
        helper.make_node("Add", ["ff1_mm", "ff1.bias"], ["ff1_out"], name="ff1_bias"),
        helper.make_node("Relu", ["ff1_out"], ["act"], name=""),
        helper.make_node("MatMul", ["act", "ff2.weight"], ["ff2_mm"], name="ff2"),
        helper.make_node("Add", ["ff2_mm", "ff2.bias"], ["ff2_out"], name="ff2_bias"),
        helper.make_node("Add", ["ff2_out", "res"], ["y"], name="residual2"),
    ]
    return graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", seq, d])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", seq, d])], inits, "attention")


def build_if_model() -> onnx.ModelProto:
    """``y = If(sum(x) > 0, then: Relu(x) * 2, else: Neg(x) * 2)``; both branches name their Mul ``scale``."""
    def branch(op, tag):
        two = numpy_helper.from_array(np.array(2.0, np.float32), f"two_{tag}")
        body = [helper.make_node(op, ["x"], [f"{tag}_act"], name=f"{tag}_act"),
                helper.make_node("Mul", [f"{tag}_act", f"two_{tag}"], [f"{tag}_y"], name="scale")]
        out = helper.make_tensor_value_info(f"{tag}_y", TensorProto.FLOAT, None)
        return helper.make_graph(body, f"{tag}_branch", [], [out], [two])

    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], name="total", keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["positive"], name="positive"),
        helper.make_node("If", ["positive"], ["y"], name="choose", then_branch=branch("Relu", "then"),
                         else_branch=branch("Neg", "else")),
    ]
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    return graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [zero], "branches")


# -- quantized versions -----------------------------------------------------------------------------------


class _Calibration:
    """The smallest calibration data reader onnxruntime.quantization accepts: two random batches."""

    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        rng = np.random.default_rng(2)
        self._feeds = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(2)])

    def get_next(self):
        return next(self._feeds, None)


def _quantized_versions(fp32: Path, input_name: str, shape: tuple[int, ...]) -> dict[str, Path]:
    from onnxruntime.quantization import QuantFormat, quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    stem = fp32.with_suffix("")
    paths = {"fp32": fp32}
    pre = Path(f"{stem}_pre.onnx")
    # Symbolic shape inference leaves temporary files in the working folder when it gives up: keep them out of
    # the checkout.
    with contextlib.chdir(fp32.parent):
        quant_pre_process(str(fp32), str(pre))  # folds BatchNormalization: the QDQ graph differs from FP32
    paths["qdq"] = Path(f"{stem}_qdq.onnx")
    quantize_static(str(pre), str(paths["qdq"]), _Calibration(input_name, shape),
                    quant_format=QuantFormat.QDQ, per_channel=True)
    paths["qoperator"] = Path(f"{stem}_qop.onnx")
    quantize_static(str(fp32), str(paths["qoperator"]), _Calibration(input_name, shape),
                    quant_format=QuantFormat.QOperator)
    paths["dynamic"] = Path(f"{stem}_dyn.onnx")
    quantize_dynamic(str(fp32), str(paths["dynamic"]))
    return paths


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """(model, version) -> file, for the CNN and the attention block in FP32, QDQ, QOperator and dynamic."""
    folder = tmp_path_factory.mktemp("mapping_models")
    out: dict[tuple[str, str], Path] = {}
    for name, build, input_name, shape in (("cnn", build_cnn, "input", (1, 3, 32, 32)),
                                           ("attention", build_attention, "x", (1, 16, 32))):
        fp32 = folder / f"{name}.onnx"
        onnx.save(build(), fp32)
        for version, path in _quantized_versions(fp32, input_name, shape).items():
            out[(name, version)] = path
    return out


# -- profiling a session ----------------------------------------------------------------------------------


class Profiled:
    """One profiled inference: the executed nodes, their times, the saved graph and the mappings."""

    def __init__(self, model: Path, level: str, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        options = ort.SessionOptions()
        options.graph_optimization_level = LEVELS[level]
        options.enable_profiling = True
        options.profile_file_prefix = str(folder / "profile")
        options.optimized_model_filepath = str(folder / "optimized.onnx")
        options.log_severity_level = 3  # the NCHWc warning at ORT_ENABLE_ALL is expected
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        session.run(None, _feeds(session))
        stats = node_statistics(parse_profile(session.end_profiling()))
        self.model = model
        self.optimized = folder / "optimized.onnx"
        self.stats = stats
        self.executed = [
            ExecutedNode(name=s.node_name, op_type=s.op_type, node_index=s.node_index,
                         exec_order=s.exec_order, parent=s.parent)
            for s in stats
        ]
        self.durations = [s.dur_mean_us for s in stats]
        self.mappings = map_executed_nodes(model, self.optimized, self.executed)

    @property
    def coverage(self) -> float:
        return mapping_coverage(self.mappings, self.durations)

    def by_name(self, name: str) -> NodeMapping:
        return next(m for e, m in zip(self.executed, self.mappings, strict=True) if e.name == name)

    def covering(self, original_key: str) -> list[tuple[ExecutedNode, NodeMapping]]:
        """Executed nodes whose region holds ``original_key`` (layout conversions inheriting it excluded)."""
        return [(e, m) for e, m in zip(self.executed, self.mappings, strict=True)
                if original_key in m.original_nodes and m.method != "neighbour"]

    def the_one_covering(self, original_key: str) -> tuple[ExecutedNode, NodeMapping]:
        found = self.covering(original_key)
        assert len(found) == 1, (original_key, [e.name for e, _ in found])
        return found[0]

    def uncovered_originals(self) -> list[str]:
        covered = {k for m in self.mappings for k in m.original_nodes}
        return [n.key for n in load_graph_index(onnx.load(self.model)).nodes if n.key not in covered]


def _feeds(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    """Random floats; token ids below 100 and an all-ones mask for the example transformer."""
    rng = np.random.default_rng(3)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 8 if "seq" in str(d) else 1 for d in i.shape]
        if i.type == "tensor(int64)":
            ids = rng.integers(0, 100, shape) if "ids" in i.name else np.ones(shape)
            feeds[i.name] = ids.astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


@pytest.fixture(scope="module")
def profiled(models, tmp_path_factory):
    """Profile each (model, version, level) once per module run."""
    folder = tmp_path_factory.mktemp("mapping_profiles")
    cache: dict[tuple[str, str, str], Profiled] = {}

    def get(model: str, version: str, level: str) -> Profiled:
        key = (model, version, level)
        if key not in cache:
            cache[key] = Profiled(models[(model, version)], level, folder / "_".join(key))
        return cache[key]

    return get


# -- coverage on every model x version x level ------------------------------------------------------------


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("version", ["fp32", "qdq", "qoperator", "dynamic"])
@pytest.mark.parametrize("model", ["cnn", "attention"])
def test_kernel_time_maps_to_original_nodes(profiled, model, version, level):
    run = profiled(model, version, level)
    unmapped = [e.name for e, m in zip(run.executed, run.mappings, strict=True) if not m.original_nodes]
    assert run.coverage >= MIN_COVERAGE, unmapped
    # Every node of the file is covered by some executed node: nothing fused away is lost.
    assert run.uncovered_originals() == []
    # Every original key and weight name exists in the file that ran.
    index = load_graph_index(onnx.load(run.model))
    for m in run.mappings:
        assert set(m.original_nodes) <= set(index.by_key)
        assert set(m.weights) <= index.weights


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("model", ["cnn", "attention"])
def test_fp32_regions_partition_the_graph(profiled, model, level):
    """Without quantization no node is duplicated: each original node is in exactly one region."""
    run = profiled(model, "fp32", level)
    for node in load_graph_index(onnx.load(run.model)).nodes:
        run.the_one_covering(node.key)


# -- known nodes ------------------------------------------------------------------------------------------


def test_disable_all_keeps_names_and_unnamed_keys(profiled):
    run = profiled("cnn", "fp32", "disable")
    assert run.by_name("conv1") == NodeMapping(("conv1",), ("conv1.weight", "conv1.bias"), "exact")
    # Unnamed nodes are profiled as <op>_<index among non-Constant nodes>, which is their key.
    assert run.by_name("Relu_6").original_nodes == ("Relu_6",)
    assert run.by_name("Conv_7").weights == ("layer1.conv2.weight", "layer1.conv2.bias")


def test_basic_folds_batchnorm_into_the_conv(profiled):
    run = profiled("cnn", "fp32", "basic")
    conv = run.by_name("conv1")
    assert conv.original_nodes == ("conv1", "bn1")
    assert conv.weights[:2] == ("conv1.weight", "conv1.bias")
    assert "bn1.scale" in conv.weights
    assert run.by_name("relu1").original_nodes == ("relu1",)


def test_extended_fused_conv_covers_conv_bn_relu(profiled):
    run = profiled("cnn", "fp32", "extended")
    executed, mapping = run.the_one_covering("conv1")
    assert executed.op_type == "FusedConv"
    assert mapping.original_nodes == ("conv1", "bn1", "relu1")
    assert "conv1.weight" in mapping.weights


def test_all_nchwc_conv_covers_conv_bn_add_relu(profiled):
    run = profiled("cnn", "fp32", "all")
    executed, mapping = run.the_one_covering("conv1")
    assert executed.name == "relu1_out_nchwc"
    assert mapping.original_nodes == ("conv1", "bn1", "relu1")
    assert mapping.weights[:2] == ("conv1.weight", "conv1.bias")
    # The unnamed second conv of the residual block absorbed its BN, the residual Add and the unnamed Relu,
    # although onnxruntime named the node after the BN's output tensor.
    executed, mapping = run.the_one_covering("layer1.add")
    assert executed.name == "l1b2_nchwc"
    assert mapping.original_nodes == ("Conv_7", "layer1.bn2", "layer1.add", "Relu_10")
    # Reorder nodes serve the NCHWc node next to them.
    reorders = [m for e, m in zip(run.executed, run.mappings, strict=True) if e.op_type.startswith("Reorder")]
    assert reorders and all(m.method == "neighbour" and m.original_nodes for m in reorders)


def test_all_qdq_conv_covers_its_dequantize_and_quantize_nodes(profiled):
    run = profiled("cnn", "qdq", "all")
    original = load_graph_index(onnx.load(run.model))
    conv = next(n for n in original.nodes if n.key == "conv1")
    executed, mapping = run.the_one_covering("conv1")
    assert executed.op_type == "QLinearConv"
    dequantize = {original.producer[t].key for t in conv.inputs if t in original.producer}
    quantize = {c.key for c in original.consumers[conv.outputs[0]]}
    assert dequantize | quantize | {"conv1"} == set(mapping.original_nodes)
    assert any(w.startswith("ConvBnFusion_W_conv1.weight") for w in mapping.weights)
    # The NHWC Transposes onnxruntime adds around it are given its nodes.
    transposes = [m for e, m in zip(run.executed, run.mappings, strict=True) if e.op_type == "Transpose"]
    assert transposes and all(m.method == "neighbour" for m in transposes)


def test_all_qoperator_unnamed_conv_is_found_by_its_weight(profiled):
    run = profiled("cnn", "qoperator", "all")
    original = load_graph_index(onnx.load(run.model))
    conv = next(n for n in original.nodes if n.op_type == "QLinearConv" and not n.name)
    executed, mapping = run.the_one_covering(conv.key)
    assert executed.name.startswith("_token_")  # onnxruntime's NHWC copy of a node without a name
    assert (mapping.method, mapping.original_nodes) == ("weight", (conv.key,))
    assert any(w.startswith("layer1.conv2.weight") for w in mapping.weights)


def test_all_qdq_unnamed_softmax_is_found_by_structure(profiled):
    run = profiled("attention", "qdq", "all")
    executed, mapping = next((e, m) for e, m in zip(run.executed, run.mappings, strict=True)
                             if e.op_type == "QLinearSoftmax")
    softmax = next(k for k in mapping.original_nodes if k.startswith("Softmax_"))
    assert mapping.method == "structure"
    # Its DequantizeLinear before and QuantizeLinear after are part of the kernel.
    assert [k.rsplit("_", 1)[-1] for k in mapping.original_nodes if k != softmax] == [
        "DequantizeLinear", "QuantizeLinear"]


def test_attention_matmul_fusions(profiled):
    run = profiled("attention", "fp32", "all")
    executed, mapping = run.the_one_covering("scores")
    assert executed.op_type == "FusedMatMul"
    assert mapping.original_nodes == ("k_T", "scores", "scale")
    assert mapping.weights == ("scale_c",)  # a Constant node's output is a weight
    assert run.the_one_covering("o_proj")[1].weights == ("o.weight",)


def test_dynamic_matmul_integer_to_float_covers_the_rescaling_chain(profiled):
    run = profiled("attention", "dynamic", "all")
    executed, mapping = run.the_one_covering("q_proj_quant")
    assert executed.op_type == "MatMulIntegerToFloat"
    ops = [n.op_type for n in load_graph_index(onnx.load(run.model)).nodes if n.key in mapping.original_nodes]
    assert sorted(ops) == ["Add", "Cast", "MatMulInteger", "Mul", "Mul"]
    assert "q.weight_quantized" in mapping.weights


# -- control flow -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["disable", "all"])
def test_if_branch_nodes_map_to_their_branch(tmp_path, level):
    model = tmp_path / "branches.onnx"
    onnx.save(build_if_model(), model)
    run = Profiled(model, level, tmp_path / "run")
    executed = {e.name: m for e, m in zip(run.executed, run.mappings, strict=True)}
    # _feeds draws x first from the same generator.
    positive = np.random.default_rng(3).standard_normal([4, 8]).sum() > 0
    branch = "then_branch" if positive else "else_branch"
    assert executed["scale"].original_nodes == (f"choose::{branch}::scale",)
    assert executed["choose"].original_nodes == ("choose",)
    # Only the branch that did not run is left uncovered.
    other = "else_branch" if positive else "then_branch"
    assert run.uncovered_originals() and all(f"::{other}::" in k for k in run.uncovered_originals())



# -- example models ---------------------------------------------------------------------------------------


def _example_models(tmp_path: Path) -> list[Path]:
    models = pytest.importorskip("generator.models")
    return models.build_example_models(tmp_path)


@pytest.mark.parametrize("level", list(LEVELS))
def test_example_transformer_fp32_and_dynamic(tmp_path, level):
    from onnxruntime.quantization import quantize_dynamic

    transformer = next(p for p in _example_models(tmp_path) if p.name == "transformer.onnx")
    dynamic = tmp_path / "transformer_dyn.onnx"
    quantize_dynamic(str(transformer), str(dynamic))
    for model in (transformer, dynamic):
        run = Profiled(model, level, tmp_path / f"{model.stem}_{level}")
        assert run.coverage >= MIN_COVERAGE
        assert run.uncovered_originals() == []


def test_example_cnn_at_all(tmp_path):
    cnn = next(p for p in _example_models(tmp_path) if p.name == "cnn.onnx")
    run = Profiled(cnn, "all", tmp_path / "cnn_all")
    assert run.coverage >= MIN_COVERAGE
    assert run.uncovered_originals() == []


# -- keys, names, inputs ----------------------------------------------------------------------------------


def test_node_keys():
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones(3, np.float32))),
        helper.make_node("Relu", ["x"], ["a"], name=""),
        helper.make_node("Relu", ["a"], ["b"], name="twice"),
        helper.make_node("Relu", ["b"], ["d"], name="twice"),
        helper.make_node("Add", ["d", "c"], ["e"], name="Relu_1"),  # a name that looks like a generated key
        helper.make_node("Relu", ["e"], ["y"], name=""),
    ]
    model = graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], name="keys")
    index = load_graph_index(model)
    # Constant nodes are weights, not nodes; unnamed and duplicated names get <op>_<non-Constant index>.
    assert [n.key for n in index.nodes] == ["Relu_0", "Relu_1#2", "Relu_2", "Relu_1", "Relu_4"]
    assert index.weights == {"c"}


def test_names_onnxruntime_gives_created_nodes_are_not_anchors(profiled):
    run = profiled("cnn", "qdq", "all")
    for e, m in zip(run.executed, run.mappings, strict=True):
        if e.name.split("_token_")[0] in ("Transpose", "QuantizeLinear"):
            assert m.method in ("neighbour", "tensor"), (e.name, m)


def test_without_the_saved_graph_names_still_map(profiled):
    run = profiled("cnn", "fp32", "all")
    by_name = dict(zip([e.name for e in run.executed], map_executed_nodes(run.model, None, run.executed),
                       strict=True))
    assert by_name["fc"].original_nodes == ("fc",)
    assert by_name["relu1_out_nchwc"].original_nodes == ("relu1",)  # named after its output tensor


def test_repeated_and_unknown_executed_nodes(profiled):
    run = profiled("cnn", "fp32", "disable")
    extra = ExecutedNode(name="not_in_the_model", op_type="Relu", node_index=None, exec_order=99)
    again = run.executed[0]
    mappings = map_executed_nodes(run.model, run.optimized, [*run.executed, extra, again])
    assert mappings[-2] == NodeMapping((), (), "none")
    assert mappings[-1] == mappings[0]


def test_unreadable_model_is_a_model_error(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="bad.onnx"):
        map_executed_nodes(bad, None, [])


def test_mapping_coverage():
    mapped, unmapped = NodeMapping(("a",), (), "exact"), NodeMapping((), (), "none")
    assert mapping_coverage([mapped, unmapped], [30.0, 10.0]) == pytest.approx(0.75)
    assert mapping_coverage([mapped, unmapped], [0.0, 0.0]) == pytest.approx(0.5)
    assert mapping_coverage([], []) == 1.0
    with pytest.raises(ValueError):
        mapping_coverage([mapped], [1.0, 2.0])


def test_base_op():
    assert [base_op(op) for op in ("QLinearConv", "FusedConv", "ConvInteger", "NhwcMaxPool", "QGemm",
                                   "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QuickGelu", "Relu")] == [
        "Conv", "Conv", "Conv", "MaxPool", "Gemm", "MatMul", "MatMul", "QuickGelu", "Relu"]


# -- runtime precision ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_type", "inputs", "outputs", "expected"),
    [
        ("Conv", ["float", "float", "float"], ["float"], "FP32"),
        ("Conv", ["float16", "float16"], ["float16"], "FP16"),
        ("QLinearConv", ["uint8", "float", "uint8", "int8", "float", "int8", "float", "uint8", "int32"],
         ["uint8"], "INT8"),
        ("ConvInteger", ["uint8", "int8", "uint8"], ["int32"], "INT8"),
        ("MatMulInteger", ["int8", "int8"], ["int32"], "INT8"),
        ("MatMulIntegerToFloat", ["uint8", "int8", "float", "float"], ["float"], "INT8"),
        ("QGemm", ["uint8", "float", "uint8", "int8", "float", "int8"], ["uint8"], "INT8"),
        ("DynamicQuantizeMatMul", ["float"], ["float"], "INT8"),  # weight pre-packed, absent from the profile
        ("MaxPool", ["uint8"], ["uint8"], "INT8"),
        ("Reshape", ["float", "int64"], ["float"], "FP32"),  # shape-only: the data tensor decides
        ("Gather", ["float16", "int64"], ["float16"], "FP16"),
        ("Shape", ["float"], ["int64"], "FP32"),
        ("QuantizeLinear", ["float", "float", "uint8"], ["uint8"], "mixed"),
        ("DequantizeLinear", ["int8", "float", "int8"], ["float"], "mixed"),
        ("DynamicQuantizeLinear", ["float"], ["uint8", "float", "uint8"], "mixed"),
        ("Cast", ["float"], ["float16"], "mixed"),
        ("Cast", ["int32"], ["float"], "mixed"),
        ("Cast", ["int64"], ["int32"], "other"),
        ("Cast", ["float"], ["float"], "FP32"),
        ("Add", ["float16", "float"], ["float"], "mixed"),
        ("Add", ["int64", "int64"], ["int64"], "other"),
        ("Not", ["bool"], ["bool"], "other"),
        ("Add", ["bfloat16", "bfloat16"], ["bfloat16"], "other"),
        ("Identity", [], [], "other"),
    ],
)
def test_runtime_precision(op_type, inputs, outputs, expected):
    assert runtime_precision(op_type, inputs, outputs) == expected


def test_runtime_precision_of_profiled_kernels(profiled):
    """The element types onnxruntime writes in a real profile give the expected classes."""
    run = profiled("attention", "dynamic", "all")
    by_op = {}
    for s in run.stats:
        by_op[s.op_type] = runtime_precision(s.op_type, json.loads(s.input_types), json.loads(s.output_types))
    assert by_op["MatMulIntegerToFloat"] == "INT8"
    assert by_op["DynamicQuantizeLinear"] == "mixed"
    assert by_op["LayerNormalization"] == "FP32"
    qdq = profiled("cnn", "qdq", "all")
    classes = {s.op_type: runtime_precision(s.op_type, json.loads(s.input_types), json.loads(s.output_types))
               for s in qdq.stats}
    assert classes["QLinearConv"] == "INT8"
    assert classes["QuantizeLinear"] == "mixed"
