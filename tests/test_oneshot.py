"""`perfsite profile` input shapes and user errors: --dim/--shape parsing, dynamic dims, bad model files.

Fast: no measurement runs here (see test_oneshot_cli.py for the real profiles)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.models import dynamic_conv_model

from generator.errors import ModelError, PerfsiteError, RunError
from generator.inputs import make_feeds
from generator.oneshot import output_paths
from generator.oneshot.shapes import (
    ShapeError,
    make_input_feeds,
    model_inputs,
    parse_dims,
    parse_shapes,
    resolve_inputs,
)
from generator.spec import load_spec_text


@pytest.fixture
def conv(tmp_path) -> Path:
    return dynamic_conv_model(tmp_path / "conv.onnx")


def _resolve(path: Path, dims=(), shapes=()):
    return resolve_inputs(path, model_inputs(path), parse_dims(dims, path), parse_shapes(shapes, path))


def test_dims_bind_height_and_width_and_the_batch_defaults_to_one(conv):
    resolved = _resolve(conv, dims=["H=32", "W = 48"])
    assert [i.shape for i in resolved.inputs] == [(1, 3, 32, 48)]
    assert resolved.dims == {"H": 32, "W": 48, "N": 1} and resolved.defaulted == ("N",) and resolved.batch == 1
    feeds = make_input_feeds(conv, resolved)
    assert feeds["x"].shape == (1, 3, 32, 48) and feeds["x"].dtype == np.float32


def test_a_whole_shape_binds_every_dim_including_the_batch(conv):
    resolved = _resolve(conv, shapes=["x=2,3,16,24"])
    assert resolved.inputs[0].shape == (2, 3, 16, 24) and resolved.batch == 2 and resolved.defaulted == ()


def test_missing_dims_are_named_with_the_options_that_set_them(conv):
    with pytest.raises(ShapeError) as err:
        _resolve(conv)
    text = str(err.value)
    assert isinstance(err.value, PerfsiteError) and str(conv) in text
    for piece in ("'H'", "'W'", "--dim H=VALUE", "--dim W=VALUE", "--shape x=1,3,H,W", "x: float32 [N, 3, H, W]"):
        assert piece in text, f"{piece!r} missing from: {text}"
    assert "'N'" not in text  # the batch has its default


def test_transformer_needs_its_sequence_length(example_models):
    path = example_models["transformer"]
    with pytest.raises(ShapeError, match=r"the input dim 'seq_len' has no value.*--dim seq_len=VALUE"):
        _resolve(path)
    resolved = _resolve(path, dims=["seq_len=8", "batch=2"])
    assert [i.shape for i in resolved.inputs] == [(2, 8), (2, 8)] and resolved.batch == 2


def test_unnamed_dims_need_a_whole_shape(tmp_path):
    path = dynamic_conv_model(tmp_path / "unnamed.onnx", dims=(1, 3, None, None))
    with pytest.raises(ShapeError, match=r"neither a name nor a value.*--shape x=1,3,N,N"):
        _resolve(path)
    assert _resolve(path, shapes=["x=1,3,8,8"]).inputs[0].shape == (1, 3, 8, 8)


def test_an_input_the_model_fixes_to_zero_elements_is_named_not_asked_for(tmp_path):
    """A dim of 0 (an empty tensor) was taken for an unnamed dim: `perfsite profile` said it had "neither a name
    nor a value" and asked for `--shape x=N,...`, then refused `--shape x=0,...` (sizes are positive) and let
    onnxruntime refuse any other ("Expected: 0") after probing the machine; a spec's trial failed the same way.
    Both now say what the model declares, before anything runs."""
    path = dynamic_conv_model(tmp_path / "empty.onnx", dims=(0, 3, "H", "W"))
    expected = (f"{path}: the model fixes axis 0 of 'x' to 0 (x: float32 [0, 3, H, W]): an empty tensor, and "
                "perfsite measures no empty input, since there is nothing to time. Allowed:")
    with pytest.raises(ShapeError) as err:
        _resolve(path, dims=["H=8", "W=8"])
    assert str(err.value).startswith(expected), err.value
    loaded = load_spec_text("name: e\nmodels:\n  m: {path: empty.onnx}\ninputs:\n  x: {shape: [2, 3, 8, 8]}\n",
                            tmp_path / "spec.yaml")
    with pytest.raises(RunError) as err:
        make_feeds(loaded, path, {"batch": 1})
    assert str(err.value).startswith(f"{tmp_path / 'spec.yaml'}: inputs.x: the model fixes axis 0 of 'x' to 0 "), err


@pytest.mark.parametrize(("dims", "shapes", "message"), [
    (["H"], [], r"--dim 'H' is not NAME=VALUE"),
    (["H=0"], [], r"VALUE a positive integer"),
    (["H=abc"], [], r"--dim seq_len=128"),
    (["H=²"], [], r"VALUE a positive integer"),  # "²".isdigit() is true, int("²") raised ValueError
    ([], ["x=1,3,²,4"], r"positive integer sizes"),
    (["depth=3"], [], r"--dim depth=\.\.\. names a dim the model does not declare\. Its named dims are: H, N, W"),
    ([], ["x"], r"--shape 'x' is not INPUT=D1,D2"),
    ([], ["x=1,3,a,4"], r"positive integer sizes"),
    ([], ["image=1,3,8,8"], r"--shape names the input 'image'.*It declares: x: float32 \[N, 3, H, W\]"),
    ([], ["x=1,3,8"], r"has rank 3; the model declares x: float32 \[N, 3, H, W\] \(rank 4\)"),
    ([], ["x=1,4,8,8"], r"has 4 on axis 1 where the model fixes 3"),
    (["H=8"], ["x=1,3,16,16"], r"the dim 'H' is 8 .* gives it 16"),
])
def test_bad_dims_and_shapes_are_one_clear_error(conv, dims, shapes, message):
    with pytest.raises(ShapeError, match=message) as err:
        _resolve(conv, dims, shapes)
    assert str(conv) in str(err.value)


def test_a_file_that_is_not_an_onnx_model_is_a_model_error(tmp_path):
    bad = tmp_path / "notes.onnx"
    bad.write_text("this is not a protobuf \x00\xff")
    with pytest.raises(ModelError, match=r"notes\.onnx: not a readable ONNX model"):
        model_inputs(bad)
    with pytest.raises(ModelError, match=r"no such model file"):
        model_inputs(tmp_path / "missing.onnx")


def test_outputs_are_named_after_the_model(tmp_path):
    assert output_paths(Path("m/resnet.onnx"), tmp_path) == (tmp_path / "resnet.perf.json",
                                                              tmp_path / "resnet.perf.html")


def test_the_report_prints_control_and_override_characters_as_visible_escapes():
    """Autoescape makes a node name harmless, not readable: U+202E would reverse the rest of its cell, ESC would
    reach a copied text. Template text and chart data show them as the site's pages do; the record and the
    trace (data for other tools) keep the names as they are."""
    from generator.oneshot.html import _environment

    env = _environment()
    name = "conv\u202eevil\x1b[31m"
    page = env.from_string("<td>{{ name }}</td>{{ chart | chart_island }}{{ record | json_island }}").render(
        name=name, chart={"data": [{"node": name}]}, record={"node": name})
    assert "<td>conv\\u202eevil\\x1b[31m</td>" in page
    assert '{"data":[{"node":"conv\\\\u202eevil\\\\x1b[31m"}]}' in page  # JSON of the visible escapes
    assert "\u202e" in page.split("</td>", 1)[1].split("}]}", 1)[1]  # the record: the name as it is


def test_long_names_are_cut_in_the_middle_so_names_sharing_a_prefix_stay_apart():
    """The terminal report cut node names at the end: `…/attention/self/query/MatMul` and `…/key/MatMul` under
    one long prefix printed as identical rows."""
    from generator.terminal_text import safe

    prefix = "/model/encoder/layers.11/attention/self/"
    cut = [safe(prefix + tail, 30) for tail in ("query/MatMul", "key/MatMul", "value/Add")]
    assert cut == ["/model/encoder/…f/query/MatMul", "/model/encoder/…elf/key/MatMul", "/model/encoder/…self/value/Add"]
    assert all(len(c) == 30 for c in cut) and safe("short", 30) == "short" and safe("a\x1bb", 2) == "a…"
