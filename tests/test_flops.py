"""Static analysis of whole models: the example CNN against a hand count, its INT8 versions, node keys,
weights, unknown ops, shape inference failures, external data, and the profiled pass's OUT.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from generator.flops import LayerRow, analyze_model, analyze_model_report
from generator.flops import shapes as flop_shapes
from generator.layers.graph_index import load_graph_index
from generator.results.schema import column_names
from generator.runner import worker
from generator.runner.protocol import WorkerJob

CNN_INPUT = {"input": (1, 3, 64, 64)}
TRANSFORMER_INPUTS = {"input_ids": (2, 16), "attention_mask": (2, 16)}


def totals(rows: list[LayerRow]) -> tuple[float, float, float]:
    return (sum(r.flops or 0 for r in rows), sum(r.macs or 0 for r in rows), sum(r.int_ops or 0 for r in rows))


# -- the example CNN by hand --------------------------------------------------------------------------------

# generator/models/cnn.py at 64x64, batch 1: (layer, in channels, out channels, kernel, output side).
# Stem: 7x7 stride 2 -> 32x32, then MaxPool 3x3 stride 2 -> 16x16. Stages of two basic blocks each at 16x16
# (48 ch), 8x8 (96 ch) and 4x4 (192 ch); the first block of stages 2 and 3 has stride 2 and a 1x1
# projection shortcut.
CNN_CONVS = [
    ("conv1", 3, 48, 7, 32),
    ("layer1.0.conv1", 48, 48, 3, 16), ("layer1.0.conv2", 48, 48, 3, 16),
    ("layer1.1.conv1", 48, 48, 3, 16), ("layer1.1.conv2", 48, 48, 3, 16),
    ("layer2.0.conv1", 48, 96, 3, 8), ("layer2.0.conv2", 96, 96, 3, 8), ("layer2.0.downsample", 48, 96, 1, 8),
    ("layer2.1.conv1", 96, 96, 3, 8), ("layer2.1.conv2", 96, 96, 3, 8),
    ("layer3.0.conv1", 96, 192, 3, 4), ("layer3.0.conv2", 192, 192, 3, 4), ("layer3.0.downsample", 96, 192, 1, 4),
    ("layer3.1.conv1", 192, 192, 3, 4), ("layer3.1.conv2", 192, 192, 3, 4),
]
# Output elements of each residual block (Add, then Relu_1; the block's first Relu has the same size).
CNN_BLOCK_OUTPUTS = [48 * 16 * 16] * 2 + [96 * 8 * 8] * 2 + [192 * 4 * 4] * 2


def hand_cnn_counts() -> tuple[int, int]:
    """Total FLOPs and MACs of the example CNN, from the layer list above."""
    conv_macs = sum(cout * side * side * cin * k * k for _, cin, cout, k, side in CNN_CONVS)
    fc_macs = 192 * 100
    macs = conv_macs + fc_macs  # 66,207,744 + 19,200 = 66,226,944
    bn = sum(2 * cout * side * side + 5 * cout for _, _, cout, _, side in CNN_CONVS)  # a*x + b; 5 per channel
    relu = 48 * 32 * 32 + sum(2 * n for n in CNN_BLOCK_OUTPUTS)  # stem, then two per block
    add = sum(CNN_BLOCK_OUTPUTS)
    maxpool = 48 * 16 * 16 * (9 - 1)  # 8 comparisons per output
    gap = 192 * 4 * 4  # 15 adds + 1 division per channel
    fc = 2 * fc_macs + 100  # + bias
    flops = 2 * conv_macs + bn + relu + add + maxpool + gap + fc
    return flops, macs


def test_hand_count_of_the_cnn_is_what_the_docs_say():
    assert hand_cnn_counts() == (133_030_708, 66_226_944)


def test_example_cnn_total_matches_the_hand_count(example_models):
    flops, macs, int_ops = totals(analyze_model(example_models["cnn"], CNN_INPUT))
    hand_flops, hand_macs = hand_cnn_counts()
    assert flops == pytest.approx(hand_flops, rel=0.01) and macs == pytest.approx(hand_macs, rel=0.01)
    assert int_ops == 0


def test_example_cnn_rows(example_models):
    rows = analyze_model(example_models["cnn"], {"input": (4, 3, 64, 64)})
    assert all(r.counted for r in rows)
    conv1 = next(r for r in rows if r.node == "/conv1/Conv")
    # Batch 4: 4x the stem's 48*32*32*3*7*7 multiply-adds; weight 48*3*7*7 floats; in 4*3*64*64, out 4*48*32*32.
    assert conv1.macs == 4 * 48 * 32 * 32 * 3 * 49 and conv1.flops == 2 * conv1.macs
    assert (conv1.params, conv1.weight_bytes) == (48 * 3 * 49, 48 * 3 * 49 * 4)
    assert (conv1.input_bytes, conv1.output_bytes) == (4 * 3 * 64 * 64 * 4, 4 * 48 * 32 * 32 * 4)
    assert json.loads(conv1.input_shapes) == [[4, 3, 64, 64], [48, 3, 7, 7]]
    assert json.loads(conv1.output_shapes) == [[4, 48, 32, 32]]
    assert conv1.intensity == pytest.approx(conv1.flops / (conv1.weight_bytes + conv1.input_bytes + conv1.output_bytes))


def test_row_fields_are_the_layers_columns():
    assert list(LayerRow.__dataclass_fields__) == [c for c in column_names("layers") if c != "trial_key"]


# -- INT8 versions ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quantized_cnns(example_models, tmp_path_factory) -> dict[str, Path]:
    """QDQ and QOperator versions of the example CNN, made as generator/versions/quantize.py makes them
    (quant_pre_process, then quantize_static with uint8 activations and int8 weights, 2 calibration samples)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(0)
            self.batches = iter([{"input": rng.standard_normal((1, 3, 64, 64), dtype=np.float32)} for _ in range(2)])

        def get_next(self):
            return next(self.batches, None)

    out = tmp_path_factory.mktemp("quantized")
    pre = out / "pre.onnx"
    quant_pre_process(str(example_models["cnn"]), str(pre))
    paths = {}
    for name, fmt in (("qdq", QuantFormat.QDQ), ("qoperator", QuantFormat.QOperator)):
        paths[name] = out / f"cnn_{name}.onnx"
        quantize_static(str(pre), str(paths[name]), Reader(), quant_format=fmt,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return paths


@pytest.mark.parametrize("version", ["qdq", "qoperator"])
def test_int8_cnn_integer_ops_match_fp32_flops(quantized_cnns, version):
    report = analyze_model_report(quantized_cnns[version], CNN_INPUT)
    flops, macs, int_ops = totals(list(report.rows))
    hand_flops, hand_macs = hand_cnn_counts()
    # Batch norms are folded into the convolutions and Relus into their ranges; the convolutions' and the
    # Gemm's multiply-adds are the same, now integer.
    assert macs == hand_macs
    assert int_ops == pytest.approx(hand_flops, rel=0.01)
    assert flops < 0.01 * int_ops  # what is left in float: quantize/dequantize of activations
    assert all(r.counted for r in report.rows) and report.unknown_op_types == ()


def test_qdq_weights_belong_to_the_layer_that_uses_them(quantized_cnns):
    rows = {r.node: r for r in analyze_model(quantized_cnns["qdq"], CNN_INPUT)}
    model = onnx.load(str(quantized_cnns["qdq"]))
    conv = next(n for n in model.graph.node if n.op_type == "Conv" and "conv1/Conv" in n.name and "layer" not in n.name)
    weight_dq = next(n for n in model.graph.node if n.output[0] == conv.input[1])
    row = rows[conv.name]
    assert row.flops == 0 and row.macs == 48 * 32 * 32 * 3 * 49
    # The int8 weight (1 byte per element) is read by the Conv; its DequantizeLinear is folded at load time.
    assert row.params >= 48 * 3 * 49 and row.weight_bytes < 48 * 3 * 49 * 2
    folded = rows[weight_dq.name]
    assert (folded.flops, folded.int_ops, folded.params, folded.input_bytes, folded.output_bytes) == (0, 0, 0, 0, 0)


def test_layers_record_attributes_types_and_quantization_for_the_layer_panel(example_models, quantized_cnns):
    fp32 = {}
    for r in analyze_model(example_models["cnn"], CNN_INPUT):
        fp32.setdefault(r.op_type, r)  # the first of each op type: the stem's Conv
    conv = fp32["Conv"]
    assert json.loads(conv.attributes) == {"dilations": "[1, 1]", "group": "1", "kernel_shape": "[7, 7]",
                                           "pads": "[3, 3, 3, 3]", "strides": "[2, 2]"}
    assert json.loads(conv.input_types) == ["float32", "float32"] and json.loads(conv.output_types) == ["float32"]
    assert json.loads(conv.weight_details) == [{"dtype": "float32", "name": "conv1.weight", "shape": "[48, 3, 7, 7]"}]
    assert json.loads(fp32["BatchNormalization"].attributes)["epsilon"] == "1e-05"  # float32 noise hidden
    # QDQ: the Conv holds its int8 weight with the scale and zero point its DequantizeLinear applies.
    qdq = next(r for r in analyze_model(quantized_cnns["qdq"], CNN_INPUT) if r.op_type == "Conv")
    weights = {w["name"]: w for w in json.loads(qdq.weight_details)}
    (weight,) = (w for w in weights.values() if w.get("dtype") == "int8" and "role" not in w)
    assert weight["shape"] == "[48, 3, 7, 7]" and weight["zero_point"] == "0" and float(weight["scale"]) > 0
    assert any(w.get("role", "").startswith("scale of ") for w in weights.values())
    # QOperator: QLinearConv's own input slots give the weight's and the activations' quantization.
    qop = next(r for r in analyze_model(quantized_cnns["qoperator"], CNN_INPUT) if r.op_type == "QLinearConv")
    assert json.loads(qop.input_types)[:4] == ["uint8", "float32", "uint8", "int8"]
    roles = {w.get("role") for w in json.loads(qop.weight_details)}
    assert {"input scale", "input zero point", "output scale", "output zero point"} <= roles


def test_per_channel_scales_are_summarized_and_long_attributes_cut(tmp_path):
    weight = numpy_helper.from_array(np.arange(-8, 8, dtype=np.int8).reshape(4, 4, 1, 1), "w")
    scale = numpy_helper.from_array(np.array([0.5, 0.25, 0.125, 1.0], dtype=np.float32), "w_scale")
    zero = numpy_helper.from_array(np.zeros(4, dtype=np.int8), "w_zero")
    nodes = [helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wf"], axis=0, name="dq"),
             helper.make_node("Conv", ["x", "wf"], ["y"], name="conv", pads=[0] * 40)]
    path = _save(tmp_path, nodes, [_vi("x", 1, 4, 2, 2)], [_vi("y", 1, 4, 2, 2)], [weight, scale, zero])
    conv = next(r for r in analyze_model(path, {"x": (1, 4, 2, 2)}) if r.node == "conv")
    (w,) = (w for w in json.loads(conv.weight_details) if w["name"] == "w")
    assert (w["dtype"], w["shape"], w["axis"]) == ("int8", "[4, 4, 1, 1]", 0)
    assert w["scale"] == "per-channel, 4 values: 0.125 … 1" and w["zero_point"] == "per-channel, 4 values: 0 … 0"
    assert json.loads(conv.attributes)["pads"].endswith(", … (40 values)]")


# -- keys, sub-graphs, unknown ops -------------------------------------------------------------------------


def _save(tmp_path: Path, nodes, inputs, outputs, inits=(), name="m.onnx", opsets=(("", 17),)) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 10
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _vi(name, *shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape) if shape else None)


