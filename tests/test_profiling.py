"""Profile parsing on real onnxruntime recordings (tests/data, see record_profiles.py) and live profiles.

The literal values below were read from the golden files when they were recorded; re-recording them means
updating these literals.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from support.models import if_model

from generator.errors import RunError
from generator.machine.profiling import node_statistics, parse_profile

DATA = Path(__file__).parent / "data"
TINY = DATA / "profile_tiny.json"
IF = DATA / "profile_if.json"


def test_golden_tiny_runs_and_sums():
    rec = parse_profile(TINY)
    assert len(rec.runs) == 3 and rec.skipped_runs == 0
    assert rec.model_run_us == (692.0, 415.0, 406.0)
    assert rec.kernel_sum_us == (643.0, 369.0, 373.0)
    assert rec.arena_held_bytes == 1050664
    assert [n.name for n in rec.runs[0].nodes] == ["conv1", "relu1", "conv2", "pool", "flatten", "fc"]
    assert all(n.parent is None for r in rec.runs for n in r.nodes)


def test_golden_tiny_node_statistics():
    stats = node_statistics(parse_profile(TINY))
    assert [s.node_name for s in stats] == ["conv1", "relu1", "conv2", "pool", "flatten", "fc"]
    assert [s.exec_order for s in stats] == list(range(6))
    conv1 = stats[0]
    assert (conv1.op_type, conv1.provider, conv1.calls) == ("Conv", "CPUExecutionProvider", 1)
    durations = (conv1.dur_mean_us, conv1.dur_p50_us, conv1.dur_min_us, conv1.dur_max_us)
    assert durations == (190.0, 124.0, 113.0, 333.0)
    assert conv1.dur_std_us == pytest.approx(np.std([333, 124, 113], ddof=1))
    assert conv1.input_shapes == "[[1,16,32,32],[32,16,3,3]]" and conv1.output_shapes == "[[1,32,32,32]]"
    assert conv1.input_types == '["float","float"]' and conv1.output_types == '["float"]'
    assert conv1.runtime_precision == "FP32"
    assert (conv1.activation_bytes, conv1.parameter_bytes, conv1.output_bytes) == (65536, 18432, 131072)
    assert conv1.thread_id == 8496
    assert conv1.start_offset_us == 6.0  # offsets 12, 6, 3 µs
    # Conv and GlobalAveragePool split one parallel loop with the pool's second thread; the others don't.
    assert [s.pool_share for s in stats] == [0.5, 0.0, 0.5, 0.5, 0.0, 0.0]
    assert sum(s.dur_mean_us for s in stats) == pytest.approx(np.mean([643, 369, 373]))


def test_skip_runs_drops_the_first_runs():
    rec = parse_profile(TINY, skip_runs=1)
    assert [r.index for r in rec.runs] == [1, 2] and rec.skipped_runs == 1
    assert rec.model_run_us == (415.0, 406.0)
    assert node_statistics(rec)[0].dur_mean_us == 118.5


def test_golden_if_parents_and_no_double_counting():
    rec = parse_profile(IF)
    first = {n.name: n.parent for n in rec.runs[0].nodes}
    assert first == {"sum": None, "positive": None, "conv": None, "branch": None, "then_relu": "branch",
                     "then_mul": "branch", "relu_out": None}
    assert {n.name: n.parent for n in rec.runs[1].nodes}["else_sigmoid"] == "branch"
    # The If's own time includes its body: only top-level kernels add up.
    assert rec.kernel_sum_us == (134.0, 59.0, 76.0)
    everything = [sum(n.dur_us for n in r.nodes) for r in rec.runs]
    assert everything == [152.0, 66.0, 89.0]
    for r in rec.runs:
        assert r.kernel_sum_us <= r.dur_us


def test_golden_if_node_statistics():
    stats = node_statistics(parse_profile(IF))
    assert [(s.node_name, s.parent) for s in stats] == [
        ("sum", None), ("positive", None), ("conv", None), ("branch", None), ("then_relu", "branch"),
        ("then_mul", "branch"), ("else_sigmoid", "branch"), ("relu_out", None),
    ]
    by_name = {s.node_name: s for s in stats}
    # A branch not taken in a run counts 0 µs in that run.
    assert by_name["then_relu"].dur_mean_us == pytest.approx((7 + 0 + 6) / 3)
    assert by_name["else_sigmoid"].dur_max_us == 7.0 and by_name["else_sigmoid"].dur_min_us == 0.0
    assert by_name["else_sigmoid"].calls == 1
    assert by_name["branch"].input_types == '["bool"]'
    top = sum(s.dur_mean_us for s in stats if s.parent is None)
    assert top == pytest.approx(np.mean([134, 59, 76]))


def test_live_if_profile_parses(tmp_path):
    """The onnxruntime installed now writes what the parser expects (the golden files may be older)."""
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "p")
    so.intra_op_num_threads = 2
    session = ort.InferenceSession(if_model().SerializeToString(), so,
                                   providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((1, 3, 16, 16), dtype=np.float32)
    for feeds in ({"x": x}, {"x": -x}, {"x": x}, {"x": x}):
        session.run(None, feeds)
    rec = parse_profile(session.end_profiling(), skip_runs=1)
    assert len(rec.runs) == 3
    stats = node_statistics(rec)
    parents = {s.node_name: s.parent for s in stats}
    assert parents["then_relu"] == parents["then_mul"] == parents["else_sigmoid"] == "branch"
    for r in rec.runs:
        assert r.kernel_sum_us <= sum(n.dur_us for n in r.nodes)
        assert r.kernel_sum_us <= r.dur_us


def test_old_format_without_node_index_or_thread_stats(tmp_path):
    """Older onnxruntime: exec_plan_index, fence events, no thread_scheduling_stats."""
    events = json.loads(TINY.read_text())
    old = []
    for e in events:
        if e["cat"] == "Node":
            e = {**e, "args": {k: v for k, v in e["args"].items() if k != "thread_scheduling_stats"}}
            e["args"]["exec_plan_index"] = e["args"].pop("node_index")
            base = e["name"].removesuffix("_kernel_time")
            fence_args = {"op_name": e["args"]["op_name"]}
            old.append({**e, "name": f"{base}_fence_before", "dur": 0, "args": fence_args})
        old.append(e)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    rec = parse_profile(path)
    assert rec.kernel_sum_us == (643.0, 369.0, 373.0)
    assert rec.runs[0].nodes[0].node_index == 0
    assert all(s.pool_share is None for s in node_statistics(rec))


@pytest.mark.parametrize(
    "content, message",
    [
        (TINY.read_text()[:5000], "not valid JSON at line"),
        ('{"a": 1}', "is a JSON dict, not the array"),
        ("[1, 2, {\"cat\": \"Node\"}]", "no `model_run` event"),
        (b"\xff\xfe\x00garbage", "not valid JSON"),
    ],
)
def test_garbage_profiles_raise_run_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(RunError, match=message) as info:
        parse_profile(path)
    assert str(path) in str(info.value)


def test_missing_profile_and_too_many_skipped_runs(tmp_path):
    with pytest.raises(RunError, match="Cannot read"):
        parse_profile(tmp_path / "absent.json")
    with pytest.raises(RunError, match="holds 3 runs; 3 were warmup"):
        parse_profile(TINY, skip_runs=3)

