"""Snapshots of the generated Markdown pages and chart specs for the fixed results in tests/support/results.py.

Regenerate after an intended change with `PERFSITE_UPDATE_SNAPSHOTS=1 pytest tests/test_site_snapshots.py`
and review the diff. Charts are stored pretty-printed beside the pages so that a diff is readable.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from support.cli import check_snapshots
from support.results import write_results

from generator.results.store import load_experiment
from generator.site.pages import home_page, render_pages

SNAPSHOTS = Path(__file__).parent / "snapshots" / "site"
UPDATE = os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1"
CHART_RE = re.compile(r'<script type="application/json" id="([a-z0-9-]+)">(.*?)</script>')


def _generated(tmp_path: Path) -> dict[str, str]:
    """Relative snapshot path -> text, for every page and every chart in it."""
    results = load_experiment(write_results(tmp_path))
    pages, views = render_pages([results])
    out = {}
    for page in [home_page(views), *pages]:
        out[page.path] = page.markdown
        for chart_id, spec in CHART_RE.findall(page.markdown):
            name = f"{page.path.removesuffix('.md')}.{chart_id}.json"
            (chart,) = json.loads(spec)  # one-element array, see charts.chart_block
            out[name] = json.dumps(chart, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return out


def test_pages_and_charts_match_snapshots(tmp_path):
    generated = _generated(tmp_path)
    check_snapshots(generated, SNAPSHOTS)


def test_generation_is_byte_identical_across_runs(tmp_path):
    assert _generated(tmp_path / "a") == _generated(tmp_path / "b")