def test_node_keys_are_the_graph_index_keys(tmp_path):
    """Unnamed nodes, a duplicated name, Constant nodes and the branches of an If keep graph_index's keys."""
    const = numpy_helper.from_array(np.array(2.0, np.float32), "two_value")
    branch = lambda tag, op: helper.make_graph(  # noqa: E731
        [helper.make_node(op, ["r", "r"], [f"{tag}_out"], name="inner")], tag, [], [_vi(f"{tag}_out", 2, 3)])
    nodes = [
        helper.make_node("Constant", [], ["two"], value=const),
        helper.make_node("Relu", ["x"], ["r"]),  # unnamed: Relu_0
        helper.make_node("Mul", ["r", "two"], ["m"], name="dup"),
        helper.make_node("Add", ["m", "r"], ["a"], name="dup"),  # duplicated name: Add_2
        helper.make_node("ReduceSum", ["a"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "two"], ["c"], name="cond"),
        helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("then", "Add"),
                         else_branch=branch("else", "Mul")),
    ]
    path = _save(tmp_path, nodes, [_vi("x", "n", 3)], [_vi("y", 2, 3)])
    rows = analyze_model(path, {"x": (2, 3)})
    index = load_graph_index(onnx.load(str(path)))
    assert [r.node for r in rows] == [n.key for n in index.nodes]
    assert [r.position for r in rows] == [n.position for n in index.nodes]
    # (onnx.helper stores attributes sorted by name: the else branch comes first in the file.)
    assert [r.node for r in rows] == ["Relu_0", "Mul_1", "Add_2", "sum", "cond", "if",
                                      "if::else_branch::inner", "if::then_branch::inner"]
    by_key = {r.node: r for r in rows}
    assert by_key["Mul_1"].flops == 6 and by_key["Mul_1"].params == 1  # the Constant is a weight
    assert by_key["if"].counted and by_key["if"].flops == 0  # its branches are counted in their own rows
    assert by_key["if::then_branch::inner"].flops == 6 and by_key["if::else_branch::inner"].flops == 6


