"""Executed nodes mapped back to the nodes and weights of the model file that ran; runtime precision."""

from generator.layers.mapping import ExecutedNode, NodeMapping, map_executed_nodes, mapping_coverage
from generator.layers.precision import runtime_precision

__all__ = ["ExecutedNode", "NodeMapping", "map_executed_nodes", "mapping_coverage", "runtime_precision"]
