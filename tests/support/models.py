"""Tiny ONNX models built by code for the tests: one builder per kind of model, none of them measured for long.

- `tiny_cnn()` and `if_model()`: the models tests/data/record_profiles.py recorded the golden profiles from;
- `stacked_cnn(blocks)`: a stem conv and `blocks` 3x3 conv blocks (~0.2 ms each), for measured regressions;
- `dynamic_conv_model(path)`: a Conv-Relu whose height and width are left to the user (`perfsite profile`);
- `matmul_model(path)`: x [batch, 4] -> MatMul, the cheapest real model (bad input, faults);
- `scalar_model(path)` (rank-0 input and output) and `constant_model(path)` (no inputs): `perfsite profile`'s
  edge cases;
- `payload_model(path)`: a MatMul chain whose node names, input name and metadata carry HTML/JavaScript payloads.

Every model is saved with opset 17 and IR version 10: onnxruntime up to 1.31 refuses onnx's default IR 14 /
opset 28 (NOTES.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from generator.models.builder import FLOAT, GraphBuilder, model_bytes

OPSET = 17
IR_VERSION = 10
# Nodes of the model whose site `large_model_site` (conftest) builds: enough for pages over 3 MB before long
# tables were paged (issue 13, item 11), few enough to measure and build in about 15 s.
LARGE_MODEL_NODES = 2400


def onnx_model(graph: onnx.GraphProto, ir_version: int = IR_VERSION, **fields) -> onnx.ModelProto:
    """The graph as a model onnxruntime loads (opset 17, IR 10 unless told); `fields`: make_model's keywords."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], **fields)
    model.ir_version = ir_version
    return model


def graph_model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[onnx.ValueInfoProto],
                outputs: Sequence[onnx.ValueInfoProto], inits: Sequence[onnx.TensorProto] = (),
                name: str = "g") -> onnx.ModelProto:
    """A checked model of one graph made of these nodes, inputs, outputs and initializers."""
    model = onnx_model(helper.make_graph(list(nodes), name, list(inputs), list(outputs), list(inits)))
    onnx.checker.check_model(model)
    return model


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, path)
    return path


def tiny_cnn() -> onnx.ModelProto:
    """Conv-Relu-Conv-GlobalAveragePool-Flatten-Gemm on x [1, 16, 32, 32] (tests/data/profile_tiny.json)."""
    rng = np.random.default_rng(0)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wfc", "bfc"], ["y"], name="fc", transB=1),
    ]
    return graph_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [w("w1", 32, 16, 3, 3), w("w2", 32, 32, 3, 3), w("wfc", 10, 32), w("bfc", 10)],
    )


def if_model() -> onnx.ModelProto:
    """Conv, then an If on the input's sign whose then-branch runs Relu and Mul (else-branch: Sigmoid), then a
    Relu, on x [1, 3, 16, 16] (tests/data/profile_if.json)."""
    shape = [1, 8, 16, 16]
    rng = np.random.default_rng(1)
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["c"], ["t1"], name="then_relu"),
         helper.make_node("Mul", ["t1", "two"], ["t_out"], name="then_mul")],
        "then", [], [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, shape)])
    else_branch = helper.make_graph(
        [helper.make_node("Sigmoid", ["c"], ["e_out"], name="else_sigmoid")],
        "else", [], [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, shape)])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["cond"], name="positive"),
        helper.make_node("If", ["cond"], ["b"], name="branch",
                         then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Relu", ["b"], ["y"], name="relu_out"),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.array(2, np.float32), "two")]
    return graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)