def test_loop_is_listed_with_its_body_counted_once(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "v_in"], ["v_out"])],
        "body", [_vi("i", elem=TensorProto.INT64), _vi("cond_in", elem=TensorProto.BOOL), _vi("v_in", 4)],
        [_vi("cond_out", elem=TensorProto.BOOL), _vi("v_out", 4)])
    trip = numpy_helper.from_array(np.array(3, np.int64), "trip")
    nodes = [helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)]
    path = _save(tmp_path, nodes, [_vi("x", 4)], [_vi("y", 4)], [trip])
    report = analyze_model_report(path, {"x": (4,)})
    rows = {r.node: r for r in report.rows}
    assert not rows["loop"].counted and rows["loop"].flops is None
    assert rows["loop::body::Add_1"].flops == 4
    assert any("Loop" in note and "run time" in note for note in report.notes)


def test_unknown_ops_are_listed_not_guessed(tmp_path, monkeypatch):
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Frobnicate", ["r"], ["f"], name="mystery", domain="example.custom"),
        helper.make_node("Relu", ["f"], ["y"], name="after"),
    ]
    path = _save(tmp_path, nodes, [_vi("x", 2, 3)], [_vi("y")], opsets=(("", 17), ("example.custom", 1)))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    report = analyze_model_report(path, {"x": (2, 3)})
    # onnxruntime's symbolic inference, asked about the unknown op, leaves no file behind.
    assert list((tmp_path / "cwd").iterdir()) == []
    rows = {r.node: r for r in report.rows}
    assert rows["relu"].counted and rows["relu"].flops == 6
    assert not rows["mystery"].counted and rows["mystery"].flops is None and rows["mystery"].macs is None
    # Nothing knows the custom op's output shape, so the Relu after it is not counted either, and says why.
    assert not rows["after"].counted and rows["after"].input_bytes is None
    assert report.unknown_op_types == ("example.custom:Frobnicate",)
    assert any("no counter for example.custom:Frobnicate" in n for n in report.notes)
    assert any("unknown" in n and "after" in n for n in report.notes)


