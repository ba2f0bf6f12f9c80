"""Shared fixtures: example models built once per session, small projects with specs, quick mode."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from support.cli import write_spec
from support.models import LARGE_MODEL_NODES
from support.tiers import LONGEST_FIRST, QUIET_TESTS_IN, SAME_WORKER_AS, SLOW_MODULES

from generator.models import build_example_models

# A script's background job (`make test &`) starts with SIGINT ignored, and the perfsite processes the tests start
# would inherit that: the Ctrl-C tests would see their signal ignored and the run finish with 0. A handled
# signal is reset to its default in a child at exec, so handling it here gives every child a working Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def example_models(tmp_path_factory) -> dict[str, Path]:
    """The example CNN and transformer, built from code once for the whole session."""
    out = tmp_path_factory.mktemp("example-models")
    return {p.stem: p for p in build_example_models(out)}


# `make test` names one cache folder for both of its pytest runs (the parallel part and the quiet one).
SHARED_CACHE_ENV = "PERFSITE_TEST_CACHE"


def pytest_configure(config) -> None:
    # With make test's shared cache, the cache gets its settled machine limits (tests/support/limits.py) once,
    # before any test or worker starts: a full probe serves quick runs too (generator.machine.probe.ensure_limits).
    folder = os.environ.get(SHARED_CACHE_ENV)
    runs_tests = not (config.option.collectonly or config.option.help or config.option.version)
    if folder and runs_tests and not hasattr(config, "workerinput"):
        from support.limits import seed_settled_limits

        seed_settled_limits(Path(folder))


@pytest.fixture(scope="session")
def _probe_cache(tmp_path_factory, worker_id) -> Path:
    # Under pytest-xdist (`make test`), every worker's temporary folders share one parent: the workers share the
    # cache too, so the machine is probed and each model quantized once per run, not once per worker. Both
    # caches write each entry to a temporary name and rename it, so two workers never see a half-written one.
    from support.limits import seed_settled_limits

    if os.environ.get(SHARED_CACHE_ENV):
        return Path(os.environ[SHARED_CACHE_ENV])
    if worker_id == "master":
        folder = tmp_path_factory.mktemp("perfsite-cache")
    else:
        folder = tmp_path_factory.getbasetemp().parent / "perfsite-cache"
        folder.mkdir(exist_ok=True)
    seed_settled_limits(folder)  # settled limits, whatever the neighbours (tests/support/limits.py)
    return folder


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, _probe_cache):
    # The machine-limits cache is per user (generator.machine.probe.probe_cache_dir): tests must never read or
    # write the real one in the home folder. One folder for the whole session, so that the suite probes once.
    monkeypatch.setenv("PERFSITE_CACHE_DIR", str(_probe_cache))


@pytest.fixture(autouse=True)
def _quick_mode(monkeypatch):
    # Tests measure in quick mode so that `make test` stays near ten minutes; tests that need the spec's own
    # settings unset it.
    monkeypatch.setenv("PERFSITE_QUICK", "1")


@pytest.fixture
def cnn_project(tmp_path, example_models) -> Path:
    """A project folder (not in git) with the example CNN under models/ and a two-version spec."""
    (tmp_path / "models").mkdir()
    shutil.copy(example_models["cnn"], tmp_path / "models" / "cnn.onnx")
    write_spec(tmp_path, """\
        name: tiny
        description: two versions, two batch sizes
        models:
          fp32: {path: models/cnn.onnx}
          int8: {from: fp32, quantize: {mode: static_qdq, calibration: {samples: 2}}}
        inputs:
          input: {shape: [batch, 3, 64, 64], dtype: float32}
        sweep:
          batch: [1, 2]
        measure: {warmup: 2, min_iterations: 5, min_seconds: 0.02, repeats: 2, profile_iterations: 2}
        latency_threshold_ms: 50
        """)
    return tmp_path


@pytest.fixture
def lean_cnn_project(cnn_project) -> Path:
    """cnn_project measuring each trial with its two processes only (`repeats`; budget_s: 0.01 stops the adaptive
    rounds after them), for tests about what a run stores, skips, records and survives, not about how long it
    measures: quick mode's 1 s budget added a few processes to every trial, about half a second each on 2 cores.
    Trial keys do not include the budget."""
    spec = cnn_project / "spec.yaml"
    text = spec.read_text()
    assert "profile_iterations: 2}" in text
    spec.write_text(text.replace("profile_iterations: 2}", "profile_iterations: 2, budget_s: 0.01}"))
    return cnn_project



@pytest.fixture(scope="session")
def large_model_site(tmp_path_factory, _probe_cache) -> Path:
    """The site of a chain of LARGE_MODEL_NODES tiny nodes (generator.models.chain) measured in quick mode as
    two versions with a compare pair: a profile page per version and a compare page, each with long tables.
    One process a trial (budget_s: 0.01 stops the adaptive rounds): the pages' size and tables are the subject,
    and they came out the same size as with the two extra rounds a trial that a 1 s budget added."""
    from support.cli import perfsite

    from generator.models.builder import model_bytes, write_if_changed
    from generator.models.chain import build_chain
    from generator.site import build_site

    root = tmp_path_factory.mktemp("large-model")
    write_if_changed(root / "chain.onnx", model_bytes(build_chain(LARGE_MODEL_NODES)))
    write_spec(root, """\
        name: chain
        models:
          a: {path: chain.onnx}
          b: {path: chain.onnx}
        inputs:
          input: {shape: [batch, 8], dtype: float32}
        sweep: {batch: [1]}
        measure: {warmup: 1, min_iterations: 2, min_seconds: 0.0, repeats: 1, profile_iterations: 1, target: 0.5,
                  budget_s: 0.01}
        compare:
          - {a: a, b: b}
        """)
    run = perfsite("run", "spec.yaml", "--results", "results", "--quick", cwd=root,
                   env={"PERFSITE_QUICK": "1", "PERFSITE_CACHE_DIR": str(_probe_cache)})  # session scope:
    # the autouse fixtures that set these for each test have not run yet
    assert run.returncode == 0, run.stderr
    return build_site(root / "results", root / "site", root)


@pytest.fixture(scope="session")
def cnn_timeline_results(tmp_path_factory, example_models, _probe_cache) -> Path:
    """A real `perfsite run` of the example CNN with its timeline (support/timeline.py), made once for the
    session: tests/test_timeline_run.py reads the stored timeline, tests/browser/test_timeline_browser.py draws
    it, and tests/support/tiers.py sends the two to one worker (SAME_WORKER_AS), where each made its own."""
    from support.timeline import run_cnn_experiment

    return run_cnn_experiment(tmp_path_factory.mktemp("timeline-run"), example_models["cnn"],
                              env={"PERFSITE_QUICK": "1", "PERFSITE_CACHE_DIR": str(_probe_cache)})  # session
    # scope: the autouse fixtures that set these for each test have not run yet


@pytest.fixture(scope="session")
def generative_results(tmp_path_factory, _probe_cache) -> Path:
    """A real `perfsite run` of a generative experiment (support/generative.py), made once for the session:
    tests/test_generative_run.py reads and builds it, tests/browser/test_generative_browser.py draws its page,
    and tests/support/tiers.py sends the two to one worker."""
    from support.generative import run_generative_experiment

    return run_generative_experiment(tmp_path_factory.mktemp("generative-run"),
                                     env={"PERFSITE_QUICK": "1", "PERFSITE_CACHE_DIR": str(_probe_cache)})


@pytest.fixture(scope="session")
def generative_site(tmp_path_factory, generative_results) -> Path:
    """The generative experiment's site (one strict mkdocs build for both modules that read it)."""
    from generator.site import build_site

    root = generative_results.parent.parent
    return build_site(root / "results", root / "site", root)


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    # `pytest -m quiet` (make test's second part) reads only the modules that hold quiet tests: collecting the
    # whole suite to deselect all but a few costs seconds of imports. Nor does it enter a folder that holds none
    # of them: tests/browser/'s conftest.py imports the site builder and altair (1.3 s, 2026-11-27).
    if config.getoption("markexpr") != "quiet" or collection_path == Path(__file__).parent:
        return None
    if collection_path.is_dir():
        return not any(next(collection_path.rglob(name), None) for name in QUIET_TESTS_IN) or None
    if collection_path.suffix != ".py":
        return None
    return collection_path.name not in QUIET_TESTS_IN | {"conftest.py"} or None


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(SAME_WORKER_AS.get(item.path.name, item.path.name), len(rank)))
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` as make test uses it: a worker takes a whole module (its module fixtures are made once),
    and the modules of SAME_WORKER_AS go together, in the order collected (LONGEST_FIRST; make test passes
    --no-loadscope-reorder, which otherwise hands out the modules with the most tests first). pytest-xdist's
    own `loadgroup` would do the grouping, but 3.8 writes its group into a node attribute pytest 9 no longer
    reads."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModuleGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
            return SAME_WORKER_AS.get(module, module)

    return ModuleGroups(config, log)
