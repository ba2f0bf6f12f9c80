"""compare_versions on a small results directory written through the real store (figures chosen so that
every choice is known), and on the real recorded quick run of the example CNN (tests/data)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from generator.analysis.compare import compare_pairs, compare_versions
from generator.errors import ResultsError
from generator.results.store import ResultsDir, TrialFiles, load_experiment
from generator.spec import canonical_json, spec_from_json, spec_to_json

BASE_MS = {"fp32": 2.0, "int8": 1.0, "int8-dyn": 4.0}
CONFIGS = [(b, t) for b in (1, 4) for t in (1, 2)]


def _spec(threshold: float | None, compare: list[dict]) -> dict:
    return {
        "name": "cmp", "models": {
            "fp32": {"path": "models/cnn.onnx"},
            "int8": {"from": "fp32", "quantize": {"mode": "static_qdq"}},
            "int8-dyn": {"from": "fp32", "quantize": {"mode": "dynamic"}},
        },
        "inputs": {"x": {"shape": ["batch", 3, 8, 8], "dtype": "float32"}},
        "sweep": {"batch": [1, 4], "threads": [1, 2]}, "measure": {"percentile": "p90", "profile_iterations": 5},
        "latency_threshold_ms": threshold, "compare": compare, "tolerance": {"max_abs": 0.05},
    }


def _latency_ms(version: str, batch: int, threads: int) -> float:
    # Batching pays (b^0.8), a second thread too; versions differ by a constant factor.
    return BASE_MS[version] * batch ** 0.8 * (1.0 if threads == 1 else 0.6)


def _nodes(key: str, version: str) -> list[dict]:
    def node(i, name, op, dur, originals, weights=(), precision="FP32"):
        return {"trial_key": key, "exec_order": i, "node_name": name, "op_type": op, "dur_mean_us": dur,
                "dur_std_us": dur * 0.02, "runtime_precision": precision, "original_nodes": list(originals),
                "weights": list(weights), "mapping_method": "exact", "provider": "CPUExecutionProvider",
                "input_shapes": "[[1, 8]]", "output_shapes": "[[1, 8]]", "calls": 1}

    if version == "fp32":
        return [node(0, "conv", "Conv", 300, ["conv"], ["conv.w"]), node(1, "relu", "Relu", 20, ["relu"]),
                node(2, "fc", "Gemm", 50, ["fc"], ["fc.w"])]
    if version == "int8":
        return [node(0, "x_QuantizeLinear", "QuantizeLinear", 20, ["x_QuantizeLinear"], precision="mixed"),
                node(1, "conv_token_1", "QLinearConv", 120, ["conv", "relu_out_QuantizeLinear"], ["conv.w_quantized"],
                     precision="INT8"),
                node(2, "fc", "Gemm", 50, ["fc"], ["fc.w"]),
                node(3, "y_DequantizeLinear", "DequantizeLinear", 10, ["y_DequantizeLinear"], precision="mixed")]
    return [node(0, "x_QuantizeLinear", "DynamicQuantizeLinear", 20, ["x_QuantizeLinear"], precision="mixed"),
            node(1, "conv_quant", "ConvInteger", 900, ["conv_quant"], ["conv.w_quantized"], precision="INT8"),
            node(2, "relu", "Relu", 20, ["relu"]), node(3, "fc", "Gemm", 50, ["fc"], ["fc.w"])]


def _write(root: Path, threshold: float | None = 5.0, profiled=((1, 2),), compare=None,
           versions=("fp32", "int8", "int8-dyn"), preempted: tuple[str, ...] | None = None,
           one_clean: tuple[str, ...] = (), starved: tuple[str, ...] = ()) -> Path:
    """`preempted`: record run-delay (results schema 2), each request of these trials preempted; `one_clean`:
    of these trials, every request of processes 1 and 2 preempted, none of process 0; `starved`: processes 1
    and 2 of these trials got a quarter of the CPU process 0 got (preemption unknown, as in schema 1)."""
    spec = spec_from_json(_spec(threshold, compare if compare is not None else [{"a": "fp32", "b": "int8"},
                                                                                {"a": "fp32"}]))
    sha = hashlib.sha256(canonical_json(spec).encode()).hexdigest()
    rd = ResultsDir(root / "cmp")
    rd.write_spec(sha, spec_to_json(spec))
    rng = np.random.default_rng(0)
    for n, (version, (batch, threads)) in enumerate((v, c) for c in CONFIGS for v in versions):
        key = f"{version}-b{batch}-t{threads}"
        mean = _latency_ms(version, batch, threads)
        lat = [mean * np.exp(rng.normal(0, 0.03)) * rng.lognormal(0, 0.05, 40) for _ in range(3)]
        pooled = np.concatenate(lat)
        trial = {
            "experiment": "cmp", "trial_key": key, "run_id": "r", "env_id": "e", "spec_sha256": sha,
            "version": version, "model_sha256": version, "model_bytes": {"fp32": 4000}.get(version, 1000),
            "batch": batch, "threads": threads, "concurrency": 1, "optimization_level": "all", "provider": "cpu",
            "spinning": False, "inter_op_threads": 1, "dims": "{}", "config_label": f"b{batch} t{threads} c1",
            "status": "ok", "quick": False, "percentile": "p90", "latency_p50_ms": float(np.median(pooled)),
            "latency_headline_ms": float(np.percentile(pooled, 90)), "noisy": version == "int8-dyn",
            "throughput_ips": float(np.median([1000 * batch / a.mean() for a in lat])), "processes": 3,
            "profiled": (batch, threads) in profiled, "finished_at": f"2026-01-01T00:{n:02d}:00Z",
            "profile_iterations": 5 if (batch, threads) in profiled else None,
            **({"preemption_known": True} if preempted is not None else {}),
        }
        delay = {"run_delay_ms": None} if preempted is None else {"run_delay_ms": 0.0}
        files = TrialFiles(
            trial=trial,
            processes=[{"trial_key": key, "process": p, "throughput_ips": 1000 * batch / a.mean(),
                        "cores_used": 0.5 if key in starved and p else 2.0} for p, a in enumerate(lat)],
            latencies=[{"trial_key": key, "process": p, "stream": 0, "iteration": i, "latency_ms": float(v),
                        **({"run_delay_ms": float(v)} if key in (preempted or ()) or (key in one_clean and p)
                           else delay)}
                       for p, a in enumerate(lat) for i, v in enumerate(a)],
            nodes=_nodes(key, version) if (batch, threads) in profiled else [],
            agreement=[{"trial_key": key, "version": version, "reference_version": "fp32", "output": "y",
                        "max_abs": 0.1 if version == "int8" else 0.01, "cosine": 0.999, "samples": 2}]
            if version != "fp32" else [],
        )
        rd.write_trial(files)
    return rd.path


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    """The default scenario, written once for the module."""
    return load_experiment(_write(tmp_path_factory.mktemp("cmp")))


def test_b_defaults_to_best_throughput_under_the_threshold_and_config_to_a_profiled_one(exp):
    c = compare_versions(exp, "fp32")
    assert c.b == "int8" and c.b_was_default and "within the 5 ms p90 latency threshold" in c.b_reason
    # A's sweet spot (b4 t2) was not profiled: the profiled configuration is used, and the record says why.
    assert {s.version: s.config_label for s in c.sweet_spots} == {"fp32": "b4 t2 c1", "int8": "b4 t2 c1",
                                                                  "int8-dyn": "b1 t2 c1"}
    assert c.config_label == "b1 t2 c1" and "b4 t2 c1" in c.config_reason
    assert c.config == {"batch": 1, "threads": 2, "concurrency": 1, "optimization_level": "all", "provider": "cpu",
                        "spinning": False, "inter_op_threads": 1}
    assert (c.a_trial_key, c.b_trial_key) == ("fp32-b1-t2", "int8-b1-t2")
    assert c.other_configs == ("b1 t1 c1", "b4 t1 c1", "b4 t2 c1") and len(c.other_config_items) == 3
    assert c.overall_sweet_spot.version == "int8" and c.versions == ("fp32", "int8", "int8-dyn")


def test_a_profiled_sweet_spot_is_the_default_configuration(tmp_path):
    exp = load_experiment(_write(tmp_path, profiled=((1, 2), (4, 2))))
    c = compare_versions(exp, "fp32", "int8")
    assert c.config_label == "b4 t2 c1" and c.config_reason is None and not c.b_was_default and c.b_reason is None


def test_without_threshold_or_when_none_meets_it_b_is_the_fastest_overall(tmp_path):
    c = compare_versions(load_experiment(_write(tmp_path / "none", threshold=None)), "int8")
    assert c.b == "fp32" and "sets no latency threshold" in c.b_reason
    assert all(s.trial_key is None and "no latency threshold" in s.reason for s in c.sweet_spots)
    c = compare_versions(load_experiment(_write(tmp_path / "tight", threshold=0.1)), "fp32")
    assert c.b == "int8" and c.b_reason.startswith("No configuration of another version")
    assert c.sweet_spots[0].reason.startswith("no configuration has p90 latency within 0.1 ms")


def test_named_configuration_must_exist_in_both(exp):
    assert compare_versions(exp, "fp32", "int8", {"batch": 1}).config_label == "b1 t2 c1"  # the profiled one
    assert compare_versions(exp, "fp32", "int8", {"batch": 4, "threads": 1}).config_label == "b4 t1 c1"
    with pytest.raises(ResultsError) as error:
        compare_versions(exp, "fp32", "int8", {"batch": 2})
    assert "b1 t1 c1; b1 t2 c1; b4 t1 c1; b4 t2 c1" in str(error.value) and "{batch: 2}" in str(error.value)
    with pytest.raises(ResultsError, match="`nope` has no successful trial"):
        compare_versions(exp, "nope")
    # A misspelt axis is named, with the axes there are, not reported as matching no configuration.
    with pytest.raises(ResultsError) as error:
        compare_versions(exp, "fp32", "int8", {"bach": 1})
    said = str(error.value)
    assert said.startswith("The compare configuration names `bach` (did you mean `batch`?), which is not a "
                           "configuration axis of the trials in "), said
    assert "Allowed: batch, threads, concurrency, optimization_level" in said


def test_points_pareto_and_ratios(exp):
    c = compare_versions(exp, "fp32", "int8")
    assert len(c.points) == 12 and [p.order for p in c.points[:4]] == [0, 1, 2, 3]
    assert {(p.version, p.role) for p in c.points if p.role} == {("fp32", "a"), ("int8", "b")}
    assert sum(p.is_sweet_spot for p in c.points) == 3
    # int8 at b1 t2 has the lowest latency, int8 at b4 t2 the highest throughput: the whole frontier.
    assert [(p.version, p.config_label) for p in c.pareto] == [("int8", "b1 t2 c1"), ("int8", "b4 t2 c1")]
    assert c.latency_ratio.significant and c.latency_ratio.high < 1 and c.latency_ratio.point == pytest.approx(0.5,
                                                                                                               rel=0.2)
    assert c.throughput_ratio.significant and c.throughput_ratio.low > 1
    a, b = c.timings
    assert a.latency_ci_low < a.latency_ms < a.latency_ci_high and a.processes == 3 and a.percentile == "p90"
    assert b.throughput_ci_low < b.throughput_ips < b.throughput_ci_high
    assert c.model_bytes == {"fp32": 4000, "int8": 1000, "int8-dyn": 1000}


def test_layer_sections(exp):
    c = compare_versions(exp, "fp32", "int8")
    assert [r.op_type for r in c.layer_types] == ["Conv", "Gemm", "QuantizeLinear", "Relu", "DequantizeLinear"]
    conv = c.layer_types[0]
    assert (conv.time_a_us, conv.time_b_us, conv.precision_counts_a, conv.precision_counts_b) == (
        300, 120, {"FP32": 1}, {"INT8": 1})
    assert conv.ratio.point == pytest.approx(0.4) and conv.ratio.significant
    assert c.layer_types[3].ratio is None  # Relu ran in A only (fused into the QLinearConv)
    layer = c.kernels[0]
    assert (layer.layer, layer.executed_a, layer.executed_b) == ("conv, relu", ("conv", "relu"), ("conv_token_1",))
    assert c.coverage.share_a == 1.0 and c.coverage.share_b == 1.0
    assert c.overhead.time_b_us == 30 and c.overhead.share_b == pytest.approx(30 / 200)
    assert c.precision_share["int8"] == {"FP32": 0.25, "INT8": 0.6, "mixed": 0.15}
    assert c.precision_transitions == {"fp32": 0, "int8": 1, "int8-dyn": 1}
    assert {a.rule_id for a in c.advice} >= {"fp32_gemm", "qdq_overhead", "outputs_disagree"}


def test_a_comparison_without_kernel_ratios_is_the_full_one_with_none_for_them(exp):
    """The chooser's version pairs use only the kernel rows' shapes and ask for no kernel ratios."""
    for a, b in (("fp32", "int8"), ("int8", "fp32"), ("fp32", "int8-dyn")):
        full = compare_versions(exp, a, b)
        light = compare_versions(exp, a, b, kernel_ratios=False)
        assert light.kernels and any(k.ratio is not None for k in full.kernels)
        assert all(k.ratio is None for k in light.kernels)
        assert light == dataclasses.replace(full, kernels=tuple(dataclasses.replace(k, ratio=None)
                                                                for k in full.kernels))


def test_agreement_rows_and_tolerance(exp):
    c = compare_versions(exp, "fp32", "int8")
    (row,) = c.agreement
    assert (row.version, row.reference_version, row.output, row.max_abs, row.within_tolerance) == (
        "int8", "fp32", "y", 0.1, False)


def test_missing_profiles_leave_the_layer_sections_empty_with_a_note(tmp_path):
    c = compare_versions(load_experiment(_write(tmp_path, profiled=())), "fp32", "int8")
    assert c.config_label == "b4 t2 c1" and "No configuration was profiled" in c.config_reason
    assert c.kernels == () and c.layer_types == () and c.coverage is None
    assert any("No per-node profile of fp32 and int8" in n for n in c.notes)


def test_compare_pairs_follow_the_spec_and_are_deterministic(exp):
    pairs = compare_pairs(exp)
    assert [(c.a, c.b, c.b_was_default) for c in pairs] == [("fp32", "int8", False), ("fp32", "int8", True)]
    assert compare_pairs(exp) == pairs
    assert dataclasses.replace(pairs[0]) == pairs[0]


def test_real_recorded_run(tmp_path):
    """The site's recorded quick run of the example CNN (real profiles and mapping): every pair compares."""
    from support.compare import write_compare_results

    exp = load_experiment(write_compare_results(tmp_path))
    for c in compare_pairs(exp):
        assert c.latency_ratio is not None and c.timings is not None
        if c.coverage is not None:
            assert c.coverage.share_a >= 0.98 and c.coverage.share_b >= 0.98
            assert c.layer_types and c.kernels


