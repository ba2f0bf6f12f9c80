"""A real recorded results directory for the compare page tests, written back through the results store.

`data/compare_recording.json.gz` holds every stored table of a real quick-mode `perfsite run` of the example CNN
(FP32, static QDQ INT8, dynamic INT8; batch 1 and 4; 1 and 2 threads; a `compare:` pair with B named and one
with B left to the threshold; an output tolerance): real profiles, real layer mapping, real output agreement.
The tests write it back through `ResultsDir`, so it follows the results schema as it evolves; `payload=True`
puts hostile text (HTML, Markdown, template syntax) into node names, op types and output names.

Re-record (after a change to what the runner stores) with
`python tests/support/compare.py RESULTS/tiny-compare` (see `data/compare_recording.yaml`).
"""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from generator.results.migrate import profile_iterations_before_v4
from generator.results.store import ResultsDir, TrialFiles

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDING = DATA / "compare_recording.json.gz"
EXPERIMENT = "tiny-compare"
TABLES = ("trials", "processes", "latencies", "nodes", "layers", "agreement", "environments", "runs")
PER_TRIAL = ("processes", "latencies", "nodes", "layers", "agreement")
PAYLOAD = "<script>alert('x')</script><img src=x onerror=alert(1)> | [a](javascript:alert(2)) {{ 7*7 }} *b*"
TARGET = "/fc/Gemm"  # the executed node (in every version) whose names carry the payload


def plain(value: Any) -> Any:
    """A cell as JSON: lists for arrays, None for missing values."""
    if hasattr(value, "tolist"):
        return [plain(v) for v in value.tolist()] if hasattr(value, "__len__") else plain(value.item())
    if isinstance(value, float) and math.isnan(value):
        return None
    return None if value is pd.NA else value


def record(experiment_dir: Path, out: Path = RECORDING) -> None:
    """Store every table of a results folder (one experiment) as JSON (maintainers only)."""
    rd = ResultsDir(experiment_dir)
    tables = {}
    for name in TABLES:
        frame = rd.read_table(name)
        tables[name] = {"columns": list(frame.columns),
                        "rows": [[plain(v) for v in row] for row in frame.itertuples(index=False)]}
    for row in tables["environments"]["rows"]:
        row[tables["environments"]["columns"].index("hostname")] = "bench-1"
    specs = {p.stem: p.read_text(encoding="utf-8") for p in sorted((experiment_dir / "specs").glob("*.json"))}
    text = json.dumps({"experiment": EXPERIMENT, "specs": specs, "tables": tables}, sort_keys=True)
    out.write_bytes(gzip.compress(text.encode(), mtime=0))  # mtime 0: the same recording, the same bytes


def _rows(recording: dict, table: str) -> list[dict[str, Any]]:
    spec = recording["tables"][table]
    return [dict(zip(spec["columns"], row, strict=True)) for row in spec["rows"]]


