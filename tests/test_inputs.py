"""make_feeds: random, fixed and file inputs checked against the model's declared inputs."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from generator.errors import RunError, SpecError
from generator.inputs import describe_model_inputs, make_feeds
from generator.models.builder import FLOAT, INT64, GraphBuilder, model_bytes
from generator.models.transformer import build_transformer

BOOL = onnx.TensorProto.BOOL


def _identity_model(path: Path, inputs: list[tuple[str, int, list]]) -> Path:
    """A model that returns each input unchanged: enough to check what onnxruntime accepts."""
    b = GraphBuilder("identity", seed=0)
    for name, elem_type, shape in inputs:
        b.output(b.input(name, elem_type, shape), f"{name}_out", elem_type, shape)
    path.write_bytes(model_bytes(b.build()))
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return _identity_model(tmp_path / "m.onnx", [
        ("x", FLOAT, ["batch", 3]),
        ("ids", INT64, ["batch", "seq_len"]),
        ("flag", BOOL, []),
        ("state", FLOAT, [2, "batch", 4]),
    ])


def _inp(**fields: Any) -> SimpleNamespace:
    base = {"shape": None, "dtype": None, "value": None, "file": None, "key": None, "range": None}
    return SimpleNamespace(**{**base, **fields})


def _loaded(tmp_path: Path, inputs: dict[str, SimpleNamespace]) -> SimpleNamespace:
    return SimpleNamespace(
        spec=SimpleNamespace(inputs=inputs),
        path=tmp_path / "spec.yaml",
        resolve=lambda rel, what: (tmp_path / rel).resolve(),
    )


def _all_inputs(**overrides: SimpleNamespace) -> dict[str, SimpleNamespace]:
    inputs = {
        "x": _inp(shape=["batch", 3], dtype="float32"),
        "ids": _inp(shape=["batch", "seq_len"], dtype="int64", range=[5, 9]),
        "flag": _inp(value=True, dtype="bool"),
        "state": _inp(value=0.0, dtype="float32"),
    }
    return {**inputs, **overrides}


def _run(model: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_describe_model_inputs(model: Path) -> None:
    described = describe_model_inputs(model)
    assert [tuple(d) for d in described] == [
        ("x", np.dtype("float32"), ("batch", 3)),
        ("ids", np.dtype("int64"), ("batch", "seq_len")),
        ("flag", np.dtype("bool"), ()),
        ("state", np.dtype("float32"), (2, "batch", 4)),
    ]


def test_random_and_fixed_inputs_feed_the_model(tmp_path: Path, model: Path) -> None:
    feeds = make_feeds(_loaded(tmp_path, _all_inputs()), model, {"batch": 4, "seq_len": 6}, seed=3)
    assert list(feeds) == ["x", "ids", "flag", "state"]
    assert feeds["x"].shape == (4, 3) and feeds["x"].dtype == np.float32
    assert feeds["ids"].shape == (4, 6) and feeds["ids"].dtype == np.int64
    assert feeds["ids"].min() >= 5 and feeds["ids"].max() < 9
    assert feeds["flag"].shape == () and bool(feeds["flag"]) is True
    assert feeds["state"].shape == (2, 4, 4) and not feeds["state"].any()
    outputs = _run(model, feeds)
    np.testing.assert_array_equal(outputs[1], feeds["ids"])


def test_same_seed_same_data(tmp_path: Path, model: Path) -> None:
    loaded = _loaded(tmp_path, _all_inputs())
    a = make_feeds(loaded, model, {"batch": 2, "seq_len": 5}, seed=1)
    b = make_feeds(loaded, model, {"batch": 2, "seq_len": 5}, seed=1)
    c = make_feeds(loaded, model, {"batch": 2, "seq_len": 5}, seed=2)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert not np.array_equal(a["x"], c["x"])


def test_default_integer_range(tmp_path: Path, model: Path) -> None:
    inputs = _all_inputs(ids=_inp(shape=["batch", "seq_len"], dtype="int64"))
    ids = make_feeds(_loaded(tmp_path, inputs), model, {"batch": 64, "seq_len": 64})["ids"]
    assert ids.min() >= 0 and ids.max() < 100 and len(np.unique(ids)) > 50


def test_value_with_full_shape_and_broadcast(tmp_path: Path, model: Path) -> None:
    state = np.arange(16, dtype=np.float32).reshape(2, 2, 4)
    inputs = _all_inputs(state=_inp(value=state.tolist(), dtype="float32"), x=_inp(value=[1.0, 2.0, 3.0],
                                                                                  dtype="float32"))
    feeds = make_feeds(_loaded(tmp_path, inputs), model, {"batch": 2, "seq_len": 3})
    np.testing.assert_array_equal(feeds["state"], state)
    np.testing.assert_array_equal(feeds["x"], [[1, 2, 3], [1, 2, 3]])


def test_npy_file_tiled_and_sliced_to_the_batch(tmp_path: Path, model: Path) -> None:
    rows = np.arange(9, dtype=np.float64).reshape(3, 3)  # float64 on disk: converted to the model's float32
    np.save(tmp_path / "x.npy", rows)
    loaded = _loaded(tmp_path, _all_inputs(x=_inp(file="x.npy")))
    tiled = make_feeds(loaded, model, {"batch": 5, "seq_len": 2})["x"]
    assert tiled.dtype == np.float32
    np.testing.assert_array_equal(tiled, rows[[0, 1, 2, 0, 1]])
    np.testing.assert_array_equal(make_feeds(loaded, model, {"batch": 2, "seq_len": 2})["x"], rows[:2])


def test_npz_file_with_key(tmp_path: Path, model: Path) -> None:
    ids = np.array([[1, 2, 3, 4]], dtype=np.int64)
    np.savez(tmp_path / "data.npz", ids=ids, other=np.zeros(2))
    loaded = _loaded(tmp_path, _all_inputs(ids=_inp(file="data.npz", key="ids")))
    ids_feed = make_feeds(loaded, model, {"batch": 2, "seq_len": 4})["ids"]
    np.testing.assert_array_equal(ids_feed, [[1, 2, 3, 4]] * 2)
    missing = _loaded(tmp_path, _all_inputs(ids=_inp(file="data.npz")))
    with pytest.raises(RunError, match=r"inputs\.ids\.key.*'ids', 'other'\]; set `key:` to one of them\."):
        make_feeds(missing, model, {"batch": 2, "seq_len": 4})


def test_file_of_wrong_kind_or_missing(tmp_path: Path, model: Path) -> None:
    np.save(tmp_path / "ids.npy", np.zeros((2, 4), np.float32))
    binding = {"batch": 2, "seq_len": 4}
    with pytest.raises(RunError, match=r"inputs\.ids: file ids.npy holds float32 data.*int64"):
        make_feeds(_loaded(tmp_path, _all_inputs(ids=_inp(file="ids.npy"))), model, binding)
    with pytest.raises(RunError, match=r"inputs\.ids\.file: .*nope\.npy does not exist"):
        make_feeds(_loaded(tmp_path, _all_inputs(ids=_inp(file="nope.npy"))), model, binding)


def test_unknown_input_names_the_declared_ones(tmp_path: Path, model: Path) -> None:
    loaded = _loaded(tmp_path, _all_inputs(pixel_values=_inp(shape=[1], dtype="float32")))
    with pytest.raises(RunError) as err:
        make_feeds(loaded, model, {"batch": 1, "seq_len": 2})
    message = str(err.value)
    assert str(tmp_path / "spec.yaml") in message and "inputs.pixel_values" in message
    assert "ids: int64 [batch, seq_len]" in message


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        (_inp(shape=["batch", 3], dtype="int32"), r"inputs\.x: dtype int32 does not match .*float32"),
        (_inp(shape=["batch", 3, 1], dtype="float32"), r"inputs\.x: shape .* rank 3 .*wants rank 2"),
        (_inp(shape=["batch", 4], dtype="float32"), r"inputs\.x: .*4 on axis 1 where the model fixes 3"),
        (_inp(value=[[1.0, 2.0]], dtype="float32"), r"inputs\.x: .*2 on axis 1 where the model fixes 3"),
    ],
)
def test_mismatches_name_spec_entry_and_model(
    tmp_path: Path, model: Path, override: Any, pattern: str
) -> None:
    with pytest.raises(RunError, match=pattern) as err:
        make_feeds(_loaded(tmp_path, _all_inputs(x=override)), model, {"batch": 2, "seq_len": 3})
    assert f"The model {model} declares x: float32 [batch, 3]" in str(err.value)


def test_float_spec_feeds_a_float16_model(tmp_path: Path) -> None:
    model = _identity_model(tmp_path / "h.onnx", [("x", onnx.TensorProto.FLOAT16, ["batch", 3])])
    loaded = _loaded(tmp_path, {"x": _inp(shape=["batch", 3], dtype="float32")})
    feeds = make_feeds(loaded, model, {"batch": 2})
    assert feeds["x"].dtype == np.float16
    _run(model, feeds)


def test_unbound_placeholder_is_a_spec_error(tmp_path: Path, model: Path) -> None:
    with pytest.raises(SpecError, match=r"inputs\.ids\.shape\[1\] is the placeholder 'seq_len'"):
        make_feeds(_loaded(tmp_path, _all_inputs()), model, {"batch": 2})


def test_undescribed_inputs_are_generated_when_bound(tmp_path: Path, model: Path) -> None:
    inputs = _all_inputs()
    del inputs["state"], inputs["ids"]
    feeds = make_feeds(_loaded(tmp_path, inputs), model, {"batch": 3, "seq_len": 2})
    assert feeds["state"].shape == (2, 3, 4) and feeds["state"].dtype == np.float32
    assert feeds["ids"].shape == (3, 2) and feeds["ids"].min() >= 0 and feeds["ids"].max() < 100
    _run(model, feeds)


def test_undescribed_input_learns_named_dims(tmp_path: Path) -> None:
    model = _identity_model(tmp_path / "n.onnx", [("a", FLOAT, ["N", 3]), ("b", FLOAT, ["N", "unbound_dim"])])
    loaded = _loaded(tmp_path, {"a": _inp(shape=["batch", 3], dtype="float32")})
    with pytest.raises(RunError, match=r"b: float32 \[N, unbound_dim\]") as err:
        make_feeds(loaded, model, {"batch": 2})
    assert "bound dims: N=2, batch=2" in str(err.value)
    model = _identity_model(tmp_path / "n2.onnx", [("a", FLOAT, ["N", 3]), ("b", FLOAT, ["N", 2])])
    assert make_feeds(loaded, model, {"batch": 5})["b"].shape == (5, 2)


def test_real_spec_with_example_transformer(tmp_path: Path) -> None:
    spec_mod = pytest.importorskip("generator.spec")
    (tmp_path / "transformer.onnx").write_bytes(model_bytes(build_transformer()))
    text = """
