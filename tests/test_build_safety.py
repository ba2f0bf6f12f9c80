"""`perfsite build` never loses a site: killed mid-build, or two builds at once (generator.site.publish)."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.cli import in_forks, perfsite, start_perfsite
from support.results import write_results


def _mkdocs_children_of(config: Path) -> list[int]:
    """Processes still running mkdocs on this project's build config: the build's mkdocs process
    (generator/site/mkdocs_runner.py) once it was given the config and moved into the project's folder."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                folder = os.readlink(entry / "cwd")
            except OSError:
                continue
            if "mkdocs" in cmdline and folder == str(config.parents[2]):  # <project>/.perfsite/build/mkdocs.yml
                found.append(int(entry.name))
    return found


def test_a_build_killed_mid_way_leaves_the_old_site_whole_and_no_orphan(tmp_path):
    write_results(tmp_path / "results")
    first = perfsite("build", "--results", "results", "--site", "site", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    home = (tmp_path / "site" / "index.html").read_text()
    config = tmp_path / ".perfsite" / "build" / "mkdocs.yml"

    # The killed and interrupted builds are forks of this process (support.cli.start_perfsite), signalled as a
    # user's would be: a fresh interpreter spent seconds importing before mkdocs started.
    build = _signalled_while_mkdocs_writes(tmp_path, config, "site", signal.SIGKILL)
    assert build.wait().returncode == -signal.SIGKILL
    gone = time.monotonic() + 30  # the kernel's SIGKILL to the orphan (PR_SET_PDEATHSIG) lands a moment later
    while _mkdocs_children_of(config) and time.monotonic() < gone:
        time.sleep(0.02)
    assert _mkdocs_children_of(config) == []  # mkdocs died with its parent
    assert (tmp_path / "site" / "index.html").read_text() == home  # the old site, whole
    assert (tmp_path / "site" / ".perfsite-site").is_file()

    again = perfsite("build", "--results", "results", "--site", "site", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "site" / "reports" / "cnn-int8" / "index.html").is_file()
    assert not [e.name for e in tmp_path.iterdir() if ".perfsite-" in e.name]  # the staging folder is gone

    # Ctrl-C while mkdocs writes: the same guarantee, and a message about the site (not about trials).
    home = (tmp_path / "site" / "index.html").read_text()
    done = _signalled_while_mkdocs_writes(tmp_path, config, "site", signal.SIGINT).wait(timeout=60)
    err = done.stderr
    assert done.returncode == 130, err
    assert "Interrupted. The site folder is as it was" in err and "trial" not in err and "Traceback" not in err
    assert (tmp_path / "site" / "index.html").read_text() == home

    # SIGTERM (a cancelled CI job) into a new nested site: as Ctrl-C, and no empty folders left behind (the
    # default ended the process at once and left nest/a/site).
    done = _signalled_while_mkdocs_writes(tmp_path, config, "nest/a/site", signal.SIGTERM).wait(timeout=60)
    assert done.returncode == 130 and "Interrupted." in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "nest").exists()


def _signalled_while_mkdocs_writes(project: Path, config, site: str, signum: int):
    """`perfsite build` into `site`, sent `signum` while mkdocs writes the new site (the started build)."""
    build = start_perfsite("build", "--results", "results", "--site", site, cwd=project)
    deadline = time.monotonic() + 120
    while not _mkdocs_children_of(config) and build.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert build.poll() is None, "the build finished before mkdocs could be caught running"
    build.send_signal(signum)
    return build


def test_two_builds_of_one_project_at_once_each_give_a_whole_unmixed_site(tmp_path):
    write_results(tmp_path / "results")
    (tmp_path / "empty-results").mkdir()
    # Two commands at once, each a process of its own, forked from this one (in_forks, perfsite): no interpreter
    # to start, so both reach the build lock at about the same moment.
    runs = in_forks([functools.partial(perfsite, "build", "--results", results, "--site", site, cwd=tmp_path,
                                       timeout=300)
                     for results, site in (("results", "site-a"), ("empty-results", "site-b"))], at_once=2)
    outputs = [(p.stdout, p.stderr) for p in runs]
    assert [p.returncode for p in runs] == [0, 0], outputs
    assert any("Waiting for another `perfsite build`" in " ".join(err.split()) for _, err in outputs), outputs
    assert (tmp_path / "site-a" / "reports" / "cnn-int8" / "index.html").is_file()
    assert not (tmp_path / "site-b" / "reports" / "cnn-int8").exists()  # not the other build's reports
    for site in ("site-a", "site-b"):
        assert (tmp_path / site / "index.html").is_file() and (tmp_path / site / ".perfsite-site").is_file()


