"""Steps 2-4 of layer matching (see generator.analysis.layer_match): group the executed nodes of two versions
by shared names, then by shared weights, then by producer, with a union-find over the nodes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from generator.analysis.layer_names import MAX_WEIGHT_USERS, REMOVABLE_OPS, UNNAMED

if TYPE_CHECKING:
    from generator.analysis.layer_match import Executed


def group_executed(nodes: Sequence[Executed]) -> list[list[Executed]]:
    """The groups of `nodes` (both versions, overhead excluded), each in node order, ordered by first member."""
    uf = _UnionFind(len(nodes))
    _link_by_names(nodes, uf)
    _link_by_weights(nodes, uf)
    _link_to_producers(nodes, uf)
    members: dict[int, list[Executed]] = defaultdict(list)
    for i, e in enumerate(nodes):
        members[uf.find(i)].append(e)
    return [ms for _, ms in sorted(members.items())]


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)


def _link_by_names(nodes: Sequence[Executed], uf: _UnionFind) -> None:
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(nodes):
        for key in e.keys:
            by_key[key].append(i)
    for key, members in by_key.items():
        if UNNAMED.match(key):
            _link_unnamed(nodes, members, uf)
        else:
            for j in members[1:]:
                uf.union(members[0], j)


def _link_unnamed(nodes: Sequence[Executed], members: list[int], uf: _UnionFind) -> None:
    """An `<op>_<position>` key always links within a version; across versions only with agreeing evidence,
    because a transform that inserts nodes shifts positions."""
    for i in members:
        for j in members:
            if i < j and _same_unnamed(nodes[i], nodes[j]):
                uf.union(i, j)


def _same_unnamed(x: Executed, y: Executed) -> bool:
    if x.side == y.side:
        return True
    if x.weight_keys or y.weight_keys:
        return bool(set(x.weight_keys) & set(y.weight_keys))
    return x.op_type == y.op_type and x.input_shapes == y.input_shapes


def _one_sided(nodes: Sequence[Executed], uf: _UnionFind) -> list[int]:
    """The nodes whose group holds one version only, in ascending order (each node's root looked up once)."""
    roots = [uf.find(i) for i in range(len(nodes))]
    sides: dict[int, set[str]] = defaultdict(set)
    for root, e in zip(roots, nodes, strict=True):
        sides[root].add(e.side)
    return [i for i, root in enumerate(roots) if len(sides[root]) == 1]


def _link_by_weights(nodes: Sequence[Executed], uf: _UnionFind) -> None:
    """One-sided nodes join the other version's group that shares most of their weights (a unique best)."""
    users: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, e in enumerate(nodes):
        for w in e.weight_keys:
            users[(e.side, w)].append(i)
    for i in _one_sided(nodes, uf):
        e, votes = nodes[i], defaultdict(int)
        for w in e.weight_keys:
            mine, theirs = users[(e.side, w)], users[("b" if e.side == "a" else "a", w)]
            if len(mine) > MAX_WEIGHT_USERS or len(theirs) > MAX_WEIGHT_USERS:
                continue  # a shared constant
            for root in {uf.find(j) for j in theirs}:
                votes[root] += 1
        ranked = sorted(votes.items(), key=lambda kv: -kv[1])
        if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
            uf.union(i, ranked[0][0])


def _link_to_producers(nodes: Sequence[Executed], uf: _UnionFind) -> None:
    """Removed activations/normalizations still one-sided join the group of their producer."""
    for i in _one_sided(nodes, uf):
        e = nodes[i]
        if e.op_type not in REMOVABLE_OPS or not e.input_shapes:
            continue
        for j in range(i - 1, -1, -1):
            p = nodes[j]
            if p.side == e.side and e.input_shapes[0] in p.output_shapes:
                uf.union(i, j)
                break