def _hostile(rows: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    """The payload in names that reach every part of the compare page (consistently in every version, so
    the layers still match)."""
    for row in rows:
        if table == "nodes" and row["node_name"] == TARGET:
            row["node_name"] += PAYLOAD
            row["op_type"] += PAYLOAD
        if table == "nodes" and row.get("original_nodes"):
            row["original_nodes"] = [n + PAYLOAD if n == TARGET else n for n in row["original_nodes"]]
        if table == "agreement":
            row["output"] += PAYLOAD
    return rows


def write_compare_results(root: Path, payload: bool = False) -> Path:
    """Write the recorded experiment under root/<experiment>/ and return the experiment folder."""
    recording = json.loads(gzip.decompress(RECORDING.read_bytes()))
    rd = ResultsDir(root / recording["experiment"])
    for sha, spec in recording["specs"].items():
        rd.write_spec(sha, spec)
    for row in _rows(recording, "environments"):
        rd.write_row("environments", row["env_id"], row)
    for row in _rows(recording, "runs"):
        rd.write_row("runs", row["run_id"], row)
    by_trial: dict[str, dict[str, list]] = {}
    for table in PER_TRIAL:
        rows = _rows(recording, table)
        for row in _hostile(rows, table) if payload else rows:
            by_trial.setdefault(row["trial_key"], {t: [] for t in PER_TRIAL})[table].append(row)
    for trial in _rows(recording, "trials"):
        files = by_trial.get(trial["trial_key"], {t: [] for t in PER_TRIAL})
        if "profile_iterations" not in trial:  # recorded with results schema 3: the migration's rule fills it
            trial["profile_iterations"] = profile_iterations_before_v4(trial, lambda sha: json.loads(
                recording["specs"][sha]))
        rd.write_trial(TrialFiles(trial=trial, **files))
    return rd.path


if __name__ == "__main__":
    record(Path(sys.argv[1]))


def sample_comparison(**changes: Any) -> Any:
    """A small hand-made Comparison (FP32 vs INT8, two versions, batch 1 and 4), for tests of the page and
    charts that must not depend on the analysis; `changes` replace fields."""
    import dataclasses

    from generator.analysis import records_compare as R

    def point(version: str, batch: int, latency: float, role: str | None = None) -> R.ConfigPoint:
        return R.ConfigPoint(version, f"{version}-{batch}", f"b{batch} t1 c1",
                             {"batch": batch, "threads": 1, "concurrency": 1}, latency, 1000 * batch / latency,
                             False, False, role, order=batch, model_bytes={"fp32": 2**21}.get(version, 2**19))

    points = (point("fp32", 1, 2.0, "a"), point("fp32", 4, 6.5), point("int8", 1, 1.1, "b"), point("int8", 4, 3.9))
    ratio = R.RatioCI(0.55, 0.52, 0.58, True, processes_a=3, processes_b=3)
    comparison = R.Comparison(
        a="fp32", b="int8", config_label="b1 t1 c1", config={"batch": 1, "threads": 1, "concurrency": 1},
        a_trial_key="fp32-1", b_trial_key="int8-1", b_was_default=False, points=points,
        sweet_spots=(R.SweetSpot("fp32", "fp32-1", 5.0, None, "b1 t1 c1", 2.0, 500.0),
                     R.SweetSpot("int8", "int8-4", 5.0, None, "b4 t1 c1", 3.9, 1025.6)),
        latency_ratio=ratio, throughput_ratio=R.RatioCI(1.82, 1.72, 1.92, True),
        timings=(R.VersionTiming("fp32", 2.0, 1.9, 2.1, 500.0, 480.0, 520.0, 3, "fp32-1"),
                 R.VersionTiming("int8", 1.1, 1.05, 1.15, 909.0, 870.0, 950.0, 3, "int8-1")),
        layer_types=(
            R.LayerTypeRow("Conv", 1500.0, 700.0, -800.0, ratio, 0.75, 0.64, {"FP32": 3}, {"INT8": 3}, 3, 3),
            R.LayerTypeRow("Gemm", 400.0, 390.0, -10.0, R.RatioCI(0.98, 0.9, 1.05, False), 0.2, 0.36,
                           {"FP32": 1}, {"FP32": 1}, 1, 1),
            R.LayerTypeRow("Relu", 100.0, 0.0, -100.0, None, 0.05, 0.0, {"FP32": 2}, {}, 2, 0),
        ),
        kernels=(
            R.KernelRow("conv1", "Conv", 900.0, 400.0, "FP32", "INT8", -500.0, ratio, None, None,
                        ("conv1",), ("conv1_token_1",), ("conv1.weight",)),
            R.KernelRow("relu1", "Relu", 100.0, 0.0, "FP32", None, -100.0, None, "a", "fused away in B",
                        ("relu1",), (), ()),
            R.KernelRow("input_QuantizeLinear", "QuantizeLinear", 0.0, 40.0, None, "mixed", 40.0, None, "b",
                        "quantization overhead: added in B", (), ("input_QuantizeLinear",), ()),
        ),
        overhead=R.QuantOverhead(40.0, 0.036, {"QuantizeLinear": 30.0, "DequantizeLinear": 10.0}, nodes_b=2),
        coverage=R.MatchCoverage(0.995, 0.99), pareto=(points[2], points[3]),
        model_bytes={"fp32": 2**21, "int8": 2**19},
        precision_share={"fp32": {"FP32": 1.0}, "int8": {"INT8": 0.9, "FP32": 0.06, "mixed": 0.04}},
        precision_transitions={"fp32": 0, "int8": 4},
        advice=(R.Advice("qdq_overhead", "info", "Q/DQ overhead is 3.6 % of B's time."),),
        other_configs=("b4 t1 c1",), threshold_ms=5.0, percentile="p90", versions=("fp32", "int8"),
        overall_sweet_spot=R.SweetSpot(None, "int8-4", 5.0, None, "b4 t1 c1", 3.9, 1025.6),
        agreement=(R.AgreementRow("int8", "fp32", "logits", 0.01, 0.02, 0.9999, 1.0, within_tolerance=True),),
    )
    return dataclasses.replace(comparison, **changes)
