"""A small decoder-only language model in the common ONNX convention for generative models.

Inputs ``input_ids``, ``attention_mask``, ``position_ids`` and ``past_key_values.N.key/value``
``[batch, kv_heads, past_sequence_length, head_dim]``; outputs ``logits`` and ``present.N.key/value``, each present
the past with this call's keys and values appended (what Hugging Face's exporter and onnxruntime-genai's model
builder write). Plain ONNX ops only, so that every onnxruntime build runs it; grouped-query attention repeats each
key/value head for its group of query heads. Random weights: the tokens it generates mean nothing, which the
timing does not care about.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx

from generator.models.builder import FLOAT, INT64, GraphBuilder

MASK_VALUE = -10000.0


@dataclass(frozen=True)
class DecoderShape:
    layers: int = 4
    hidden: int = 256
    heads: int = 8
    kv_heads: int = 2
    ffn: int = 1024
    vocab: int = 2048
    max_positions: int = 512

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def build_decoder(shape: DecoderShape = DecoderShape(), seed: int = 3) -> onnx.ModelProto:
    """The example decoder (16 MB of fp32 weights at the default shape)."""
    if shape.hidden % shape.heads or shape.heads % shape.kv_heads:
        raise ValueError(f"{shape}: hidden must divide by heads, and heads by kv_heads")
    b = GraphBuilder("decoder_small", seed)
    ids = b.input("input_ids", INT64, ["batch", "sequence_length"])
    mask = b.input("attention_mask", INT64, ["batch", "total_sequence_length"])
    positions = b.input("position_ids", INT64, ["batch", "sequence_length"])
    kv_shape = ["batch", shape.kv_heads, "past_sequence_length", shape.head_dim]
    pasts = [(b.input(f"past_key_values.{i}.key", FLOAT, kv_shape), b.input(f"past_key_values.{i}.value", FLOAT,
                                                                              kv_shape))
             for i in range(shape.layers)]
    words = b.normal("model.embed_tokens.weight", [shape.vocab, shape.hidden], 0.02)
    table = b.normal("model.embed_positions.weight", [shape.max_positions, shape.hidden], 0.02)
    x = b.node("Add", [b.node("Gather", [words, ids], "/model/embed_tokens", axis=0),
                       b.node("Gather", [table, positions], "/model/embed_positions", axis=0)], "/model")
    present_shape = ["batch", shape.kv_heads, "total_sequence_length", shape.head_dim]
    for i, (past_k, past_v) in enumerate(pasts):
        x, key, value = _layer(b, shape, x, mask, positions, past_k, past_v, i)
        b.output(key, f"present.{i}.key", FLOAT, present_shape)
        b.output(value, f"present.{i}.value", FLOAT, present_shape)
    x = _layer_norm(b, shape, x, "/model/norm", "model.norm")
    logits = b.node("MatMul", [x, b.normal("lm_head.weight", [shape.hidden, shape.vocab], 0.02)], "/lm_head")
    b.output(logits, "logits", FLOAT, ["batch", "sequence_length", shape.vocab])
    return b.build()


def _layer(b: GraphBuilder, s: DecoderShape, x: str, mask: str, positions: str, past_k: str, past_v: str,
           index: int) -> tuple[str, str, str]:
    scope, prefix = f"/model/layers.{index}", f"model.layers.{index}"
    h = _layer_norm(b, s, x, f"{scope}/input_layernorm", f"{prefix}.input_layernorm")
    attention, key, value = _attention(b, s, h, mask, positions, past_k, past_v, f"{scope}/self_attn",
                                       f"{prefix}.self_attn")
    x = b.node("Add", [x, attention], scope)
    h = _layer_norm(b, s, x, f"{scope}/post_attention_layernorm", f"{prefix}.post_attention_layernorm")
    gate = _linear(b, h, f"{scope}/mlp/up_proj", f"{prefix}.mlp.up_proj", s.hidden, s.ffn)
    gate = b.node("Mul", [gate, b.node("Sigmoid", [gate], f"{scope}/mlp/act_fn")], f"{scope}/mlp/act_fn")  # SiLU
    h = _linear(b, gate, f"{scope}/mlp/down_proj", f"{prefix}.mlp.down_proj", s.ffn, s.hidden)
    return b.node("Add", [x, h], scope), key, value


def _attention(b: GraphBuilder, s: DecoderShape, x: str, mask: str, positions: str, past_k: str, past_v: str,
               scope: str, prefix: str) -> tuple[str, str, str]:
    query = _heads(b, _linear(b, x, f"{scope}/q_proj", f"{prefix}.q_proj", s.hidden, s.hidden), s.heads, s, scope)
    kv_width = s.kv_heads * s.head_dim
    new_k = _heads(b, _linear(b, x, f"{scope}/k_proj", f"{prefix}.k_proj", s.hidden, kv_width), s.kv_heads, s,
                   scope)
    new_v = _heads(b, _linear(b, x, f"{scope}/v_proj", f"{prefix}.v_proj", s.hidden, kv_width), s.kv_heads, s,
                   scope)
    key = b.node("Concat", [past_k, new_k], scope, axis=2)  # present: the past and this call's positions
    value = b.node("Concat", [past_v, new_v], scope, axis=2)
    keys, values = _repeat_kv(b, s, key, scope), _repeat_kv(b, s, value, scope)
    scores = b.node("MatMul", [query, b.node("Transpose", [keys], scope, perm=[0, 1, 3, 2])], scope)
    scores = b.node("Div", [scores, b.const(scope, np.array(math.sqrt(s.head_dim), np.float32))], scope)
    scores = b.node("Add", [scores, _causal_bias(b, key, mask, positions, scope)], scope)
    context = b.node("MatMul", [b.node("Softmax", [scores], scope, axis=-1), values], scope)
    context = b.node("Transpose", [context], scope, perm=[0, 2, 1, 3])
    context = b.node("Reshape", [context, b.const(scope, np.array([0, 0, s.hidden], np.int64))], scope)
    out = _linear(b, context, f"{scope}/o_proj", f"{prefix}.o_proj", s.hidden, s.hidden)
    return out, key, value


def _causal_bias(b: GraphBuilder, key: str, mask: str, positions: str, scope: str) -> str:
    """``[batch, 1, seq, total]``: 0 where key position j <= the query's position and the mask keeps j."""
    total = b.node("Gather", [b.node("Shape", [key], scope), b.const(scope, np.array(2, np.int64))], scope, axis=0)
    keys = b.node("Range", [b.const(scope, np.array(0, np.int64)), total, b.const(scope, np.array(1, np.int64))],
                  scope)
    query_at = b.node("Unsqueeze", [positions, b.const(scope, np.array([2], np.int64))], scope)  # [b, seq, 1]
    causal = b.node("LessOrEqual", [keys, query_at], scope)  # [b, seq, total]
    kept = b.node("Unsqueeze", [b.node("Cast", [mask], scope, to=onnx.TensorProto.BOOL),
                                b.const(scope, np.array([1], np.int64))], scope)  # [b, 1, total]
    allowed = b.node("And", [causal, kept], scope)
    bias = b.node("Where", [allowed, b.const(scope, np.array(0.0, np.float32)),
                            b.const(scope, np.array(MASK_VALUE, np.float32))], scope)
    return b.node("Unsqueeze", [bias, b.const(scope, np.array([1], np.int64))], scope)


