"""Shape inference at concrete input shapes, and the element types and sizes of tensors.

ONNX's inference (``data_prop=True``, so that a Reshape whose shape comes from a Shape/Gather/Concat chain
gets a concrete output) runs on a copy of the model whose graph inputs carry the trial's shapes. Between
rounds, shape chains are evaluated into constants (:mod:`generator.flops.shape_values`) and the outputs of
onnxruntime-specific nodes are supplied (:mod:`generator.flops.contrib_shapes`); inference runs again until
nothing new is found, at most ``MAX_ROUNDS`` times. What is still unknown then is asked of onnxruntime's
symbolic shape inference. A failure never raises: the caller gets the shapes that were found and notes
that say what went wrong.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

from generator.flops.contrib_shapes import CONTRIB_SHAPES, TensorType
from generator.flops.registry import DEFAULT_DOMAINS
from generator.flops.shape_values import fold_shape_values, small_initializer_values

MAX_ROUNDS = 32
_GRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
_BITS = {
    "float32": 32, "float64": 64, "float16": 16, "bfloat16": 16, "int8": 8, "uint8": 8, "int16": 16,
    "uint16": 16, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64, "bool": 8, "complex64": 64,
    "complex128": 128, "int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "float4e2m1": 4,
}
_NAME_ALIASES = {"float": "float32", "double": "float64"}


def dtype_name(elem_type: int) -> str | None:
    """numpy-style name of an ONNX element type: float32, float16, int8, ... (None when undefined)."""
    if elem_type == TensorProto.UNDEFINED:
        return None
    name = TensorProto.DataType.Name(elem_type).lower()
    return _NAME_ALIASES.get(name, name)


def elem_type_of(dtype: str) -> int | None:
    """The ONNX element type of a numpy dtype name (``float32``, ``int64``, ...); None if ONNX has none."""
    try:
        return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    except (KeyError, TypeError, ValueError):
        return None


def tensor_bytes(numel: int, dtype: str | None) -> int | None:
    """Storage size of ``numel`` elements (float8 types: 1 byte; strings: unknown)."""
    if dtype is None:
        return None
    bits = _BITS.get(dtype, 8 if dtype.startswith("float8") else None)
    return math.ceil(numel * bits / 8) if bits is not None else None


@dataclass(frozen=True)
class InferredShapes:
    """Element type and shape (None: unknown) of every tensor inference reached; notes on failures."""

    types: Mapping[str, tuple[int, tuple[int, ...] | None]]
    notes: tuple[str, ...]


def infer_concrete_shapes(
    model: onnx.ModelProto, input_shapes: Mapping[str, tuple[int, ...]], input_dtypes: Mapping[str, str]
) -> InferredShapes:
    """Shapes of all tensors of ``model`` (and its sub-graphs) with its inputs at ``input_shapes``."""
    work = onnx.ModelProto()
    work.CopyFrom(model)
    _bind_inputs(work.graph, input_shapes, input_dtypes)
    notes: list[str] = []
    values = small_initializer_values(work.graph)
    for _ in range(MAX_ROUNDS):
        work = _onnx_inference(work, notes)
        types = collect_types(work)
        folded = fold_shape_values(work.graph, {name: shape for name, (_, shape) in types.items()}, values)
        if not (_propagate_node_shapes(work, types, values) or folded):
            break
    else:
        notes.append(f"shape inference stopped after {MAX_ROUNDS} rounds; shapes found by then are used")
    types = collect_types(work)
    if _unknown_outputs(work, types):
        _merge_missing(types, _ort_symbolic_types(work))
    return InferredShapes(types=types, notes=tuple(notes))


def _unknown_outputs(model: onnx.ModelProto, types: Mapping[str, tuple[int, tuple[int, ...] | None]]) -> bool:
    outputs = (o for graph in iter_graphs(model.graph) for node in graph.node for o in node.output if o)
    return any(types.get(o, (0, None))[1] is None for o in outputs)


def _ort_symbolic_types(model: onnx.ModelProto) -> dict[str, tuple[int, tuple[int, ...] | None]]:
    """A second opinion from onnxruntime's symbolic shape inference, which knows more onnxruntime-specific
    ops than perfsite's rules. Its public ``infer_shapes`` raises on a model it cannot complete, after
    writing ``sym_shape_infer_temp.onnx`` and its weights into the working directory; the steps it runs are
    called here instead, so that nothing is written and what it did infer is kept. Any failure (an op it
    chokes on, another onnxruntime version's internals) means it has nothing to add."""
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        inference = SymbolicShapeInference(int_max=2**31 - 1, auto_merge=True, guess_output_rank=False, verbose=0)
        inference._preprocess(_external_weights_as_inputs(model))
        while inference.run_:
            inference._infer_impl()
        inference._update_output_from_vi()
        return collect_types(inference.out_mp_)
    except Exception:  # a second opinion only: whatever goes wrong in it, the first one stands
        return {}


def _external_weights_as_inputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose weights left outside the file (not loaded) are typed graph inputs: onnxruntime's
    inference reads every initializer's values, and only their shapes matter here."""
    unloaded = [
        t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL and not t.HasField("raw_data")
    ]
    if not unloaded:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    names = {t.name for t in unloaded}
    kept = [t for t in copy.graph.initializer if t.name not in names]
    copy.graph.ClearField("initializer")
    copy.graph.initializer.extend(kept)
    declared = {v.name for v in copy.graph.input}
    copy.graph.input.extend(
        helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in unloaded if t.name not in declared
    )
    return copy


def _merge_missing(
    types: dict[str, tuple[int, tuple[int, ...] | None]], extra: Mapping[str, tuple[int, tuple[int, ...] | None]]
) -> None:
    for name, (elem, shape) in extra.items():
        if shape is not None and types.get(name, (0, None))[1] is None:
            types[name] = (types.get(name, (elem, None))[0] or elem, shape)


def _bind_inputs(
    graph: onnx.GraphProto, input_shapes: Mapping[str, tuple[int, ...]], input_dtypes: Mapping[str, str]
) -> None:
    for value in graph.input:
        if value.name not in input_shapes:
            continue
        tensor_type = value.type.tensor_type
        elem_type = elem_type_of(input_dtypes[value.name]) if value.name in input_dtypes else None
        if elem_type is not None:
            tensor_type.elem_type = elem_type
        tensor_type.ClearField("shape")
        for dim in input_shapes[value.name]:
            tensor_type.shape.dim.add().dim_value = int(dim)


def _onnx_inference(model: onnx.ModelProto, notes: list[str]) -> onnx.ModelProto:
    try:
        return shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except (shape_inference.InferenceError, ValueError, RuntimeError) as e:
        text = " ".join(str(e).split())
        note = f"ONNX shape inference failed ({type(e).__name__}: {text[:300]}); only declared shapes are known"
        if note not in notes:
            notes.append(note)
        return model


def iter_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """A graph and, depth first, the bodies of its If/Loop/Scan nodes."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for body in attr.graphs:
                    yield from iter_graphs(body)


def collect_types(model: onnx.ModelProto) -> dict[str, tuple[int, tuple[int, ...] | None]]:
    """Element type and shape of every typed tensor: values, initializers, Constant outputs."""
    types: dict[str, tuple[int, tuple[int, ...] | None]] = {}
    for graph in iter_graphs(model.graph):
        for value in (*graph.input, *graph.output, *graph.value_info):
            if value.type.HasField("tensor_type"):
                found = _value_type(value.type.tensor_type)
                if value.name not in types or types[value.name][1] is None:
                    types[value.name] = found
        for init in graph.initializer:
            types[init.name] = (init.data_type, tuple(init.dims))
        for sparse in graph.sparse_initializer:
            types[sparse.values.name] = (sparse.values.data_type, tuple(sparse.dims))
    return types


def _value_type(tensor_type: onnx.TypeProto.Tensor) -> tuple[int, tuple[int, ...] | None]:
    if not tensor_type.HasField("shape"):
        return tensor_type.elem_type, None
    dims = tensor_type.shape.dim
    if all(d.HasField("dim_value") for d in dims):
        return tensor_type.elem_type, tuple(int(d.dim_value) for d in dims)
    return tensor_type.elem_type, None


def _propagate_node_shapes(
    model: onnx.ModelProto, types: dict[str, tuple[int, tuple[int, ...] | None]], values: Mapping[str, np.ndarray]
) -> bool:
    """One pass in file order over nodes with unknown outputs: onnxruntime-specific nodes by
    :mod:`contrib_shapes`' rules, ONNX nodes by their schema's inference on their now-known inputs (so a
    chain through several onnxruntime-specific nodes resolves in one round, not one round per node).
    True if any output was added."""
    known: dict[str, TensorType] = {n: (t, s) for n, (t, s) in types.items() if s is not None}
    opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version for o in model.opset_import}
    added = False
    for graph in iter_graphs(model.graph):
        declared = {v.name: v for v in graph.value_info}
        for node in graph.node:
            if all(not o or o in known for o in node.output):
                continue
            for name, found in zip(node.output, _node_outputs(node, known, values, opsets), strict=False):
                if name and found is not None and name not in known:
                    known[name] = found
                    value = helper.make_tensor_value_info(name, found[0], list(found[1]))
                    if name in declared:
                        declared[name].CopyFrom(value)  # a type without a shape: complete it
                    else:
                        graph.value_info.append(value)
                    added = True
    return added


def _node_outputs(
    node: onnx.NodeProto, known: Mapping[str, TensorType], values: Mapping[str, np.ndarray], opsets: Mapping[str, int]
) -> list[TensorType | None]:
    domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
    rule = CONTRIB_SHAPES.get((domain, node.op_type))
    if rule is not None:
        return rule(node, known.get)
    inputs = [i for i in node.input if i]
    if domain or any(i not in known for i in inputs) or any(a.type in _GRAPH_ATTRS for a in node.attribute):
        return []
    try:
        schema = onnx.defs.get_schema(node.op_type, opsets.get("", 1), "")
        outputs = shape_inference.infer_node_outputs(
            schema, node, {i: helper.make_tensor_type_proto(*known[i]) for i in inputs},
            {i: numpy_helper.from_array(values[i], i) for i in inputs if i in values},
            opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
        )
    except (onnx.defs.SchemaError, onnx.checker.ValidationError, shape_inference.InferenceError, ValueError,
            RuntimeError, TypeError, KeyError):
        return []  # a deprecated or malformed node: its outputs stay unknown, as whole-model inference left them
    return [_typed(outputs.get(o)) for o in node.output]


def _typed(type_proto: onnx.TypeProto | None) -> TensorType | None:
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return None
    elem, shape = _value_type(type_proto.tensor_type)
    return (elem, shape) if shape is not None else None