name: t
models: {fp32: {path: transformer.onnx}}
inputs:
  input_ids: {shape: [batch, seq_len], dtype: int64, range: [0, 1000]}
  attention_mask: {value: 1, dtype: int64}
sweep: {batch: [1, 2], seq_len: [8]}
"""
    loaded = spec_mod.load_spec_text(text, tmp_path / "spec.yaml")
    feeds = make_feeds(loaded, tmp_path / "transformer.onnx", {"batch": 2, "seq_len": 8})
    assert feeds["attention_mask"].shape == (2, 8) and (feeds["attention_mask"] == 1).all()
    (hidden,) = _run(tmp_path / "transformer.onnx", feeds)
    assert hidden.shape == (2, 8, 128)


def test_ids_that_index_a_table_stay_under_its_rows_and_a_wider_range_is_refused(tmp_path: Path) -> None:
    """Issue 35, item 12: random ids in [0, 100) against a 2-row table failed inside onnxruntime's Gather."""
    from support.models import embedding_model

    model = embedding_model(tmp_path / "encoder.onnx")
    loaded = _loaded(tmp_path, {})
    feeds = make_feeds(loaded, model, {"seq": 64})
    assert feeds["token_type_ids"].max() == 1 and feeds["input_ids"].max() < 30 and feeds["input_ids"].max() > 20
    assert _run(model, feeds)[0].shape == (1, 64, 4)  # onnxruntime takes them
    wide = {"token_type_ids": _inp(shape=[1, "seq"], dtype="int64", range=[0, 100])}
    with pytest.raises(RunError) as raised:
        make_feeds(_loaded(tmp_path, wide), model, {"seq": 8})
    assert str(raised.value) == (
        f"{tmp_path / 'spec.yaml'}: inputs.token_type_ids: range [0, 100) goes past the table this input indexes: "
        "Gather node 'type_gather' reads a table of 2 rows, so the model accepts values from 0 to 1; use e.g. "
        "range: [0, 2].")


