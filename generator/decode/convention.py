"""Whether a model is a decoder in the common convention for generative ONNX models, and its KV-cache layout.

The convention (Hugging Face's exporter, onnxruntime-genai's model builder): inputs ``input_ids``,
``attention_mask``, optional ``position_ids`` and ``past_key_values.N.key/value``; outputs ``logits`` and
``present.N.key/value``, each present the past with this call's positions appended along the sequence axis.
The layout is read from the graph: the past's rank-4 shape ``[batch, kv_heads, past_sequence, head_dim]`` with
the heads and head size fixed numbers, and its element type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from generator.errors import ModelError
from generator.index_inputs import index_tables

PAST = re.compile(r"past_key_values\.(\d+)\.(key|value)")
CONVENTION = ("inputs `input_ids`, `attention_mask`, optional `position_ids` and `past_key_values.N.key` / "
              "`past_key_values.N.value` for every layer N; outputs `logits` and `present.N.key` / "
              "`present.N.value`; each past shaped [batch, kv_heads, past_sequence_length, head_dim] with kv_heads "
              "and head_dim fixed numbers")
ELEMENT_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16}


@dataclass(frozen=True)
class DecoderLayout:
    """What the decode loop needs to feed a decoder."""

    layers: int
    kv_heads: int
    head_dim: int
    kv_dtype: str  # numpy name: float32 or float16
    vocab: int
    has_position_ids: bool
    max_positions: int | None  # rows of the table position_ids index; None when the graph does not say

    def longest_request(self) -> int | None:
        """The most prompt + new tokens a request may have: the last generated token is never fed, so the
        positions fed are 0 .. prompt + new - 2, each a row of the position table; None when the graph does not
        say."""
        return None if self.max_positions is None else self.max_positions + 1

    def kv_bytes(self, batch: int, context: int) -> int:
        """Bytes of the whole KV cache (keys and values of every layer) at `context` positions."""
        return 2 * self.layers * batch * self.kv_heads * context * self.head_dim * np.dtype(self.kv_dtype).itemsize


def decoder_layout(model_path: Path) -> DecoderLayout:
    """The model's KV layout; ModelError (one paragraph, naming what is missing) when it is not a decoder in the
    convention."""
    try:
        model = onnx.load(str(model_path), load_external_data=False)
    except Exception as e:  # protobuf's DecodeError, onnx's own errors: the file is not a model
        raise ModelError(f"{model_path}: not a readable ONNX model ({' '.join(str(e).split()) or type(e).__name__}). "
                         f"Allowed: a decoder ONNX file; {CONVENTION}.") from e
    initializers = {t.name for t in model.graph.initializer}
    inputs = {i.name: i for i in model.graph.input if i.name not in initializers}
    outputs = {o.name: o for o in model.graph.output}
    pasts = {m.group(1, 2): inputs[name] for name in inputs if (m := PAST.fullmatch(name))}
    layers = sorted({int(n) for n, _ in pasts})
    missing = [name for name in ("input_ids", "attention_mask") if name not in inputs]
    missing += [] if "logits" in outputs else ["logits"]
    if not pasts:
        missing.append("past_key_values.N.key/value inputs")
    for n in layers:
        missing += [f"past_key_values.{n}.{kv}" for kv in ("key", "value") if (str(n), kv) not in pasts]
        missing += [f"present.{n}.{kv}" for kv in ("key", "value") if f"present.{n}.{kv}" not in outputs]
    known = {"input_ids", "attention_mask", "position_ids"} | {f"past_key_values.{n}.{kv}" for n, kv in pasts}
    missing += [f"nothing for its input `{name}` (perfsite feeds only the convention's inputs)"
                for name in inputs if name not in known]
    if layers and layers != list(range(len(layers))):
        missing.append(f"layers numbered 0..{len(layers) - 1} (found {', '.join(map(str, layers))})")
    if missing:
        raise ModelError(f"{model_path} is not a decoder in the convention perfsite generates with: it lacks "
                         f"{', '.join(missing)}. Allowed: {CONVENTION}. Export it with KV-cache inputs (Hugging "
                         "Face Optimum `--task text-generation-with-past`, or onnxruntime-genai's model builder).")
    first = pasts[("0", "key")]
    dims = [d.dim_value if d.HasField("dim_value") else None for d in first.type.tensor_type.shape.dim]
    element = first.type.tensor_type.elem_type
    if len(dims) != 4 or dims[1] is None or dims[3] is None or element not in ELEMENT_TYPES:
        shown = ["?" if d is None else d for d in dims]
        raise ModelError(f"{model_path}: `past_key_values.0.key` is shaped {shown} of element type "
                         f"{onnx.TensorProto.DataType.Name(element)}; perfsite needs [batch, kv_heads, "
                         "past_sequence_length, head_dim] with kv_heads and head_dim fixed numbers, in float32 or "
                         f"float16. Allowed: {CONVENTION}.")
    logits = [d.dim_value if d.HasField("dim_value") else None for d in outputs["logits"].type.tensor_type.shape.dim]
    if outputs["logits"].type.tensor_type.HasField("shape") and len(logits) != 3:
        raise ModelError(f"{model_path}: `logits` has rank {len(logits)}; perfsite needs [batch, sequence_length, "
                         "vocab] (the logits of every position fed, the last one choosing the next token). Allowed: "
                         f"{CONVENTION}.")
    for n in layers:
        for kv in ("key", "value"):
            present = outputs[f"present.{n}.{kv}"].type.tensor_type.elem_type
            if present != element:
                raise ModelError(
                    f"{model_path}: `present.{n}.{kv}` is {onnx.TensorProto.DataType.Name(present)} but "
                    f"`past_key_values.{n}.{kv}` is {onnx.TensorProto.DataType.Name(element)}: each present is fed "
                    f"back as the next pass's past, so both must have one element type. Allowed: {CONVENTION}.")
    tables = index_tables(model_path)
    # The smaller of the two where both are known: an lm_head padded past the embedding table would give ids the
    # table does not have.
    known_sizes = [n for n in (logits[-1] if logits else None,
                               tables["input_ids"].rows if "input_ids" in tables else None) if n]
    vocab = min(known_sizes) if known_sizes else None
    if not vocab:
        raise ModelError(f"{model_path}: the vocabulary size is neither the last dimension of `logits` nor the rows "
                         "of a table `input_ids` indexes; perfsite needs it to choose prompt tokens the model "
                         "accepts. Allowed: a fixed last dimension of `logits`.")
    positions = tables.get("position_ids")
    return DecoderLayout(layers=len(layers), kv_heads=dims[1], head_dim=dims[3],
                         kv_dtype=np.dtype(ELEMENT_TYPES[element]).name, vocab=int(vocab),
                         has_position_ids="position_ids" in inputs,
                         max_positions=positions.rows if positions else None)