def test_without_a_tolerance_outputs_far_from_the_reference_still_warn(tmp_path):
    """No `tolerance:` in the spec: perfsite's default (cosine ≥ 0.99) judges the outputs, in the record, the
    advice, the compare page and the terminal. A static INT8 detector calibrated on random data once reached
    cosine 0.19 with nothing said beside its speed-up."""
    from support.compare import write_compare_results

    from generator.cli.compare import _agreement
    from generator.site.compare_page import _tolerance_text

    exp = load_experiment(write_compare_results(tmp_path))
    spec = {k: v for k, v in json.loads(spec_to_json(exp.spec)).items() if k != "tolerance"}
    close = dataclasses.replace(exp, spec=spec_from_json(spec))
    ok = compare_versions(close, "fp32", "int8-static")
    assert not ok.tolerance_set and {r.within_tolerance for r in ok.agreement} == {True}  # cosine 0.9998
    assert "within perfsite's default tolerance (cosine >= 0.99)" in _agreement(ok)
    assert _tolerance_text(close.spec) == "cosine ≥ 0.99, perfsite's default: the spec sets no `tolerance:`"
    broken = exp.agreement.assign(cosine=0.19)
    c = compare_versions(dataclasses.replace(close, agreement=broken), "fp32", "int8-static")
    assert {r.within_tolerance for r in c.agreement} == {False}
    (advice,) = [a for a in c.advice if a.rule_id == "outputs_disagree"]
    assert advice.severity == "warning" and "perfsite's default tolerance (cosine ≥ 0.99)" in advice.text
    assert "the speed of a broken model is not a result" in advice.text and "cosine 0.19000" in advice.text
    assert _agreement(c).startswith("DIFFER beyond perfsite's default tolerance (cosine >= 0.99): ")
    from generator.site.pages import experiment_pages, experiment_view, template_env

    view = experiment_view(dataclasses.replace(close, agreement=broken), "tiny-compare")
    (page,) = experiment_pages(template_env(), view)
    assert '!!! danger "Outputs changed: int8-dyn, int8-static"' in page.markdown
    assert "beyond perfsite's\n    default tolerance (cosine ≥ 0.99; the spec sets no `tolerance:`)" in page.markdown
    assert "int8-static output logits against fp32 (cosine 0.1900" in page.markdown


