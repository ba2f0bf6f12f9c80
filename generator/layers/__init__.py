"""Executed nodes mapped back to the nodes and weights of the model file that ran; runtime precision.

The mapping needs onnx; it is imported on first use so that a measurement process, which only needs
`runtime_precision` through the profile parser, starts without it.
"""

from typing import Any

from generator.layers.precision import runtime_precision

__all__ = ["ExecutedNode", "NodeMapping", "map_executed_nodes", "mapping_coverage", "runtime_precision"]


def __getattr__(name: str) -> Any:
    if name in ("ExecutedNode", "NodeMapping", "map_executed_nodes", "mapping_coverage"):
        from generator.layers import mapping

        return getattr(mapping, name)
    raise AttributeError(f"module 'generator.layers' has no attribute {name!r}")
