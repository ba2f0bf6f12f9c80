"""Static analysis of a model per original node: FLOPs, MACs and integer ops by a registry of counters.

``analyze_model(path, input_shapes)`` gives one :class:`LayerRow` (a ``layers`` table row without its
``trial_key``) per node of the model file at the trial's concrete input shapes. Counting conventions are
in docs/methodology-flops.md.
"""

from generator.flops.analyze import LayerAnalysis, LayerRow, analyze_model, analyze_model_report
from generator.flops.registry import COUNTERS, Counts, NodeContext, NotCountable, TensorInfo, counter, find_counter

__all__ = [
    "COUNTERS",
    "Counts",
    "LayerAnalysis",
    "LayerRow",
    "NodeContext",
    "NotCountable",
    "TensorInfo",
    "analyze_model",
    "analyze_model_report",
    "counter",
    "find_counter",
]
