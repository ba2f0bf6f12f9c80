"""Results stores on S3, against a real S3-compatible server: moto's server mode, started on loopback once for
this module (docs/stores.md). One tiny local run is measured once and copied to S3 with fsspec; only the trial
a killed writer lost is measured again, by `perfsite run --results s3://…`."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import signal
import sys
import textwrap
import time
import traceback
import urllib.request
from pathlib import Path
from typing import IO

import onnx
import pandas as pd
import pytest
from support.cli import perfsite, write_spec
from support.models import tiny_cnn
from support.site import site_files

from generator.cli.app import main
from generator.results.location import shown
from generator.results.store import TRIAL_TABLES, ResultsDir, load_experiment

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

BUCKET = "perf"
# Tests check that no message ever prints it.
SECRET = "s3-test-secret-never-printed"

# A writer in its own process: copies trials of a local experiment into a store through ResultsDir.write_trial
# (the store's own protocol), each under KEY or, with --copies N, under N keys of its own (PREFIX + number).
# With --stop-before-marker KEY it stops after that trial's data objects and before its commit marker, says so
# and waits to be killed.
WRITER = textwrap.dedent("""\
    import argparse, json, sys, time
    import pyarrow.parquet as pq
    from generator.results import store
    from generator.results.store import TRIAL_TABLES, ResultsDir, TrialFiles

    ap = argparse.ArgumentParser()
    ap.add_argument("source"); ap.add_argument("target"); ap.add_argument("keys", nargs="+")
    ap.add_argument("--copies", type=int, default=0); ap.add_argument("--prefix", default="")
    ap.add_argument("--stop-before-marker", default=None)
    a = ap.parse_args()
    source, target = ResultsDir(a.source), ResultsDir(a.target)
    for table in ("runs", "environments"):
        for name in source.where.names(table):
            row = pq.read_table(source.path / table / name).to_pylist()[0]
            target.write_row(table, name.removesuffix(".parquet"), row)
    for name in (source.path / "specs").iterdir():
        target.write_spec(name.stem, name.read_text())
    real = store.table_to_parquet_bytes

    def stopping(table, rows):
        if table == "trials" and a.stop_before_marker in [r["trial_key"] for r in rows]:
            print("between data and marker", flush=True)
            time.sleep(600)
        return real(table, rows)

    store.table_to_parquet_bytes = stopping
    for key in a.keys:
        tables = {t: pq.read_table(source.path / t / f"{key}.parquet") for t in ("trials", *TRIAL_TABLES)
                  if (source.path / t / f"{key}.parquet").exists()}
        for new in ([f"{a.prefix}{i:04d}" for i in range(a.copies)] if a.copies else [key]):
            rows = {t: [{**r, "trial_key": new} for r in tab.to_pylist()] for t, tab in tables.items()}
            latencies = tables["latencies"].set_column(
                tables["latencies"].schema.get_field_index("trial_key"), "trial_key",
                [[new] * tables["latencies"].num_rows])
            target.write_trial(TrialFiles(trial=rows["trials"][0], **{t: rows.get(t, []) for t in TRIAL_TABLES
                                                                      if t != "latencies"}, latencies=latencies))
    print("done", flush=True)
    """)


@pytest.fixture(scope="module")
def s3(_probe_cache):
    """moto's S3-compatible server on a free loopback port, a bucket, and the environment every perfsite
    command (in this process or a child) finds its endpoint and credentials in."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": SECRET,
                            "AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": "us-east-1",
                            # never the tester's own ~/.aws
                            "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                            "PERFSITE_CACHE_DIR": str(_probe_cache)}.items():
            mp.setenv(name, value)
        import fsspec

        fs = fsspec.filesystem("s3", skip_instance_cache=True)
        fs.mkdir(BUCKET)
        yield fs, endpoint
    server.stop()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, s3) -> tuple[Path, Path]:
    """A project with a tiny CNN and a two-trial spec, measured once into a local store: (project, experiment
    folder)."""
    project = tmp_path_factory.mktemp("s3-project")
    onnx.save(tiny_cnn(), project / "tiny.onnx")
    write_spec(project, """\
        name: tiny
        models:
          fp32: {path: tiny.onnx}
        inputs:
          x: {shape: [1, 16, 32, 32], dtype: float32}
        sweep:
          optimization_level: [basic, all]
        measure: {warmup: 1, min_iterations: 5, min_seconds: 0.01, max_seconds: 0.5, repeats: 1,
                  profile_iterations: 1, budget_s: 0.1}
        """)
    done = perfsite("run", "spec.yaml", "--results", "local", "--quick", cwd=project)
    assert done.returncode == 0, done.stderr
    return project, project / "local" / "tiny"