def _repeat_kv(b: GraphBuilder, s: DecoderShape, x: str, scope: str) -> str:
    """``[batch, kv_heads, total, head_dim]`` -> ``[batch, heads, total, head_dim]``, each kv head repeated."""
    group = s.heads // s.kv_heads
    if group == 1:
        return x
    x = b.node("Unsqueeze", [x, b.const(scope, np.array([2], np.int64))], scope)
    x = b.node("Tile", [x, b.const(scope, np.array([1, 1, group, 1, 1], np.int64))], scope)
    return b.node("Reshape", [x, b.const(scope, np.array([0, s.heads, -1, s.head_dim], np.int64))], scope)


def _heads(b: GraphBuilder, x: str, heads: int, s: DecoderShape, scope: str) -> str:
    x = b.node("Reshape", [x, b.const(scope, np.array([0, 0, heads, s.head_dim], np.int64))], scope)
    return b.node("Transpose", [x], scope, perm=[0, 2, 1, 3])


def _linear(b: GraphBuilder, x: str, scope: str, prefix: str, n_in: int, n_out: int) -> str:
    return b.node("MatMul", [x, b.normal(f"{prefix}.weight", [n_in, n_out], 1.0 / math.sqrt(n_in))], scope)


def _layer_norm(b: GraphBuilder, s: DecoderShape, x: str, scope: str, prefix: str) -> str:
    scale = b.uniform(f"{prefix}.weight", [s.hidden], 0.9, 1.1)
    shift = b.uniform(f"{prefix}.bias", [s.hidden], -0.05, 0.05)
    return b.node("LayerNormalization", [x, scale, shift], scope, axis=-1, epsilon=1e-5)