def test_a_side_whose_figures_fell_back_to_every_request_is_shown_without_a_verdict(tmp_path):
    """fp32 at b4 t1 c2 kept no process with enough clean requests: `perfsite diff` called it not comparable,
    while compare, its page and the chooser said "B is 10x faster (95 % CI 6–19)". The figures are shown, the
    verdict is "not compared", with the diff's words."""
    from generator.site.compare_page import latency_words, throughput_words

    exp = load_experiment(_write(tmp_path, preempted=("fp32-b1-t2",)))
    c = compare_versions(exp, "fp32", "int8", {"batch": 1, "threads": 2})
    assert c.a_trial_key == "fp32-b1-t2"
    for ratio in (c.latency_ratio, c.throughput_ratio):
        assert not ratio.significant
        assert ratio.unjudged == "only 0 of 3 measurement processes of A kept enough clean (not preempted) requests"
    assert latency_words(c.latency_ratio) == (
        "not compared: only 0 of 3 measurement processes of A kept enough clean (not preempted) requests "
        f"(B / A {c.latency_ratio.point:.2f} from every request, preempted ones included)")
    assert throughput_words(c.throughput_ratio).startswith("not compared: only 0 of 3 measurement processes of A")
    assert ("Only 0 of 3 measurement processes of A (fp32 at b1 t2 c1) kept enough clean (not preempted) "
            "requests: its figures fall back to every request, preempted ones included, and are shown without a "
            "verdict (not compared).") in c.notes[0]
    a, b = c.timings
    assert a.latency_ms > 0 and a.note.startswith("from every request, preempted ones included") and b.note is None
    # The other side's clean trials are judged as before.
    judged = compare_versions(exp, "fp32", "int8", {"batch": 4, "threads": 2})
    assert judged.latency_ratio.significant and judged.latency_ratio.unjudged is None
    assert latency_words(judged.latency_ratio).startswith("B is 2.0× faster")


