"""The results store: atomic files, whole-table reads with plain pandas, schema versions, corrupt files."""

from __future__ import annotations

import json
import os
import stat
import urllib.parse
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator.errors import ResultsError
from generator.results.schema import METADATA_KEY, SCHEMA_VERSION, TABLES, arrow_schema
from generator.results.store import ResultsDir, TrialFiles, find_experiments, load_experiment

# The smallest valid stored spec: load_experiment validates it.
SPEC = json.dumps({"name": "exp", "models": {"fp32": {"path": "m.onnx"}}, "inputs": {"x": {"shape": [1]}}})


def _trial(key: str, status: str = "ok", **extra) -> dict:
    return {
        "experiment": "exp", "trial_key": key, "run_id": "r1", "env_id": "e1", "spec_sha256": "s" * 64,
        "version": "fp32", "model_sha256": "m" * 64, "batch": 1, "threads": 1, "concurrency": 1,
        "optimization_level": "all", "provider": "cpu", "spinning": True, "inter_op_threads": 1, "dims": "{}",
        "config_label": "b1 t1 c1", "status": status, "quick": True, "finished_at": f"2026-01-01T00:00:{key[-1]}",
        **extra,
    }


def _write(rd: ResultsDir, key: str, **extra) -> None:
    lat = pa.table({"trial_key": [key] * 3, "process": [0, 0, 1], "stream": [0, 0, 0], "iteration": [0, 1, 0],
                    "latency_ms": [1.0, 2.0, 3.0]})
    rd.write_trial(TrialFiles(trial=_trial(key, **extra), processes=[{"trial_key": key, "process": 0}],
                              latencies=lat, nodes=[]))


def test_every_column_has_unit_and_meaning():
    for table, cols in TABLES.items():
        names = [c.name for c in cols]
        assert len(names) == len(set(names)), table
        assert all(c.meaning for c in cols), table


def test_written_tables_read_with_plain_pandas_and_carry_schema_version(tmp_path):
    rd = ResultsDir(tmp_path / "exp")
    _write(rd, "k1")
    _write(rd, "k2")
    rd.write_spec("s" * 64, SPEC)
    trials = pd.read_parquet(tmp_path / "exp" / "trials")
    assert sorted(trials["trial_key"]) == ["k1", "k2"]
    lat = pd.read_parquet(tmp_path / "exp" / "latencies")
    assert len(lat) == 6
    meta = pq.read_schema(tmp_path / "exp" / "trials" / "k1.parquet").metadata
    assert int(meta[METADATA_KEY]) == SCHEMA_VERSION
    assert rd.stored_ok_keys() == {"k1", "k2"}


def test_stored_files_have_an_ordinary_files_mode_not_the_writers_alone(tmp_path):
    # They were 0600 (tempfile.mkstemp's mode) whatever the umask: in a store shared by a team, a colleague's
    # `perfsite build` or `query` could not read them.
    rd = ResultsDir(tmp_path / "exp")
    _write(rd, "k1")
    rd.write_spec("s" * 64, SPEC)
    mask = os.umask(0o022)
    os.umask(mask)
    files = [p for p in (tmp_path / "exp").rglob("*") if p.is_file() and ".locks" not in p.parts]
    assert {p.relative_to(tmp_path / "exp").parts[0] for p in files} >= {"trials", "latencies", "specs"}
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {oct(0o666 & ~mask)}


def test_failed_trials_are_not_counted_as_stored(tmp_path):
    rd = ResultsDir(tmp_path / "exp")
    _write(rd, "k1", status="failed", error="crashed (SIGSEGV)")
    assert rd.stored_trial_keys() == {"k1"}
    assert rd.stored_ok_keys() == set()


def test_leftover_temporary_files_are_invisible(tmp_path):
    rd = ResultsDir(tmp_path / "exp")
    _write(rd, "k1")
    # What a writer killed between write and rename leaves behind.
    (tmp_path / "exp" / "trials" / ".k2.parquet.abc.tmp").write_bytes(b"PAR1 half a file")
    assert list(pd.read_parquet(tmp_path / "exp" / "trials")["trial_key"]) == ["k1"]
    assert rd.stored_trial_keys() == {"k1"}


