"""A small graph builder over ``onnx.helper`` that names things the way the PyTorch exporter does.

Nodes get path-like names (``/layer1/layer1.0/conv1/Conv``) and outputs ``<node>_output_0``; weights get
module names (``layer1.0.conv1.weight``). The layer pages map executed nodes back to these names, so example
models that look like real exports exercise that code the way users' models will.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# onnxruntime up to 1.31 refuses onnx 1.23's defaults (IR 14 / opset 28): see NOTES.md. IR 10 / opset 17 loads in
# every onnxruntime pyproject.toml allows.
OPSET = 17
IR_VERSION = 10

Dim = int | str


class GraphBuilder:
    """Collects inputs, nodes, initializers and outputs, then makes a deterministic ``ModelProto``."""

    def __init__(self, graph_name: str, seed: int) -> None:
        self.graph_name = graph_name
        self.rng = np.random.default_rng(seed)
        self._inputs: list[onnx.ValueInfoProto] = []
        self._outputs: list[onnx.ValueInfoProto] = []
        self._nodes: list[onnx.NodeProto] = []
        self._initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()

    def input(self, name: str, elem_type: int, shape: Sequence[Dim]) -> str:
        self._inputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def output(self, value: str, name: str, elem_type: int, shape: Sequence[Dim]) -> str:
        """Declare ``value`` as a graph output called ``name`` (an Identity renames it, as exporters do)."""
        if value != name:
            self._nodes.append(helper.make_node("Identity", [value], [name], name=f"{name}/Identity"))
        self._outputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def weight(self, name: str, array: np.ndarray) -> str:
        """Add an initializer under a module-style name (``layer1.0.conv1.weight``)."""
        self._initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def normal(self, name: str, shape: Sequence[int], std: float, mean: float = 0.0) -> str:
        return self.weight(name, (mean + std * self.rng.standard_normal(shape)).astype(np.float32))

    def uniform(self, name: str, shape: Sequence[int], low: float, high: float) -> str:
        return self.weight(name, self.rng.uniform(low, high, shape).astype(np.float32))

    def const(self, scope: str, array: np.ndarray | float | int | Sequence[int]) -> str:
        """A constant folded into an initializer, named like the exporter's ``<scope>/Constant_output_0``."""
        name = self._unique(f"{scope}/Constant") + "_output_0"
        return self.weight(name, np.asarray(array))

    def node(self, op: str, inputs: Sequence[str], scope: str = "", **attrs: object) -> str:
        """Add ``op`` under ``scope``; returns its single output name."""
        return self.node_multi(op, inputs, 1, scope, **attrs)[0]

    def node_multi(
        self, op: str, inputs: Sequence[str], n_out: int, scope: str = "", **attrs: object
    ) -> list[str]:
        name = self._unique(f"{scope}/{op}")
        outputs = [f"{name}_output_{i}" for i in range(n_out)]
        self._nodes.append(helper.make_node(op, list(inputs), outputs, name=name, **attrs))
        return outputs

    def _unique(self, base: str) -> str:
        # PyTorch suffixes repeats within one scope: /Add, /Add_1, /Add_2.
        name, k = base, 0
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    def build(self, producer: str = "perfsite") -> onnx.ModelProto:
        graph = helper.make_graph(
            self._nodes, self.graph_name, self._inputs, self._outputs, self._initializers
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name=producer,
            ir_version=IR_VERSION,
        )
        onnx.checker.check_model(model, full_check=True)
        return model


def model_bytes(model: onnx.ModelProto) -> bytes:
    # Protobuf serialization of ONNX messages (no map fields) is deterministic for equal messages.
    return model.SerializeToString(deterministic=True)


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` atomically unless the file already holds exactly these bytes; True if written."""
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64
