"""Timelines for the tests: synthesized `timeline` tables beside the profile results (support/profile.py), and a
real `perfsite run` of the example CNN, whose profile page gets its timeline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from generator.paths import atomic_write_bytes
from generator.results.store import ResultsDir, table_to_parquet_bytes
from support.cli import perfsite, write_spec
from support.profile import write_profile_results

GAP_US = 1.5  # executor time between calls
CNN_SPEC = """\
    name: timeline
    models:
      fp32: {path: models/cnn.onnx}
    inputs:
      input: {shape: [batch, 3, 64, 64], dtype: float32}
    sweep:
      batch: [1]
      threads: [2]
    measure: {warmup: 1, min_iterations: 3, min_seconds: 0.01, repeats: 1, budget_s: 0.5, profile_iterations: 3}
    """


def _calls(nodes: pd.DataFrame) -> list[dict]:
    """One inference from a trial's `nodes` rows: the top-level nodes one after the other on one thread, then
    an If call holding the sub-graph nodes."""
    rows, t = [], 2.0
    top, body = nodes[nodes["parent"].isna()], nodes[nodes["parent"].notna()]
    parent = str(body["parent"].iloc[0])
    body_us = float(body["dur_mean_us"].sum())
    for _, n in top.sort_values("exec_order").iterrows():
        # The fixture's If node gets room for its body: its time includes the body's calls.
        dur = n["dur_mean_us"] + (body_us + 2.0 if n["node_name"] == parent else 0.0)
        rows.append({**_sizes(n), "node_name": n["node_name"], "op_type": n["op_type"], "start_us": t,
                     "dur_us": dur, "pool_share": n["pool_share"], "input_shapes": n["input_shapes"],
                     "output_shapes": n["output_shapes"]})
        if n["node_name"] == parent:
            inner = t + 1.0
            for _, b in body.iterrows():
                rows.append({"node_name": b["node_name"], "op_type": b["op_type"], "parent": parent,
                             "start_us": inner, "dur_us": b["dur_mean_us"], "activation_bytes": 64,
                             "output_bytes": 64})
                inner += b["dur_mean_us"]
        t += dur + GAP_US
    return rows


def _sizes(n: pd.Series) -> dict:
    return {k: None if pd.isna(n[k]) else int(n[k]) for k in ("activation_bytes", "output_bytes")}


def write_timeline_results(root: Path, payload: bool = False) -> Path:
    """The profile results (support/profile.py), with a `timeline` file for every trial that has nodes."""
    folder = write_profile_results(root, payload=payload)
    nodes = ResultsDir(folder).read_table("nodes")
    for key, group in nodes.groupby("trial_key", sort=True):
        calls = _calls(group)
        kernel_sum = sum(c["dur_us"] for c in calls if c.get("parent") is None)
        end = max(c["start_us"] + c["dur_us"] for c in calls)
        rows = [{**c, "trial_key": key, "exec_order": i, "provider": "CPUExecutionProvider", "thread_id": 4242,
                 "run_index": 1, "model_run_us": end + 3.0, "kernel_sum_us": kernel_sum}
                for i, c in enumerate(calls)]
        atomic_write_bytes(folder / "timeline" / f"{key}.parquet", table_to_parquet_bytes("timeline", rows))
    return folder


def run_cnn_experiment(root: Path, cnn: Path, env: dict | None = None) -> Path:
    """A real `perfsite run` of the example CNN (one trial, two threads), `env` added to its environment; the
    experiment's results folder."""
    (root / "models").mkdir(parents=True)
    shutil.copy(cnn, root / "models" / "cnn.onnx")
    spec = write_spec(root, CNN_SPEC)
    proc = perfsite("run", str(spec), "--results", str(root / "results"), cwd=root, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return root / "results" / "timeline"
