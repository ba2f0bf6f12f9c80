"""Regions: grow each executed node's anchors into every original node it computes.

An original node whose outputs no longer exist in the saved graph (its tensors *vanished*) was fused into
some executed node, or removed. The growth below gives each vanished node to the executed node that can
compute it from what it reads, so a region is what OpenVINO calls a layer's ``originalLayersNames``.
The algorithm is described for users in docs/methodology-mapping.md.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from generator.layers.anchors import LAYOUT_OPS, base_op
from generator.layers.graph_index import GraphIndex, GraphNode

# Ops onnxruntime fuses into the node that *produces* their input: activations, residual adds, scales,
# normalizations folded into a Conv, the QuantizeLinear after a QLinear kernel. Only these grow a region
# forward; every other vanished node (DequantizeLinear, Transpose, a Conv) joins the node consuming it.
EPILOGUE_OPS = frozenset(
    {
        "Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "FastGelu",
        "BiasGelu", "QuickGelu", "Erf", "Elu", "Selu", "Softplus", "PRelu", "Mish", "Swish",
        "Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Pow", "Sqrt", "Neg", "Exp",
        "BatchNormalization", "QuantizeLinear", "DynamicQuantizeLinear", "Identity", "Dropout",
    }
)  # fmt: skip
# Saved-graph nodes that move or re-encode a tensor without computing a layer: an executed node reads
# through them when they have no anchors of their own.
VALUE_PRESERVING_OPS = LAYOUT_OPS | frozenset({"QuantizeLinear", "DequantizeLinear", "Cast"})
_LAYOUT_DOMAINS = frozenset({"com.microsoft.nchwc", "com.ms.internal.nhwc"})
# A fused kernel covers a handful of nodes; a longer backward walk means the walk left the kernel.
MAX_CLOSURE_NODES = 64
NEIGHBOUR_ROUNDS = 4


@dataclass
class Slot:
    """The mapping state of one distinct executed node."""

    op_type: str
    saved: GraphNode | None
    region: set[str] = field(default_factory=set)
    method: str = ""


@dataclass(frozen=True)
class _View:
    """What an executed node reads: saved tensors (through layout nodes) and the executed nodes feeding it."""

    reads: frozenset[str]
    feeders: frozenset[int]


class RegionBuilder:
    """Grows the regions of all executed nodes together (ownership is shared state)."""

    def __init__(self, original: GraphIndex, saved: GraphIndex | None, slots: list[Slot]) -> None:
        self.o = original
        self.s = saved
        self.slots = slots
        self.exec_of_saved = {slot.saved.key: i for i, slot in enumerate(slots) if slot.saved is not None}
        saved_tensors = saved.tensors if saved is not None else frozenset()
        self.live = frozenset(t for t in original.tensors if t in saved_tensors and t not in original.weights)
        self.owner: dict[str, set[int]] = defaultdict(set)
        for i, slot in enumerate(slots):
            for key in slot.region:
                self.owner[key].add(i)
        self.by_base_op: dict[str, list[GraphNode]] = defaultdict(list)
        for node in original.nodes:
            self.by_base_op[base_op(node.op_type)].append(node)

    def run(self) -> None:
        """Structural anchors, forward growth and backward closure to a fixpoint; then static chains, then
        neighbours for executed nodes that still cover nothing."""
        changed = True
        while changed:
            changed = False
            for step in (self._structure, self._forward, self._backward):
                while any([step(i) for i in range(len(self.slots))]):
                    changed = True
        self._attach_static_chains()
        self._inherit_from_neighbours()

    # -- reading what an executed node consumes ------------------------------------------------------------

    def _view(self, i: int) -> _View:
        saved_node = self.slots[i].saved
        if saved_node is None or self.s is None:
            return _View(frozenset(), frozenset())
        reads: set[str] = set()
        feeders: set[int] = set()
        stack = [t for t in saved_node.inputs if t]
        while stack:
            tensor = stack.pop()
            if tensor in reads:
                continue
            reads.add(tensor)
            producer = self.s.producer.get(tensor)
            if producer is None:
                continue
            j = self.exec_of_saved.get(producer.key)
            if j is not None and self.slots[j].region:
                feeders.add(j)
            elif producer.op_type in VALUE_PRESERVING_OPS:
                stack.extend(t for t in producer.inputs[:1] if t)
        return _View(frozenset(reads), frozenset(feeders))

    def _acceptable(self, tensor: str, inside: set[str], view: _View) -> bool:
        """Can the executed node seeing ``view`` have ``tensor`` in hand, with the nodes ``inside`` it?"""
        if tensor in self.o.static:
            return True
        producer = self.o.producer.get(tensor)
        if producer is None:
            return tensor in view.reads
        if producer.key in inside:
            return True
        if tensor in self.live:
            return tensor in view.reads
        return bool(self.owner.get(producer.key, set()) & view.feeders)

    def _claim(self, i: int, keys: set[str]) -> None:
        self.slots[i].region |= keys
        for key in keys:
            self.owner[key].add(i)

    def _vanished(self, tensor: str) -> bool:
        return bool(tensor) and tensor not in self.live and tensor not in self.o.static

    # -- growth steps ----------------------------------------------------------------------------------------

    def _forward(self, i: int) -> bool:
        """Absorb unowned consumers of vanished outputs (an activation, a residual Add, a QuantizeLinear)."""
        region = self.slots[i].region
        if not region:
            return False
        view = self._view(i)
        grown = False
        queue = list(region)
        while queue:
            for out in self.o.by_key[queue.pop()].outputs:
                if not self._vanished(out):
                    continue
                for consumer in self.o.consumers.get(out, ()):
                    if consumer.key in self.owner or consumer.op_type not in EPILOGUE_OPS:
                        continue
                    if all(self._acceptable(t, region, view) for t in self.o.data_inputs(consumer)):
                        self._claim(i, {consumer.key})
                        queue.append(consumer.key)
                        grown = True
        return grown

    def _backward(self, i: int) -> bool:
        """Absorb the unowned producers between the region and what the executed node reads."""
        region = self.slots[i].region
        if not region:
            return False
        closure = self._closure(set(region), self._view(i))
        if not closure:
            return False
        self._claim(i, closure)
        return True

    def _closure(self, region: set[str], view: _View) -> set[str] | None:
        """Unowned producers upstream of ``region`` down to values the node seeing ``view`` has in hand;
        None when the walk reaches a value it cannot have (the producers belong to another node)."""
        inside, new = set(region), set()
        stack = [t for key in region for t in self.o.data_inputs(self.o.by_key[key])]
        while stack:
            tensor = stack.pop()
            if self._acceptable(tensor, inside, view):
                continue
            producer = self.o.producer.get(tensor)
            if producer is None or tensor in self.live or producer.key in self.owner:
                return None
            new.add(producer.key)
            inside.add(producer.key)
            if len(new) > MAX_CLOSURE_NODES:
                return None
            stack.extend(self.o.data_inputs(producer))
        return new

    def _structure(self, i: int) -> bool:
        """An executed node without anchors covers the one unowned node of its op it can compute."""
        slot = self.slots[i]
        if slot.region or slot.saved is None or slot.saved.op_type in LAYOUT_OPS:
            return False
        view = self._view(i)
        found = [
            node.key
            for node in self.by_base_op.get(base_op(slot.op_type), ())
            if node.key not in self.owner and self._closure({node.key}, view) is not None
        ]
        if len(found) != 1:
            return False
        # Claim the node alone: the growth steps then give its epilogue (a QuantizeLinear) to it and its
        # prologue to it in the same order as for every other node.
        slot.method = "structure"
        self._claim(i, {found[0]})
        return True

    # -- final passes ----------------------------------------------------------------------------------------

    def _attach_static_chains(self) -> None:
        """Weight preprocessing folded at load time (DequantizeLinear of a weight, shape arithmetic) joins
        every region that consumes its result."""
        for slot in self.slots:
            stack = [t for key in list(slot.region) for t in self.o.by_key[key].inputs if t in self.o.static]
            while stack:
                producer = self.o.producer.get(stack.pop())
                if producer is None or producer.key in slot.region or producer.key in self.owner:
                    continue
                slot.region.add(producer.key)
                stack.extend(t for t in producer.inputs if t in self.o.static)

    def _inherit_from_neighbours(self) -> None:
        """Layout conversions and other created nodes take the region of the node they serve."""
        for _ in range(NEIGHBOUR_ROUNDS):
            updates = {}
            for i, slot in enumerate(self.slots):
                if slot.region or slot.saved is None:
                    continue
                for j in self._neighbours(slot.saved):
                    if self.slots[j].region:
                        updates[i] = set(self.slots[j].region)
                        break
            if not updates:
                return
            for i, region in updates.items():
                self.slots[i].region = region
                self.slots[i].method = "neighbour"

    def _neighbours(self, node: GraphNode) -> list[int]:
        """Executed neighbours in the saved graph, the one a layout conversion serves first.

        onnxruntime inserts a conversion for a kernel it rewrote (an NCHWc or NHWC kernel, a MatMul+Add
        turned into a 2-D Gemm): a rewritten neighbour comes first, then the consumer for a conversion into
        a blocked or channels-last layout, else the producer.
        """
        assert self.s is not None  # a slot has a saved node only when the saved graph was read
        producers = [self.s.producer[t] for t in self.s.data_inputs(node) if t in self.s.producer]
        consumers = [c for t in node.outputs if t for c in self.s.consumers.get(t, ())]
        ordered = consumers + producers if self._serves_consumer(node, consumers) else producers + consumers
        executed = [self.exec_of_saved[n.key] for n in ordered if n.key in self.exec_of_saved]
        return sorted(executed, key=lambda j: not self._rewritten(j))  # stable: keeps the preference

    def _rewritten(self, j: int) -> bool:
        slot = self.slots[j]
        if slot.saved is not None and _layout_specific(slot.saved):
            return True
        ops = {self.o.by_key[k].op_type for k in slot.region}
        return slot.method not in ("exact", "index") or slot.op_type not in ops

    def _serves_consumer(self, node: GraphNode, consumers: list[GraphNode]) -> bool:
        if node.op_type == "ReorderInput":
            return True
        if node.op_type == "Transpose":
            return any(_layout_specific(c) for c in consumers)
        return False


def _layout_specific(node: GraphNode) -> bool:
    """A kernel running in a blocked or channels-last layout (NCHWc, NHWC)."""
    return node.domain in _LAYOUT_DOMAINS or node.channels_last
