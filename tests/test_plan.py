"""The plan: sweep expansion, exclude, --only, trial keys."""

from __future__ import annotations

import pytest

from generator.errors import RunError
from generator.plan import Configuration, Trial, filter_trials, plan_trials, sweep_axes, trial_key
from generator.spec import load_spec_text

SPEC = """
name: plan-test
models:
  fp32: {path: m.onnx}
  int8: {from: fp32, quantize: {mode: dynamic}}
inputs:
  ids: {shape: [batch, seq_len], dtype: int64}
sweep:
  batch: [1, 4]
  threads: [1, 2]
  seq_len: [16, 32]
exclude:
  - {batch: 4, seq_len: 32}
"""


@pytest.fixture
def spec(tmp_path):
    return load_spec_text(SPEC, tmp_path / "spec.yaml").spec


def test_cartesian_product_less_excludes_versions_inside(spec):
    trials = plan_trials(spec)
    # 2 batch × 2 threads × 2 seq_len = 8 configurations, exclude removes 2 → 6, × 2 versions.
    assert len(trials) == 12
    assert all(not (t.config.batch == 4 and dict(t.config.dims)["seq_len"] == 32) for t in trials)
    # Versions alternate inside each configuration: the order the runner interleaves them in.
    assert [t.version for t in trials[:4]] == ["fp32", "int8", "fp32", "int8"]
    assert trials[0].config == trials[1].config


def test_axes_include_placeholders_after_standard_axes(spec):
    axes = sweep_axes(spec.sweep)
    assert list(axes)[:3] == ["batch", "threads", "concurrency"]
    assert axes["seq_len"] == [16, 32]
    assert axes["optimization_level"] == ["all"]


def test_configuration_label_binding_and_match():
    c = Configuration.from_mapping({"batch": 8, "threads": 2, "seq_len": 128, "spinning": False})
    assert c.label == "b8 t2 c1 nospin seq_len=128"
    assert c.binding() == {"batch": 8, "seq_len": 128}
    assert c.matches({"batch": 8, "seq_len": 128})
    assert not c.matches({"batch": 1})
    assert not c.matches({"unknown": 1})


def test_only_filters_with_or_within_a_key(spec):
    axes = list(sweep_axes(spec.sweep))
    kept = filter_trials(plan_trials(spec), "version=fp32,batch=1", axes)
    assert {t.version for t in kept} == {"fp32"} and {t.config.batch for t in kept} == {1}
    both = filter_trials(plan_trials(spec), "seq_len=16,seq_len=32,threads=2", axes)
    assert {dict(t.config.dims)["seq_len"] for t in both} == {16, 32}


def test_only_with_unknown_key_names_the_allowed_keys(spec):
    with pytest.raises(RunError, match="Allowed keys: version, batch"):
        filter_trials(plan_trials(spec), "bacth=1", list(sweep_axes(spec.sweep)))


def test_trial_key_changes_with_every_measurement_relevant_field():
    t = Trial("fp32", Configuration(batch=1))
    base = dict(model_sha256="a", inputs={"x": 1}, measure={"warmup": 1}, quick=False, env_fingerprint="e")
    k = trial_key(t, **base)
    assert k == trial_key(t, **base) and len(k) == 20
    for field, value in [("model_sha256", "b"), ("inputs", {"x": 2}), ("measure", {"warmup": 2}),
                         ("quick", True), ("env_fingerprint", "f")]:
        assert trial_key(t, **{**base, field: value}) != k, field
    assert trial_key(Trial("fp32", Configuration(batch=2)), **base) != k
