"""The ``quantize`` transform: onnxruntime's dynamic and static (QDQ or QOperator) INT8 quantization.

Static modes calibrate on ``calibration.samples`` batches of one item, drawn from the spec's inputs (seeded)
or read from ``calibration.data`` (an ``.npz`` with one array per model input, first axis = samples).
"""

from __future__ import annotations

import difflib
import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)

from generator.errors import ModelError
from generator.inputs import ModelInput, describe_model_inputs, format_input, make_feeds
from generator.paths import data_file_problem
from generator.versions.cache import file_sha256
from generator.versions.registry import TransformContext, canonical_json, options_data, register

QUANT_TYPES = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}
STATIC_FORMATS = {"static_qdq": QuantFormat.QDQ, "static_qoperator": QuantFormat.QOperator}
# quant_pre_process's symbolic shape inference gives up on some real models with this message; the
# documented workaround is to skip that step (onnxruntime's quantization README, "pre-processing").
SYMBOLIC_SHAPE_FAILURE = "Incomplete symbolic shape inference"


class FeedsReader(CalibrationDataReader):
    """Hands onnxruntime's calibrator one feed dict at a time."""

    def __init__(self, batches: Iterator[dict[str, np.ndarray]]) -> None:
        self._batches = batches

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


class QuantizeTransform:
    code_version = f"quantize-2/onnxruntime-{onnxruntime.__version__}"  # 2: a model it left as it was is refused

    def label(self, options: Any) -> str:
        return f"quantize({options.mode})"

    def describe(self, options: Any) -> str:
        return f"quantize {options.mode}"

    def cache_token(self, options: Any, context: TransformContext) -> str:
        payload: dict[str, Any] = {"options": options_data(options)}
        if options.mode in STATIC_FORMATS:
            payload["calibration"] = _calibration_identity(options, context)
        return canonical_json(payload)

    def apply(self, src: Path, dst: Path, options: Any, context: TransformContext) -> None:
        model_in = _preprocess(src, context) if getattr(options, "preprocess", False) else src
        excluded = _checked_exclude_nodes(src, model_in, options, context)
        _check_op_types(src, options, context)
        self._quantize(src, model_in, dst, options, context, excluded)
        _check_quantized(src, dst, options, context)

    def _quantize(self, src: Path, model_in: Path, dst: Path, options: Any, context: TransformContext,
                  excluded: list[str]) -> None:
        common = {
            "op_types_to_quantize": list(options.op_types) if options.op_types else None,
            "per_channel": bool(options.per_channel),
            "reduce_range": bool(options.reduce_range),
            "weight_type": _quant_type(options.weight_type, context, "weight_type"),
            "nodes_to_exclude": excluded or None,
        }
        if options.mode == "dynamic":
            quantize_dynamic(model_in, dst, **common)
            return
        if options.mode == "int4":
            _int4(model_in, dst, options.block_size, excluded)
            return
        quantize_static(
            model_in,
            dst,
            calibration_data_reader=FeedsReader(_calibration_batches(src, options, context)),
            quant_format=STATIC_FORMATS[options.mode],
            activation_type=_quant_type(options.activation_type, context, "activation_type"),
            **common,
        )


def _int4(model_in: Path, dst: Path, block_size: int, excluded: list[str]) -> None:
    """4-bit weight-only quantization of the MatMul weights (onnxruntime's MatMulNBits, symmetric, in blocks of
    `block_size`, activations computed at accuracy level 4: int8): what onnxruntime-genai's builder writes for
    its int4 CPU models."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer  # imports onnx_ir: on use

    model = onnx.load(str(model_in))
    quantizer = MatMulNBitsQuantizer(model, block_size=block_size, is_symmetric=True, accuracy_level=4,
                                     nodes_to_exclude=excluded)
    # It logs a line per node at INFO (and its module sets INFO on the root logger when none is configured):
    # hundreds of lines of a small decoder's build.
    logger = logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        quantizer.process()
    finally:
        logger.setLevel(level)
    quantizer.model.save_model_to_file(str(dst), use_external_data_format=quantizer.model.model.ByteSize() > 2**31 - 1)


def _quant_type(name: str, context: TransformContext, what: str) -> QuantType:
    if name not in QUANT_TYPES:
        raise ModelError(
            f"{context.loaded.path}: {context.field}.{what}: {name!r} is not supported; use one of "
            f"{', '.join(QUANT_TYPES)}."
        )
    return QUANT_TYPES[name]


def _calibration_identity(options: Any, context: TransformContext) -> dict[str, Any]:
    """What the calibration data depends on: the data file's content, or the inputs spec and binding."""
    data = options.calibration.data
    if data is not None:
        path = context.loaded.resolve(data, f"{context.field}.calibration.data")
        return {"data_sha256": file_sha256(path) if path.is_file() else None}
    inputs = {name: options_data(spec) for name, spec in context.loaded.spec.inputs.items()}
    files = {}
    for name, spec in context.loaded.spec.inputs.items():
        if getattr(spec, "file", None) is not None:
            path = context.loaded.resolve(spec.file, f"inputs.{name}.file")
            files[name] = file_sha256(path) if path.is_file() else None
    return {"inputs": inputs, "input_files_sha256": files, "binding": context.calibration_binding}


