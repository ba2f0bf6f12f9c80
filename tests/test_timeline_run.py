"""The timeline end to end on real onnxruntime sessions: the profiled pass of a model with an If node (its
branch's nodes recorded under their parent), and a real `perfsite run` of the example CNN whose profile page
gets its Timeline, Temporal statistics and Layer details sections and a Perfetto trace file beside it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.models import if_model, save

from generator.machine.profiling import parse_profile
from generator.results.store import load_experiment
from generator.runner import worker
from generator.runner.protocol import WorkerJob
from generator.site.pages import render_pages
from generator.timeline import chrome_trace, median_run, timeline_from_table

MEASURE = {"warmup": 1, "min_iterations": 3, "min_seconds": 0.01, "max_seconds": 1.0, "profile_iterations": 3}


def test_profiled_if_model_keeps_its_branch_under_its_parent(tmp_path):
    model = save(if_model(), tmp_path / "if.onnx")  # the model tests/data/profile_if.json was recorded from
    np.savez(tmp_path / "feeds.npz", x=np.random.default_rng(2).random((1, 3, 16, 16), dtype=np.float32) + 0.1)
    config = {"batch": 1, "threads": 1, "concurrency": 1, "optimization_level": "disable", "provider": "cpu",
              "spinning": False, "inter_op_threads": 1}
    out = worker.profile_pass(WorkerJob(mode="profile", model_path=str(model), original_model_path=str(model),
                                        config=config, feeds_path=str(tmp_path / "feeds.npz"), measure=MEASURE,
                                        work_dir=str(tmp_path / "work")))
    rows = out["timeline"]
    # onnxruntime picks the order of independent nodes (conv, sum); the nesting is what matters.
    assert sorted((r["node_name"], r["parent"] or "") for r in rows) == [
        ("branch", ""), ("conv", ""), ("positive", ""), ("relu_out", ""), ("sum", ""), ("then_mul", "branch"),
        ("then_relu", "branch")]
    assert [r["exec_order"] for r in rows] == list(range(7)) and rows[-1]["node_name"] == "relu_out"
    tl = timeline_from_table(pd.DataFrame(rows))
    branch = next(e for e in tl.events if e.node_name == "branch")
    for e in tl.events:
        if e.parent is not None:
            assert branch.start_us <= e.start_us and e.end_us <= branch.end_us
    # The acceptance figure: top-level calls (the If's body counted once, inside the If) add up to the
    # profiled kernel time of that very inference, which is the median one of the profile.
    recording = parse_profile(out["profile_file"], skip_runs=MEASURE["warmup"])
    _, run = median_run(recording)
    assert rows[0]["model_run_us"] == run.dur_us == float(np.sort(recording.model_run_us)[1])
    assert sum(e.dur_us for e in tl.top_level) == pytest.approx(run.kernel_sum_us)
    assert tl.kernel_sum_us == pytest.approx(rows[0]["kernel_sum_us"]) and tl.kernel_sum_us <= tl.model_run_us


@pytest.fixture
def cnn_results(cnn_timeline_results) -> Path:
    return cnn_timeline_results  # (conftest.py: shared with the timeline browser tests)


def test_a_real_run_stores_the_median_inference(cnn_results):
    results = load_experiment(cnn_results)
    (key,) = results.trials["trial_key"]
    rows = results.timeline[results.timeline["trial_key"] == key]
    assert len(rows) > 5 and list(rows["exec_order"]) == list(range(len(rows)))
    assert rows["model_run_us"].nunique() == 1 and rows["kernel_sum_us"].nunique() == 1
    tl = timeline_from_table(rows)
    assert sum(e.dur_us for e in tl.top_level) == pytest.approx(rows["kernel_sum_us"].iloc[0])
    assert 0 < tl.kernel_sum_us <= tl.model_run_us
    assert all(0 <= e.start_us <= tl.model_run_us for e in tl.events)
    assert rows["op_type"].isin(["Conv", "FusedConv"]).any()
    trace = chrome_trace(tl, "cnn")
    assert {e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"} == set(rows["thread_id"])


def test_the_profile_page_shows_the_timeline_and_links_its_trace(cnn_results):
    results = load_experiment(cnn_results)
    pages, _ = render_pages([results])
    (page,) = [p for p in pages if p.path.endswith("profile-fp32.md")]
    text = page.markdown
    for heading in ("### Timeline", "### Temporal statistics", "### Layer details"):
        assert heading in text
    assert 'data-chart="chart-timeline-1"' in text and 'data-chart="chart-temporal-1"' in text
    ((trace_path, trace_text),) = page.files
    assert trace_path == "reports/timeline/profile-fp32-1-b1-t2-c1.trace.json"
    assert "(profile-fp32-1-b1-t2-c1.trace.json)" in text
    trace = json.loads(trace_text)
    assert trace["traceEvents"][0]["args"]["name"] == "timeline · fp32 · b1 t2 c1"
    assert any(e["ph"] == "X" and e["name"] == "model_run" for e in trace["traceEvents"])
    again, _ = render_pages([load_experiment(cnn_results)])
    assert [(p.path, p.markdown, p.files) for p in again] == [(p.path, p.markdown, p.files) for p in pages]