def test_a_rebuild_keeps_what_perfsite_did_not_write_and_nothing_is_measured_into_a_site(tmp_path):
    """A gh-pages clone's .git, a CNAME, a note inside reports/: the new site keeps them, hard-linked, and the
    build names them; results and example models are refused inside a site, which builds replace."""
    import pytest

    from generator.errors import ResultsError
    from generator.results.store import ResultsDir
    from generator.site import build_site

    write_results(tmp_path / "results")
    said: list[str] = []
    site = build_site(tmp_path / "results", tmp_path / "site", tmp_path)
    (site / ".git").mkdir()
    (site / ".git" / "HEAD").write_text("ref: refs/heads/gh-pages\n")
    (site / "CNAME").write_text("perf.example.com\n")
    (site / "reports" / "notes.txt").write_text("mine\n")
    build_site(tmp_path / "results", site, tmp_path, progress=said.append)
    assert (site / ".git" / "HEAD").read_text() == "ref: refs/heads/gh-pages\n"
    assert (site / "CNAME").is_file() and (site / "reports" / "notes.txt").read_text() == "mine\n"
    assert (site / "reports" / "cnn-int8" / "index.html").is_file()
    assert any(m.startswith("Kept 3 entries") and ".git, CNAME, reports/notes.txt" in m for m in said), said

    # A marker from a release without the file list: entries the new build does not write are kept too.
    (site / ".perfsite-site").write_text('{"built_by": "perfsite"}\n')
    build_site(tmp_path / "results", site, tmp_path)
    assert (site / ".git" / "HEAD").is_file() and (site / "CNAME").is_file()

    with pytest.raises(ResultsError, match=r"inside .*site, a site perfsite built"):
        ResultsDir(site / "tiny").ensure_writable()
    models = perfsite("example-models", str(site / "models"), cwd=tmp_path)
    said = " ".join(models.stderr.split())  # the paragraph wraps where the temporary folder's length puts it
    assert models.returncode == 1 and "a site perfsite built" in said and not (site / "models").exists()


def _staged(parent: Path, name: str, files: dict[str, str], empty: tuple[str, ...] = ()) -> Path:
    staging = parent / name
    for rel, text in files.items():
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_text(text)
    for rel in empty:
        (staging / rel).mkdir(parents=True, exist_ok=True)
    return staging


def test_publish_keeps_user_data_of_a_legacy_site_and_its_own_empty_folders(tmp_path):
    """A marker without a file list (an earlier release) keeps dot-entries, a CNAME and results a run wrote
    into the site, and drops the old build's stale pages; a build's own empty folder is its own next time."""
    from generator.site import publish

    site = tmp_path / "site"
    _staged(tmp_path, "site", {"index.html": "old", "stale.html": "old", ".git/HEAD": "ref", "CNAME": "x",
                                "tiny/trials/k.parquet": "data", ".perfsite-site": '{"built_by": "perfsite"}'})
    new = {"index.html": "new", "assets/a.css": "css"}
    kept = publish.publish(_staged(tmp_path, ".new1", new, empty=("search",)), site)
    assert kept == [".git", "CNAME", "tiny"] and not (site / "stale.html").exists()
    assert (site / "tiny" / "trials" / "k.parquet").read_text() == "data" and (site / "index.html").read_text() == "new"
    assert publish.publish(_staged(tmp_path, ".new2", new, empty=("search",)), site) == [".git", "CNAME", "tiny"]


def test_a_build_killed_between_the_two_renames_gets_its_old_site_back(tmp_path):
    """Where the system cannot exchange two folders, the swap is two renames; killed between them, the old
    site waited in a staging name that the next build deleted. Now the next build puts it back."""
    from generator.site import publish

    dead = subprocess.Popen(["true"])
    dead.wait()
    old = _staged(tmp_path, f".site.perfsite-old-{dead.pid}", {"index.html": "old", ".git/HEAD": "ref"})
    stray = _staged(tmp_path, f".site.perfsite-new-{dead.pid}", {"index.html": "half"})
    publish.clean_stale(tmp_path)
    assert (tmp_path / "site" / ".git" / "HEAD").read_text() == "ref" and not old.exists() and not stray.exists()


