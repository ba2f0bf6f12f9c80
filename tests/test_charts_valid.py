"""Every chart of the snapshot pages is a valid Vega-Lite spec.

The build writes charts without altair's schema validation (generator.site.charts.chart_block: it was a tenth of
a big site's build); the snapshot tests keep the specs the build writes, and this validates
one chart of each kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

SNAPSHOTS = Path(__file__).parent / "snapshots"


def test_every_kind_of_snapshot_chart_is_valid_vega_lite():
    # One chart per kind (the chart id without its section number): a validation takes 0.2-0.8 s.
    kinds: dict[str, Path] = {}
    for path in sorted(SNAPSHOTS.rglob("*.chart-*.json")):
        kinds.setdefault(re.sub(r"-\d+$", "", path.stem.split(".chart-")[-1]), path)
    assert {"latency-throughput", "op-time", "ops-time", "roofline", "timeline", "temporal",
            "compare-results", "versions"} <= set(kinds)
    schema = load_schema()
    for path in kinds.values():
        spec = json.loads(path.read_text(encoding="utf-8"))
        assert "vega-lite" in spec["$schema"], path
        validate_jsonschema(spec, schema)  # raises, naming the offending part, on an invalid chart
