"""A real wheel: templates, site assets and the default mkdocs configuration ship inside it, and a site builds
from an installed (non-editable) copy in a project that has no mkdocs.yml of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from support.cli import ROOT
from support.results import write_results


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = out.glob("perfsite-*.whl")
    target = out / "site-packages"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        zf.extractall(target)
    return target, names


def test_wheel_carries_templates_assets_and_default_config(unpacked_wheel):
    _, names = unpacked_wheel
    for needed in ("generator/site_templates/mkdocs.base.yml", "generator/site_templates/experiment.md.j2",
                   "generator/site_templates/assets/perfsite.js",
                   "generator/site_templates/assets/vendor/vega.min.js", "generator/cli/app.py"):
        assert needed in names, needed
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert entry_points


def test_site_builds_from_the_installed_wheel(unpacked_wheel, tmp_path):
    target, _ = unpacked_wheel
    project = tmp_path / "project"
    project.mkdir()
    write_results(project / "results")
    env = {**os.environ, "PYTHONPATH": str(target)}
    # One interpreter says where its templates come from, then builds through the console script's entry point
    # (pyproject's `perfsite = "generator.cli.app:main"`): a second interpreter only to print the folder cost an
    # interpreter's start and the site package's imports.
    code = ("import sys, generator.site.pages as p; print(p.templates_dir(), flush=True); "
            "from generator.cli.app import main; sys.argv = ['perfsite', 'build']; main()")
    build = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True,
                           timeout=300)
    assert build.stdout.startswith(str(target)), build.stdout + build.stderr
    assert build.returncode == 0, build.stderr
    assert (project / "site" / "index.html").is_file()
    assert (project / "site" / "assets" / "perfsite" / "vendor" / "vega.min.js").is_file()


def _requirements() -> dict[str, list[str]]:
    """pyproject's requirement strings: "base" and each extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {"base": project["dependencies"], **project["optional-dependencies"]}


def test_every_dependency_has_a_lower_and_an_upper_bound():
    # A release after the code was written broke every usage error (typer 0.26): ranges stop at the next major
    # version (the next minor for 0.x), and `make test-latest` is how a bound is raised.
    for group, requirements in _requirements().items():
        for text in requirements:
            req = Requirement(text)
            ops = {s.operator for s in req.specifier}
            assert ">=" in ops and "<" in ops, f"{group}: {text}"
            upper = next(Version(s.version) for s in req.specifier if s.operator == "<")
            lower = next(Version(s.version) for s in req.specifier if s.operator == ">=")
            expected = Version(f"0.{lower.minor + 1}") if lower.major == 0 else Version(f"{lower.major + 1}")
            assert upper >= expected, f"{group}: {text} stops before the next major (minor for 0.x) release"


def test_the_runtime_is_an_extra_cpu_or_gpu():
    # onnxruntime and onnxruntime-gpu provide one module: a base dependency would shadow a GPU user's wheel.
    groups = {g: {Requirement(r).name for r in reqs} for g, reqs in _requirements().items()}
    assert not groups["base"] & {"onnxruntime", "onnxruntime-gpu"}
    assert groups["cpu"] == {"onnxruntime"} and groups["gpu"] == {"onnxruntime-gpu"}


def test_the_pinned_set_satisfies_the_ranges_and_the_makefile_installs_it_with_cpu():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    for group in ("base", "cpu", "test"):
        for text in _requirements()[group]:
            req = Requirement(text)
            pinned = pins.get(canonicalize_name(req.name))
            assert pinned is not None and pinned in req.specifier, f"constraints.txt: {req.name} {pinned} vs {text}"
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --quiet -c constraints.txt -e '.[cpu,test]'" in makefile
    assert "\ntest-latest:" in makefile and "\ndrift: test-latest" in makefile
    for doc in ("README.md", "docs/ci.md"):
        assert "perfsite[cpu]" in (ROOT / doc).read_text(), doc


NO_RUNTIME = ("import sys; sys.modules['onnxruntime'] = None; sys.argv[0] = 'perfsite'; "
              "from generator.cli import main; main()")


def test_without_a_runtime_perfsite_says_which_extra_to_install(tmp_path):
    # `sys.modules[name] = None` makes every `import onnxruntime` fail as if it were not installed.
    spec = ROOT / "experiments" / "quickstart.yaml"
    run = subprocess.run([sys.executable, "-c", NO_RUNTIME, "run", str(spec), "--results", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("error: onnxruntime is not installed") and "Traceback" not in run.stderr
    assert "perfsite[cpu]" in run.stderr and "perfsite[gpu]" in run.stderr
    assert "\n\n" not in run.stderr.strip()  # one paragraph
    assert not any(tmp_path.iterdir())
    # Commands that run no model need no runtime.
    check = subprocess.run([sys.executable, "-c", NO_RUNTIME, "validate", str(spec)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and check.stdout.startswith("ok"), check.stderr