@pytest.fixture(scope="module")
def copied(s3, tiny) -> str:
    """The local run copied to s3://perf/copy with fsspec, as a user would upload a store."""
    fs, _ = s3
    fs.put(str(tiny[1].parent), f"{BUCKET}/copy", recursive=True)
    return f"s3://{BUCKET}/copy"


def keys_of(experiment: Path) -> list[str]:
    return sorted(ResultsDir(experiment).stored_trial_keys())


def writer(*args: str) -> tuple[int, IO[str]]:
    """WRITER run as a script in a forked child of this process (which has pyarrow, s3fs and the store imported,
    and the s3 fixture's environment): its pid and its standard output. A process of its own to kill or to run
    beside another, without an interpreter to start."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            sys.stdout = io.TextIOWrapper(io.FileIO(write, "w"), encoding="utf-8")
            sys.argv = ["writer.py", *args]
            exec(compile(WRITER, "writer.py", "exec"), {"__name__": "__main__"})
            sys.stdout.flush()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    return pid, os.fdopen(read, encoding="utf-8")


def _exit_status(pid: int, timeout: float) -> int:
    """A forked writer's exit status; killed (and the test failed) if it has not ended within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"a writer did not end within {timeout} s")


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """`perfsite ARGS` in-process: exit status, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["perfsite", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def test_a_killed_writer_leaves_no_half_trial_and_a_run_into_s3_measures_it_again(s3, tiny, monkeypatch, capsys):
    """kill -9 between a trial's data objects and its commit marker: readers see the other trial only, and
    `perfsite run --results s3://…` measures just the lost one, into a store that reads back like the local
    run's (same trial keys, same columns and types, the copied trial equal row for row)."""
    fs, _ = s3
    project, local = tiny
    kept, lost = keys_of(local)
    url = f"s3://{BUCKET}/killed/tiny"
    pid, out = writer(str(local), url, kept, lost, "--stop-before-marker", lost)
    try:
        assert out.readline().strip() == "between data and marker"  # else the child's traceback is in stderr
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        out.close()
    assert fs.exists(f"{BUCKET}/killed/tiny/processes/{lost}.parquet")  # its data is there, its marker is not
    assert not fs.exists(f"{BUCKET}/killed/tiny/trials/{lost}.parquet")
    half = load_experiment(url)
    assert list(half.trials["trial_key"]) == [kept]
    assert all(set(getattr(half, t)["trial_key"]) <= {kept} for t in TRIAL_TABLES)
    code, out, err = run_main(monkeypatch, capsys, "query", "SELECT count(*) AS n FROM processes WHERE trial_key = "
                              f"'{lost}'", "--results", f"s3://{BUCKET}/killed", "--format", "json")
    assert code == 0 and json.loads(out) == [{"n": 0}], err

    done = perfsite("run", "spec.yaml", "--results", f"s3://{BUCKET}/killed", "--quick", cwd=project)
    assert done.returncode == 0, done.stderr
    assert f"tiny: 1 measured, 1 already stored. Results in {url}" in " ".join(done.stdout.split())
    remote, mine = load_experiment(url), load_experiment(local)
    assert sorted(remote.trials["trial_key"]) == [kept, lost] and not remote.incomplete and not remote.problems
    for table in ("trials", *TRIAL_TABLES, "environments", "runs"):
        theirs, ours = getattr(remote, table), getattr(mine, table)
        assert list(theirs.columns) == list(ours.columns) and list(theirs.dtypes) == list(ours.dtypes), table
        assert set(theirs.get("trial_key", [])) == set(ours.get("trial_key", [])), table
    row = remote.trials[remote.trials["trial_key"] == kept].reset_index(drop=True)
    pd.testing.assert_frame_equal(row, mine.trials[mine.trials["trial_key"] == kept].reset_index(drop=True))


