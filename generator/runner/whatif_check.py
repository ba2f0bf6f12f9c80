"""The spec's `whatif` keys checked against the models a run plans to measure, before anything is measured.

A key names an op type (or its family: `Conv` covers `FusedConv` and `QLinearConv`) or a node
(generator.analysis.whatif). A key that names nothing in any version's graph, `whatif: {Cnov: 2}`, passed
`validate` and `run`, and only the profile page said "Not found among the executed nodes: Cnov". The graphs
are known at planning (the versions are built by then), the executed kernels are not: onnxruntime may fuse
nodes into kernels of other names. So a key that names nothing in the graphs is a warning with a "did you
mean", not an error.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path

import onnx

from generator.layers.work import op_family


def whatif_warnings(spec_path: Path, whatif: Iterable[str], models: Mapping[str, Path]) -> list[str]:
    """One warning per `whatif` key that is neither an op type, an op family nor a node name of a model."""
    keys = list(whatif)
    if not keys:
        return []
    op_types: set[str] = set()
    node_names: set[str] = set()
    for path in dict.fromkeys(models.values()):
        graph = onnx.load(str(path), load_external_data=False).graph
        op_types.update(node.op_type for node in graph.node)
        node_names.update(node.name for node in graph.node if node.name)
    families = {op_family(t) for t in op_types}
    known = op_types | families | node_names
    return [_warning(spec_path, key, sorted(op_types | families)) for key in keys
            if key not in known and op_family(key) not in families]


def _warning(spec_path: Path, key: str, op_types: list[str]) -> str:
    close = difflib.get_close_matches(key, op_types, n=3)
    guess = f" Did you mean {', '.join(close)}?" if close else ""
    return (f"Warning: {spec_path}: whatif.{key}: no op type, op family or node of the spec's models is named "
            f"{key!r}, so its factor would speed up nothing (the profile pages would say it was not found).{guess}"
            f" Allowed: an op type the models have ({', '.join(op_types)}), or a node name.")