def test_onnxruntime_symbolic_inference_fills_in_after_unknown_contrib_ops(tmp_path, monkeypatch):
    # com.microsoft BiasAdd (x + bias + skip) has no counter and no rule here; onnxruntime's symbolic shape
    # inference knows its shape, so the Relu after it is counted.
    nodes = [helper.make_node("BiasAdd", ["x", "bias", "x"], ["b"], name="bias_add", domain="com.microsoft"),
             helper.make_node("Relu", ["b"], ["y"], name="relu")]
    inits = [numpy_helper.from_array(np.ones(8, np.float32), "bias")]
    path = _save(tmp_path, nodes, [_vi("x", "b", 4, 8)], [_vi("y")], inits,
                 opsets=(("", 17), ("com.microsoft", 1)))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    report = analyze_model_report(path, {"x": (2, 4, 8)})
    assert list((tmp_path / "cwd").iterdir()) == []
    rows = {r.node: r for r in report.rows}
    assert not rows["bias_add"].counted and rows["bias_add"].output_shapes == "[[2, 4, 8]]"
    assert rows["relu"].counted and rows["relu"].flops == 2 * 4 * 8
    assert report.unknown_op_types == ("com.microsoft:BiasAdd",)


def test_failed_shape_inference_gives_uncounted_rows_and_a_note(tmp_path, monkeypatch):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Relu", ["r"], ["y"], name="relu2")]
    path = _save(tmp_path, nodes, [_vi("x", "n", 3)], [_vi("y")])

    def broken(*args, **kwargs):
        raise onnx.shape_inference.InferenceError("[ShapeInferenceError] something went wrong")

    monkeypatch.setattr(flop_shapes.shape_inference, "infer_shapes", broken)
    monkeypatch.setattr(flop_shapes, "_ort_symbolic_types", lambda model: {})
    # Whole-model inference failed; node-by-node inference still finds the shapes.
    report = analyze_model_report(path, {"x": (2, 3)})
    assert [(r.node, r.counted, r.flops) for r in report.rows] == [("relu", True, 6), ("relu2", True, 6)]
    assert any("ONNX shape inference failed" in n and "something went wrong" in n for n in report.notes)
    # When that fails too, nothing is guessed.
    monkeypatch.setattr(flop_shapes.shape_inference, "infer_node_outputs", broken)
    report = analyze_model_report(path, {"x": (2, 3)})
    assert [(r.node, r.counted, r.flops) for r in report.rows] == [("relu", False, None), ("relu2", False, None)]
    assert report.rows[0].input_shapes == "[[2, 3]]"  # the trial's shape is still known
    assert any("ONNX shape inference failed" in n and "something went wrong" in n for n in report.notes)
    assert any("left the shape of output 0 (r) unknown" in n for n in report.notes)