def test_orphan_side_rows_are_dropped(tmp_path):
    rd = ResultsDir(tmp_path / "exp")
    _write(rd, "k1")
    rd.write_spec("s" * 64, SPEC)
    # Side tables of a trial whose `trials` row never landed (killed before the commit point).
    (tmp_path / "exp" / "trials" / "k1.parquet").rename(tmp_path / "exp" / "trials" / ".gone")
    _write(rd, "k2")
    (tmp_path / "exp" / "trials" / ".gone").rename(tmp_path / "exp" / "trials" / "k1.parquet")
    (tmp_path / "exp" / "trials" / "k2.parquet").unlink()
    rd_tables = rd.read_table("latencies")
    assert set(rd_tables["trial_key"]) == {"k1", "k2"}
    exp = load_experiment(tmp_path / "exp")
    assert set(exp.latencies["trial_key"]) == {"k1"}


def test_corrupt_parquet_names_the_file(tmp_path):
    rd = ResultsDir(tmp_path / "exp")
    _write(rd, "k1")
    bad = tmp_path / "exp" / "trials" / "k2.parquet"
    bad.write_bytes(b"this is not parquet")
    with pytest.raises(ResultsError, match="k2.parquet"):
        rd.read_table("trials")


def test_newer_schema_version_is_refused(tmp_path):
    folder = tmp_path / "exp" / "trials"
    folder.mkdir(parents=True)
    schema = arrow_schema("trials").with_metadata({METADATA_KEY: str(SCHEMA_VERSION + 1).encode()})
    pq.write_table(schema.empty_table(), folder / "k9.parquet")
    with pytest.raises(ResultsError, match="newer"):
        ResultsDir(tmp_path / "exp").read_table("trials")


def test_find_experiments(tmp_path):
    _write(ResultsDir(tmp_path / "b"), "k1")
    _write(ResultsDir(tmp_path / "a"), "k1")
    (tmp_path / "not-an-experiment").mkdir()
    assert [p.name for p in find_experiments(tmp_path)] == ["a", "b"]
    assert find_experiments(tmp_path / "a") == [tmp_path / "a"]
    with pytest.raises(ResultsError, match="does not exist"):
        find_experiments(tmp_path / "missing")


def test_unwritable_results_dir_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ResultsError, match="Cannot write results"):
        ResultsDir(blocker / "exp").ensure_writable()