def test_ids_from_a_file_past_the_table_are_refused_naming_the_file_and_the_table(tmp_path: Path) -> None:
    """Ids from a file were not checked: onnxruntime's Gather failed mid-measure (a failed trial, or the one-shot
    after probing the machine) naming neither the input nor the file (a hostile tour, 2026-12-07)."""
    from support.models import embedding_model

    from generator.oneshot.files import parse_input_files

    model = embedding_model(tmp_path / "encoder.onnx")
    np.save(tmp_path / "tt.npy", np.full((1, 8), 5, np.int64))
    spec_inputs = {"token_type_ids": _inp(file="tt.npy")}
    with pytest.raises(RunError) as raised:
        make_feeds(_loaded(tmp_path, spec_inputs), model, {"seq": 8})
    assert str(raised.value).startswith(
        f"{tmp_path / 'spec.yaml'}: inputs.token_type_ids: file tt.npy holds values from 5 to 5, but the Gather node "
        "'type_gather' indexes a table of 2 rows with this input: allowed are integers from 0 to 1 (or from -2 "
        "counting from the end).")
    with pytest.raises(RunError) as raised:
        parse_input_files([f"token_type_ids={tmp_path / 'tt.npy'}"], model, describe_model_inputs(model))
    assert str(raised.value) == (
        f"{model}: --input token_type_ids: {tmp_path / 'tt.npy'} holds values from 5 to 5, but the Gather node "
        "'type_gather' indexes a table of 2 rows with this input: allowed are integers from 0 to 1 (or from -2 "
        "counting from the end).")
    np.save(tmp_path / "tt.npy", np.array([[0, 1, -1, -2, 1, 0, 0, 1]], np.int64))  # all in the table
    assert make_feeds(_loaded(tmp_path, spec_inputs), model, {"seq": 8})["token_type_ids"].min() == -2


def test_a_pipe_or_a_device_as_an_input_file_is_named_for_what_it_is(tmp_path: Path, model: Path) -> None:
    """`is_file()` is False for a pipe: the message said "does not exist" of a file `ls` shows."""
    os.mkfifo(tmp_path / "feed.npy")
    inputs = _all_inputs(ids=_inp(file="feed.npy"))
    with pytest.raises(RunError) as raised:
        make_feeds(_loaded(tmp_path, inputs), model, {"batch": 2, "seq_len": 3})
    assert str(raised.value) == (
        f"{tmp_path / 'spec.yaml'}: inputs.ids.file: {tmp_path / 'feed.npy'} is not a regular file (a device, a pipe "
        "or a socket); allowed: a .npy or .npz file (paths are relative to the spec file).")
