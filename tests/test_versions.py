"""prepare_versions: root files, derived versions through the content-hash cache, and the errors users see."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from support.models import matmul_model

from generator.errors import ModelError, SpecError
from generator.inputs import make_feeds
from generator.models.builder import model_bytes
from generator.models.cnn import build_cnn
from generator.models.transformer import build_transformer
from generator.spec import load_spec_text
from generator.versions import ModelVersion, build_order, calibration_binding, prepare_versions

CNN_INPUTS = """
inputs:
  input: {shape: [batch, 3, 64, 64], dtype: float32}
sweep: {batch: [1, 4]}
"""
ALL_VERSIONS = """
name: versions
models:
  fp16-of-int8: {from: int8-static, fp16: {op_block_list: [QuantizeLinear, DequantizeLinear]}}
  fp32: {path: models/cnn.onnx}
  int8-dynamic: {from: fp32, quantize: {mode: dynamic}}
  int8-static: {from: fp32, quantize: {mode: static_qdq, calibration: {samples: 4}}}
  int8-qop: {from: fp32, quantize: {mode: static_qoperator, per_channel: true, calibration: {samples: 4}}}
  fp16: {from: fp32, fp16: true}
""" + CNN_INPUTS


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / "models").mkdir()
    (root / "models" / "cnn.onnx").write_bytes(model_bytes(build_cnn()))
    (root / "models" / "transformer.onnx").write_bytes(model_bytes(build_transformer()))
    return root


def _loaded(project: Path, text: str):
    return load_spec_text(text, project / "spec.yaml")


@pytest.fixture(scope="module")
def built(project: Path) -> tuple[dict[str, ModelVersion], list[str]]:
    messages: list[str] = []
    versions = prepare_versions(_loaded(project, ALL_VERSIONS), project / "cache", progress=messages.append)
    return versions, messages


def _outputs(version: ModelVersion, loaded) -> np.ndarray:
    session = ort.InferenceSession(str(version.path), providers=["CPUExecutionProvider"])
    return session.run(None, make_feeds(loaded, version.path, {"batch": 2}))[0]


def test_every_version_runs(project: Path, built) -> None:
    versions, messages = built
    loaded = _loaded(project, ALL_VERSIONS)
    assert list(versions) == list(loaded.spec.models)  # spec order kept
    reference = _outputs(versions["fp32"], loaded)
    for version in versions.values():
        logits = _outputs(version, loaded)
        assert logits.shape == (2, 100) and logits.dtype == np.float32
        assert np.isfinite(logits).all()
        # Quantized and fp16 versions approximate the fp32 model (random weights, so only loosely).
        assert np.corrcoef(logits.ravel(), reference.ravel())[0, 1] > 0.9, version.name
    assert sorted(messages) == [
        "building fp16 (fp16 keeping float32 inputs and outputs)",
        "building fp16-of-int8 (fp16 keeping float32 inputs and outputs)",
        "building int8-dynamic (quantize dynamic)",
        "building int8-qop (quantize static_qoperator)",
        "building int8-static (quantize static_qdq)",
    ]


def test_version_records(project: Path, built) -> None:
    versions, _ = built
    fp32, static, chained = versions["fp32"], versions["int8-static"], versions["fp16-of-int8"]
    assert fp32.path == (project / "models" / "cnn.onnx").resolve()
    assert fp32.source == "models/cnn.onnx" and fp32.chain == ("fp32",)
    assert fp32.sha256 == hashlib.sha256(fp32.path.read_bytes()).hexdigest()
    assert fp32.size_bytes == fp32.path.stat().st_size
    assert static.source == "fp32 → quantize(static_qdq)" and static.chain == ("fp32", "int8-static")
    assert static.path.parent == project / "cache" and len(static.path.stem) == 20
    assert "quant_pre_process ran with symbolic shape inference." in static.notes
    assert chained.source == "int8-static → fp16(keep_io_types)"
    assert chained.chain == ("fp32", "int8-static", "fp16-of-int8")
    assert len({v.path for v in versions.values()}) == len(versions)
    static_ops = {n.op_type for n in onnx.load(str(static.path)).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= static_ops
    qop_ops = {n.op_type for n in onnx.load(str(versions["int8-qop"].path)).graph.node}
    assert "QLinearConv" in qop_ops


def test_second_call_reuses_the_cache(project: Path, built) -> None:
    versions, _ = built
    mtimes = {name: v.path.stat().st_mtime_ns for name, v in versions.items()}
    messages: list[str] = []
    again = prepare_versions(_loaded(project, ALL_VERSIONS), project / "cache", progress=messages.append)
    assert messages == []
    assert again == versions
    assert {name: v.path.stat().st_mtime_ns for name, v in again.items()} == mtimes
    leftovers = [p.name for p in (project / "cache").iterdir() if p.suffix not in (".onnx", ".json")]
    assert leftovers == []


def test_changed_options_build_a_new_file(project: Path, built) -> None:
    versions, _ = built
    marker = "calibration: {samples: 4}}}\n  int8-qop"
    text = ALL_VERSIONS.replace(marker, marker.replace("4", "3"))
    messages: list[str] = []
    again = prepare_versions(_loaded(project, text), project / "cache", progress=messages.append)
    # The calibration change rebuilds int8-static and, through its new sha256, the version made from it.
    assert sorted(messages) == [
        "building fp16-of-int8 (fp16 keeping float32 inputs and outputs)",
        "building int8-static (quantize static_qdq)",
    ]
    assert again["int8-static"].path != versions["int8-static"].path
    assert again["int8-dynamic"].path == versions["int8-dynamic"].path


def test_transform_of_a_file_shares_the_cache(project: Path, built) -> None:
    versions, _ = built
    text = "name: d\nmodels:\n  direct: {path: models/cnn.onnx, quantize: {mode: dynamic}}\n" + CNN_INPUTS
    messages: list[str] = []
    direct = prepare_versions(_loaded(project, text), project / "cache", progress=messages.append)["direct"]
    assert messages == []  # same source content, transform and options as int8-dynamic: same cached file
    assert direct.path == versions["int8-dynamic"].path
    assert direct.source == "models/cnn.onnx → quantize(dynamic)" and direct.chain == ("direct",)


def test_calibration_from_npz(project: Path) -> None:
    data = np.random.default_rng(0).standard_normal((3, 3, 64, 64)).astype(np.float32)
    np.savez(project / "calib.npz", input=data)
    text = """
