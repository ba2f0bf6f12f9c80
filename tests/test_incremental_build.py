"""Incremental builds (generator.site.incremental): unchanged experiments' pages are reused, and a rebuild gives
the same site as a full build from scratch."""

from __future__ import annotations

import contextlib
import functools
import io
import multiprocessing
import os
import re
import runpy
import shutil
import subprocess
import sys
import time
import types
from collections import deque
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.cli import in_forks
from support.results import EXPERIMENT, write_results
from support.site import site_files

import generator
from generator import processes
from generator.errors import PerfsiteError
from generator.site import build_site, incremental
from generator.site import pages as P

ROOT = Path(__file__).resolve().parent.parent


def _two_experiments(root: Path) -> tuple[Path, Path]:
    first = write_results(root)
    second = root / "other-cnn"
    shutil.copytree(first, second)
    return first, second


def _build(results: Path, project: Path) -> list[str]:
    said: list[str] = []
    build_site(results, project / "site", project, progress=said.append)
    return said


def _slower(experiment: Path) -> None:
    """Re-measure one trial of the experiment: a results file with new figures (its trial key kept)."""
    path = sorted((experiment / "trials").glob("*.parquet"))[0]
    table = pq.read_table(path)
    i = table.schema.get_field_index("latency_headline_ms")
    table = table.set_column(i, table.schema.field(i), pc.multiply(table.column(i), 1.5))
    pq.write_table(table, path)


def test_a_rebuild_regenerates_only_what_changed_and_equals_a_full_build_and_a_damaged_entry_again(
        tmp_path, monkeypatch):
    """Builds of these two small experiments generate them in the build's own process (pool_workers); the full
    build from scratch generates one in a pool's worker beside the build's process (_shared), so the pool's
    entries are compared too."""
    results = tmp_path / "results"
    first, second = _two_experiments(results)
    project = tmp_path / "project"
    said = _build(results, project)
    assert [s for s in said if s.startswith("Reading results of")] == [
        f"Reading results of {first}", f"Reading results of {second}"]
    assert re.fullmatch(r"Built in [\d.]+ s: experiments' pages [\d.]+ s \(2 generated, 0 reused\), writing pages "
                        r"[\d.]+ s, mkdocs build [\d.]+ s, publishing [\d.]+ s", said[-1]), said[-1]
    entries = sorted(p.name for p in (project / ".perfsite" / "cache" / "pages").iterdir())
    assert len(entries) == 2
    renders = {p.name for p in (project / ".perfsite" / "cache" / "render" / "entries").iterdir()}
    assert len(renders) >= 10  # one per page (generator.site.render_cache)

    _slower(second)
    said = _build(results, project)
    assert "Reusing the pages of 1 unchanged experiment(s)" in said
    assert "(1 generated, 1 reused)" in said[-1]
    assert [s for s in said if s.startswith("Reading results of")] == [f"Reading results of {second}"]
    now = sorted(p.name for p in (project / ".perfsite" / "cache" / "pages").iterdir())
    assert len(now) == 2 and len(set(now) & set(entries)) == 1  # the changed one replaced, the old one pruned
    rendered = {p.name for p in (project / ".perfsite" / "cache" / "render" / "entries").iterdir()}
    assert len(rendered) == len(renders) and 0 < len(rendered - renders) < len(renders) / 2  # the others reused

    scratch = tmp_path / "scratch"
    with monkeypatch.context() as pool:
        pool.setattr(incremental, "POOL_FROM_BYTES", 0)
        _build(results, scratch)
    rebuilt, full = site_files(project / "site"), site_files(scratch / "site")
    assert sorted(rebuilt) == sorted(full)
    assert [f for f in full if rebuilt[f] != full[f]] == []
    assert b"other-cnn" in full["reports/other-cnn/index.html"]
    data = project / "site" / "reports" / "other-cnn" / "choose" / "index.js"
    assert data.stat().st_nlink >= 2  # hard-linked from the page cache, not copied (render_cache)

    shutil.rmtree(first)  # a removed experiment: its pages, its navigation entry and its cache entry go
    said = _build(results, project)
    assert [s for s in said if s.startswith("Reading results of")] == []
    assert not (project / "site" / "reports" / EXPERIMENT).exists()
    assert EXPERIMENT not in (project / "site" / "reports" / "other-cnn" / "index.html").read_text()
    assert len(list((project / ".perfsite" / "cache" / "pages").iterdir())) == 1

    # A damaged or half-deleted cache entry is generated again (on the site the last build left: no build of
    # its own to make one). A build generates again exactly the entries _whole refuses (the build after the
    # last damage shows it): the damaged records are checked there, then put back.
    whole = site_files(project / "site")
    (entry,) = (project / ".perfsite" / "cache" / "pages").iterdir()
    record = (entry / "entry.pickle").read_bytes()
    for damaged in (b"", b"junk"):  # EOFError, once read as Ctrl-C; UnpicklingError
        (entry / "entry.pickle").write_bytes(damaged)
        assert not incremental._whole(entry)
    (entry / "entry.pickle").write_bytes(record)
    assert incremental._whole(entry)
    shutil.rmtree(entry / "docs")  # pages gone, record kept
    said = _build(results, project)
    assert not any("Reusing" in line for line in said) and site_files(project / "site") == whole


