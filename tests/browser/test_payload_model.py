"""A real model whose node names and metadata carry HTML/JavaScript/Markdown/template payloads, measured by
`perfsite run` (quick mode), with payloads in the spec's description too, built by `perfsite build`: every page
in headless Chromium shows the payloads as text, opens no dialog and runs none of their scripts, also while the
charts' tooltips are shown."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support.browser import assert_charts_drawn, assert_inert, hover_marks, html_pages, visit_pages
from support.cli import perfsite, write_spec
from support.models import PAYLOAD_INPUT, PAYLOAD_NODE_NAMES, payload_model

from generator.site.serve import BackgroundServer

pytestmark = pytest.mark.browser

DESCRIPTION = ("Payload <script>alert(3)</script> <img src=x onerror=\"window.perfsitePwned=2\">\n\n"
               "- [click](javascript:alert(4)) {{ 7*7 }} | cell")


@pytest.fixture(scope="module")
def payload_model_site(tmp_path_factory, _probe_cache) -> Path:
    project = tmp_path_factory.mktemp("payload-model")
    (project / "models").mkdir()
    payload_model(project / "models" / "payload.onnx")
    write_spec(project, f"""\
        name: payload
        description: {json.dumps(DESCRIPTION)}
        models:
          fp32: {{path: models/payload.onnx}}
        inputs:
          {json.dumps(PAYLOAD_INPUT)}: {{shape: [batch, 8], dtype: float32}}
        sweep: {{batch: [1]}}
        measure: {{warmup: 1, min_iterations: 3, min_seconds: 0.01, max_seconds: 1, repeats: 1,
                   profile_iterations: 2, budget_s: 0.01}}
        """)  # budget_s: one process a trial; the pages' text is the subject here, not how long a trial measures
    # The suite's caches, never the home folder's: a module fixture runs before the autouse fixtures that set them.
    env = {"PERFSITE_QUICK": "1", "PERFSITE_CACHE_DIR": str(_probe_cache)}
    run = perfsite("run", "spec.yaml", "--quick", "--results", "results", cwd=project, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    nodes = pd.read_parquet(project / "results" / "payload" / "nodes")
    assert set(PAYLOAD_NODE_NAMES) <= set(nodes["node_name"]), "the payload node names did not reach the results"
    build = perfsite("build", "--results", "results", "--site", "site", cwd=project, env=env, timeout=300)
    assert build.returncode == 0, build.stderr
    return project / "site"


def test_payload_model_pages_show_the_text_and_run_nothing(chromium, payload_model_site):
    pages = html_pages(payload_model_site)
    assert {"reports/payload/index.html", "reports/payload/profile-fp32.html"} <= set(pages)
    with BackgroundServer(payload_model_site) as url:
        for address, page, visit in visit_pages(chromium, [url + rel for rel in pages]):
            rel = address.removeprefix(url)
            assert_charts_drawn(page, rel)
            text = page.locator("article").inner_text() if page.locator("article").count() else ""
            if rel == "reports/payload/index.html":
                for piece in ("<script>alert(3)</script>", "[click](javascript:alert(4)) {{ 7*7 }} | cell"):
                    assert piece in text, f"{rel}: {piece!r} is not shown as text"
            if rel == "reports/payload/profile-fp32.html":
                for name in PAYLOAD_NODE_NAMES:
                    assert name in text, f"{rel}: node {name!r} is not shown as text"
                # The `|` did not split the table: the whole name is one cell.
                assert page.locator("article td", has_text=PAYLOAD_NODE_NAMES[-1]).count() >= 1, rel
            assert_inert(page, rel, visit)
            hover_marks(page)
            assert_inert(page, f"{rel} (tooltips shown)", visit)
            assert not visit.errors, f"{rel}: console errors {visit.errors}"
            assert not visit.foreign_requests(), f"{rel}: requests outside 127.0.0.1: {visit.foreign_requests()}"
