"""A long chain of tiny nodes (Add, Relu, Add, Relu, …): a model with thousands of layers that runs in
microseconds, for the tests and the benchmark that keep pages of very large models small and quick to open.
"""

from __future__ import annotations

import numpy as np
import onnx

from generator.models.builder import FLOAT, GraphBuilder

WIDTH = 8  # features per item: the chain's cost is per node, not per element


def build_chain(nodes: int, seed: int = 0) -> onnx.ModelProto:
    """``input [batch, 8]`` float32 through ``nodes`` nodes (an Add with its own constant, then a Relu,
    repeated) -> ``output [batch, 8]``. Every node has its own scope, so names stay unique without search."""
    b = GraphBuilder("chain", seed)
    x = b.input("input", FLOAT, ["batch", WIDTH])
    for i in range(nodes):
        scope = f"/block{i // 2}"
        if i % 2 == 0:
            x = b.node("Add", [x, b.weight(f"block{i // 2}.bias", np.full(WIDTH, 0.01, np.float32))], scope)
        else:
            x = b.node("Relu", [x], scope)
    b.output(x, "output", FLOAT, ["batch", WIDTH])
    return b.build()