name: calib
models:
  fp32: {path: models/cnn.onnx}
  int8:
    from: fp32
    quantize: {mode: static_qdq, preprocess: false, calibration: {samples: 2, data: calib.npz}}
""" + CNN_INPUTS
    first = prepare_versions(_loaded(project, text), project / "cache")["int8"]
    assert first.notes == ()
    np.savez(project / "calib.npz", input=data * 2)
    second = prepare_versions(_loaded(project, text), project / "cache")["int8"]
    assert second.path != first.path  # the data's content is part of the cache key
    np.savez(project / "calib.npz", pixels=data)
    with pytest.raises(ModelError, match=r"models\.int8\.quantize\.calibration\.data: .*lacks input"):
        prepare_versions(_loaded(project, text), project / "cache")


@pytest.mark.parametrize(("array", "problem"), [
    (np.ones((4, 5), np.float32), "has 5 on axis 1 of a sample where the model fixes 4"),
    (np.ones((4, 1, 4), np.float32), "has rank 3 [4, 1, 4], the model wants rank 2"),
    (np.ones((4, 4), np.int64), "holds int64 data, which does not feed a float32 input without changing its kind"),
    (np.ones((0, 4), np.float32), "holds no sample (shape [0, 4])"),
])
def test_calibration_data_that_does_not_fit_the_input_is_named(tmp_path: Path, array, problem) -> None:
    """Calibration arrays of the wrong size, rank or kind failed inside onnxruntime's calibrator (`Got invalid
    dimensions for input: x ... Check the options under models.int8.quantize`, or `No data is collected.`),
    which blamed the quantize options. They are checked as input files are, naming the array and the model's
    declaration; float64 data for a float32 input is converted, not refused."""
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    np.savez(tmp_path / "calib.npz", x=array)
    text = ("name: calib\nmodels:\n  fp32: {path: models/tiny.onnx}\n  int8: {from: fp32, quantize: {mode: "
            "static_qdq, calibration: {samples: 2, data: calib.npz}}}\ninputs:\n  x: {shape: [batch, 4]}\n")
    with pytest.raises(ModelError) as err:
        prepare_versions(_loaded(tmp_path, text), tmp_path / "cache")
    assert str(err.value) == (f"{tmp_path / 'spec.yaml'}: models.int8.quantize.calibration.data: "
                              f"{tmp_path / 'calib.npz'}: the array `x` {problem}. Allowed: one array per model input, "
                              "its first axis the samples and the rest as the model declares (x: float32 [batch, 4]).")
    np.savez(tmp_path / "calib.npz", x=np.linspace(-1, 1, 8).reshape(2, 4))  # float64 for a float32 input
    assert prepare_versions(_loaded(tmp_path, text), tmp_path / "cache")["int8"].path.is_file()


def test_preprocess_falls_back_without_symbolic_shapes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = """
name: encoder
models:
  fp32: {path: models/transformer.onnx}
  int8: {from: fp32, quantize: {mode: dynamic}}
inputs:
  input_ids: {shape: [batch, seq_len], dtype: int64, range: [0, 1000]}
  attention_mask: {value: 1, dtype: int64}
sweep: {batch: [1], seq_len: [16, 32]}
"""
    loaded = _loaded(project, text)
    monkeypatch.chdir(tmp_path)
    int8 = prepare_versions(loaded, project / "cache")["int8"]
    assert list(tmp_path.iterdir()) == []  # onnxruntime's debug dump went to the scratch folder
    # The position-embedding Slice gives Min(512, seq_len), which symbolic shape inference cannot merge.
    assert any("skip_symbolic_shape=True" in note for note in int8.notes)
    session = ort.InferenceSession(str(int8.path), providers=["CPUExecutionProvider"])
    (hidden,) = session.run(None, make_feeds(loaded, int8.path, {"batch": 2, "seq_len": 16}))
    assert hidden.shape == (2, 16, 128) and np.isfinite(hidden).all()
    assert calibration_binding(loaded.spec) == {"batch": 1, "seq_len": 16}


def test_missing_model_file(project: Path) -> None:
    text = "name: m\nmodels:\n  fp32: {path: models/nope.onnx}\n" + CNN_INPUTS
    with pytest.raises(ModelError) as err:
        prepare_versions(_loaded(project, text), project / "cache")
    message = str(err.value)
    assert str(project / "spec.yaml") in message and "models.fp32.path" in message and "nope.onnx" in message


@pytest.mark.parametrize(
    "content",
    [b"", b"this is not a model\n" * 10, model_bytes(build_cnn())[:5000]],
    ids=["empty", "text", "truncated"],
)
def test_garbage_model_file(project: Path, content: bytes) -> None:
    (project / "models" / "bad.onnx").write_bytes(content)
    text = "name: m\nmodels:\n  fp32: {path: models/bad.onnx}\n" + CNN_INPUTS
    with pytest.raises(ModelError, match=r"models\.fp32\.path: .*bad\.onnx is not (a readable|an) ONNX"):
        prepare_versions(_loaded(project, text), project / "cache")


def test_model_inside_an_installed_package(project: Path) -> None:
    text = """
name: pkg
models:
  sigmoid: {package: onnxruntime, path: datasets/sigmoid.onnx}
inputs:
  x: {shape: [3, 4, 5], dtype: float32}
"""
    version = prepare_versions(_loaded(project, text), project / "cache")["sigmoid"]
    assert version.source == "onnxruntime:datasets/sigmoid.onnx"
    assert version.path.name == "sigmoid.onnx" and version.path.is_file()


def test_package_not_installed(project: Path) -> None:
    text = "name: pkg\nmodels:\n  m: {package: no_such_pkg_xyz, path: m.onnx}\n" + CNN_INPUTS
    with pytest.raises(ModelError, match=r"models\.m\.package: .*not installed.*pip install no-such-pkg-xyz"):
        prepare_versions(_loaded(project, text), project / "cache")


def test_transform_failure_names_version_and_transform(project: Path, built) -> None:
    text = ALL_VERSIONS.replace("  fp16: {from: fp32, fp16: true}", "  fp16: {from: fp32, fp16: true}\n"
                                "  broken: {from: fp16, quantize: {mode: dynamic}}")
    with pytest.raises(ModelError) as err:
        prepare_versions(_loaded(project, text), project / "cache")
    message = str(err.value)
    assert "models.broken.quantize" in message and "building version 'broken' (quantize dynamic)" in message
    assert "from fp16" in message


def test_unknown_excluded_node_suggests_names(project: Path) -> None:
    text = """
name: ex
models:
  fp32: {path: models/cnn.onnx}
  int8: {from: fp32, quantize: {mode: dynamic, exclude_nodes: [/layer1/layer1.0/conv1/Con]}}
""" + CNN_INPUTS
    with pytest.raises(ModelError, match=r"exclude_nodes: .*Did you mean /layer1/layer1.0/conv1/Conv"):
        prepare_versions(_loaded(project, text), project / "cache")


def _with_external_data(folder: Path, location: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model = build_cnn()
    onnx.save_model(model, str(folder / "ext.onnx"), save_as_external_data=True, location=location,
                    size_threshold=0)
    return folder / "ext.onnx"


def test_external_data_beside_the_model(project: Path) -> None:
    path = _with_external_data(project / "models" / "ext", "ext.onnx.data")
    text = "name: e\nmodels:\n  fp32: {path: models/ext/ext.onnx}\n" + CNN_INPUTS
    version = prepare_versions(_loaded(project, text), project / "cache")["fp32"]
    data = path.parent / "ext.onnx.data"
    assert version.size_bytes == path.stat().st_size + data.stat().st_size
    assert version.sha256 == hashlib.sha256(path.read_bytes() + data.read_bytes()).hexdigest()


def test_external_data_outside_the_model_folder(project: Path) -> None:
    folder = project / "models" / "escape"
    path = _with_external_data(folder / "sub", "weights.bin")
    # onnx refuses to write a location with `..`, so move the data up and edit the location by hand.
    (folder / "sub" / "weights.bin").rename(folder / "weights.bin")
    model = onnx.load(str(path), load_external_data=False)
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../weights.bin"
    path.write_bytes(model.SerializeToString())
    text = "name: e\nmodels:\n  fp32: {path: models/escape/sub/ext.onnx}\n" + CNN_INPUTS
    with pytest.raises(ModelError, match=r"external data at '\.\./weights\.bin', outside the model's folder"):
        prepare_versions(_loaded(project, text), project / "cache")


def test_build_order_refuses_cycles_and_unknown_sources(tmp_path: Path) -> None:
    def stand_in(models: dict[str, str | None]) -> SimpleNamespace:
        specs = {name: SimpleNamespace(from_=parent) for name, parent in models.items()}
        return SimpleNamespace(spec=SimpleNamespace(models=specs), path=tmp_path / "spec.yaml")

    assert build_order(stand_in({"c": "b", "b": "a", "a": None})) == ["a", "b", "c"]
    with pytest.raises(SpecError, match=r"models\.a\.from: .*a → b → a"):
        build_order(stand_in({"a": "b", "b": "a"}))
    with pytest.raises(SpecError, match=r"models\.a\.from: there is no version 'z'"):
        build_order(stand_in({"a": "z"}))


def test_a_damaged_cached_model_is_built_again_not_a_traceback(tmp_path: Path) -> None:
    """A cached derived model damaged after it was stored (a CI cache restored in part, a full disk) ended
    `perfsite run` in a protobuf DecodeError traceback. Its sidecar now records its sha256; a file that no
    longer matches (or, for an entry of an earlier perfsite without one, no longer parses) is built again, and
    the progress line (what `perfsite run` prints) says so."""
    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    text = ("name: tiny\nmodels:\n  fp32: {path: models/tiny.onnx}\n"
            "  int8: {from: fp32, quantize: {mode: dynamic}}\ninputs:\n  x: {shape: [batch, 4]}\n")

    def prepare() -> list[str]:
        said: list[str] = []
        prepare_versions(_loaded(tmp_path, text), tmp_path / "cache", progress=said.append)
        return said

    assert prepare() == ["building int8 (quantize dynamic)"]
    [cached] = (tmp_path / "cache").glob("*.onnx")
    whole = cached.read_bytes()
    sidecar = json.loads(cached.with_suffix(".json").read_text())
    assert sidecar["model_sha256"] == hashlib.sha256(whole).hexdigest()
    for legacy in (False, True):  # an entry of this perfsite, then one whose sidecar records no sha256
        if legacy:
            sidecar.pop("model_sha256")
            cached.with_suffix(".json").write_text(json.dumps(sidecar))
        cached.write_bytes(whole[:100])
        assert prepare() == ["building int8 (quantize dynamic) again: its cached file was damaged"]
        assert cached.read_bytes() == whole
    assert prepare() == []


def test_a_build_killed_midway_leaves_no_scratch_folder_after_the_next_build(tmp_path: Path) -> None:
    """SIGTERM or kill -9 while a version was built left `.build-*/preprocessed.onnx`, as large as the
    weights, and no later run removed it: a CI cache kept in PERFSITE_CACHE_DIR grew with every cancelled job.
    The next build removes the folders of builds that no longer run, and no other."""
    import os
    import subprocess
    import sys
    import time

    from generator.versions import derive

    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    text = ("name: tiny\nmodels:\n  fp32: {path: models/tiny.onnx}\n"
            "  int8: {from: fp32, quantize: {mode: dynamic}}\ninputs:\n  x: {shape: [batch, 4]}\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = derive._host()
    killed = cache / f".build-{host}-{int(ended.stdout)}-k9x1"  # its process is gone
    (killed / "preprocessed.onnx").parent.mkdir()
    (killed / "preprocessed.onnx").write_bytes(b"weights" * 1000)
    running = cache / f".build-{host}-{os.getpid()}-live"  # a build still running (this process)
    running.mkdir()
    elsewhere = cache / ".build-otherhost-1-young"  # another machine's, on a shared cache: not ours to judge
    elsewhere.mkdir()
    legacy = cache / ".build-abc123"  # an older perfsite's (no host or process in its name), two days old
    legacy.mkdir()
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(legacy, (two_days_ago, two_days_ago))

    prepare_versions(_loaded(tmp_path, text), cache)
    # The killed and the old one removed; the running and the other machine's kept; this build's own gone too.
    assert sorted(p.name for p in cache.glob(".build-*")) == sorted([running.name, elsewhere.name])
    assert len(list(cache.glob("*.onnx"))) == 1


def test_a_full_cache_disk_names_the_folder_not_the_options(tmp_path: Path, monkeypatch) -> None:
    """A full model-cache disk was reported as "Check the options under models.int8.quantize", and the full
    folder was never named."""
    import errno

    from generator.versions import derive

    (tmp_path / "models").mkdir()
    matmul_model(tmp_path / "models" / "tiny.onnx")
    text = ("name: tiny\nmodels:\n  fp32: {path: models/tiny.onnx}\n"
            "  int8: {from: fp32, quantize: {mode: dynamic}}\ninputs:\n  x: {shape: [batch, 4]}\n")

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(derive, "store", full)  # the built model copied into the cache: a weights-sized write
    cache = tmp_path / "cache"
    with pytest.raises(ModelError) as raised:
        prepare_versions(_loaded(tmp_path, text), cache)
    message = " ".join(str(raised.value).split())
    assert message.startswith(f"{tmp_path / 'spec.yaml'}: models.int8.quantize: building version 'int8' needs room "
                              f"in the model cache {cache}, and its disk is full (No space left on device)."), message
    assert "PERFSITE_CACHE_DIR" in message and "Check the options" not in message
    # No scratch folder and no model left by the failed build (the record that the parent model loads stays).
    assert [p.name for p in cache.iterdir() if p.name.startswith(".build-") or p.suffix == ".onnx"] == []


@pytest.mark.parametrize(("version", "message"), [
    # An op type the model lacks (a PyTorch name here): nothing quantized for it, refused like exclude_nodes.
    ("{from: fp32, quantize: {mode: dynamic, op_types: [Conv2d]}}",
     "models.int8.quantize.op_types: the model {cnn} has no node of type 'Conv2d', so nothing would be quantized "
     "for it. Did you mean Conv? Allowed: ONNX op types the model has ("),
    # Nothing onnxruntime's dynamic quantizer takes (the CNN's ops but Conv): it left the model as it was, which
    # every page would have called INT8.
    ("{from: fp32, quantize: {mode: dynamic, op_types: [Relu]}}",
     "models.int8.quantize: quantizing version 'fp32' (dynamic) changed no node: its op types ("),
])
def test_a_quantize_transform_that_quantizes_nothing_is_refused(project: Path, version: str, message: str) -> None:
    text = f"name: q\nmodels:\n  fp32: {{path: models/cnn.onnx}}\n  int8: {version}\n" + CNN_INPUTS
    with pytest.raises(ModelError) as err:
        prepare_versions(_loaded(project, text), project / "cache")
    assert message.format(cnn=project / "models" / "cnn.onnx") in " ".join(str(err.value).split())


def test_a_model_path_that_is_a_link_loop_or_a_pipe_is_one_paragraph(tmp_path: Path) -> None:
    """A link loop was a traceback (pathlib's RuntimeError) and a pipe "does not exist"."""
    import os

    (tmp_path / "a.onnx").symlink_to("b.onnx")
    (tmp_path / "b.onnx").symlink_to("a.onnx")
    os.mkfifo(tmp_path / "pipe.onnx")
    said = {}
    for name in ("a.onnx", "pipe.onnx"):
        text = f"name: t\nmodels:\n  fp32: {{path: {name}}}\n" + CNN_INPUTS
        with pytest.raises(ModelError) as e:
            prepare_versions(load_spec_text(text, tmp_path / "spec.yaml"), tmp_path / "cache")
        said[name] = " ".join(str(e.value).split())
    assert said["a.onnx"].startswith(f"{tmp_path / 'spec.yaml'}: models.fp32.path: 'a.onnx' is a loop of symbolic "
                                     "links (Symlink loop from")
    assert said["a.onnx"].endswith("not a model file. Allowed: an ONNX file, or a link that ends at one.")
    assert (f"models.fp32.path: the model file {tmp_path / 'pipe.onnx'} is a device, a pipe or a socket, not a "
            "model file, (relative to the spec file)") in said["pipe.onnx"]


def test_quantization_keeps_its_temporary_files_in_the_build_scratch_folder(project: Path, tmp_path: Path,
                                                                            monkeypatch) -> None:
    """onnxruntime's static quantization writes `ort.quant.*` (an augmented copy of the model) into the system's
    temporary folder; a build killed meanwhile left it there for ever. It goes into the build's scratch folder,
    which the next build removes."""
    import tempfile

    made: list[Path] = []
    real = tempfile.mkdtemp

    def spy(*args, **kwargs):
        made.append(Path(real(*args, **kwargs)))
        return str(made[-1])

    monkeypatch.setattr(tempfile, "mkdtemp", spy)
    text = """
name: scratch
models:
  fp32: {path: models/cnn.onnx}
  int8: {from: fp32, quantize: {mode: static_qdq, calibration: {samples: 2}}}
""" + CNN_INPUTS
    prepare_versions(_loaded(project, text), tmp_path / "cache")
    quant = [p for p in made if p.name.startswith("ort.quant.")]
    assert quant, made  # onnxruntime made its folder through tempfile
    for folder in quant:
        assert folder.parent.name.startswith(".build-") and folder.parent.parent == tmp_path / "cache", folder
    assert not list((tmp_path / "cache").glob(".build-*"))  # a finished build removes its scratch folder