def test_a_side_with_one_clean_process_of_three_is_not_judged_as_diff_does_not(tmp_path):
    """fp32 at b1 t2 kept one process of three with enough clean requests: `perfsite diff` calls such a side not
    comparable (a verdict needs two), while compare judged it from that one process's requests (flagged, but
    "B is 2× faster"). Now the figures are shown without a verdict, in the diff's words."""
    from generator.diff.noise import side_samples
    from generator.site.compare_page import latency_words

    exp = load_experiment(_write(tmp_path, preempted=(), one_clean=("fp32-b1-t2",)))
    c = compare_versions(exp, "fp32", "int8", {"batch": 1, "threads": 2})
    why = ("only 1 of 3 measurement processes of A kept enough clean (not preempted) requests (a verdict needs 2 "
           "or more)")
    for ratio in (c.latency_ratio, c.throughput_ratio):
        assert not ratio.significant and ratio.unjudged == why
    assert latency_words(c.latency_ratio) == (
        f"not compared: {why} (B / A {c.latency_ratio.point:.2f} from the clean requests of that process alone)")
    assert ("Only 1 of 3 measurement processes of A (fp32 at b1 t2 c1) kept enough clean (not preempted) requests "
            "(a verdict needs 2 or more): its figures come from the clean requests of that process alone, and are "
            "shown without a verdict (not compared).") in c.notes[0]
    assert c.timings[0].processes == 1 and c.timings[0].note == (
        "from the clean requests of the 1 of 3 measurement processes that kept enough of them: not judged (a "
        "verdict needs 2 or more)")
    # The layer ratios borrow the spread of that side's one process: no layer verdicts either.
    assert c.layer_types and all(t.ratio is None or (not t.ratio.significant and t.ratio.unjudged == why)
                                 for t in c.layer_types)
    assert any(t.ratio and (t.ratio.low > 1 or t.ratio.high < 1) for t in c.layer_types)  # else "significant"
    from generator.site.compare_page import ratio_cell

    assert {ratio_cell(t.ratio)[1] for t in c.layer_types if t.ratio} == {"not compared"}
    assert c.kernels and all(k.ratio is None or not k.ratio.significant for k in c.kernels)
    side = side_samples(exp, exp.trials[exp.trials["trial_key"] == "fp32-b1-t2"].iloc[-1])
    assert not side.judgeable and side.processes - side.starved == 1  # the diff's rule, the same side
    assert compare_versions(exp, "fp32", "int8", {"batch": 4, "threads": 2}).latency_ratio.significant


