"""A real model whose node names and metadata carry HTML/JavaScript/Markdown/template payloads, measured by
`perfsite run` (quick mode), with payloads in the spec's description too, built by `perfsite build`: every page
in headless Chromium shows the payloads as text, opens no dialog and runs none of their scripts, also while the
charts' tooltips are shown."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from onnx import TensorProto, helper, numpy_helper
from perfsite_testing import perfsite, write_spec
from test_site_browser import _assert_charts_drawn, _hover_marks, _open, _pages

from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser

# One payload per node (node names must be unique); the last one also checks that a quote, a backslash and a
# table-cell separator stay inside their cell.
NODE_NAMES = (
    "matmul <script>alert(1)</script>",
    "relu <img src=x onerror=alert(1)>",
    "add <svg onload=window.perfsitePwned=1></svg>",
    'sigmoid " \\ {{ 7*7 }} | [a](javascript:alert(1))',
)
INPUT = "in<script>alert(2)</script>"
DESCRIPTION = ("Payload <script>alert(3)</script> <img src=x onerror=\"window.perfsitePwned=2\">\n\n"
               "- [click](javascript:alert(4)) {{ 7*7 }} | cell")
METADATA = "<script>alert(5)</script><img src=x onerror=alert(6)> ](javascript:alert(7)) {{ 7*7 }} |"
EXECUTABLE_PAYLOAD_SCRIPTS = """() => Array.from(document.scripts)
    .filter(s => s.type !== 'application/json')
    .filter(s => /alert\\(|perfsitePwned/.test(s.textContent)).length"""


def _payload_model(path: Path) -> Path:
    """x [batch, 8] -> MatMul -> Relu -> Add -> Sigmoid -> y, payloads in node names and metadata."""
    x = helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("out {{ 7*7 }} |", TensorProto.FLOAT, ["batch", 8])
    weights = [numpy_helper.from_array(np.eye(8, dtype=np.float32), "w"),
               numpy_helper.from_array(np.full(8, 0.5, dtype=np.float32), "bias")]
    tensors = [INPUT, "a", "b", "c", y.name]
    ops = [("MatMul", ["w"]), ("Relu", []), ("Add", ["bias"]), ("Sigmoid", [])]
    nodes = [helper.make_node(op, [tensors[i], *extra], [tensors[i + 1]], name=NODE_NAMES[i], doc_string=METADATA)
             for i, (op, extra) in enumerate(ops)]
    graph = helper.make_graph(nodes, METADATA, [x], [y], weights, doc_string=METADATA)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], doc_string=METADATA,
                              producer_name=METADATA)
    model.ir_version = 10
    helper.set_model_props(model, {METADATA: METADATA, "author": METADATA})
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def payload_model_site(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("payload-model")
    (project / "models").mkdir()
    _payload_model(project / "models" / "payload.onnx")
    write_spec(project, f"""\
        name: payload
        description: {json.dumps(DESCRIPTION)}
        models:
          fp32: {{path: models/payload.onnx}}
        inputs:
          {json.dumps(INPUT)}: {{shape: [batch, 8], dtype: float32}}
        sweep: {{batch: [1, 2]}}
        measure: {{warmup: 1, min_iterations: 3, min_seconds: 0.01, max_seconds: 1, repeats: 1,
                   profile_iterations: 2}}
        """)
    run = perfsite("run", "spec.yaml", "--quick", "--results", "results", cwd=project, timeout=300)
    assert run.returncode == 0, run.stderr
    nodes = pd.read_parquet(project / "results" / "payload" / "nodes")
    assert set(NODE_NAMES) <= set(nodes["node_name"]), "the payload node names did not reach the results"
    build = perfsite("build", "--results", "results", "--site", "site", cwd=project, timeout=300)
    assert build.returncode == 0, build.stderr
    return project / "site"


def _assert_inert(page, rel: str, visit) -> None:
    assert not visit.dialogs, f"{rel}: a dialog opened: {visit.dialogs}"
    assert page.evaluate("() => window.perfsitePwned") is None, f"{rel}: a payload script ran"
    assert page.locator("img[src='x'], svg[onload], a[href^='javascript']").count() == 0, rel
    assert page.evaluate(EXECUTABLE_PAYLOAD_SCRIPTS) == 0, f"{rel}: a payload became a script element"
    assert page.locator("#vg-tooltip-element img, #vg-tooltip-element script").count() == 0, rel


def test_payload_model_pages_show_the_text_and_run_nothing(chromium, payload_model_site):
    pages = _pages(payload_model_site)
    assert {"reports/payload/index.html", "reports/payload/profile-fp32.html"} <= set(pages)
    with BackgroundServer(payload_model_site) as url:
        for rel in pages:
            context, page, visit = _open(chromium, url + rel)
            _assert_charts_drawn(page, rel)
            text = page.locator("article").inner_text() if page.locator("article").count() else ""
            if rel == "reports/payload/index.html":
                for piece in ("<script>alert(3)</script>", "[click](javascript:alert(4)) {{ 7*7 }} | cell"):
                    assert piece in text, f"{rel}: {piece!r} is not shown as text"
            if rel == "reports/payload/profile-fp32.html":
                for name in NODE_NAMES:
                    assert name in text, f"{rel}: node {name!r} is not shown as text"
                # The `|` did not split the table: the whole name is one cell.
                assert page.locator("article td", has_text=NODE_NAMES[-1]).count() >= 1, rel
            _assert_inert(page, rel, visit)
            _hover_marks(page)
            _assert_inert(page, f"{rel} (tooltips shown)", visit)
            assert not visit.errors, f"{rel}: console errors {visit.errors}"
            assert not visit.foreign_requests(), f"{rel}: requests outside 127.0.0.1: {visit.foreign_requests()}"
            context.close()
