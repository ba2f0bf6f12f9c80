"""The "choose A and B" page in headless Chromium, on the recorded results of tests/support/compare.py: the
default pair says what its compare page says (every kernel row's interval, which the page script computes,
included), choosing another version and configuration changes every section and the address, the address
restores the choice, and the page works opened from disk."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

import pytest
from support.browser import LAYER, READY, open_layer, open_page

from generator.analysis.compare import compare_versions
from generator.results.store import load_experiment
from generator.site.compare_page import ratio_cell

pytestmark = pytest.mark.browser

EXPERIMENT = "reports/tiny-compare/"
SECTIONS = ("verdict", "time", "types", "kernels", "overhead", "agreement", "advice")


def _sections(page) -> dict[str, str]:
    return {s: page.inner_text(f'[data-section="{s}"]') for s in SECTIONS}


def _ready(page, previous: str | None = None) -> str:
    """Wait until the chosen pair is drawn (a different one than `previous`), return its status line."""
    page.wait_for_function(
        f"() => {{ const s = document.querySelector('{READY}'); return s && s.dataset.ready !== {previous!r}; }}"
        if previous else f"() => document.querySelector('{READY}') !== null")
    return page.locator(READY).get_attribute("data-ready")


def _choose(page, side: str, version: str | None = None, config_index: int | None = None) -> None:
    before = page.locator(READY).get_attribute("data-ready")
    if version is not None:
        page.select_option(f'select[data-side="{side}"][data-field="version"]', version)
    if config_index is not None:
        page.select_option(f'select[data-side="{side}"][data-field="config"]', index=config_index)
    _ready(page, before)


# One chooser page at its default pair for the tests that read it (a load was about 1.5 s on 2 cores): one
# shows every kernel row, one opens a layer's panel, which no other reads; the test that chooses another pair
# works on the chooser the compare page's link opened (linked_chooser).
@pytest.fixture(scope="module")
def default_chooser(chromium, compare_url):
    context, page, visit = open_page(chromium, compare_url + EXPERIMENT + "choose.html")
    _ready(page)
    yield context, page, visit
    context.close()


# The compare page, then the chooser its link opens: what the compare page said and the chooser's status on
# arrival, read before any test works the chooser, which the test of choosing B then does (one chooser load
# fewer than opening a third at the default pair for it).
@pytest.fixture(scope="module")
def linked_chooser(chromium, compare_url):
    context, page, visit = open_page(chromium, compare_url + EXPERIMENT + "compare-fp32-vs-int8-static.html")
    compare_text = page.inner_text("article")
    page.click("text=Choose another A, B or configuration")
    _ready(page)
    yield compare_text, page.inner_text(".perfsite-chooser-status"), page, visit
    context.close()


def test_default_pair_says_what_its_compare_page_says(linked_chooser, default_chooser):
    compare_text, arrived, _, visit = linked_chooser
    verdict = re.search(r"B is [\d.]+× (?:faster|slower) \(95 % CI [^)]*\)", compare_text)
    assert verdict, "the compare page states a latency verdict"
    config = re.search(r"at (b\d+ t\d+ c\d+)", compare_text)
    # The compare page's link opens the chooser at its own pair and configuration.
    assert arrived == f"A: fp32 at {config.group(1)} · B: int8-static at {config.group(1)}"
    assert visit.errors == [] and not any(r.startswith("http") and "127.0.0.1" not in r for r in visit.requests)
    _, page, visit = default_chooser
    status = page.inner_text(".perfsite-chooser-status")
    assert status.startswith("A: fp32 at ") and " · B: int8-static at " in status
    shown = _sections(page)
    assert verdict.group(0) in shown["verdict"]
    assert "Conv" in shown["types"] and "B / A" in page.inner_html('[data-section="types"]')
    kernels = page.locator('[data-section="kernels"] tbody tr')
    assert kernels.count() >= 5, shown["kernels"]
    # Figures as every page writes them, three significant digits (the chooser printed 47.05 where pages said 47.0).
    cells = page.locator('[data-section="types"] td, [data-section="kernels"] td').all_inner_texts()
    assert not [c for c in cells if re.fullmatch(r"-?(\d{2}\.\d{2,}|\d\.\d{3,}|0\.0*[1-9]\d{3,})", c.strip())], cells
    assert visit.errors == [] and not any(r.startswith("http") and "127.0.0.1" not in r for r in visit.requests)


def test_every_kernel_rows_interval_is_the_compare_analysis_one(default_chooser, compare_site):
    """The page script computes a kernel row's ratio interval (generator.analysis.chooser says why): for the
    default pair, every row shows the compare analysis's ratio and interval, formatted as the compare page
    formats them."""
    results = load_experiment(compare_site.parent / "results" / "tiny-compare")
    c = compare_versions(results, "fp32", "int8-static")
    expected = sorted((k.layer, *ratio_cell(k.ratio)) for k in c.kernels)
    _, page, visit = default_chooser
    show_all = page.locator('[data-section="kernels"] button.md-button')
    if show_all.count():
        show_all.click()
    shown = page.evaluate("""() => Array.from(document.querySelectorAll('[data-section="kernels"] tbody tr'))
        .map(tr => [0, 5, 6].map(i => tr.cells[i].textContent))""")
    assert sum(1 for *_, interval in expected if "–" in interval) >= 5  # rows that show an interval to check
    assert sorted(tuple(row) for row in shown) == expected
    assert visit.errors == []


def test_choosing_b_and_its_configuration_changes_every_section_and_the_address(linked_chooser):
    """From the chooser the compare page's link opened (fp32 and int8-static at the compare page's
    configuration)."""
    *_, page, visit = linked_chooser
    context = page.context
    before = _sections(page)
    versions = page.locator('select[data-side="b"][data-field="version"] option').all_inner_texts()
    other = next(v for v in versions if v not in ("fp32", "int8-static"))  # a third version of the recording
    _choose(page, "b", version=other)
    after = _sections(page)
    assert other in page.inner_text(".perfsite-chooser-status")
    for name in ("verdict", "time", "types", "kernels"):
        assert after[name] != before[name], f"the {name} section did not follow the choice of B"
    # A different configuration for B only: A keeps its own, the note says the two ran differently.
    configs = page.locator('select[data-side="b"][data-field="config"] option').all_inner_texts()
    a_config = page.locator('select[data-side="a"][data-field="config"]').input_value()
    index = next(i for i, c in enumerate(configs) if c != a_config)
    _choose(page, "b", config_index=index)
    assert "different configurations" in page.inner_text('[data-section="verdict"]')
    assert configs[index] in page.inner_text('[data-section="time"]')
    hash_ = unquote(page.evaluate("location.hash"))
    assert f"b={other}" in hash_ and f"bc={configs[index]}" in hash_ and f"ac={a_config}" in hash_
    # The address is shareable: a new page opened at it shows the same choice.
    shared = context.new_page()
    shared.goto(page.url)
    _ready(shared)
    assert shared.inner_text(".perfsite-chooser-status") == page.inner_text(".perfsite-chooser-status")
    assert _sections(shared)["verdict"] == _sections(page)["verdict"]
    # Swapping A and B turns the verdict around.
    _choose_swap(page)
    assert page.inner_text(".perfsite-chooser-status").startswith(f"A: {other} at {configs[index]}")
    assert visit.errors == []
    shared.close()


def _choose_swap(page) -> None:
    before = page.locator(READY).get_attribute("data-ready")
    page.click(".perfsite-chooser-swap")
    _ready(page, before)


def test_the_chooser_works_opened_from_disk(chromium, compare_site):
    context, page, visit = open_page(chromium, (compare_site / EXPERIMENT / "choose.html").as_uri())
    _ready(page)
    assert "B is" in page.inner_text('[data-section="verdict"]') or "no significant" in page.inner_text(
        '[data-section="verdict"]')
    assert visit.errors == []
    assert all(r.startswith("file://") or r.startswith("data:") for r in visit.requests), visit.requests
    context.close()


def test_a_layer_panel_opens_from_the_kernel_table_and_its_address_reopens_it(default_chooser):
    """The recording predates layer details (schema 2): kernels, shapes and model nodes are shown, attributes
    and weights say "not recorded" rather than an empty cell."""
    context, page, visit = default_chooser
    assert "Click a layer's name" in page.inner_text(LAYER)
    name = open_layer(page)
    panel = page.inner_text(LAYER)
    assert panel.startswith(name) and "Executed kernels" in panel and "Nodes of the model files" in panel
    assert "not recorded" in panel and "properties differ between A and B" in panel
    rows = page.locator(f"{LAYER} .perfsite-layer-compare tbody tr")
    marked = page.locator(f"{LAYER} .perfsite-layer-compare tbody tr.perfsite-differs")
    assert rows.count() >= 5 and 0 < marked.count() < rows.count()  # fp32 vs int8: the precision differs
    assert "layer=" in page.evaluate("location.hash")
    # The click brought the panel into view (it opened far below the kernel table), under the sticky header.
    top = page.evaluate(f"() => document.querySelector('{LAYER}').getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"] / 2, top
    # Back undoes the choice (it left the page): the panel closes, the address is the pair's again.
    page.go_back()
    page.wait_for_function(f"() => !document.querySelector('{LAYER}').dataset.layer")
    assert "layer=" not in page.evaluate("location.hash") and page.inner_text(LAYER).startswith("Click a layer's name")
    page.go_forward()
    page.wait_for_function(f"() => document.querySelector('{LAYER}').dataset.layer === {name!r}")
    shared = context.new_page()
    shared.goto(page.url)
    _ready(shared)
    shared.wait_for_function(f"() => document.querySelector('{LAYER}').dataset.layer === {name!r}")
    assert shared.inner_text(LAYER) == panel
    shared.close()
    assert visit.errors == []


def _unjudged(body: str) -> str:
    """A figures file (`perfsiteChooser.figures(n, k, {…});`) as the analysis writes it for pairs shown without
    a verdict (generator.site.chooser_page._figures): marked `unjudged`, no spread, layer types' ratios alone."""
    head, rest = body.split("(", 1)
    n, k, figures = json.loads(f"[{rest.rstrip().removesuffix(');')}]")
    for f in figures.values():
        f.update(unjudged=True, spread=None, types=[[op, [r[0]] if r else 0] for op, r in f["types"]])
    return f"{head}({n}, {k}, {json.dumps(figures)});\n"


