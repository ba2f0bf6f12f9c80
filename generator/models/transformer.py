"""A small pre-norm transformer encoder, named like a Hugging Face BERT/ViT export.

Every pattern is written the way exporters write it, so onnxruntime's fusions fire on it as on real models:
GELU in its exact Erf form (opset 17 has no Gelu op; onnxruntime fuses Div-Erf-Add-Mul-Mul into Gelu),
MatMul + Add for linear layers, Reshape/Transpose to heads, and an additive attention mask.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from generator.models.builder import FLOAT, INT64, GraphBuilder

HIDDEN = 128
HEADS = 4
FFN = 512
VOCAB = 1000
LAYERS = 2
MAX_POSITIONS = 512
# BERT's additive mask value: large enough to zero the softmax weight, small enough to stay finite in fp16.
MASK_VALUE = -10000.0


def build_transformer(seed: int = 1, with_attention_mask: bool = True) -> onnx.ModelProto:
    """The example encoder: ``input_ids [batch, seq_len]`` (+ ``attention_mask``) -> ``last_hidden_state``."""
    b = GraphBuilder("encoder_small", seed)
    ids = b.input("input_ids", INT64, ["batch", "seq_len"])
    mask = b.input("attention_mask", INT64, ["batch", "seq_len"]) if with_attention_mask else None
    x = _embeddings(b, ids)
    bias = _attention_bias(b, mask) if mask is not None else None
    for index in range(LAYERS):
        x = _layer(b, x, bias, index)
    x = _layer_norm(b, x, "/encoder/layernorm", "encoder.layernorm")
    b.output(x, "last_hidden_state", FLOAT, ["batch", "seq_len", HIDDEN])
    return b.build()


def _embeddings(b: GraphBuilder, ids: str) -> str:
    words = b.normal("embeddings.word_embeddings.weight", [VOCAB, HIDDEN], 0.02)
    positions = b.normal("embeddings.position_embeddings.weight", [MAX_POSITIONS, HIDDEN], 0.02)
    scope = "/embeddings"
    x = b.node("Gather", [words, ids], f"{scope}/word_embeddings", axis=0)
    # Position embeddings for 0..seq_len-1: slice the table by the runtime sequence length.
    shape = b.node("Shape", [ids], scope)
    seq_len = b.node("Gather", [shape, b.const(scope, np.array([1], np.int64))], scope, axis=0)
    start = b.const(scope, np.array([0], np.int64))
    axes = b.const(scope, np.array([0], np.int64))
    pos = b.node("Slice", [positions, start, seq_len, axes], f"{scope}/position_embeddings")
    x = b.node("Add", [x, pos], scope)
    return x


def _attention_bias(b: GraphBuilder, mask: str) -> str:
    """``[batch, 1, 1, seq_len]`` additive bias: 0 where the mask is non-zero, ``MASK_VALUE`` elsewhere."""
    scope = "/encoder"
    # Going through bool makes any non-zero mask value mean "attend", so random masks stay well-behaved.
    keep = b.node("Cast", [mask], scope, to=onnx.TensorProto.BOOL)
    drop = b.node("Not", [keep], scope)
    drop = b.node("Cast", [drop], scope, to=onnx.TensorProto.FLOAT)
    bias = b.node("Mul", [drop, b.const(scope, np.array(MASK_VALUE, np.float32))], scope)
    return b.node("Unsqueeze", [bias, b.const(scope, np.array([1, 2], np.int64))], scope)


def _layer(b: GraphBuilder, x: str, bias: str | None, index: int) -> str:
    scope, prefix = f"/encoder/layer.{index}", f"encoder.layer.{index}"
    h = _layer_norm(b, x, f"{scope}/layernorm_before", f"{prefix}.layernorm_before")
    h = _self_attention(b, h, bias, scope, prefix)
    h = _linear(b, h, f"{scope}/attention/output/dense", f"{prefix}.attention.output.dense", HIDDEN, HIDDEN)
    x = b.node("Add", [x, h], scope)
    h = _layer_norm(b, x, f"{scope}/layernorm_after", f"{prefix}.layernorm_after")
    h = _linear(b, h, f"{scope}/intermediate/dense", f"{prefix}.intermediate.dense", HIDDEN, FFN)
    h = _gelu(b, h, f"{scope}/intermediate/intermediate_act_fn")
    h = _linear(b, h, f"{scope}/output/dense", f"{prefix}.output.dense", FFN, HIDDEN)
    return b.node("Add", [x, h], f"{scope}/output")


def _self_attention(b: GraphBuilder, x: str, bias: str | None, scope: str, prefix: str) -> str:
    scope, prefix = f"{scope}/attention/self", f"{prefix}.attention.self"
    head_dim = HIDDEN // HEADS
    heads = {
        name: _to_heads(b, _linear(b, x, f"{scope}/{name}", f"{prefix}.{name}", HIDDEN, HIDDEN), scope)
        for name in ("query", "key", "value")
    }
    key_t = b.node("Transpose", [heads["key"]], scope, perm=[0, 1, 3, 2])
    scores = b.node("MatMul", [heads["query"], key_t], scope)
    scores = b.node("Div", [scores, b.const(scope, np.array(math.sqrt(head_dim), np.float32))], scope)
    if bias is not None:
        scores = b.node("Add", [scores, bias], scope)
    probs = b.node("Softmax", [scores], scope, axis=-1)
    context = b.node("MatMul", [probs, heads["value"]], scope)
    context = b.node("Transpose", [context], scope, perm=[0, 2, 1, 3])
    return b.node("Reshape", [context, b.const(scope, np.array([0, 0, HIDDEN], np.int64))], scope)


def _to_heads(b: GraphBuilder, x: str, scope: str) -> str:
    """``[batch, seq, hidden]`` -> ``[batch, heads, seq, head_dim]``; 0 in the shape copies the input dim."""
    shape = b.const(scope, np.array([0, 0, HEADS, HIDDEN // HEADS], np.int64))
    x = b.node("Reshape", [x, shape], scope)
    return b.node("Transpose", [x], scope, perm=[0, 2, 1, 3])


def _linear(b: GraphBuilder, x: str, scope: str, prefix: str, n_in: int, n_out: int) -> str:
    # Stored as [in, out], the layout the exporter gives a transposed nn.Linear weight feeding MatMul.
    weight = b.normal(f"{prefix}.weight", [n_in, n_out], 1.0 / math.sqrt(n_in))
    bias = b.uniform(f"{prefix}.bias", [n_out], -0.02, 0.02)
    y = b.node("MatMul", [x, weight], scope)
    return b.node("Add", [bias, y], scope)


def _layer_norm(b: GraphBuilder, x: str, scope: str, prefix: str) -> str:
    scale = b.uniform(f"{prefix}.weight", [HIDDEN], 0.9, 1.1)
    shift = b.uniform(f"{prefix}.bias", [HIDDEN], -0.05, 0.05)
    return b.node("LayerNormalization", [x, scale, shift], scope, axis=-1, epsilon=1e-12)


def _gelu(b: GraphBuilder, x: str, scope: str) -> str:
    """Exact GELU, x * 0.5 * (1 + erf(x / sqrt(2))), in the node order onnxruntime's GeluFusion matches."""
    y = b.node("Div", [x, b.const(scope, np.array(math.sqrt(2.0), np.float32))], scope)
    y = b.node("Erf", [y], scope)
    y = b.node("Add", [y, b.const(scope, np.array(1.0, np.float32))], scope)
    y = b.node("Mul", [x, y], scope)
    return b.node("Mul", [y, b.const(scope, np.array(0.5, np.float32))], scope)