def _calibration_batches(
    src: Path, options: Any, context: TransformContext
) -> Iterator[dict[str, np.ndarray]]:
    cal = options.calibration
    if cal.data is None:
        for i in range(int(cal.samples)):
            yield make_feeds(context.loaded, src, context.calibration_binding, seed=int(cal.seed) + i)
        return
    arrays = _calibration_arrays(src, cal.data, context)
    rows = min([len(a) for a in arrays.values() if a.ndim > 0] or [1])
    for i in range(min(int(cal.samples), rows)):
        yield {name: a[i : i + 1] if a.ndim > 0 else a for name, a in arrays.items()}


def _calibration_arrays(src: Path, data: str, context: TransformContext) -> dict[str, np.ndarray]:
    """One array per model input from the calibration ``.npz``, keyed by input name."""
    field = f"{context.field}.calibration.data"
    path = context.loaded.resolve(data, field)
    problem = data_file_problem(path)
    if problem is not None:
        raise ModelError(f"{context.loaded.path}: {field}: {path} {problem}; allowed: an .npz file (paths are "
                         "relative to the spec file).")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ModelError(f"{context.loaded.path}: {field}: {path} is not a readable .npz file: {e}") from e
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise ModelError(
            f"{context.loaded.path}: {field}: {path} is a single array; calibration needs an .npz."
        )
    with npz:
        arrays = {name: npz[name] for name in npz.files}
    missing = [d.name for d in describe_model_inputs(src) if d.name not in arrays]
    if missing:
        raise ModelError(
            f"{context.loaded.path}: {field}: {path} must hold one array per model input (first axis = "
            f"samples); it lacks {', '.join(missing)} (it holds {', '.join(arrays) or 'nothing'})."
        )
    where = f"{context.loaded.path}: {field}: {path}"
    return {d.name: _calibration_array(arrays[d.name], d, where) for d in describe_model_inputs(src)}


def _calibration_array(array: np.ndarray, decl: ModelInput, where: str) -> np.ndarray:
    """A calibration array checked against the input it feeds, one sample (`array[i:i+1]`) at a time, as an
    input file is: a wrong size, rank or kind of number failed inside onnxruntime's calibrator, reported as a
    problem with the quantize options. Float data is converted to the input's float type."""
    def refuse(problem: str) -> ModelError:
        return ModelError(f"{where}: the array `{decl.name}` {problem}. Allowed: one array per model input, its first "
                          f"axis the samples and the rest as the model declares ({format_input(decl)}).")

    if array.ndim > 0 and len(array) == 0:
        raise refuse(f"holds no sample (shape {list(array.shape)})")
    kind = decl.dtype.kind if decl.dtype is not None else None
    if kind is not None and array.dtype.kind != kind and not (kind in "iu" and array.dtype.kind in "iu"):
        raise refuse(f"holds {array.dtype} data, which does not feed a {decl.dtype} input without changing its kind")
    if decl.shape is not None:
        if array.ndim != len(decl.shape):
            raise refuse(f"has rank {array.ndim} {list(array.shape)}, the model wants rank {len(decl.shape)}")
        sample = (1, *array.shape[1:]) if array.ndim else ()
        for axis, (size, dim) in enumerate(zip(sample, decl.shape, strict=True)):
            if isinstance(dim, int) and dim > 0 and size != dim:
                raise refuse(f"has {size} on axis {axis} of a sample where the model fixes {dim}")
    return array.astype(decl.dtype, copy=False) if kind is not None and kind in "fiu" else array


