"""The ``fp16`` transform: weights and compute in float16, with onnxruntime's own converter."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnx
import onnxruntime
from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

from generator.versions.registry import TransformContext, canonical_json, options_data, register


class Fp16Transform:
    code_version = f"fp16-1/onnxruntime-{onnxruntime.__version__}"

    def label(self, options: Any) -> str:
        return "fp16(keep_io_types)" if options.keep_io_types else "fp16"

    def describe(self, options: Any) -> str:
        return "fp16" + (" keeping float32 inputs and outputs" if options.keep_io_types else "")

    def cache_token(self, options: Any, context: TransformContext) -> str:
        return canonical_json({"options": options_data(options)})

    def apply(self, src: Path, dst: Path, options: Any, context: TransformContext) -> None:
        model = onnx.load(str(src))
        # The converter *replaces* its default block list when given one; the defaults are ops with no float16
        # kernel at all, so the user's list adds to them rather than unblocking them.
        blocked = sorted({*DEFAULT_OP_BLOCK_LIST, *(options.op_block_list or [])})
        keep_io = bool(options.keep_io_types)
        converted = convert_float_to_float16(model, keep_io_types=keep_io, op_block_list=blocked)
        sort_topologically(converted.graph)
        onnx.save(converted, str(dst))


def sort_topologically(graph: onnx.GraphProto) -> None:
    """Reorder nodes so each comes after the producers of its inputs, keeping the given order otherwise.

    The converter appends the Casts it inserts at the end of the node list; onnxruntime sorts the graph
    itself, but onnx.checker and other tools refuse such a file.
    """
    produced_by = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    consumers: list[list[int]] = [[] for _ in graph.node]
    waiting = [0] * len(graph.node)
    for i, node in enumerate(graph.node):
        for producer in {produced_by.get(name) for name in _names_used(node)} - {None, i}:
            consumers[producer].append(i)
            waiting[i] += 1
    # Kahn's algorithm, always taking the earliest ready node: an already sorted graph keeps its order.
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for consumer in consumers[i]:
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                heapq.heappush(ready, consumer)
    if len(order) != len(graph.node):
        return  # a cycle is not ours to fix; onnxruntime will report it
    nodes = []
    for i in order:
        node = onnx.NodeProto()
        node.CopyFrom(graph.node[i])  # copies: deleting from a repeated field invalidates its elements
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)


def _names_used(node: onnx.NodeProto) -> Iterator[str]:
    """Inputs of the node, including names its subgraphs read from the enclosing graph."""
    yield from (name for name in node.input if name)
    for attr in node.attribute:
        for sub in (*([attr.g] if attr.HasField("g") else []), *attr.graphs):
            for inner in sub.node:
                yield from _names_used(inner)


register("fp16", Fp16Transform())