def test_a_side_starved_of_cpu_in_results_without_preemption_is_not_judged_as_diff_does_not(tmp_path):
    """Results without run-delay (schema 1, or a machine that does not record it): `perfsite diff` leaves out
    processes starved of CPU and calls a side with fewer than two left not comparable; the compare pages judged
    every process. Both apply one rule now (generator.analysis.sides)."""
    from generator.diff.noise import side_samples

    exp = load_experiment(_write(tmp_path, starved=("fp32-b1-t2",)))
    c = compare_versions(exp, "fp32", "int8", {"batch": 1, "threads": 2})
    why = ("only 1 of 3 measurement processes of A got the CPU they asked for (a verdict needs 2 or more, and no "
           "more than half left out)")
    assert not c.latency_ratio.significant and c.latency_ratio.unjudged == why
    assert c.timings[0].processes == 3 and c.timings[0].note.startswith("from every process, starved ones included")
    assert "its figures come from every process, starved ones included, and are shown without a verdict" in c.notes[0]
    assert not side_samples(exp, exp.trials[exp.trials["trial_key"] == "fp32-b1-t2"].iloc[-1]).judgeable
    assert compare_versions(exp, "fp32", "int8", {"batch": 4, "threads": 2}).latency_ratio.significant


def test_with_no_sweet_spot_the_configuration_reason_says_why_not_that_it_was_not_profiled(tmp_path):
    """No configuration met the threshold, every one was profiled, yet the reason read "fp32 has no sweet spot;
    its best configuration has no per-node profile in both versions". Each case has its own reason now."""
    every = tuple(CONFIGS)
    tight = compare_versions(load_experiment(_write(tmp_path / "tight", threshold=0.1, profiled=every)), "fp32",
                             "int8")
    assert tight.config_label == "b4 t2 c1"  # A's highest throughput
    assert tight.config_reason == ("fp32 has no sweet spot: no configuration has p90 latency within 0.1 ms (the "
                                   "fastest: 1.29 ms); the comparison uses b4 t2 c1, the profiled configuration "
                                   "where fp32 does best.")
    assert "per-node profile" not in tight.config_reason
    none = compare_versions(load_experiment(_write(tmp_path / "none", threshold=None)), "fp32", "int8")
    assert none.config_reason == ("fp32 has no sweet spot: the spec sets no latency threshold (latency_threshold_ms); "
                                  "the comparison uses b1 t2 c1, the profiled configuration where fp32 does best.")
    # A sweet spot that was not profiled keeps its own reason.
    unprofiled = compare_versions(load_experiment(_write(tmp_path / "spot")), "fp32", "int8")
    assert unprofiled.config_reason.startswith("A's sweet spot (b4 t2 c1) has no per-node profile in both versions; "
                                               "the comparison uses b1 t2 c1")
