"""`perfsite profile`'s self-contained MODEL.perf.html in headless Chromium from file://: the charts draw, the
layer table sorts, the page requests nothing but itself, and a model's HTML/JavaScript payloads (node names,
input name, metadata, file name) show as text and run nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.browser import assert_charts_drawn, assert_inert, open_page
from support.cli import perfsite
from support.models import PAYLOAD_INPUT, PAYLOAD_NODE_NAMES, payload_model

pytestmark = pytest.mark.browser

PAYLOAD_FILE = "pay<b>load</b>'.onnx".replace("/", "")  # no slash: it is a file name


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return {"PERFSITE_QUICK": "1", "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}


def _hover_marks(page, limit: int = 12) -> int:
    """Hover the visible bars (zero-height ones cannot be hovered) so Vega shows their tooltips."""
    marks = page.locator("svg .mark-rect path")
    hovered = 0
    for i in range(marks.count()):
        box = marks.nth(i).bounding_box()
        if box and box["width"] >= 2 and box["height"] >= 2:
            marks.nth(i).hover(force=True)
            hovered += 1
            if hovered == limit:
                break
    page.wait_for_timeout(100)
    return hovered


def _profile(cwd: Path, env: dict[str, str], *args: str) -> None:
    run = perfsite("profile", *args, "--iterations", "5", "--warmup", "1", "--profile-iterations", "2",
                   cwd=cwd, env=env, timeout=300)
    assert run.returncode == 0, run.stderr


def test_the_profile_page_renders_offline_and_requests_nothing(chromium, example_models, tmp_path, env):
    _profile(tmp_path, env, str(example_models["cnn"]), "--threads", "1")
    page_path = tmp_path / "cnn.perf.html"
    url = page_path.as_uri()
    context, page, visit = open_page(chromium, url)
    assert assert_charts_drawn(page, "cnn.perf.html") == 2
    assert visit.requests == [url], f"requests other than the page itself: {visit.requests}"
    assert not visit.errors, visit.errors
    table = page.locator("#layers-table")
    rows = json.loads((tmp_path / "cnn.perf.json").read_text())["layers"]
    assert table.locator("tbody tr").count() == len(rows)
    table.get_by_role("columnheader", name="Time (µs)", exact=True).click()
    times = [float(t) for t in table.locator("tbody tr td:nth-child(5)").all_inner_texts()]
    assert times == sorted(times) or times == sorted(times, reverse=True)
    assert times != [float(f"{r['dur_us']:.4g}") for r in rows] or len(set(times)) == 1  # the order changed
    with page.expect_download() as download:
        page.get_by_role("button", name="Download Chrome/Perfetto trace").click()
    assert download.value.suggested_filename == "cnn.trace.json"
    trace = json.loads(Path(download.value.path()).read_text())
    assert {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"} >= {r["node_name"] for r in rows}
    assert _hover_marks(page) > 0
    assert page.locator("#vg-tooltip-element").count() == 1
    assert visit.requests == [url] and not visit.errors
    context.close()


def test_payloads_in_the_model_show_as_text_and_run_nothing(chromium, tmp_path, env):
    model = payload_model(tmp_path / PAYLOAD_FILE)
    _profile(tmp_path, env, model.name, "--optimization-level", "disable")
    page_path = tmp_path / PAYLOAD_FILE.replace(".onnx", ".perf.html")
    url = page_path.as_uri()
    context, page, visit = open_page(chromium, url)
    assert_charts_drawn(page, page_path.name)
    text = page.locator("article").inner_text()
    for piece in (*PAYLOAD_NODE_NAMES, PAYLOAD_INPUT, PAYLOAD_FILE):
        assert piece in text, f"{piece!r} is not shown as text"
    assert page.locator("#layers-table td", has_text=PAYLOAD_NODE_NAMES[1]).count() >= 1
    assert_inert(page, page_path.name, visit)
    assert _hover_marks(page) > 0
    assert_inert(page, f"{page_path.name} (tooltips shown)", visit)
    assert page.title() == f"{PAYLOAD_FILE} profile"
    assert visit.requests == [url], f"requests other than the page itself: {visit.requests}"
    assert not visit.errors, visit.errors
    context.close()