def test_a_copied_trial_file_counts_once_and_a_lost_side_table_is_named(tmp_path):
    """A sync tool's `copy of K.parquet` made "2 ok trials"; a lost nodes/K.parquet silently dropped the layer
    sections of a profiled trial. Both are reported naming the files; the copy counts once, the incomplete
    trial is measured again by `run` and its profile page says what is missing."""
    import shutil

    from support.cli import perfsite
    from support.results import write_results

    folder = write_results(tmp_path / "results")
    rd = ResultsDir(folder)
    keys, every = sorted(rd.stored_ok_keys()), rd.stored_trial_keys()
    original, lost = folder / "trials" / f"{keys[0]}.parquet", set(keys[1:])
    shutil.copy(original, folder / "trials" / f"copy of {keys[0]}.parquet")
    for key in lost:  # every profile page then has a trial without its layer table
        (folder / "nodes" / f"{key}.parquet").unlink()

    report = rd.check()
    assert set(report.trials["trial_key"]) == every and report.trials["trial_key"].is_unique
    assert rd.stored_ok_keys() == {keys[0]}  # run measures the incomplete ones again
    done = perfsite("build", "--results", "results", "--site", "site", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    trials = f"results/{folder.name}/trials"  # as given on the command line
    assert f"{trials}/copy of {keys[0]}.parquet holds trial {keys[0]}, but a trial's file is named after" in said
    assert f"Trial {keys[0]} is stored twice, in {trials}/{keys[0]}.parquet and" in said
    assert all(f"trial {key} lacks nodes/{key}.parquet" in said for key in lost)
    pages = [p.read_text() for p in (tmp_path / ".perfsite" / "build" / "docs").rglob("profile-*.md")]
    assert pages and all('!!! failure "Results files missing"' in page for page in pages)
    assert any(f"nodes/{key}.parquet" in "".join(pages) for key in lost)


def test_an_infinite_figure_in_a_results_file_is_refused_naming_the_file(tmp_path):
    """A hand-edited `inf` latency made `perfsite build` fail with a JSON traceback."""
    from support.results import write_results

    folder = write_results(tmp_path / "results")
    path = sorted((folder / "trials").glob("*.parquet"))[0]
    table = pq.read_table(path)
    column = table.schema.get_field_index("latency_p50_ms")
    table = table.set_column(column, "latency_p50_ms", pa.array([float("inf")] * table.num_rows, pa.float64()))
    pq.write_table(table.replace_schema_metadata(pq.read_schema(path).metadata), path)
    with pytest.raises(ResultsError) as raised:
        load_experiment(folder)
    message = str(raised.value)
    assert message.startswith(f"{path}: `latency_p50_ms` is inf; allowed: a finite number ≥ 0")
    assert f"named {path.stem}.parquet); the next `perfsite run` measures it again." in message


def test_an_experiment_named_trials_is_one_experiment_of_the_root(tmp_path):
    """`name: trials` is a valid name: the root holding results/trials/trials/K.parquet was taken for one
    experiment folder, and `build` dropped every experiment."""
    import shutil

    from support.results import write_results

    from generator.results.store import find_experiments

    folder = write_results(tmp_path / "results")
    shutil.move(folder, tmp_path / "results" / "trials")
    assert find_experiments(tmp_path / "results") == [tmp_path / "results" / "trials"]
    assert find_experiments(tmp_path / "results" / "trials") == [tmp_path / "results" / "trials"]


@pytest.mark.parametrize(("table", "column"), [("trials", "status"), ("processes", "throughput_ips"),
                                               ("nodes", "dur_mean_us"), ("latencies", "latency_ms")])
def test_a_current_file_lacking_a_column_is_refused_naming_file_and_column(tmp_path, table, column):
    """A file edited by hand (a column dropped, the schema version kept) gave a KeyError deep in the pages."""
    from support.results import write_results

    experiment = write_results(tmp_path / "results")
    damaged = sorted((experiment / table).glob("*.parquet"))[0]
    pq.write_table(pq.read_table(damaged).drop([column]), damaged)
    with pytest.raises(ResultsError) as err:
        load_experiment(experiment)
    message = " ".join(str(err.value).split())
    assert f"The results file {damaged} lacks the column `{column}`" in message
    assert f"results schema {SCHEMA_VERSION} gives every `{table}` file" in message


@pytest.mark.parametrize(("column", "value", "shown", "allowed"), [
    ("status", "<b>weird</b>", "'<b>weird</b>'", "ok or failed"),
    ("batch", 0, "0", "an integer ≥ 1"),
])
def test_a_trial_row_outside_the_contract_is_refused(tmp_path, column, value, shown, allowed):
    """An unknown status was counted as failed without a word; batch 0 divided by zero on the profile page."""
    from support.results import write_results

    experiment = write_results(tmp_path / "results")
    path = sorted((experiment / "trials").glob("*.parquet"))[0]
    table = pq.read_table(path)
    if table.column("status")[0].as_py() != "ok":
        path = sorted((experiment / "trials").glob("*.parquet"))[1]
        table = pq.read_table(path)
    index = table.column_names.index(column)
    table = table.set_column(index, column, pa.array([value], table.schema.field(column).type))
    pq.write_table(table, path)
    with pytest.raises(ResultsError) as err:
        load_experiment(experiment)
    assert f"{path}: `{column}` is {shown}; allowed: {allowed}." in str(err.value)


def test_one_file_holding_a_trial_twice_is_named_once(tmp_path):
    """The duplicate warning named the same file twice ("in K.parquet and K.parquet")."""
    from support.results import write_results

    folder = write_results(tmp_path / "results")
    path = sorted((folder / "trials").glob("*.parquet"))[0]
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table, table]), path)
    report = ResultsDir(folder).check()
    assert report.trials["trial_key"].is_unique
    assert report.problems == (f"Trial {path.stem} is stored twice in {path} (two rows); counted once.",)