def test_incompatible_shapes_do_not_raise(tmp_path):
    inits = [numpy_helper.from_array(np.ones((4, 5), np.float32), "b")]
    path = _save(tmp_path, [helper.make_node("MatMul", ["x", "b"], ["y"], name="mm")], [_vi("x", 2, 3)], [_vi("y")],
                 inits)
    (row,) = analyze_model(path, {"x": (2, 3)})
    assert not row.counted and row.flops is None


# -- shapes, external data, speed --------------------------------------------------------------------------


def test_transformer_is_fully_counted(example_models):
    report = analyze_model_report(example_models["transformer"], TRANSFORMER_INPUTS)
    assert all(r.counted for r in report.rows) and report.notes == ()
    assert all("null" not in r.output_shapes for r in report.rows)  # the Slice by the runtime seq_len too
    rows = {r.node: r for r in report.rows}
    # Query projection: [2, 16, 128] x [128, 128]: 2*16*128 outputs x K=128.
    assert rows["/encoder/layer.0/attention/self/query/MatMul"].macs == 2 * 16 * 128 * 128
    # Scores: [2, 4, 16, 32] x [2, 4, 32, 16]: 2*4*16*16 outputs x K=32.
    assert rows["/encoder/layer.0/attention/self/MatMul"].macs == 2 * 4 * 16 * 16 * 32


