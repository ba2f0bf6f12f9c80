"""`perfsite diff` exports for dashboards: github-action-benchmark's custom JSON and Bencher Metric Format.

The diff is a real one, of the fixed results folders tests/test_diff.py writes through the results store (one
configuration 30 % slower, one unchanged). Each output is validated against its format as the tool itself
documents it:

- github-action-benchmark: README "customBiggerIsBetter / customSmallerIsBetter" and its parser
  (src/extract.ts, a zod schema: an array of {name: string, value: number, unit: string, range?: string,
  extra?: string}); `range` is read by src/extractRangeInfo.ts as `± <number>`.
- Bencher: the BMF JSON Schema published at https://bencher.dev/docs/reference/bencher-metric-format/.
"""

from __future__ import annotations

import json
import math
import re

import jsonschema
import pytest
from support.cli import ROOT, perfsite
from support.diff import REGRESSION, Side, sides

from generator.diff.export import (
    EXPORT_FORMATS,
    bencher_metrics,
    github_action_benchmark_latency,
    github_action_benchmark_throughput,
)
from generator.diff.sources import load_side, open_source
from generator.diff.verdict import DiffResult, diff_experiments

# github-action-benchmark's BenchmarkResult (src/extract.ts) as a JSON Schema.
BENCHMARK_ACTION_SCHEMA = {
    "type": "array", "minItems": 1,
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "number"}, "unit": {"type": "string"},
                       "range": {"type": "string"}, "extra": {"type": "string"}},
        "required": ["name", "value", "unit"],
        "additionalProperties": False,
    },
}
# https://bencher.dev/bmf.json, as published on the BMF reference page.
BMF_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {".+": {
        "type": "object",
        "patternProperties": {".+": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                           "upper_value": {"type": "number"}},
            "required": ["value"],
        }},
    }},
}
# src/extractRangeInfo.ts: the prefix, then a value JavaScript's Number() reads.
RANGE = re.compile(r"^(\+-|±)\s*(?P<value>\d[0-9.e+-]*)$")
SLOWER_CONFIG = "cnn · fp32 · b1 t1 c1"
SAME_CONFIG = "cnn · fp32 · b4 t1 c1"


@pytest.fixture
def regression(tmp_path) -> DiffResult:
    """The diff of test_diff's regression pair: b1 30 % slower, b4 unchanged."""
    base, cand = sides(tmp_path, Side(), REGRESSION)
    with open_source(base, tmp_path) as base_src, open_source(cand, tmp_path) as cand_src:
        return diff_experiments(load_side(base_src), load_side(cand_src), ("baseline", "candidate"))


def by_name(entries: list[dict]) -> dict[str, dict]:
    return {e["name"]: e for e in entries}


def test_github_action_benchmark_latency_and_throughput_files(regression):
    latency, throughput = (github_action_benchmark_latency(regression),
                           github_action_benchmark_throughput(regression))
    for entries in (latency, throughput):
        jsonschema.validate(json.loads(json.dumps(entries)), BENCHMARK_ACTION_SCHEMA)
        assert set(by_name(entries)) == {SLOWER_CONFIG, SAME_CONFIG}
    trials = {t.name: t for t in regression.trials}
    slow = by_name(latency)[SLOWER_CONFIG]
    assert slow["unit"] == "ms" and slow["value"] == trials[SLOWER_CONFIG].latency_candidate_ms
    low, high = trials[SLOWER_CONFIG].latency_candidate_ci
    half = float(RANGE.match(slow["range"]).group("value"))
    assert half == pytest.approx(max(slow["value"] - low, high - slow["value"]), rel=1e-5)
    assert slow["extra"].splitlines()[0] == "latency p90" and slow["extra"].endswith("verdict: slower")
    assert "change +3" in slow["extra"]  # the 30 % slowdown, with its interval
    thr = by_name(throughput)[SAME_CONFIG]
    assert thr["unit"] == "items/s" and thr["value"] == trials[SAME_CONFIG].throughput_candidate_ips
    assert RANGE.match(thr["range"]) and thr["extra"].endswith("verdict: no significant change")


def test_bencher_metric_format(regression):
    bmf = bencher_metrics(regression)
    jsonschema.validate(json.loads(json.dumps(bmf)), BMF_SCHEMA)
    assert set(bmf) == {SLOWER_CONFIG, SAME_CONFIG}
    for t in regression.trials:
        measures = bmf[t.name]
        assert set(measures) == {"latency", "throughput"}  # Bencher's built-in measures
        latency = measures["latency"]
        assert latency["value"] == pytest.approx(t.latency_candidate_ms * 1e6)  # Bencher's latency is in ns
        assert latency["lower_value"] <= latency["value"] <= latency["upper_value"]
        assert (latency["lower_value"], latency["upper_value"]) == pytest.approx(
            tuple(v * 1e6 for v in t.latency_candidate_ci))
        thr = measures["throughput"]
        assert thr["value"] == pytest.approx(t.throughput_candidate_ips)
        assert thr["lower_value"] <= thr["value"] <= thr["upper_value"]
    # Candidate figures, not the baseline's: the slower configuration's latency is about 30 % above its baseline.
    slow = next(t for t in regression.trials if t.name == SLOWER_CONFIG)
    assert bmf[SLOWER_CONFIG]["latency"]["value"] / (slow.latency_baseline_ms * 1e6) == pytest.approx(1.3, rel=0.05)


def test_unknown_figures_are_left_out_not_written_as_nan(regression):
    from dataclasses import replace

    broken = replace(regression, trials=tuple(
        replace(t, throughput_candidate_ips=math.nan, latency_candidate_ci=(math.nan, 1.0))
        if t.name == SLOWER_CONFIG else t for t in regression.trials))
    assert SLOWER_CONFIG not in by_name(github_action_benchmark_throughput(broken))
    assert "range" not in by_name(github_action_benchmark_latency(broken))[SLOWER_CONFIG]
    assert set(bencher_metrics(broken)[SLOWER_CONFIG]) == {"latency"}
    assert "lower_value" not in bencher_metrics(broken)[SLOWER_CONFIG]["latency"]
    for convert in EXPORT_FORMATS.values():
        json.dumps(convert(broken), allow_nan=False)  # strict JSON: no NaN anywhere


def test_cli_writes_every_export_beside_the_verdict(tmp_path):
    base, cand = sides(tmp_path, Side(), REGRESSION)
    out = tmp_path / "out"
    done = perfsite("diff", base, cand, "--json", str(out / "verdict.json"),
                    "--benchmark-latency-json", str(out / "latency.json"),
                    "--benchmark-throughput-json", str(out / "throughput.json"),
                    "--bencher-json", str(out / "bmf.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # a regression without --fail-on regression
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "slower"
    for name, schema in (("latency.json", BENCHMARK_ACTION_SCHEMA), ("throughput.json", BENCHMARK_ACTION_SCHEMA),
                         ("bmf.json", BMF_SCHEMA)):
        jsonschema.validate(json.loads((out / name).read_text()), schema)
    assert json.loads((out / "latency.json").read_text())[0]["unit"] == "ms"


def test_docs_name_the_export_options():
    docs = (ROOT / "docs" / "cli.md").read_text()  # the CLI reference; docs/ci.md explains the formats
    for option in ("--benchmark-latency-json", "--benchmark-throughput-json", "--bencher-json"):
        assert option in docs