@pytest.mark.parametrize("url", ["file://u:s3cr3t@localhost/tmp/x", "file://otherhost/tmp/x"])
def test_a_file_url_with_a_host_or_credentials_is_refused_without_showing_the_secret(url):
    from generator.results.location import local_path

    # It once wrote /u:s3cr3t@localhost/tmp/x (and printed the password) or /otherhost/tmp/x.
    with pytest.raises(ResultsError, match="file:// URL with a host or credentials part") as refused:
        local_path(url)
    assert "s3cr3t" not in str(refused.value) and "Allowed for --results" in str(refused.value)
    assert local_path("file:///tmp/x") == local_path("file://localhost/tmp/x") == Path("/tmp/x")


@pytest.mark.parametrize("command", ["run", "build", "query"])
def test_a_store_url_without_its_slashes_is_refused_not_made_a_local_folder(tmp_path, command):
    """`--results s3:perf/results` (or `file:results`, `GS:bucket`): a colon and no slash after it was taken for a
    local folder named `s3:perf`, into which `run` measured, while the user believed the results in a bucket."""
    from support.cli import perfsite, write_spec
    from support.models import matmul_model

    from generator.results.location import local_path

    matmul_model(tmp_path / "tiny.onnx")
    write_spec(tmp_path, "name: tiny\nmodels: {fp32: {path: tiny.onnx}}\ninputs: {x: {shape: [batch, 4]}}\n")
    (tmp_path / "a:b").mkdir()  # a local folder of that form that exists is still one
    args = {"run": ["run", "spec.yaml", "--dry-run", "--results"], "build": ["build", "--results"],
            "query": ["query", "SELECT 1", "--results"]}[command]
    for url in ("s3:perf/results", "file:results", "GS:bucket"):
        result = perfsite(*args, url, cwd=tmp_path)
        message = " ".join(result.stderr.split())
        assert result.returncode == 1 and "Traceback" not in message, message
        assert message.startswith(f"error: The results store {url}"), message
        assert "is not a valid URL: a URL is written scheme://bucket/path (two slashes)." in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a:b", "spec.yaml", "tiny.onnx"]
    assert local_path("a:b") == Path("a:b") and local_path("no-scheme:x") == Path("no-scheme:x")


def test_a_file_url_names_its_folder_percent_decoded(tmp_path):
    """`--results file:///srv/my%20results` (a file URL as a browser shows it) was taken literally: `run` wrote
    a new folder named `my%20results` beside the real one and `query` said the store did not exist."""
    from support.results import write_results

    from generator.results.location import local_path
    from generator.results.query import run_query

    store = write_results(tmp_path / "my results ü")
    url = "file://" + "/".join(["", *map(urllib.parse.quote, tmp_path.parts[1:]), "my%20results%20%C3%BC"])
    assert local_path(url) == store.parent  # write_results makes one experiment's folder in it
    assert local_path(url.replace("file://", "file://localhost")) == store.parent
    trials = len(ResultsDir(store).stored_trial_keys())
    assert run_query(url, "SELECT count(*) FROM trials").rows == [(trials,)]
    ResultsDir(local_path(url + "/more")).ensure_writable()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my results ü"]


def test_an_s3_store_waits_seconds_not_minutes_for_an_endpoint_that_never_answers(monkeypatch):
    """botocore's defaults (60 s per answer, five attempts) inside s3fs's own five retries held build, run and
    query silent for minutes before an endpoint that accepted connections and never answered (the hostile
    tour's hang server: now a paragraph after about 45 s, measured by hand)."""
    pytest.importorskip("s3fs")
    from generator.results.location import S3_TIMEOUTS, open_filesystem

    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    fs, root = open_filesystem("s3://perf-bucket/results")
    assert root == "perf-bucket/results" and fs.retries == 1
    assert fs.config_kwargs == {**S3_TIMEOUTS, "retries": {"max_attempts": 2, "mode": "standard"}}
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "4")  # the user's own choice stays theirs
    assert "retries" not in open_filesystem("s3://perf-bucket/results")[0].config_kwargs


def test_a_store_whose_backend_connects_when_opened_is_one_paragraph_without_the_password():
    from generator.results.location import open_filesystem

    with pytest.raises(ResultsError, match=r"Cannot open the results store ftp://127\.0\.0\.1:1/x: the storage "
                                           "endpoint cannot be reached") as refused:
        open_filesystem("ftp://u:s3cr3tPW@127.0.0.1:1/x")  # port 1: the connection is refused at once
    assert "s3cr3tPW" not in str(refused.value)
    assert "check the host and port in the URL, and the network" in str(refused.value)  # not AWS_ENDPOINT_URL
    assert "AWS_ENDPOINT_URL" not in str(refused.value).split("Allowed")[0]


