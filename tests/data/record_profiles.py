"""Re-record the golden onnxruntime profiles used by tests/test_profiling.py.

Run from the repository root: ``python tests/data/record_profiles.py``. The tests assert exact values read
from these files, so re-recording means updating the literals in the tests too (they say which).

- ``profile_tiny.json``: Conv-Relu-Conv-GlobalAveragePool-Flatten-Gemm, 2 intra-op threads, 3 runs.
- ``profile_if.json``: an If whose then-branch has two nodes (Relu, Mul) and else-branch one (Sigmoid);
  runs 1 and 3 take the then-branch, run 2 the else-branch; 2 intra-op threads, 3 runs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def tiny_cnn() -> onnx.ModelProto:
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
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [w("w1", 32, 16, 3, 3), w("w2", 32, 32, 3, 3), w("wfc", 10, 32), w("bfc", 10)],
    )


def if_model() -> onnx.ModelProto:
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
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)


def record(model: onnx.ModelProto, feeds_per_run: list[dict], out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tmp) / "profile")
        so.intra_op_num_threads = 2
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        for feeds in feeds_per_run:
            session.run(None, feeds)
        shutil.copy(session.end_profiling(), out)


def main() -> int:
    rng = np.random.default_rng(2)
    x = rng.random((1, 16, 32, 32), dtype=np.float32)
    record(tiny_cnn(), [{"x": x}] * 3, HERE / "profile_tiny.json")
    pos = rng.random((1, 3, 16, 16), dtype=np.float32)
    record(if_model(), [{"x": pos}, {"x": -pos}, {"x": pos}], HERE / "profile_if.json")
    print(f"recorded onnxruntime {ort.__version__} profiles into {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
