"""The registry of FLOP counters: one function per (domain, op_type), registered with :func:`counter`.

A counter receives a :class:`NodeContext` (the node's attributes and the shapes and element types of its
inputs and outputs after shape inference at the trial's concrete input shapes) and returns :class:`Counts`.
Conventions (docs/methodology-flops.md has the full table):

- a multiply-add is 1 MAC and 2 operations; ``macs`` counts float and integer multiply-adds alike;
- arithmetic on integer tensors goes to ``int_ops``, arithmetic on floating-point tensors to ``flops``; a
  node of a QDQ model whose every input comes from a ``DequantizeLinear`` counts as integer compute, since
  onnxruntime runs it as the integer kernel (``QLinearConv``, ``QLinearAdd``, ...);
- a counter that cannot count (a shape shape inference left unknown, an unsupported attribute) raises
  :class:`NotCountable` with the reason: the node is then listed as not counted, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Element types whose arithmetic is integer arithmetic (``bool`` logic included).
INTEGER_DTYPES = frozenset(
    {"int4", "uint4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"}
)
# ONNX's default domain has two spellings.
DEFAULT_DOMAINS = frozenset({"", "ai.onnx"})
MS_DOMAIN = "com.microsoft"


class NotCountable(Exception):
    """A counter cannot count this node (the message says why); the node is listed, not guessed."""


@dataclass(frozen=True)
class Counts:
    """Work of one node per inference: floating-point operations, multiply-accumulates, integer operations."""

    flops: float = 0.0
    macs: float = 0.0
    int_ops: float = 0.0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.flops + other.flops, self.macs + other.macs, self.int_ops + other.int_ops)


ZERO = Counts()


@dataclass(frozen=True)
class TensorInfo:
    """A tensor as shape inference left it: ``shape`` is None unless every dimension is a known integer."""

    name: str
    shape: tuple[int, ...] | None
    dtype: str | None  # numpy-style element type name: float32, float16, int8, uint8, int64, bool, ...

    @property
    def numel(self) -> int | None:
        return math.prod(self.shape) if self.shape is not None else None


@dataclass(frozen=True)
class NodeContext:
    """What a counter may look at: one node, its attributes, and its tensors after shape inference."""

    key: str
    op_type: str
    domain: str
    opset: int  # version of the node's domain the model imports
    attrs: Mapping[str, Any]
    inputs: tuple[TensorInfo | None, ...]  # None for an omitted optional input ("")
    outputs: tuple[TensorInfo | None, ...]
    quantized: bool = False  # every input is produced by a DequantizeLinear of an integer tensor (QDQ)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def text_attr(self, name: str, default: str = "") -> str:
        """A string attribute (onnx gives them as bytes)."""
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else str(value)

    def has_input(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def input_shape(self, index: int) -> tuple[int, ...]:
        return _known_shape(self.inputs, index, "input", self.op_type)

    def output_shape(self, index: int = 0) -> tuple[int, ...]:
        return _known_shape(self.outputs, index, "output", self.op_type)

    def input_numel(self, index: int = 0) -> int:
        return math.prod(self.input_shape(index))

    def output_numel(self, index: int = 0) -> int:
        return math.prod(self.output_shape(index))

    @property
    def integer(self) -> bool:
        """The node computes on integers: a QDQ-quantized node, or its first tensor has an integer type."""
        if self.quantized:
            return True
        first = next((t for t in (*self.inputs, *self.outputs) if t is not None and t.dtype), None)
        return first is not None and first.dtype in INTEGER_DTYPES

    def arithmetic(self, ops: float, macs: float = 0.0) -> Counts:
        """``ops`` operations (``macs`` of them as multiply-adds), as FLOPs or integer ops by the node's type."""
        return Counts(int_ops=ops, macs=macs) if self.integer else Counts(flops=ops, macs=macs)


def _known_shape(
    tensors: Sequence[TensorInfo | None], index: int, role: str, op_type: str
) -> tuple[int, ...]:
    tensor = tensors[index] if index < len(tensors) else None
    if tensor is None:
        raise NotCountable(f"{op_type} has no {role} {index}")
    if tensor.shape is None:
        raise NotCountable(f"shape inference left the shape of {role} {index} ({tensor.name}) unknown")
    return tensor.shape


Counter = Callable[[NodeContext], Counts]
COUNTERS: dict[tuple[str, str], Counter] = {}


def counter(*op_types: str, domain: str = "") -> Callable[[Counter], Counter]:
    """Register the decorated function as the counter of each of ``op_types`` in ``domain``."""

    def register(fn: Counter) -> Counter:
        for op_type in op_types:
            key = (domain, op_type)
            if key in COUNTERS:
                raise ValueError(f"two FLOP counters for {domain or 'ai.onnx'}:{op_type}")
            COUNTERS[key] = fn
        return fn

    return register


def find_counter(domain: str, op_type: str) -> Counter | None:
    """The counter of an op type, or None when the op type is unknown to the registry."""
    return COUNTERS.get(("" if domain in DEFAULT_DOMAINS else domain, op_type))