def test_two_writers_into_one_store_lose_nothing(s3, tiny):
    """Two processes write 4 trials each into one S3 store at the same time: all 8 land whole."""
    _, local = tiny
    first, second = keys_of(local)
    url = f"s3://{BUCKET}/two/tiny"
    procs = [writer(str(local), url, key, "--copies", "4", "--prefix", prefix)
             for key, prefix in ((first, "a"), (second, "b"))]
    for pid, out in procs:
        status = _exit_status(pid, timeout=120)
        with out:
            said = out.read()
        assert status == 0 and said.strip() == "done", said
    stored = load_experiment(url)
    expected = {f"{p}{i:04d}" for p in "ab" for i in range(4)}
    assert set(stored.trials["trial_key"]) == expected and not stored.incomplete and not stored.problems
    for table in ("processes", "latencies", "nodes"):
        assert set(getattr(stored, table)["trial_key"]) == expected, table


def test_a_site_from_a_local_and_an_s3_store_built_twice_reuses_its_page_cache(s3, tiny, copied, tmp_path,
                                                                               monkeypatch, capsys):
    """`perfsite build --results LOCAL --results s3://…`: one site (mkdocs build --strict) with the trials of
    both stores; the trial stored in both is counted once, from the first store, with a note. The experiment
    merged from the two stores is one page-cache entry, keyed by both stores' files (S3's sizes and ETags as
    fsspec lists them): a second build reads no results and gives the same site; a changed object on S3 makes
    a new entry (generator.site.incremental)."""
    fs, _ = s3
    _, local = tiny
    first, second = keys_of(local)
    only_first = tmp_path / "only-first"
    shutil.copytree(local.parent, only_first)
    for table in ("trials", *TRIAL_TABLES):
        (only_first / "tiny" / table / f"{second}.parquet").unlink(missing_ok=True)
    fs.copy(f"{BUCKET}/copy", f"{BUCKET}/cached", recursive=True)  # this test changes its store
    project, site = tmp_path / "project", tmp_path / "site"
    project.mkdir()
    monkeypatch.chdir(project)
    args = ("build", "--results", str(only_first), "--results", f"s3://{BUCKET}/cached", "--site", str(site))
    pages = project / ".perfsite" / "cache" / "pages"
    twice = f"Note: 1 trial ({first}) is stored both in"

    code, _, err = run_main(monkeypatch, capsys, *args)
    said = " ".join(err.split())
    assert code == 0 and f"Reading results of s3://{BUCKET}/cached/tiny" in said, err
    assert (f"Note: 1 trial ({first}) is stored both in {only_first / 'tiny'} and in s3://{BUCKET}/cached/tiny; "
            f"each counted once, from {only_first / 'tiny'} (the first --results given).") in said
    assert "2 ok trials · 1 version" in (site / "reports" / "tiny" / "index.html").read_text()
    chooser = (site / "reports" / "tiny" / "choose" / "index.js").read_text()
    assert first in chooser and second in chooser
    [entry] = pages.iterdir()
    stamp, built = (entry / "entry.pickle").stat().st_mtime_ns, site_files(site)

    code, _, err = run_main(monkeypatch, capsys, *args)
    said = " ".join(err.split())
    assert code == 0 and "Reusing the pages of 1 unchanged experiment(s)" in said, err
    assert "Reading results of" not in said and twice in said  # the merge's note is said again from the entry
    assert [p.name for p in pages.iterdir()] == [entry.name] and (entry / "entry.pickle").stat().st_mtime_ns == stamp
    again = site_files(site)
    assert sorted(again) == sorted(built) and [f for f in built if again[f] != built[f]] == []
    assert "2 ok trials · 1 version" in (site / "reports" / "tiny" / "index.html").read_text()

    fs.rm(f"{BUCKET}/cached/tiny/trials/{first}.parquet")  # the S3 copy of the shared trial: now only local
    code, _, err = run_main(monkeypatch, capsys, *args)
    said = " ".join(err.split())
    assert code == 0 and f"Reading results of s3://{BUCKET}/cached/tiny" in said and twice not in said, err
    assert [p.name for p in pages.iterdir()] != [entry.name] and len(list(pages.iterdir())) == 1


