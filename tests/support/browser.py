"""Driving the built site in headless Chromium (playwright): open a page and record what it did, wait for its
charts, check their marks, read table columns, hover marks for tooltips, open the chooser's layer panel, and check
that hostile text stayed inert. The browser and the sites themselves are fixtures in tests/browser/conftest.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

MARKS = "svg .mark-symbol path, svg .mark-line path, svg .mark-rect path"
PHONE = {"width": 390, "height": 844}  # a phone held upright, the narrowest layout pages are checked at
CHARTS_DRAWN = f"""() => Array.from(document.querySelectorAll('.perfsite-chart'))
    .every(el => el.querySelector('{MARKS}') !== null || el.textContent.includes('Chart'))"""
LOCAL_SCHEMES = {"data", "blob", "about", "file"}


@dataclass
class Visit:
    """What a page did while loaded: console errors, uncaught exceptions, requests, dialogs."""

    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def foreign_requests(self) -> list[str]:
        def foreign(url: str) -> bool:
            parsed = urlparse(url)
            return parsed.scheme not in LOCAL_SCHEMES and parsed.hostname != "127.0.0.1"

        return [u for u in self.requests if foreign(u)]


def open_page(browser, url: str, **context_options):
    """A new context (playwright's new_context options, such as a viewport) and page at `url`, once its charts
    are drawn: (context, page, Visit)."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    visit = Visit()
    page.on("console", lambda m: visit.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: visit.errors.append(str(e)))
    page.on("request", lambda r: visit.requests.append(r.url))
    page.on("dialog", lambda d: (visit.dialogs.append(d.message), d.dismiss()))
    page.goto(url, wait_until="load")
    page.wait_for_function(CHARTS_DRAWN, timeout=20_000)
    return context, page, visit


def visit_pages(browser, urls: list[str], **context_options):
    """Each of `urls` in turn, in one context and one tab, once its charts are drawn: (url, page, Visit) per
    page, each Visit recording that page alone. One context for a whole site instead of one a page: the site's
    scripts are fetched and compiled once, as a reader's browser does (about a fifth of a page's time).
    `context_options`: playwright's new_context options, such as a viewport."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    current = [Visit()]
    page.on("console", lambda m: current[0].errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: current[0].errors.append(str(e)))
    page.on("request", lambda r: current[0].requests.append(r.url))
    page.on("dialog", lambda d: (current[0].dialogs.append(d.message), d.dismiss()))
    try:
        for url in urls:
            current[0] = Visit()
            page.goto(url, wait_until="load")
            page.wait_for_function(CHARTS_DRAWN, timeout=20_000)
            yield url, page, current[0]
    finally:
        context.close()


def html_pages(site: Path) -> list[str]:
    """Every HTML page of a built site, relative to it."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))


# Every drawn mark of every chart (points, lines, bars, rules, text) whose centre lies outside its plot frame, by
# SVG geometry; marks of a clipped layer are drawn only inside the frame and are skipped. One pixel of slack.
MARKS_OUTSIDE = """() => {
  const out = [];
  document.querySelectorAll('.perfsite-chart svg').forEach((svg, chart) => {
    svg.querySelectorAll('g.role-mark').forEach(group => {
      if (group.getAttribute('clip-path')) return;
      const frame = group.closest('g.role-frame');
      const background = frame && frame.querySelector(':scope > g > path.background');
      if (!background) return;
      const f = background.getBoundingClientRect();
      if (f.width === 0 || f.height === 0) return;
      group.querySelectorAll(':scope > path, :scope > line, :scope > text, :scope > rect, :scope > g > path')
        .forEach(item => {
          const b = item.getBoundingClientRect();
          if (b.width === 0 && b.height === 0) return;
          const x = b.left + b.width / 2, y = b.top + b.height / 2;
          if (x < f.left - 1 || x > f.right + 1 || y < f.top - 1 || y > f.bottom + 1) {
            out.push(`chart ${chart} ${group.getAttribute('class')}: centre (${x.toFixed(0)}, ${y.toFixed(0)}) ` +
                     `outside the frame ${f.left.toFixed(0)}-${f.right.toFixed(0)} x ` +
                     `${f.top.toFixed(0)}-${f.bottom.toFixed(0)}`);
          }
        });
    });
  });
  return out;
}"""


def assert_no_mark_outside_its_frame(page, where: str) -> None:
    outside = page.evaluate(MARKS_OUTSIDE)
    assert not outside, f"{where}: {len(outside)} marks outside their chart's frame: {outside[:5]}"


# Per chart of the page, what a reader at its width cannot read: text (titles, axis and legend labels) reaching
# out of the chart's frame, and labels of one axis that overlap or touch (under 2 px apart, as "1,0001,500"
# reads). Hidden labels (Vega's overlap removal sets their opacity to 0) do not count.
CHART_FAULTS = """() => {
  const faults = [];
  const shown = (t) => t.getAttribute("opacity") !== "0" && t.textContent.trim() !== "";
  document.querySelectorAll(".perfsite-chart[data-chart]").forEach((el) => {
    const frame = el.getBoundingClientRect(), name = el.dataset.chart;
    el.querySelectorAll("svg text").forEach((t) => {
      const r = t.getBoundingClientRect();
      if (!shown(t) || r.width === 0) return;
      if (r.left < frame.left - 1 || r.right > frame.right + 1) {
        const role = (t.closest("g[class*='role-']") || el).getAttribute("class");
        faults.push(`${name}: "${t.textContent.slice(0, 40)}" (${role}) outside its frame`);
      }
    });
    el.querySelectorAll("svg g.role-axis").forEach((axis) => {
      const labels = Array.from(axis.querySelectorAll("g.role-axis-label text")).filter(shown)
        .map((t) => [t.textContent, t.getBoundingClientRect()]);
      labels.forEach(([a, ra], i) => labels.slice(i + 1).forEach(([b, rb]) => {
        if (ra.left < rb.right + 2 && rb.left < ra.right + 2 && ra.top < rb.bottom && rb.top < ra.bottom)
          faults.push(`${name}: axis labels "${a}" and "${b}" overlap`);
      }));
    });
  });
  return faults;
}"""


def assert_charts_fit(page, where: str) -> None:
    faults = page.evaluate(CHART_FAULTS)
    assert not faults, f"{where} at {page.viewport_size['width']} px: {len(faults)} faults: {faults[:6]}"


# Per chart of the page: its drawn marks, its rendered SVGs and the start of its text, in one round trip to
# the browser (two locator counts a chart took a round trip each).
CHART_COUNTS = f"""() => Array.from(document.querySelectorAll('.perfsite-chart')).map(el => ({{
    marks: el.querySelectorAll('{MARKS}').length, svgs: el.querySelectorAll('svg.marks').length,
    text: el.innerText.slice(0, 300)}}))"""


def assert_charts_drawn(page, where: str) -> int:
    charts = page.evaluate(CHART_COUNTS)
    for i, chart in enumerate(charts):
        assert chart["marks"] > 0, f"{where}: chart {i} drew no marks: {chart['text']!r}"
        assert chart["svgs"] == 1, f"{where}: chart {i} rendered more than once"
    return len(charts)


def column(page, table, header: str) -> list[str]:
    headers = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    index = next(i for i, h in enumerate(headers) if h.startswith(header))
    return [c.strip() for c in table.locator(f"tbody tr td:nth-child({index + 1})").all_inner_texts()]


def hover_marks(page) -> None:
    """Hover bars and points (twelve at most) so Vega shows their tooltips (which carry op types and version
    names). A bar of zero width (an op type whose time, less the profiler's cost, is 0 µs) cannot be hovered:
    playwright called it outside the viewport."""
    marks = page.locator("svg .mark-rect path, svg .mark-symbol path")
    hovered = 0
    for i in range(marks.count()):
        box = marks.nth(i).bounding_box()
        if box is None or box["width"] <= 0 or box["height"] <= 0:
            continue
        marks.nth(i).hover(force=True)
        hovered += 1
        if hovered == 12:
            break
    page.wait_for_timeout(100)


# The chooser page (tests/browser/test_chooser_browser.py).
READY = ".perfsite-chooser-status[data-ready]"
LAYER = '[data-section="layer"]'


def open_layer(page, index: int = 0) -> str:
    """Click the kernel table's index-th layer name; return that layer's name once its panel is drawn."""
    button = page.locator('[data-section="kernels"] button.perfsite-layer-open').nth(index)
    name = button.inner_text()
    button.click()
    page.wait_for_function(f"() => {{ const s = document.querySelector('{LAYER}'); "
                           f"return s && s.dataset.layer === {name!r} && s.querySelector('table'); }}")
    return name


# Hostile text (tests/browser/test_payload_model.py): shown as text, never run.
EXECUTABLE_PAYLOAD_SCRIPTS = """() => Array.from(document.scripts)
    .filter(s => s.type !== 'application/json')
    .filter(s => /alert\\(|perfsitePwned/.test(s.textContent)).length"""


def assert_inert(page, rel: str, visit) -> None:
    assert not visit.dialogs, f"{rel}: a dialog opened: {visit.dialogs}"
    assert page.evaluate("() => window.perfsitePwned") is None, f"{rel}: a payload script ran"
    assert page.locator("img[src='x'], svg[onload], a[href^='javascript']").count() == 0, rel
    assert page.evaluate(EXECUTABLE_PAYLOAD_SCRIPTS) == 0, f"{rel}: a payload became a script element"
    assert page.locator("#vg-tooltip-element img, #vg-tooltip-element script").count() == 0, rel
