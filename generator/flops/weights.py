"""Loading a model for analysis, and the sizes of its weights (initializers and Constant outputs).

Weights stored outside the model file are not read: their dims and element types are in the file, which
is all the analysis needs, and a large model stays cheap to analyze. Small integer tensors are the
exception (shape vectors that a Reshape's inference reads): those are loaded when a converter moved them
out too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import external_data_helper, helper

from generator.errors import ModelError
from generator.flops.shapes import dtype_name, iter_graphs, tensor_bytes

# Shape vectors and index tensors are small; larger external tensors are weights whose values do not matter.
MAX_LOADED_EXTERNAL_ELEMENTS = 1024
_INDEX_TYPES = (onnx.TensorProto.INT64, onnx.TensorProto.INT32)


@dataclass(frozen=True)
class WeightInfo:
    numel: int
    nbytes: int


WeightTable = dict[str, WeightInfo]


def load_model_for_analysis(path: Path) -> tuple[onnx.ModelProto, list[str]]:
    """The model without its large external tensors' data, and notes on external data that was missing."""
    if not path.is_file():
        raise ModelError(f"{path}: the model file to analyze does not exist.")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf raises its own DecodeError, onnx a ValueError
        raise ModelError(f"{path}: cannot be read as an ONNX model: {e}") from e
    notes = []
    for graph in iter_graphs(model.graph):
        for tensor in graph.initializer:
            if _small_external_index(tensor):
                try:
                    external_data_helper.load_external_data_for_tensor(tensor, str(path.parent))
                except OSError as e:
                    notes.append(f"external data of {tensor.name} could not be read ({e}); its value stays unknown")
    return model, notes


def _small_external_index(tensor: onnx.TensorProto) -> bool:
    return (
        tensor.data_location == onnx.TensorProto.EXTERNAL
        and tensor.data_type in _INDEX_TYPES
        and math.prod(tensor.dims) <= MAX_LOADED_EXTERNAL_ELEMENTS
    )


def weight_table(model: onnx.ModelProto) -> WeightTable:
    """Elements and bytes of every initializer, sparse initializer and Constant output of every graph."""
    table: WeightTable = {}
    for graph in iter_graphs(model.graph):
        for init in graph.initializer:
            table[init.name] = _info(math.prod(init.dims), init.data_type)
        for sparse in graph.sparse_initializer:
            table[sparse.values.name] = _info(math.prod(sparse.values.dims), sparse.values.data_type)
        for node in graph.node:
            if node.op_type == "Constant" and not node.domain and node.output:
                table[node.output[0]] = _constant_info(node)
    return table


def _info(numel: int, elem_type: int) -> WeightInfo:
    return WeightInfo(numel=numel, nbytes=tensor_bytes(numel, dtype_name(elem_type)) or 0)


def _constant_info(node: onnx.NodeProto) -> WeightInfo:
    """A Constant's one attribute: a tensor, a sparse tensor, or scalars and lists of floats, ints, strings."""
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if attr.name == "value":
            return _info(math.prod(value.dims), value.data_type)
        if attr.name == "sparse_value":
            return _info(math.prod(value.values.dims), value.values.data_type)
        if attr.name in ("value_float", "value_floats"):
            return _info(len(value) if isinstance(value, list) else 1, onnx.TensorProto.FLOAT)
        if attr.name in ("value_int", "value_ints"):
            return _info(len(value) if isinstance(value, list) else 1, onnx.TensorProto.INT64)
        if attr.name in ("value_string", "value_strings"):
            return WeightInfo(numel=len(value) if isinstance(value, list) else 1, nbytes=0)
    return WeightInfo(0, 0)