def _preprocess(src: Path, context: TransformContext) -> Path:
    """quant_pre_process (shape inference + basic optimizations), skipping the symbolic pass if it fails."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    out = context.work_dir / "preprocessed.onnx"
    try:
        quant_pre_process(src, out)
        context.notes.append("quant_pre_process ran with symbolic shape inference.")
    except Exception as e:  # onnxruntime raises a bare Exception for this case
        if SYMBOLIC_SHAPE_FAILURE not in str(e):
            raise
        quant_pre_process(src, out, skip_symbolic_shape=True)
        context.notes.append(
            f"quant_pre_process: symbolic shape inference failed ({SYMBOLIC_SHAPE_FAILURE}); "
            "ran with skip_symbolic_shape=True."
        )
    return out


# Node types a quantizer adds (QDQ pairs, integer kernels, onnxruntime's fused quantized ops): a quantized model
# holds more of them than its source, or the transform quantized nothing.
QUANTIZED_OPS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "QLinearConv",
    "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
    "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSoftmax", "QLinearWhere", "QGemm", "QAttention",
    "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "DynamicQuantizeLSTM", "QEmbedLayerNormalization",
    "MatMulNBits",
})


def _op_types(path: Path) -> Counter:
    return Counter(n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node)


def _check_op_types(src: Path, options: Any, context: TransformContext) -> None:
    """`op_types` entries the model has no node of: onnxruntime quantizes nothing for them without a word
    (`op_types: [Conv]` on a transformer, or a PyTorch name such as `Conv2d`), like a misspelt exclude_nodes."""
    wanted = list(getattr(options, "op_types", None) or [])
    present = _op_types(src)
    unknown = [t for t in wanted if t not in present]
    if unknown:
        raise ModelError(
            f"{context.loaded.path}: {context.field}.op_types: the model {src} has no node of type {unknown[0]!r}, "
            f"so nothing would be quantized for it.{_did_you_mean(unknown[0], present)} Allowed: ONNX op types the "
            f"model has ({', '.join(sorted(present))}).")


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=3)
    return f" Did you mean {', '.join(close)}?" if close else ""


def _check_quantized(src: Path, dst: Path, options: Any, context: TransformContext) -> None:
    """A quantized version whose model gained no quantized node is its source under another name, which every
    page would then call INT8: refused. onnxruntime's dynamic quantizer leaves an FP16 model as it is."""
    before, after = _op_types(src), _op_types(dst)
    if sum(after[t] for t in QUANTIZED_OPS) > sum(before[t] for t in QUANTIZED_OPS):
        return
    fp16 = any(init.data_type == onnx.TensorProto.FLOAT16
               for init in onnx.load(str(src), load_external_data=False).graph.initializer)
    source = getattr(context.loaded.spec.models.get(context.version), "from_", None)
    named = f"version {source!r}" if source else str(src)
    why = (f"{named} holds FP16 weights, which onnxruntime's {options.mode} quantizer leaves as they are: quantize "
           "the FP32 version instead (`from:` it), beside the FP16 one" if fp16 else
           f"its op types ({', '.join(sorted(before))}) gave onnxruntime's quantizer nothing to quantize"
           + (f" among op_types {list(options.op_types)}" if getattr(options, "op_types", None) else "")
           + " (already quantized, or only ops it does not quantize)")
    raise ModelError(
        f"{context.loaded.path}: {context.field}: quantizing {named} ({options.mode}) changed no node: {why}. "
        "Allowed: a quantize transform that quantizes at least one node.")


def _checked_exclude_nodes(src: Path, model_in: Path, options: Any, context: TransformContext) -> list[str]:
    excluded = list(getattr(options, "exclude_nodes", None) or [])
    if not excluded:
        return []
    names: set[str] = set()
    for path in {src, model_in}:
        names.update(n.name for n in onnx.load(str(path), load_external_data=False).graph.node)
    unknown = [n for n in excluded if n not in names]
    if unknown:
        raise ModelError(
            f"{context.loaded.path}: {context.field}.exclude_nodes: the model {src} has no node named "
            f"{unknown[0]!r}.{_did_you_mean(unknown[0], names)} Names are the nodes' `name` fields, e.g. as shown "
            "by Netron."
        )
    return excluded


register("quantize", QuantizeTransform())
