"""Project root detection and safe resolution of spec paths (real files, real symlinks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.errors import SpecError
from generator.paths import models_cache_dir, project_root, resolve_in_project, resolve_package_path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "experiments" / "models").mkdir(parents=True)
    (root / "experiments" / "models" / "cnn.onnx").write_bytes(b"onnx")
    (tmp_path / "outside.onnx").write_bytes(b"onnx")
    return root


def _resolve(project: Path, rel: str, allow_outside: bool = False, **kw) -> Path:
    spec_file = project / "experiments" / "cnn.yaml"
    return resolve_in_project(
        spec_file.parent, rel, project, allow_outside, "models.fp32.path", spec_file, **kw
    )


def test_project_root_is_the_folder_holding_dot_git(project: Path) -> None:
    assert project_root(project / "experiments" / "cnn.yaml") == project.resolve()
    assert project_root(project / "experiments") == project.resolve()


def test_project_root_accepts_a_dot_git_file(tmp_path: Path) -> None:
    # Worktrees and submodules have a `.git` file pointing elsewhere.
    (tmp_path / "wt" / "sub").mkdir(parents=True)
    (tmp_path / "wt" / ".git").write_text("gitdir: /elsewhere\n")
    assert project_root(tmp_path / "wt" / "sub" / "x.yaml") == (tmp_path / "wt").resolve()


def test_project_root_without_git_is_the_files_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    if any((p / ".git").exists() for p in tmp_path.resolve().parents):
        pytest.skip("the temporary folder is inside a git work tree")
    assert project_root(tmp_path / "a" / "x.yaml") == (tmp_path / "a").resolve()


def test_project_root_follows_the_real_path_of_a_symlinked_spec(project: Path, tmp_path: Path) -> None:
    (project / "experiments" / "real.yaml").write_text("name: x\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "link.yaml").symlink_to(project / "experiments" / "real.yaml")
    assert project_root(elsewhere / "link.yaml") == project.resolve()


def test_relative_path_inside_the_project_resolves(project: Path) -> None:
    got = _resolve(project, "models/cnn.onnx", must_exist=True)
    assert got == (project / "experiments" / "models" / "cnn.onnx").resolve()


def test_missing_files_are_not_checked_unless_asked(project: Path) -> None:
    assert _resolve(project, "models/later.onnx").name == "later.onnx"
    with pytest.raises(SpecError, match="does not exist"):
        _resolve(project, "models/later.onnx", must_exist=True)


def test_path_leaving_the_project_is_refused_with_a_full_message(project: Path) -> None:
    with pytest.raises(SpecError) as err:
        _resolve(project, "../../outside.onnx", line=4)
    message = str(err.value)
    for part in (
        "cnn.yaml",
        "line 4",
        "models.fp32.path",
        "../../outside.onnx",
        "--allow-outside",
        "package:",
    ):
        assert part in message


def test_allow_outside_lifts_the_rule(project: Path) -> None:
    got = _resolve(project, "../../outside.onnx", allow_outside=True, must_exist=True)
    assert got == (project.parent / "outside.onnx").resolve()


def test_absolute_paths_follow_the_same_rule(project: Path) -> None:
    inside = project / "experiments" / "models" / "cnn.onnx"
    assert _resolve(project, str(inside)) == inside.resolve()
    with pytest.raises(SpecError, match="outside the project root"):
        _resolve(project, str(project.parent / "outside.onnx"))


def test_symlink_escaping_the_project_is_refused(project: Path) -> None:
    link = project / "experiments" / "models" / "escape.onnx"
    link.symlink_to(project.parent / "outside.onnx")
    with pytest.raises(SpecError, match="outside the project root"):
        _resolve(project, "models/escape.onnx")
    assert (
        _resolve(project, "models/escape.onnx", allow_outside=True)
        == (project.parent / "outside.onnx").resolve()
    )


def test_symlink_inside_the_project_is_fine(project: Path) -> None:
    link = project / "experiments" / "alias.onnx"
    link.symlink_to(project / "experiments" / "models" / "cnn.onnx")
    assert _resolve(project, "alias.onnx") == (project / "experiments" / "models" / "cnn.onnx").resolve()


@pytest.mark.parametrize("rel", ["", "a\x00b"])
def test_unusable_paths_are_spec_errors(project: Path, rel: str) -> None:
    with pytest.raises(SpecError, match="models.fp32.path"):
        _resolve(project, rel)


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    pkg = site / "perfsite_fake_models"
    (pkg / "models").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models" / "det.onnx").write_bytes(b"onnx")
    (site / "perfsite_fake_module.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    return pkg


def test_package_path_resolves_inside_the_package(fake_package: Path) -> None:
    got = resolve_package_path("perfsite_fake_models", "models/det.onnx", "models.ocr.path", must_exist=True)
    assert got == (fake_package / "models" / "det.onnx").resolve()


def test_package_path_may_not_leave_the_package(fake_package: Path) -> None:
    with pytest.raises(SpecError, match="leaves the folder of package"):
        resolve_package_path("perfsite_fake_models", "../perfsite_fake_module.py", "models.ocr.path")
    with pytest.raises(SpecError, match="leaves the folder of package"):
        resolve_package_path("perfsite_fake_models", os.fspath(fake_package.parent), "models.ocr.path")


@pytest.mark.parametrize(
    ("package", "message"),
    [("perfsite_no_such_package", "is not installed"), ("perfsite_fake_module", "is a module")],
)
def test_package_must_be_an_installed_package(fake_package: Path, package: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        resolve_package_path(package, "models/det.onnx", "models.ocr.path")


def test_derived_models_share_one_cache_when_perfsite_cache_dir_is_set(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PERFSITE_CACHE_DIR", str(tmp_path / "cache"))
    assert models_cache_dir(tmp_path / "a") == models_cache_dir(tmp_path / "b") == tmp_path / "cache" / "models"
    monkeypatch.delenv("PERFSITE_CACHE_DIR")
    assert models_cache_dir(tmp_path / "a") == tmp_path / "a" / ".perfsite" / "models"