def test_site_dot_is_the_current_folder_not_its_parent(tmp_path):
    """`Path(".").name` is empty: `--site .` was taken for the parent of the current folder, and a refusal named
    that folder instead of the one the user gave."""
    (tmp_path / ".git").mkdir()
    write_results(tmp_path / "results")
    result = perfsite("build", "--site", ".", cwd=tmp_path)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message.startswith(f"error: The site folder {tmp_path} would contain the project, its docs or its "
                              "results"), message


def test_a_project_scratch_folder_in_the_way_is_one_paragraph_and_a_linked_one_is_left_alone(tmp_path):
    """`.perfsite` as a file ended `perfsite build` in a FileExistsError traceback, `.perfsite/build` as a link
    in rmtree's OSError ("Cannot call rmtree on a symbolic link"). Both are named, and the link's target kept."""
    (tmp_path / ".git").mkdir()
    write_results(tmp_path / "results")
    (tmp_path / ".perfsite").write_text("a note of mine")
    result = perfsite("build", cwd=tmp_path)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message.startswith(f"error: Cannot build the site: {tmp_path / '.perfsite'} cannot be used (it is a "
                              "file, not a folder). Allowed: a folder perfsite can create and write"), message
    assert (tmp_path / ".perfsite").read_text() == "a note of mine"
    (tmp_path / ".perfsite").unlink()
    (tmp_path / ".perfsite").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "precious.txt").write_text("kept")
    (tmp_path / ".perfsite" / "build").symlink_to(tmp_path / "elsewhere")
    result = perfsite("build", cwd=tmp_path)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message.startswith(f"error: Cannot build the site: {tmp_path / '.perfsite' / 'build'} is a symbolic link "
                              f"(to {tmp_path / 'elsewhere'}), and every build empties that folder"), message
    assert (tmp_path / "elsewhere" / "precious.txt").read_text() == "kept"


def test_a_site_folder_that_is_a_mount_point_is_built_and_rebuilt_in_place(tmp_path):
    """Issue 35, the mount-point class: a site folder that is a volume or a bind mount cannot be renamed, and a
    staging folder beside it is on another file system; the swap ended in an OSError traceback (EBUSY)."""
    from generator.site import publish

    site = tmp_path / "site"
    site.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "perfsite-test", str(site)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:  # not root, or no mount privilege in this container
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        write_results(tmp_path / "results")
        built = perfsite("build", "--results", "results", "--site", "site", cwd=tmp_path)
        assert built.returncode == 0 and "Traceback" not in built.stderr, built.stderr
        assert os.path.ismount(site) and (site / "index.html").is_file() and "Site built in" in built.stdout
        (site / ".git").mkdir()
        (site / ".git" / "HEAD").write_text("ref")  # a gh-pages clone on the volume: kept by the next build
        old_pages = {p.relative_to(site) for p in site.rglob("*.html")}
        kept = publish.publish(_staged(site, ".perfsite-mount-new-1", {"index.html": "new"}), site)
        assert kept == [".git"] and (site / "index.html").read_text() == "new"
        assert {p.relative_to(site) for p in site.rglob("*.html")} == {Path("index.html")} != old_pages
        assert sorted(p.name for p in site.iterdir()) == [".git", ".perfsite-site", "index.html"]
    finally:
        subprocess.run(["umount", str(site)], check=False)


def test_a_full_disk_during_a_build_is_one_paragraph_and_the_old_site_stays(tmp_path):
    """Issue 35, item 7: a full site disk ended in a 40-line traceback, a full project disk (the site's assets
    copied into the build folder) in a bare shutil.Error."""
    write_results(tmp_path / "results")
    first = perfsite("build", "--results", "results", "--site", "site", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    home = (tmp_path / "site" / "index.html").read_text()
    build = tmp_path / ".perfsite"
    shutil.rmtree(build)
    build.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "perfsite-full", str(build)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        full = perfsite("build", "--results", "results", "--site", "site", cwd=tmp_path)
    finally:
        subprocess.run(["umount", str(build)], check=False)
    said = " ".join(full.stderr.split())
    assert full.returncode == 1 and "Traceback" not in full.stderr and said.count("error:") == 1, full.stderr
    assert "The disk is full (No space left on device)" in said and "Nothing was published" in said
    assert f"{build}" in said and "--site DIR" in said
    assert (tmp_path / "site" / "index.html").read_text() == home  # the old site, whole