def test_a_store_spelt_two_ways_is_read_once(tmp_path, monkeypatch):
    """`build --results r1 --results ./r1/ --results <absolute r1>` read one store three times and noted each of
    its trials as "stored both in r1/tiny and in r1/tiny"; a URL with and without its last slash likewise."""
    from generator.results.stores import store_roots

    (tmp_path / "r1").mkdir()
    monkeypatch.chdir(tmp_path)
    given = ["r1", "./r1/", str(tmp_path / "r1"), "s3://perf/main/", "s3://perf/main", "r2"]
    assert store_roots(given) == ("r1", "s3://perf/main/", "r2")


def test_a_store_and_one_of_its_experiments_given_together_are_read_once(tmp_path):
    """`build --results r1 --results r1/cnn` (a store, and an experiment folder in it) read the folder twice and
    noted its every trial as "stored both in r1/cnn and in r1/cnn"; either order, it is one folder, read once."""
    from support.diff import EXPERIMENT, Side, write_side

    from generator.site.build import _experiment_folders

    root = write_side(tmp_path / "r1", Side())
    said: list[str] = []
    for given in ((root, root / EXPERIMENT), (root / EXPERIMENT, root), (root / EXPERIMENT, f"{root}/./{EXPERIMENT}")):
        assert _experiment_folders(given, said.append) == [(given[0] if given[0] != root else root / EXPERIMENT,)]
    assert said == []


def test_folders_of_one_name_in_two_stores_that_share_no_version_are_said_to(tmp_path):
    """Two unrelated experiments that share a name (in two stores) were merged without a word, and the page
    called one store's trials "versions no longer in its newest spec"."""
    from support.diff import EXPERIMENT, Side, write_side

    from generator.results.store import load_experiment
    from generator.results.stores import merge

    first = load_experiment(write_side(tmp_path / "r1", Side()) / EXPERIMENT)
    other = load_experiment(write_side(tmp_path / "r7", Side(version="c")) / EXPERIMENT)
    _, notes = merge([first, other])
    assert notes == [f"{tmp_path / 'r7' / EXPERIMENT} and {tmp_path / 'r1' / EXPERIMENT} share the name cnn but no "
                     "version name (c against fp32): two different experiments? They are shown as one; give one of "
                     "them another `name:` (and results folder) to show them apart."]
    assert merge([first, load_experiment(write_side(tmp_path / "r2", Side(seed=3)) / EXPERIMENT)])[1] == []


def test_a_pipe_among_the_results_files_is_one_paragraph_not_a_hang(tmp_path):
    """A FIFO named like a trial file made `build`, `query`, `compare` and `run` wait for ever (pyarrow and DuckDB
    open it and wait for a writer): every reader names it instead."""
    from support.results import write_results

    from generator.errors import ResultsError
    from generator.results.query import list_store
    from generator.results.store import load_experiment

    experiment = write_results(tmp_path / "results")
    fifo = experiment / "trials" / ("f" * 20 + ".parquet")
    os.mkfifo(fifo)
    for read in (lambda: load_experiment(experiment), lambda: list_store(tmp_path / "results")):
        with pytest.raises(ResultsError) as e:
            read()
        said = " ".join(str(e.value).split())
        assert said.startswith(f"The results file {fifo} is not a regular file (a pipe, a device or a socket)")
        assert "remove this one (it holds nothing measured)" in said


def test_a_relative_store_path_with_a_colon_is_read_as_a_folder(tmp_path, monkeypatch):
    """pyarrow took `col:on/…/trials/K.parquet` for a URI of the scheme `col`: build, compare and diff called good
    trial files unreadable and told the user to delete them (a hostile tour, 2026-12-07)."""
    from support.results import write_results

    from generator.results.store import load_experiment

    monkeypatch.chdir(tmp_path)
    experiment = write_results(Path("col:on"))
    assert not experiment.is_absolute()
    loaded = load_experiment(experiment)
    assert len(loaded.trials) > 0 and len(loaded.latencies) > 0