def test_a_new_version_or_template_invalidates_every_entry(tmp_path, monkeypatch):
    experiment = write_results(tmp_path / "results")
    code = incremental.code_fingerprint()
    key = incremental.page_key((experiment,), "cnn-int8", code)
    assert incremental.page_key((experiment,), "cnn-int8", incremental.code_fingerprint()) == key
    assert incremental.page_key((experiment,), "cnn-int8-2", code) != key  # another slug: other links

    monkeypatch.setattr(generator, "__version__", "99.0")
    assert incremental.code_fingerprint() != code
    monkeypatch.undo()

    templates = tmp_path / "templates"
    shutil.copytree(P.templates_dir(), templates)
    monkeypatch.setattr(P, "templates_dir", lambda: templates)
    assert incremental.code_fingerprint() == code
    with open(templates / "experiment.md.j2", "a", encoding="utf-8") as f:
        f.write("\n")
    assert incremental.code_fingerprint() != code


def test_small_stores_are_generated_in_the_builds_own_process_and_big_ones_in_a_pool(monkeypatch):
    monkeypatch.setattr(incremental.os, "cpu_count", lambda: 2)
    small = 360_000  # tests/support/results.py's experiment, stored
    assert incremental.pool_workers([small]) == 0 and incremental.pool_workers([small, small]) == 0
    assert incremental.pool_workers([incremental.POOL_FROM_BYTES // 2] * 2) == 2
    assert incremental.pool_workers([3_600_000] * 25) == 2  # bench/site_scale.py's store: a worker per core
    monkeypatch.setattr(incremental.os, "cpu_count", lambda: 1)
    assert incremental.pool_workers([3_600_000] * 25) == 0


def test_an_error_in_the_pools_share_is_raised_as_it_was_and_the_builds_own_share_is_generated(tmp_path):
    """The pool takes the biggest experiments from the front, the build's own process the smallest from the
    back (_shared): a worker's error (a damaged results file) reaches the build as raised, once the build's
    process has finished the experiment it had started."""
    first, second = _two_experiments(tmp_path / "results")
    damaged = sorted((first / "trials").glob("*.parquet"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])
    cache = tmp_path / "cache"
    backlog = deque([((first,), "a", cache / "a"), ((second,), "b", cache / "b")])
    with pytest.raises(PerfsiteError, match="is not readable Parquet"):
        incremental._shared(backlog, 1, multiprocessing.get_context("forkserver"))
    assert (cache / "b" / incremental.ENTRY).is_file() and not (cache / "a").exists()


def _scale_benchmark(*args: str) -> tuple[int, str]:
    """bench/site_scale.py run as a script (its `__main__`) in this forked process: its exit status and output."""
    sys.path.insert(0, str(ROOT / "bench"))  # as running the script puts its folder first
    sys.argv = [str(ROOT / "bench" / "site_scale.py"), *args]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
        except SystemExit as e:
            return e.code, out.getvalue()
    return 0, out.getvalue()


def test_the_scale_benchmark_runs_small(tmp_path):
    # In a fork of this process, not a new interpreter: the benchmark's own imports are perfsite's, loaded here
    # already; the builds it times are still `perfsite build` processes of their own.
    [(code, out)] = in_forks([functools.partial(_scale_benchmark, "--trials", "6", "--nodes", "240", "--work",
                                                str(tmp_path))], at_once=1)
    assert code in (0, 1), out  # 1: a figure over its target (a loaded machine)
    assert "store: 1 experiment, 6 trials, 240 node rows, 2 environments" in out
    for figure in ("full build", "peak memory (process tree)", "rebuild after one change", "largest page"):
        assert figure in out
    # The store holds 2 machines: a report per machine (generator.site.machine_reports), each with its chooser.
    assert len(list((tmp_path / "site" / "reports" / "resnet-detector-00").glob("*/choose.html"))) >= 1


def test_a_results_file_rewritten_with_its_size_and_time_is_read_again(tmp_path):
    """A rewrite that keeps the size and sets the modification time back (`touch -d`, a sync tool preserving
    times) still changes the key: the inode change time, which no user sets back, is part of it. (A build
    reads an experiment whose key changed again: test_a_rebuild_regenerates_only_what_changed_….)"""
    experiment = write_results(tmp_path / "results")
    code = incremental.code_fingerprint()
    key = incremental.page_key((experiment,), EXPERIMENT, code)
    path = sorted((experiment / "trials").glob("*.parquet"))[0]
    before = path.stat()
    time.sleep(0.02)  # the kernel's file clock ticks every few milliseconds
    with open(path, "r+b") as f:  # the same inode and size (a sync tool's copy of a file over it)
        f.write(path.read_bytes())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert incremental.page_key((experiment,), EXPERIMENT, code) != key


def test_one_experiment_generated_on_two_cores_equals_one_core_and_survives_a_failed_child(tmp_path, monkeypatch):
    """A rebuild of one experiment generates its chooser page (and its machines pages, which this one-machine
    experiment has not: test_machines builds a site of one that has) in a forked child; should the child fail,
    the build's own process generates them: the entry is the same either way."""
    experiment = write_results(tmp_path / "results")
    entries = {}
    for name, cores in (("one", 1), ("two", 2)):
        incremental.generate_entry((experiment,), EXPERIMENT, str(tmp_path / name), cores)
        entries[name] = tmp_path / name
    fork_call = processes.fork_call
    monkeypatch.setattr(processes, "fork_call", lambda work: fork_call(lambda: sys.exit("a child that fails")))
    incremental.generate_entry((experiment,), EXPERIMENT, str(tmp_path / "failed"), 2)
    entries["failed"] = tmp_path / "failed"
    files = {name: _files(folder) for name, folder in entries.items()}
    assert any(path.endswith("choose.md") for path in files["one"])
    assert files["two"] == files["one"] and files["failed"] == files["one"]
    pages = {name: incremental._read_entry(folder).pages for name, folder in entries.items()}
    assert pages["two"] == pages["one"] == pages["failed"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted((folder / "docs").rglob("*"))
            if p.is_file()}


def test_a_forked_call_says_whether_its_work_returned():
    assert processes.forked_ok(processes.fork_call(lambda: None))
    assert not processes.forked_ok(processes.fork_call(lambda: 1 / 0))


def test_a_script_that_calls_build_site_unguarded_fails_with_the_fix_instead_of_hanging(tmp_path):
    """The page workers import the main module: a script calling build_site at its top level called it again
    in every worker, which waited for the build lock the script held, for good. Now the worker refuses, the
    build fails, and both messages say to guard the call."""
    _two_experiments(tmp_path / "results")
    (tmp_path / ".git").mkdir()
    script = tmp_path / "make_site.py"
    # Two small experiments are generated without a pool (pool_workers): the script asks for one, as a store
    # of some size gets.
    script.write_text("from pathlib import Path\nfrom generator.site import build_site, incremental\n"
                      "incremental.POOL_FROM_BYTES = 0\n"
                      "build_site(Path('results'), Path('site'), Path('.'))\n")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    err = " ".join(run.stderr.split())
    assert run.returncode == 1, run.stderr
    assert (f"SiteError: build_site was called while a page worker of a build imported the script {script}: the "
            "call runs again in every worker. Allowed: a call guarded by `if __name__ == \"__main__\":`") in err
    assert err.endswith(f"SiteError: {incremental.BROKEN_WORKER}"), err
    assert not (tmp_path / "site").exists()


def test_only_the_worker_import_of_a_script_is_refused_not_a_call_from_its_functions(monkeypatch):
    """The refusal looked at the process (any spawn or forkserver worker) and refused a guarded script's own
    worker that builds a site; it looks at where the call comes from: the script run as `__mp_main__`, at its
    top level. Both cases in this process, the script's code run as multiprocessing runs it."""
    import pytest

    from generator.errors import SiteError

    code = "from generator.site.build import _refuse_in_a_worker\n{body}"
    with pytest.raises(SiteError, match=r"imported the script /s/make_site\.py: the call runs again"):
        exec(code.format(body="_refuse_in_a_worker()"), {"__name__": "__mp_main__", "__file__": "/s/make_site.py"})
    scope = {"__name__": "__mp_main__", "__file__": "/s/make_site.py"}
    exec(code.format(body="def build():\n    _refuse_in_a_worker()\n"), scope)
    # In a worker the imported script stays in sys.modules under `__mp_main__`, named so, for good.
    script = types.ModuleType("__mp_main__")
    monkeypatch.setitem(sys.modules, "__mp_main__", script)
    scope["build"]()  # a function of the script, called in a worker: no refusal
    exec(code.format(body="_refuse_in_a_worker()"), {"__name__": "__main__"})  # the script itself