def test_shape_chains_give_concrete_shapes(tmp_path):
    """Range, ConstantOfShape, Expand and Gather fed by Shape -> Gather chains get the trial's shapes."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    inits = [i64("zero", 0), i64("one", 1), i64("one_axis", [0]), i64("two_axis", [2]),
             numpy_helper.from_array(np.ones((64, 8), np.float32), "table")]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "one"], ["seq"], name="seq", axis=0),
        helper.make_node("Gather", ["s", "zero"], ["batch"], name="batch", axis=0),
        helper.make_node("Range", ["zero", "seq", "one"], ["pos"], name="range"),
        helper.make_node("Gather", ["table", "pos"], ["emb"], name="embed", axis=0),
        helper.make_node("Add", ["x", "emb"], ["y"], name="add"),
        helper.make_node("Unsqueeze", ["seq", "one_axis"], ["seq1"], name="seq1"),
        helper.make_node("Unsqueeze", ["batch", "one_axis"], ["batch1"], name="batch1"),
        helper.make_node("ConstantOfShape", ["seq1"], ["ones"], name="ones",
                         value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("Concat", ["batch1", "seq1"], ["bs"], name="bs", axis=0),
        helper.make_node("Expand", ["ones", "bs"], ["mask"], name="expand"),
        helper.make_node("Unsqueeze", ["mask", "two_axis"], ["mask3"], name="mask3"),
        helper.make_node("Mul", ["y", "mask3"], ["z"], name="mul"),
    ]
    path = _save(tmp_path, nodes, [_vi("x", "b", "s", 8)], [_vi("z")], inits)
    rows = {r.node: r for r in analyze_model(path, {"x": (3, 5, 8)})}
    assert all(r.counted and "null" not in r.output_shapes for r in rows.values())
    assert json.loads(rows["embed"].output_shapes) == [[5, 8]] and rows["embed"].output_bytes == 5 * 8 * 4
    assert json.loads(rows["expand"].output_shapes) == [[3, 5]]
    assert rows["mul"].flops == 3 * 5 * 8 and rows["add"].flops == 3 * 5 * 8


def test_dynamic_int8_transformer_has_the_fp32_multiply_adds(example_models, tmp_path):
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(str(example_models["transformer"]), str(tmp_path / "dyn.onnx"))
    fp32 = analyze_model_report(example_models["transformer"], TRANSFORMER_INPUTS)
    int8 = analyze_model_report(tmp_path / "dyn.onnx", TRANSFORMER_INPUTS)
    assert all(r.counted for r in int8.rows) and int8.notes == ()
    _, fp32_macs, _ = totals(list(fp32.rows))
    flops, macs, int_ops = totals(list(int8.rows))
    assert macs == fp32_macs
    # The weight MatMuls (2 layers x (4 of 128x128 + 2 of 128x512) at 32 tokens) are integer now.
    integer_macs = 2 * (4 * 128 * 128 + 2 * 128 * 512) * 32
    assert int_ops >= 2 * integer_macs and flops < 2 * (macs - integer_macs) + 0.1 * int_ops


def test_external_data_gives_the_same_rows(example_models, tmp_path):
    model = onnx.load(str(example_models["transformer"]))
    # Threshold 0 moves every initializer out, the Reshape shape vectors included.
    onnx.save_model(model, tmp_path / "ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.onnx.data", size_threshold=0)
    inline = analyze_model(example_models["transformer"], TRANSFORMER_INPUTS)
    external = analyze_model(tmp_path / "ext.onnx", TRANSFORMER_INPUTS)
    assert external == inline


def test_missing_model_is_a_user_error(tmp_path):
    from generator.errors import ModelError

    with pytest.raises(ModelError, match="does not exist"):
        analyze_model(tmp_path / "nope.onnx", {})


# -- the profiled pass -------------------------------------------------------------------------------------


@pytest.fixture
def cnn_profile_job(example_models, tmp_path) -> WorkerJob:
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, input=np.random.default_rng(0).standard_normal((2, 3, 64, 64), dtype=np.float32))
    config = {"batch": 2, "threads": 1, "concurrency": 1, "optimization_level": "all", "provider": "cpu",
              "spinning": False, "inter_op_threads": 1}
    measure = {"warmup": 1, "min_iterations": 1, "min_seconds": 0.0, "max_seconds": 1.0, "profile_iterations": 1}
    path = str(example_models["cnn"])
    return WorkerJob(mode="profile", model_path=path, original_model_path=path, config=config,
                     feeds_path=str(feeds), measure=measure, work_dir=str(tmp_path / "work"))


def test_profile_pass_writes_layers_at_the_feeds_shapes(cnn_profile_job):
    out = worker.profile_pass(cnn_profile_job)
    assert "layers_error" not in out and out["layers_notes"] == []
    columns = [c for c in column_names("layers") if c != "trial_key"]
    assert all(list(row) == columns for row in out["layers"])
    hand_flops, hand_macs = hand_cnn_counts()
    # Batch 2: twice the per-image counts, except the 5-per-channel batch-norm folding (8,400 FLOPs).
    assert sum(r["macs"] for r in out["layers"]) == 2 * hand_macs
    assert sum(r["flops"] for r in out["layers"]) == pytest.approx(2 * hand_flops, rel=1e-4)
    # Every executed node's original nodes are rows of the layers table: the join key is the same.
    keys = {r["node"] for r in out["layers"]}
    assert {k for n in out["nodes"] for k in n["original_nodes"]} <= keys
    json.dumps(out, allow_nan=False)


def test_a_failing_counter_is_reported_and_the_rest_counted(cnn_profile_job, monkeypatch):
    from generator.flops import registry

    def broken(ctx):
        raise IndexError("tuple index out of range")

    monkeypatch.setitem(registry.COUNTERS, ("", "MaxPool"), broken)
    out = worker.profile_pass(cnn_profile_job)
    rows = {r["node"]: r for r in out["layers"]}
    assert not rows["/maxpool/MaxPool"]["counted"] and rows["/conv1/Conv"]["counted"]
    assert out["layers_error"] == (
        "1 FLOP counter(s) failed: /maxpool/MaxPool (MaxPool): IndexError: tuple index out of range")


def test_profile_pass_survives_a_failing_analysis(cnn_profile_job, monkeypatch):
    import generator.flops

    def bug(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(generator.flops, "analyze_model_report", bug)
    out = worker.profile_pass(cnn_profile_job)
    assert out["layers"] == [] and out["layers_error"] == "ZeroDivisionError: division by zero"
    assert out["nodes"]  # the profiled pass itself completed
