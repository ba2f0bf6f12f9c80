"""onnxruntime's attention blocks (com.microsoft Attention, QAttention, MultiHeadAttention).

The core of every block, for ``B`` items, ``N`` heads, ``S`` query and ``L`` key positions and head sizes
``dk`` (query/key) and ``dv`` (value), is what the unfused exporter pattern counts:

- scores ``Q·Kᵀ``: ``B·N·S·L·dk`` multiply-adds; scaling them: ``B·N·S·L``;
- each additive mask or bias given: ``B·N·S·L``; the causal mask of ``unidirectional`` is a selection (0);
- softmax over ``L`` for each of ``B·N·S`` rows: ``5L - 2`` each (see ``reduce``);
- context ``P·V``: ``B·N·S·L·dv`` multiply-adds.

Attention and QAttention also project the input to Q, K and V (``B·S·D_in·(Dq + Dk + Dv)`` multiply-adds,
integer for QAttention) and add the bias; MultiHeadAttention adds the bias to given Q/K/V. The output
projection is a separate MatMul in all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.flops.counters.reduce import softmax_ops
from generator.flops.registry import MS_DOMAIN, Counts, NodeContext, NotCountable, counter


@dataclass(frozen=True)
class AttentionDims:
    batch: int
    heads: int
    q_len: int
    kv_len: int
    qk_head: int
    v_head: int


def core_attention(dims: AttentionDims, masks: int) -> Counts:
    """Float work of scaled dot-product attention with ``masks`` additive masks (module docstring)."""
    scores = dims.batch * dims.heads * dims.q_len * dims.kv_len
    macs = scores * (dims.qk_head + dims.v_head)
    rows = dims.batch * dims.heads * dims.q_len
    flops = 2 * macs + scores * (1 + masks) + softmax_ops(rows, dims.kv_len)
    return Counts(flops=flops, macs=macs)


def _heads(ctx: NodeContext) -> int:
    heads = int(ctx.attr("num_heads", 0))
    if heads <= 0:
        raise NotCountable(f"{ctx.op_type} has no num_heads attribute")
    return heads


def _projected_dims(ctx: NodeContext, past_input: int) -> tuple[AttentionDims, int, int]:
    """Dims of Attention/QAttention, the input width and the total projected width Dq + Dk + Dv."""
    if ctx.attr("past_present_share_buffer", 0):
        raise NotCountable(f"{ctx.op_type} with a shared past/present buffer: the attended length is dynamic")
    batch, seq, d_in = ctx.input_shape(0)
    total = ctx.input_shape(1)[-1]
    sizes = [int(s) for s in ctx.attr("qkv_hidden_sizes", ())] or [total // 3] * 3
    heads = _heads(ctx)
    past = ctx.input_shape(past_input)[3] if ctx.has_input(past_input) else 0
    dims = AttentionDims(batch, heads, seq, past + seq, sizes[0] // heads, sizes[2] // heads)
    return dims, d_in, sum(sizes)


@counter("Attention", domain=MS_DOMAIN)
def attention(ctx: NodeContext) -> Counts:
    """Inputs: input, weights, bias (2), mask_index (3), past (4, [2, B, N, P, H]), attention_bias (5)."""
    dims, d_in, total = _projected_dims(ctx, past_input=4)
    rows = dims.batch * dims.q_len
    projection = Counts(flops=2 * rows * d_in * total, macs=rows * d_in * total)
    bias = Counts(flops=rows * total if ctx.has_input(2) else 0)
    masks = sum(1 for i in (3, 5) if ctx.has_input(i))
    return projection + bias + core_attention(dims, masks)


@counter("QAttention", domain=MS_DOMAIN)
def qattention(ctx: NodeContext) -> Counts:
    """Integer Q/K/V projection, then float attention. Inputs: input, weight, bias (2), input_scale,
    weight_scale, mask_index (5), input_zero_point, weight_zero_point, past (8)."""
    dims, d_in, total = _projected_dims(ctx, past_input=8)
    rows = dims.batch * dims.q_len
    projection = Counts(int_ops=2 * rows * d_in * total, macs=rows * d_in * total)
    bias = Counts(flops=rows * total if ctx.has_input(2) else 0)
    return projection + bias + core_attention(dims, 1 if ctx.has_input(5) else 0)


def _mha_dims(ctx: NodeContext) -> AttentionDims:
    """Layouts: packed QKV ``[B, S, N, 3, H]``; Q ``[B, S, D]`` with K/V ``[B, L, D]``, ``[B, N, L, H]``
    (BNSH, e.g. cached cross-attention keys) or packed KV ``[B, L, N, 2, H]``; past_key (6) ``[B, N, P, H]``."""
    heads = _heads(ctx)
    query = ctx.input_shape(0)
    if len(query) == 5:
        return AttentionDims(query[0], heads, query[1], query[1], query[4], query[4])
    if len(query) != 3:
        raise NotCountable(f"MultiHeadAttention query of rank {len(query)} is not a documented layout")
    key = ctx.input_shape(1)
    if len(key) == 5:
        return AttentionDims(query[0], heads, query[1], key[1], key[4], key[4])
    if len(key) == 4:
        return AttentionDims(query[0], heads, query[1], key[2], key[3], ctx.input_shape(2)[3])
    past = ctx.input_shape(6)[2] if ctx.has_input(6) else 0
    value = ctx.input_shape(2)
    return AttentionDims(query[0], heads, query[1], key[1] + past, key[2] // heads, value[2] // heads)


@counter("MultiHeadAttention", domain=MS_DOMAIN)
def multi_head_attention(ctx: NodeContext) -> Counts:
    """Inputs: query, key, value, bias (3), key_padding_mask (4), attention_bias (5), past_key, past_value."""
    dims = _mha_dims(ctx)
    bias_adds = 0
    if ctx.has_input(3):
        # The bias is added to the projected tensors given here (3-D or packed); BNSH keys come biased.
        bias_adds = sum(ctx.input_numel(i) for i in (0, 1, 2) if ctx.has_input(i) and len(ctx.input_shape(i)) != 4)
    masks = sum(1 for i in (4, 5) if ctx.has_input(i))
    return Counts(flops=bias_adds) + core_attention(dims, masks)