def stacked_cnn(blocks: int, channels: int = 32) -> bytes:
    """A stem conv, `blocks` conv+relu blocks named /layer<i>/conv/Conv, pooling: ~0.2 ms per block."""
    b = GraphBuilder("tiny", seed=0)
    x = b.input("input", FLOAT, ["batch", 3, 32, 32])
    x = b.node("Conv", [x, b.normal("conv1.weight", [channels, 3, 3, 3], 0.2)], "/conv1",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = b.node("Relu", [x], "/relu")
    for i in range(1, blocks + 1):
        weight = b.normal(f"layer{i}.conv.weight", [channels, channels, 3, 3], math.sqrt(2 / (9 * channels)))
        x = b.node("Conv", [x, weight], f"/layer{i}/conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        x = b.node("Relu", [x], f"/layer{i}/relu")
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    b.output(x, "features", FLOAT, ["batch", channels])
    return model_bytes(b.build())


def dynamic_conv_model(path: Path, dims: tuple = ("N", 3, "H", "W"), node_name: str = "conv") -> Path:
    """x[N, 3, H, W] -> Conv 3x3 (8 channels, pad 1) -> Relu -> y: height and width left to the user."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name=node_name, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "dynamic_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [dims[0], 8, dims[2], dims[3]])], [weight])
    return save(onnx_model(graph), path)


def matmul_model(path: Path, *, before: str | None = None, ir_version: int = IR_VERSION) -> Path:
    """x [batch, 4] -> (optional unary op) -> MatMul with a 4x4 identity weight -> y; IR 10 unless told."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    nodes = [helper.make_node(before, ["x"], ["t"], name=before.lower())] if before else []
    nodes.append(helper.make_node("MatMul", ["t" if before else "x", "w"], ["y"], name="matmul"))
    return save(onnx_model(helper.make_graph(nodes, "g", [x], [y], [w]), ir_version=ir_version), path)


def scalar_model(path: Path, op: str = "Identity") -> Path:
    """x float32 [] -> `op` -> y []: rank-0 input and output (an Identity does no counted work, so every bin of
    the report's compute chart is 0)."""
    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, []) for name in ("x", "y")]
    return save(graph_model([helper.make_node(op, ["x"], ["y"], name=op.lower())], value[:1], value[1:]), path)


def constant_model(path: Path) -> Path:
    """No graph inputs: y [2] = Relu(an initializer)."""
    c = numpy_helper.from_array(np.ones(2, dtype=np.float32), "c")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    return save(graph_model([helper.make_node("Relu", ["c"], ["y"], name="relu")], [], [y], [c]), path)


# One payload per node (node names must be unique); the last one also checks that a quote, a backslash and a
# table-cell separator stay inside their cell.
PAYLOAD_NODE_NAMES = (
    "matmul <script>alert(1)</script>",
    "relu <img src=x onerror=alert(1)>",
    "add <svg onload=window.perfsitePwned=1></svg>",
    'sigmoid " \\ {{ 7*7 }} | [a](javascript:alert(1))',
)
PAYLOAD_INPUT = "in<script>alert(2)</script>"
PAYLOAD_METADATA = "<script>alert(5)</script><img src=x onerror=alert(6)> ](javascript:alert(7)) {{ 7*7 }} |"


def payload_model(path: Path) -> Path:
    """x [batch, 8] -> MatMul -> Relu -> Add -> Sigmoid -> y, payloads in node names and metadata."""
    x = helper.make_tensor_value_info(PAYLOAD_INPUT, TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("out {{ 7*7 }} |", TensorProto.FLOAT, ["batch", 8])
    weights = [numpy_helper.from_array(np.eye(8, dtype=np.float32), "w"),
               numpy_helper.from_array(np.full(8, 0.5, dtype=np.float32), "bias")]
    tensors = [PAYLOAD_INPUT, "a", "b", "c", y.name]
    ops = [("MatMul", ["w"]), ("Relu", []), ("Add", ["bias"]), ("Sigmoid", [])]
    nodes = [helper.make_node(op, [tensors[i], *extra], [tensors[i + 1]], name=PAYLOAD_NODE_NAMES[i],
                              doc_string=PAYLOAD_METADATA)
             for i, (op, extra) in enumerate(ops)]
    graph = helper.make_graph(nodes, PAYLOAD_METADATA, [x], [y], weights, doc_string=PAYLOAD_METADATA)
    model = onnx_model(graph, doc_string=PAYLOAD_METADATA, producer_name=PAYLOAD_METADATA)
    helper.set_model_props(model, {PAYLOAD_METADATA: PAYLOAD_METADATA, "author": PAYLOAD_METADATA})
    return save(model, path)


def embedding_model(path: Path) -> Path:
    """A BERT-style embedding: input_ids [1, seq] into a 30-row table, token_type_ids [1, seq] into a 2-row table
    (through a Cast, as exporters write it), summed. Random ids in [0, 100) are past both tables."""
    rng = np.random.default_rng(0)
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, "seq"]) for n in ("input_ids", "token_type_ids")]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 4])
    tables = [numpy_helper.from_array(rng.standard_normal((rows, 4)).astype(np.float32), name)
              for name, rows in (("word_table", 30), ("type_table", 2))]
    nodes = [helper.make_node("Gather", ["word_table", "input_ids"], ["words"], name="word_gather"),
             helper.make_node("Cast", ["token_type_ids"], ["types32"], name="cast", to=TensorProto.INT32),
             helper.make_node("Gather", ["type_table", "types32"], ["types"], name="type_gather"),
             helper.make_node("Add", ["words", "types"], ["y"], name="add")]
    return save(graph_model(nodes, ids, [y], tables), path)