def test_a_pair_shown_without_a_verdict_gives_no_layer_verdict(chromium, compare_url):
    """A pair whose side kept too few clean processes is "not compared" (generator.analysis.trial_stats): its
    layer-type and kernel rows give their ratio and say "not compared", never an interval or "no significant
    difference", which would be a verdict. The figures files are served as the analysis writes them for such a
    pair; the rest of the page is the recorded one."""
    context = chromium.new_context()
    context.route("**/choose/f-*.js", lambda route: route.fulfill(
        status=200, content_type="text/javascript", body=_unjudged(route.fetch().text())))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(compare_url + EXPERIMENT + "choose.html", wait_until="load")
        _ready(page)
        for section in ("types", "kernels"):
            cells = page.evaluate(f"""() => Array.from(document.querySelectorAll(
                '[data-section="{section}"] tbody tr')).map(tr => Array.from(tr.cells).map(c => c.textContent))""")
            compared = [row for row in cells if "not compared" in row]
            assert compared, (section, cells[:3])
            assert not any("no significant difference" in c or re.fullmatch(r"\d+\.\d+–\d+\.\d+", c)
                           for row in cells for c in row), (section, cells[:3])
        assert errors == []
    finally:
        context.close()


def test_the_advice_and_agreement_follow_the_configurations_chosen(chromium, compare_url, compare_site):
    """Issue 34: asked for fp32 against int8-dyn at b4 t1 c1, the page gave "Findings … computed at b8 t1 c2".
    At one configuration both were chosen at, the advice is the compare analysis's there; at two, the page says
    plainly which configuration it comes from."""
    results = load_experiment(compare_site.parent / "results" / "tiny-compare")
    context, page, visit = open_page(chromium, compare_url + EXPERIMENT + "choose.html")
    _ready(page)
    configs = page.locator('select[data-side="a"][data-field="config"] option').all_inner_texts()
    checked = 0
    for config in configs:
        _at(page, "fp32", config, "int8-static", config)
        advice = page.inner_text('[data-section="advice"]')
        assert f"computed at {config}, the configuration both were chosen at" in advice
        assert re.search(r"^\d+ of \d+ findings of this choice settled", page.inner_text('[data-section="verdict"]'))
        c = compare_versions(results, "fp32", "int8-static", _config(config))
        for item in c.advice:
            assert item.text in advice
        agreement = page.inner_text('[data-section="agreement"]')
        assert "No output agreement" in agreement or f"recorded at {config}, the configuration" in agreement
        checked += bool(c.advice)
    assert checked, "no configuration of the recording gave advice to compare"
    _at(page, "fp32", configs[0], "int8-static", configs[-1])
    assert (f"computed at {configs[-1]}: A and B were chosen at different configurations (A at {configs[0]}, B at "
            f"{configs[-1]})") in page.inner_text('[data-section="advice"]')
    assert visit.errors == []
    context.close()


def _at(page, a: str, a_config: str, b: str, b_config: str) -> None:
    """Choose through the address (the page follows its hash), and wait for that pair to be drawn."""
    status = f"A: {a} at {a_config} · B: {b} at {b_config}"
    if page.inner_text(".perfsite-chooser-status") == status:
        return
    page.evaluate("h => { location.hash = h; }", f"a={a}&ac={a_config}&b={b}&bc={b_config}")
    page.wait_for_function(f"() => document.querySelector('.perfsite-chooser-status').textContent === {status!r}")


def _config(label: str) -> dict:
    """`b4 t1 c2` as the configuration compare_versions takes."""
    batch, threads, concurrency = (int(part[1:]) for part in label.split())
    return {"batch": batch, "threads": threads, "concurrency": concurrency}
