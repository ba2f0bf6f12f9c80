"""Output agreement: the pure figures on hand-made arrays, the worker's outputs mode, and a real sweep."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace

import numpy as np
import pytest
from onnx import TensorProto, helper
from support.models import onnx_model, save

from generator.results.store import load_experiment
from generator.runner import children, worker
from generator.runner.agreement import (
    agreement_pairs,
    agreement_rows,
    batches_agreement,
    output_agreement,
    reference_versions,
)
from generator.runner.orchestrate import RunOptions, run_experiment
from generator.runner.protocol import WorkerJob
from generator.spec import load_spec, spec_from_json


def _row(ref, other, name="y"):
    (row,) = [r for r in output_agreement({name: np.asarray(ref)}, {name: np.asarray(other)}) if r["output"] == name]
    return row


def test_figures_on_a_classifier_output():
    row = _row(np.array([[1, 2], [3, 4]], np.float32), np.array([[1, 2.5], [4, 3]], np.float32))
    assert row["max_abs"] == 1.0 and row["mean_abs"] == 0.625 and row["samples"] == 1
    assert row["max_rel"] == pytest.approx(1 / 3)  # 1 / |3|: larger than 0.5 / 2 and 1 / 4
    assert row["cosine"] == pytest.approx(30 / math.sqrt(30 * 32.25))
    assert row["top1_agreement"] == 0.5  # row 0 agrees on class 1, row 1 moved from class 1 to class 0


def test_identical_outputs_agree_fully():
    x = np.random.default_rng(0).standard_normal((4, 10)).astype(np.float32)
    row = _row(x, x.copy())
    assert (row["max_abs"], row["max_rel"], row["mean_abs"], row["top1_agreement"]) == (0, 0, 0, 1)
    assert row["cosine"] == 1.0


def test_relative_error_near_zero_uses_an_eps_scaled_to_the_output():
    # A zero in A (after a ReLU) divides by eps = 1e-6 x max|a| = 1e-6 x 2, not by zero.
    row = _row(np.array([0.0, 2.0]), np.array([1e-6, 2.0]))
    assert row["max_rel"] == pytest.approx(0.5)


def test_float16_is_compared_in_float64():
    row = _row(np.array([0.5, 1.0], np.float32), np.array([0.5, 1.25], np.float16))
    assert row["max_abs"] == 0.25 and row["mean_abs"] == 0.125 and row["top1_agreement"] is None


def test_integers_compare_exactly():
    big = 2**60  # float64 cannot tell 2**60 from 2**60 + 1
    row = _row(np.array([[big, 5]], np.int64), np.array([[big + 1, 5]], np.int64))
    assert row["max_abs"] == 1.0 and row["mean_abs"] == 0.5
    assert row["top1_agreement"] is None  # 2-D but not float: not a classifier's scores
    assert _row(np.array([3, 7]), np.array([3, 7]))["max_abs"] == 0.0
    flags = _row(np.array([True, False, True, True]), np.array([True, True, True, True]))
    assert flags["max_abs"] == 1.0 and flags["mean_abs"] == 0.25


def test_outputs_that_cannot_be_compared_get_nan_rows():
    rows = output_agreement({"y": np.zeros((2, 3)), "gone": np.zeros(2)},
                            {"y": np.zeros((3, 2)), "new": np.zeros(2)})
    assert [r["output"] for r in rows] == ["y", "gone", "new"]
    for r in rows:
        assert all(math.isnan(r[k]) for k in ("max_abs", "max_rel", "mean_abs", "cosine"))
        assert r["top1_agreement"] is None and r["samples"] == 1
    text = _row(np.array(["a", "b"]), np.array(["a", "c"]))
    assert math.isnan(text["max_abs"])


def test_non_finite_values():
    same = _row(np.array([np.nan, np.inf, 1.0]), np.array([np.nan, np.inf, 1.5]))
    assert same["max_abs"] == 0.5 and same["cosine"] == 1.0  # matching NaN/inf count as equal, left out of cosine
    overflow = _row(np.array([[60000.0, 1.0]]), np.array([[np.inf, 1.0]], np.float16))
    assert overflow["max_abs"] == math.inf and overflow["max_rel"] == math.inf and overflow["mean_abs"] == math.inf
    assert math.isnan(overflow["cosine"]) and overflow["top1_agreement"] == 1.0


def test_zero_and_empty_outputs():
    assert _row(np.zeros(3), np.zeros(3))["cosine"] == 1.0
    assert _row(np.zeros(3), np.ones(3))["cosine"] == 0.0
    empty = _row(np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32))
    assert (empty["max_abs"], empty["max_rel"], empty["mean_abs"], empty["cosine"]) == (0, 0, 0, 1)
    assert empty["top1_agreement"] is None  # no rows to agree on


def test_batches_pool_rows_and_count_samples():
    refs = [{"p": np.array([[0.9, 0.1]])}, {"p": np.array([[0.2, 0.8]])}, {"p": np.array([[0.6, 0.4]])}]
    others = [{"p": np.array([[0.8, 0.2]])}, {"p": np.array([[0.7, 0.3]])}]  # one batch fewer: ignored
    (row,) = batches_agreement(refs, others)
    assert row["samples"] == 2 and row["top1_agreement"] == 0.5
    assert row["max_abs"] == pytest.approx(0.5) and row["mean_abs"] == pytest.approx(0.3)
    (tagged,) = agreement_rows("k1", "int8", "fp32", refs[:1], others[:1])
    assert tagged["trial_key"] == "k1" and tagged["version"] == "int8" and tagged["reference_version"] == "fp32"


SPEC = {
    "name": "refs",
    "models": {
        "fp32": {"path": "models/cnn.onnx"},
        "int8": {"from": "fp32", "quantize": {"mode": "static_qdq"}},
        "int8-pruned": {"from": "int8", "fp16": True},
        "other": {"path": "models/other.onnx"},
        "third": {"path": "models/third.onnx"},
    },
    "inputs": {"input": {"shape": [1, 3, 8, 8]}},
    "compare": [{"a": "fp32", "b": "other"}, {"a": "int8"}],
}


def test_reference_versions_follow_from_chains_and_compare_pairs():
    spec = spec_from_json(SPEC)
    # The open pair (b chosen later) compares its a with every other version, a root included.
    assert reference_versions(spec, "fp32") == ("int8",)
    assert reference_versions(spec, "int8") == ("fp32",)
    assert reference_versions(spec, "int8-pruned") == ("fp32", "int8")  # chain root, then the open pair's a
    assert reference_versions(spec, "other") == ("fp32", "int8")
    assert reference_versions(spec, "third") == ("int8",)
    assert agreement_pairs(spec, ["fp32", "other", "third"]) == [("other", "fp32")]


def _two_output_model(path):
    # Output names that np.savez would take as its own arguments (`file`, `allow_pickle`) must survive.
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["file"], name="relu"),
         helper.make_node("ArgMax", ["x"], ["allow_pickle"], name="argmax", axis=1, keepdims=0)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("file", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("allow_pickle", TensorProto.INT64, ["batch"])],
    )
    return save(onnx_model(graph), path)


def test_worker_outputs_mode_saves_every_batch(tmp_path):
    model = _two_output_model(tmp_path / "m.onnx")
    batches = [np.array([[-1, 2, 0, 1]], np.float32), np.array([[3, -2, 0, 1]], np.float32)]
    paths = []
    for i, x in enumerate(batches):
        paths.append(tmp_path / f"feeds{i}.npz")
        np.savez(paths[-1], x=x)
    job = WorkerJob(mode="outputs", model_path=str(model), original_model_path=str(model), config={"threads": 1},
                    feeds_path=str(paths[0]), extra_feeds_paths=(str(paths[1]),), work_dir=str(tmp_path / "work"),
                    measure={})
    # Outputs mode (after a failed profiled pass), and the profiled pass that records them (the sweep's way).
    profiled = replace(job, mode="profile", record_outputs=True, work_dir=str(tmp_path / "profiled"))
    for each in (job, profiled):
        out = worker.run_job(WorkerJob.from_json(each.to_json()), tmp_path / "out.json")  # as the child reads it
        assert out["output_names"] == ["file", "allow_pickle"] and len(out["outputs_files"]) == 2
        with np.load(out["outputs_files"][1]) as npz:
            np.testing.assert_array_equal(npz["arr_0"], np.maximum(batches[1], 0))
            np.testing.assert_array_equal(npz["arr_1"], [0])
    assert out["nodes"] and "outputs_error" not in out


@pytest.fixture
def agreement_project(lean_cnn_project):
    """lean_cnn_project with one measurement process a trial: agreement needs a measured trial, not a latency
    interval, and each process is about half a second on 2 cores."""
    spec = lean_cnn_project / "spec.yaml"
    text = spec.read_text()
    assert "repeats: 2," in text
    spec.write_text(text.replace("repeats: 2,", "repeats: 1,"))
    return lean_cnn_project


def _run(project, **options):
    return run_experiment(load_spec(project / "spec.yaml"),
                          RunOptions(results_dir=project / "results" / "tiny", **options))


def test_sweep_records_int8_agreement_with_fp32(agreement_project):
    summary = _run(agreement_project, only="batch=2")
    assert not summary.failed
    exp = load_experiment(agreement_project / "results" / "tiny")
    rows = exp.agreement.merge(exp.trials[["trial_key", "version"]], on=["trial_key", "version"])
    assert len(rows) == 1 and set(exp.trials["version"]) == {"fp32", "int8"}  # none for fp32, the root
    assert set(rows["version"]) == {"int8"} and set(rows["reference_version"]) == {"fp32"}
    assert set(rows["output"]) == {"logits"}
    # Static QDQ INT8 of the example CNN stays close to FP32 on the trial's batch and two more random ones.
    assert (rows["cosine"] > 0.9).all() and rows["top1_agreement"].between(0, 1).all()
    assert (rows["samples"] == 3).all() and (rows["max_abs"] > 0).all()


def test_failed_outputs_or_a_missing_reference_leave_the_trial_ok_without_rows(agreement_project, monkeypatch):
    real = children.run_child
    modes = []

    def outputs_fail(job, timeout_s):
        modes.append((job.mode, job.record_outputs))
        # Both ways to lose the outputs: a profiling process that could not record them (fp32's), and one that
        # crashed recording them (int8's): its timed figures stand, the next process profiles without them, and
        # an outputs process of their own crashes too.
        if job.mode == "outputs":
            return children.ChildResult({}, "the measurement process crashed (SIGSEGV)")
        if job.record_outputs and "cnn.onnx" not in job.model_path:
            if job.mode == "profile":
                return children.ChildResult({}, "the measurement process crashed (SIGSEGV)")
            measured = real(dataclasses.replace(job, record_outputs=False, extra_feeds_paths=()), timeout_s)
            return children.ChildResult(measured.output, None, None, "the process, while profiling, crashed (SIGSEGV)")
        result = real(job, timeout_s)
        if job.record_outputs and result.profile is not None:
            return dataclasses.replace(result, profile={**result.profile, "outputs_error": "ValueError: no outputs"})
        return result

    monkeypatch.setattr(children, "run_child", outputs_fail)
    _run(agreement_project, only="batch=1")
    _run(agreement_project, only="batch=2,version=int8")  # fp32 filtered out: no reference to compare with
    exp = load_experiment(agreement_project / "results" / "tiny")
    assert len(exp.trials) == 3 and set(exp.trials["status"]) == {"ok"}
    assert exp.agreement.empty
    # Only the compared trials' first profiling processes record outputs (fp32 and int8 at batch 1; the int8
    # trial alone at batch 2 records none). int8's crashed while recording them: no later profiling records
    # them (here a separate profiled pass, the spec's one round having profiled nothing), and the outputs get a
    # process of their own, which crashes too.
    assert modes.count(("measure", True)) == 2 and modes.count(("outputs", False)) == 1
    assert ("profile", True) not in modes
    assert set(exp.trials["profiled"]) == {True}, exp.trials[["version", "profiled"]]