def test_query_answers_on_an_s3_store_as_on_the_local_one(s3, tiny, copied, monkeypatch, capsys):
    sql = "SELECT version, optimization_level, latency_p50_ms FROM history ORDER BY optimization_level"
    answers = []
    for results in (copied, str(tiny[1].parent)):
        code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", results, "--format", "json")
        assert code == 0, err
        answers.append(json.loads(out))
    assert answers[0] == answers[1] and [a["optimization_level"] for a in answers[0]] == ["all", "basic"]


def _auth(endpoint: str, count: str) -> None:
    """moto's switch for authentication: after `count` more requests, unknown credentials are refused."""
    # text/plain: a form-encoded body would be parsed by Flask and never reach moto.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=count.encode(),
                                                  headers={"Content-Type": "text/plain"}), timeout=10).read()


@pytest.mark.parametrize(("command", "url", "first_words"), [
    ("run", "s3://nobucket/results", "Cannot write into the results store s3://nobucket/results/tiny: the bucket "
                                     "or path does not exist"),
    ("run", "s3://perf/denied", "Cannot list the results store s3://perf/denied/tiny: access was refused"),
    ("build", "s3://unreachable/results", "Cannot list the results store s3://unreachable/results: the storage "
                                          "endpoint cannot be reached (EndpointConnectionError"),
    ("build", "s3:/perf/copy", "The results store s3:/perf/copy is not a valid URL: a URL is written "
                               "scheme://bucket/path (two slashes)."),
    ("query", "s3://", "The results store s3:// names no bucket or folder."),
    ("build", "s3://Bad_Bucket!/x", "Cannot list the results store s3://Bad_Bucket!/x: the URL is malformed"),
    ("query", "gs://perf/results", "Cannot open the results store gs://perf/results: Please install gcsfs to access "
                                   "Google Storage. Install that package"),
    ("build", "s3://key:password@perf/x", "Cannot list the results store s3://perf/x:"),
])
def test_a_store_perfsite_cannot_use_is_one_paragraph_naming_it(s3, tiny, tmp_path, monkeypatch, capsys, command,
                                                                url, first_words):
    _, endpoint = s3
    project, _ = tiny
    monkeypatch.chdir(project)
    args = {"run": ("run", "spec.yaml", "--quick", "--results", url), "build": ("build", "--results", url, "--site",
            str(tmp_path / "site")), "query": ("query", "SELECT 1", "--results", url)}[command]
    if "unreachable" in url:
        free = __import__("socket").socket()
        free.bind(("127.0.0.1", 0))
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free.getsockname()[1]}")  # nobody listens
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
        free.close()
    if "denied" in url:
        _auth(endpoint, "0")
    try:
        code, out, err = run_main(monkeypatch, capsys, *args)
    finally:
        if "denied" in url:
            _auth(endpoint, "inf")
    flat = " ".join(err.split())
    assert code == 1 and "Traceback" not in err and SECRET not in err + out and "password" not in err, err
    assert flat.startswith("error: " + first_words), flat
    assert "Allowed for --results: a local folder, or an fsspec URL" in flat or "Install" in flat


def test_a_url_is_shown_without_its_credentials():
    assert shown("s3://AKIA:hunter2@bucket/results") == "s3://bucket/results"
    assert shown("results/x") == "results/x"
