"""A real wheel: templates, site assets and the default mkdocs configuration ship inside it, and a site builds
from an installed (non-editable) copy in a project that has no mkdocs.yml of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest
from perfsite_testing import ROOT
from test_site_fixture import write_results


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
                   "generator/site_templates/assets/vendor/vega.min.js", "generator/cli.py"):
        assert needed in names, needed
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert entry_points


def test_site_builds_from_the_installed_wheel(unpacked_wheel, tmp_path):
    target, _ = unpacked_wheel
    project = tmp_path / "project"
    project.mkdir()
    write_results(project / "results")
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = "import generator.site.pages as p, sys; print(p.templates_dir()); sys.exit(0)"
    where = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True)
    assert where.stdout.strip().startswith(str(target)), where.stdout + where.stderr
    build = subprocess.run([sys.executable, "-m", "generator.cli", "build"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    assert (project / "site" / "index.html").is_file()
    assert (project / "site" / "assets" / "perfsite" / "vendor" / "vega.min.js").is_file()
