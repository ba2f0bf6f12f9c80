"""`perfsite query`: SQL over every experiment, commit and machine of a store, checked against pandas.

The store is written through the real results store (ResultsDir) with no measuring: 12 commits, each measured on
three targets (one of them two CI runners with the same CPU), two experiments (the second measured at every third
commit), three versions, a run outside git and a failed trial. The SQL of the headline question is read from
docs/query.md, so the documented query is the tested one.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli import ROOT, perfsite
from support.results import ENV, write_results

from generator.cli import main
from generator.results.store import ResultsDir, find_experiments

COMMITS = [f"{n:02d}{'c0ffee' * 6}"[:40] for n in range(12)]
# (env_id, hostname, cpu_model, logical CPUs, onnxruntime): e-ci-a and e-ci-b are one target, two runners.
MACHINES = [
    ("e-ci-a", "runner-7f3a", "AMD EPYC 7B13", 2, "1.31.1"),
    ("e-ci-b", "runner-19c2", "AMD EPYC 7B13", 2, "1.32.0"),
    ("e-laptop", "anna-mbp", "Apple M2", 8, "1.32.0"),
    ("e-xeon", "lab-3", "Intel(R) Xeon(R) Gold 6338", 16, "1.32.0"),
]
EXPERIMENTS = {"cnn": ("fp32", "int8"), "encoder": ("enc-int8",)}
DOC_QUESTION = "Median latency per version and target over the last 10 commits"


def _environment(env_id: str, hostname: str, cpu: str, cpus: int, ort: str) -> dict:
    return {**ENV, "env_id": env_id, "fingerprint": env_id.ljust(64, "0"), "hostname": hostname,
            "cpu_model": cpu, "logical_cores": cpus, "onnxruntime": ort}


def _trial(experiment: str, run_id: str, env_id: str, version: str, n: int, rng: np.random.Generator) -> dict:
    latency = {"fp32": 4.0, "int8": 2.2, "enc-int8": 5.5}.get(version, 3.0)
    latency *= {"e-laptop": 0.7, "e-xeon": 0.5}.get(env_id, 1.0) * rng.lognormal(0.0, 0.08)
    key = f"{experiment}-{run_id}-{version}"[-40:]
    return {"experiment": experiment, "trial_key": key, "run_id": run_id, "env_id": env_id, "spec_sha256": "s",
            "version": version, "model_sha256": version, "batch": 1, "threads": 1, "concurrency": 1,
            "optimization_level": "all", "provider": "cpu", "spinning": True, "inter_op_threads": 1, "dims": "{}",
            "config_label": "b1 t1 c1", "status": "ok", "quick": False, "latency_p50_ms": latency,
            "latency_mean_ms": latency * 1.02, "started_at": f"2026-03-{n:02d}T00:00:00Z",
            # the Xeon measured as a Ray node of target x86-server (perfsite run --ray --target x86-server)
            "target_name": "x86-server" if env_id == "e-xeon" else None}


def _runs(commit_index: int) -> list[tuple[str, str | None, str]]:
    """(env_id, commit, started_at) of one commit's runs: every target, the AMD one on alternating runners."""
    day = commit_index + 1
    amd = "e-ci-a" if commit_index % 2 else "e-ci-b"
    return [(env, COMMITS[commit_index], f"2026-03-{day:02d}T{hour:02d}:00:00Z")
            for env, hour in ((amd, 9), ("e-laptop", 12), ("e-xeon", 15))]


def write_store(root: Path) -> Path:
    rng = np.random.default_rng(15)
    for experiment, versions in EXPERIMENTS.items():
        rd = ResultsDir(root / experiment)
        for machine in MACHINES:
            rd.write_row("environments", machine[0], _environment(*machine))
        runs = [r for i in range(len(COMMITS)) if experiment == "cnn" or i % 3 == 0 for r in _runs(i)]
        runs.append(("e-laptop", None, "2026-03-28T10:00:00Z"))  # outside git: newest, yet no commit
        for n, (env_id, commit, started_at) in enumerate(runs):
            run_id = f"{experiment}-{n:03d}"
            rd.write_row("runs", run_id, {"run_id": run_id, "experiment": experiment, "spec_sha256": "s",
                                          "env_id": env_id, "started_at": started_at, "git_commit": commit})
            for version in versions:
                row = _trial(experiment, run_id, env_id, version, n % 28 + 1, rng)
                if (experiment, n, version) == ("cnn", len(runs) - 2, "int8"):
                    row = {**row, "status": "failed", "latency_p50_ms": None, "error": "worker crashed"}
                rd.write_row("trials", row["trial_key"], row)
    return root


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return write_store(tmp_path_factory.mktemp("store") / "results")


@pytest.fixture(scope="module")
def expected(store) -> pd.Series:
    return pandas_figure(store).sort_index()


def documented_sql(title: str) -> str:
    """The first ```sql block after the heading `title` in docs/query.md."""
    text = (ROOT / "docs" / "query.md").read_text(encoding="utf-8")
    match = re.search(rf"^#+ {re.escape(title)}\n.*?```sql\n(.*?)```", text, re.M | re.S)
    assert match, f"docs/query.md has no SQL under the heading {title!r}"
    return match.group(1)


def _table(store: Path, table: str) -> pd.DataFrame:
    return pd.concat([ResultsDir(e).read_table(table) for e in find_experiments(store)], ignore_index=True)


def recent_commits(store: Path, n: int = 10) -> list[str]:
    """The n commits whose latest run started last (pandas)."""
    runs = _table(store, "runs").dropna(subset=["git_commit"])
    return list(runs.groupby("git_commit")["started_at"].max().sort_values(ascending=False).index[:n])


def pandas_figure(store: Path) -> pd.Series:
    """The same figure without DuckDB: tables read by the results store, joined and grouped in pandas."""
    runs = _table(store, "runs").drop_duplicates("run_id")[["run_id", "git_commit"]]
    envs = _table(store, "environments").drop_duplicates("env_id")
    envs = envs.assign(target=envs["cpu_model"] + ", " + envs["logical_cores"].astype(str) + " CPUs")
    # trials.target is measure.target (history calls it interval_target), not the machine.
    df = _table(store, "trials").drop(columns="target").merge(runs, on="run_id")
    df = df.merge(envs[["env_id", "target"]], on="env_id")
    df["target"] = df["target_name"].fillna(df["target"])  # a Ray run's target names the machine
    ok = df[(df["status"] == "ok") & df["git_commit"].isin(recent_commits(store))]
    return ok.groupby(["version", "target"])["latency_p50_ms"].median()


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """`perfsite ARGS` in-process: exit status, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["perfsite", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def _as_series(records: list[dict]) -> pd.Series:
    index = pd.MultiIndex.from_tuples([(r["version"], r["target"]) for r in records], names=["version", "target"])
    return pd.Series([r["median_latency_ms"] for r in records], index=index).sort_index()


def test_median_latency_per_version_and_target_over_the_last_10_commits(store, expected, monkeypatch, capsys):
    sql = documented_sql(DOC_QUESTION)
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "json")
    assert code == 0, err
    answer = _as_series(json.loads(out))
    assert len(expected.index.get_level_values("target").unique()) == 3
    assert "x86-server" in expected.index.get_level_values("target")
    assert set(expected.index.get_level_values("version")) == {v for vs in EXPERIMENTS.values() for v in vs}
    assert list(answer.index) == list(expected.index)
    assert answer.to_numpy() == pytest.approx(expected.to_numpy(), rel=1e-12)
    # Not a trivial question on this store: the two oldest commits, and the newest run (outside git), are left out.
    assert set(recent_commits(store)) == set(COMMITS[2:])


def test_the_documented_query_in_a_child_process(store, expected):
    """One run of the real command line: the default table form, one row per version and target."""
    out = perfsite("query", documented_sql(DOC_QUESTION), "--results", str(store))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:2] == ["version", "target"] and set(lines[1]) == {"-", " "}
    assert lines[-1] == f"({len(expected)} rows)"
    fp32_laptop = next(line for line in lines if line.startswith("fp32 ") and "Apple M2, 8 CPUs" in line)
    assert f"{expected[('fp32', 'Apple M2, 8 CPUs')]:.6g}" in fp32_laptop


def _json_answer(monkeypatch, capsys, results: str) -> pd.Series:
    code, out, err = run_main(monkeypatch, capsys, "query", documented_sql(DOC_QUESTION), "--results", results,
                              "--format", "json")
    assert code == 0, err
    return _as_series(json.loads(out))


def test_a_file_url_store_is_read_through_fsspec(store, monkeypatch, capsys):
    local = _json_answer(monkeypatch, capsys, str(store))
    url = _json_answer(monkeypatch, capsys, store.as_uri())
    assert store.as_uri().startswith("file:///")
    pd.testing.assert_series_equal(url, local)


def test_a_store_on_another_filesystem_is_read_through_fsspec(store, monkeypatch, capsys):
    """fsspec's in-memory filesystem stands in for S3: DuckDB cannot read it itself, only through fsspec. Under a
    protocol name of its own: `memory://` itself is refused (a store that cannot outlive the command)."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    class StandIn(MemoryFileSystem):
        protocol = ("standin",)

        @classmethod
        def _strip_protocol(cls, path):
            return super()._strip_protocol(path.replace("standin://", "memory://", 1))

    fsspec.register_implementation("standin", StandIn, clobber=True)
    memory = StandIn()
    memory.put(str(store), "/perf-bucket/results", recursive=True)
    try:
        answer = _json_answer(monkeypatch, capsys, "standin://perf-bucket/results")
    finally:
        memory.rm("/perf-bucket", recursive=True)
    pd.testing.assert_series_equal(answer, _json_answer(monkeypatch, capsys, str(store)))


@pytest.mark.parametrize(("sql", "results", "first_words"), [
    ("SELEC version FROM trials", None, 'The query failed on the results store {store}: Parser Error: syntax error'),
    ("SELECT * FROM trails", None, "The query failed on the results store {store}: Catalog Error: Table with name "
                                   'trails does not exist! Did you mean "trials"?'),
    ("SELECT nosuch FROM history", None, "The query failed on the results store {store}: Binder Error:"),
    ("SELECT 1", "missing", "The results store {store} does not exist."),
    ("  -- nothing but a comment", None, "The query for the store {store} holds no SQL statement."),
])
def test_a_bad_query_or_store_is_one_paragraph(store, monkeypatch, capsys, sql, results, first_words):
    where = str(store if results is None else store.parent / results)
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", where)
    flat = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err and "\n\n" not in err.strip()
    assert flat.startswith("error: " + first_words.format(store=where)), flat
    assert ("Allowed: SQL over the views trials, processes, latencies, nodes, layers, agreement, timeline, "
            "decode_steps, phase_ops, phase_nodes, environments, runs, history" in flat
            or "Allowed for --results: a folder" in flat)


@pytest.mark.parametrize("sql", [
    "INSTALL httpfs", "LOAD httpfs", "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('https://example.com/results.parquet')",
    "SET enable_external_access = true", "SET autoinstall_known_extensions = true",
])
def test_the_query_reads_the_store_and_nothing_else(store, monkeypatch, capsys, sql):
    """No download, no other file, no way to change that from the SQL."""
    code, _, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store))
    assert code == 1 and "Traceback" not in err
    assert "perfsite installs and loads no DuckDB extension" in " ".join(err.split())
    assert "INSTALL httpfs;" not in err  # DuckDB's advice to install one is not passed on


def test_a_query_from_a_project_folder_reads_nothing_of_its_tmp(store, monkeypatch, capsys, tmp_path):
    """DuckDB lets a query read its temp_directory, `.tmp` of the current folder by default."""
    project = tmp_path / "project"
    (project / ".tmp").mkdir(parents=True)
    (project / ".tmp" / "secret.txt").write_text("the deploy key")
    monkeypatch.chdir(project)
    code, out, err = run_main(monkeypatch, capsys, "query", "SELECT content FROM read_text('.tmp/secret.txt')",
                              "--results", str(store))
    flat = " ".join(err.split())
    assert code == 1 and "deploy key" not in out + err and "Traceback" not in err
    assert flat.startswith(f"error: The query failed on the results store {store}:"), flat
    assert "reading nothing but the store's files" in flat
    assert list((project / ".tmp").iterdir()) == [project / ".tmp" / "secret.txt"]


@pytest.mark.parametrize("sql", [
    "COPY (SELECT 1 AS a) TO '{trial}' (FORMAT parquet)",
    "SELECT 1; COPY (SELECT 1 AS a) TO '{store}/new.csv'",
    "/* why not */ EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{trial}' (FORMAT parquet)",
    "EXPORT DATABASE '{store}/exported'",
    "ATTACH '{store}/new.db' AS db",
    "PREPARE p AS SELECT 1",
    "CALL enable_logging()",
    "COPY FROM DATABASE memory TO memory",
    "UPDATE EXTENSIONS",
])
def test_a_query_that_would_write_is_refused_and_the_store_is_unchanged(store, monkeypatch, capsys, sql):
    """`allowed_directories` lets DuckDB write where it may read: `COPY ... TO` a trial file of the store
    overwrote it (exit 0), and the next build refused the store. Any statement that could write is refused
    before any statement of the text runs."""
    trial = sorted((store / "cnn" / "trials").glob("*.parquet"))[0]
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    code, out, err = run_main(monkeypatch, capsys, "query", sql.format(trial=trial, store=store),
                              "--results", str(store))
    flat = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err
    assert flat.startswith(f"error: The query for the store {store} holds a statement perfsite does not run: `"), flat
    assert "`perfsite query` reads the store and writes nothing, there or anywhere. Allowed: SELECT" in flat
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("sql", [
    "CREATE TEMP TABLE t AS SELECT * FROM trials; SELECT count(*) AS n FROM t",
    "EXPLAIN ANALYZE SELECT count(*) AS n FROM trials",
    "PIVOT trials ON status USING count(*) GROUP BY experiment",
    "DESCRIBE trials",
])
def test_reading_statements_still_run(store, monkeypatch, capsys, sql):
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "json")
    assert code == 0 and json.loads(out), err


@pytest.mark.parametrize("sql", [
    "SELECT count(*) AS trials FROM trials; SELECT count(*) AS processes FROM processes",
    "SELECT version FROM trials; CREATE TEMP TABLE t AS SELECT 1 AS a",
    "PIVOT trials ON status USING count(*); SELECT 1",
])
def test_a_statement_whose_rows_would_be_lost_is_refused(store, monkeypatch, capsys, sql):
    """One answer is printed, the last statement's: `SELECT …; SELECT …` printed the second alone, exit 0, and
    the first answer was lost without a word. A statement that returns rows may only come last."""
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store))
    flat = " ".join(err.split())
    first = sql.split(";")[0]
    assert code == 1 and out == "" and "Traceback" not in err and "\n\n" not in err.strip()
    assert flat.startswith(f"error: The query for the store {store} holds 2 statements that return rows, and "
                           f"`perfsite query` prints one answer, the last statement's: the rows of `{first};` "
                           "would be lost. Allowed: one statement that returns rows, last;"), flat


def _until_it_stops_reading(pid: int, still_s: float = 1.0, most_s: float = 15.0) -> None:
    """Wait until the process has made no read call for `still_s`: its imports (about 1 s alone, 2 s beside a
    neighbour) and the store's views read thousands of files; the query counts in memory. A fixed 8 s sleep
    stood here before."""
    def reads() -> str:
        return Path(f"/proc/{pid}/io").read_text().split("syscr: ", 1)[1].split("\n", 1)[0]

    started = time.monotonic()
    last, since = reads(), time.monotonic()
    while time.monotonic() - since < still_s and time.monotonic() - started < most_s:
        time.sleep(0.05)
        now = reads()
        if now != last:
            last, since = now, time.monotonic()


def test_ctrl_c_during_a_query_is_interrupted_not_a_traceback(store):
    """DuckDB turned a Ctrl-C during a query into RuntimeError("Query interrupted"), a traceback and exit 1, or,
    when it landed as the query started, lost it: the query ran on (for hours here). It is an interruption like
    any other, whenever it comes: `Interrupted.`, exit 130."""
    command = [sys.executable, "-m", "generator.cli", "query", "SELECT count(*) FROM range(10000000000000)",
               "--results", str(store)]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _until_it_stops_reading(child.pid)  # past the imports and the views: the query runs; it would for hours
    child.send_signal(signal.SIGINT)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{child.pid}/status").read_text()
        child.kill()
        raise AssertionError(status) from None
    assert child.returncode == 130 and "Traceback" not in err and err.strip() == "Interrupted.", err


def test_a_reader_that_stops_midway_ends_the_query_with_141(store):
    """`perfsite query … | head -1` exited 0: the answer went out in one write, the pipe took 64 KB of it before
    the reader left, and CPython's buffered stdout dropped the rest of a short write without an error. A real
    pipe whose reader takes one line and goes, as `head -1` does: 141, as README and docs/cli.md promise (every
    --format is written by the same call)."""
    command = [sys.executable, "-m", "generator.cli", "query", "SELECT * FROM range(30000)", "--results",
               str(store)]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout.readline()  # the answer has started: the reader leaves in the middle of it
    child.stdout.close()
    err = child.stderr.read().decode(errors="backslashreplace")
    assert child.wait(timeout=60) == 141 and err == "", (child.returncode, err)


def test_extension_settings_are_off(store, monkeypatch, capsys):
    sql = ("SELECT current_setting('autoinstall_known_extensions') AS install, "
           "current_setting('autoload_known_extensions') AS load, current_setting('lock_configuration') AS locked")
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"install": False, "load": False, "locked": True}]


def test_views_follow_the_store_rules(tmp_path, monkeypatch, capsys):
    """Every experiment folder, never a dot file (a writer's temporary file), only finished trials' rows."""
    first = write_results(tmp_path / "results")
    shutil.copytree(first, tmp_path / "results" / "copy")
    (first / "latencies" / ".abc.parquet.x1.tmp").write_bytes(b"half a file")
    (first / "latencies" / ".half.parquet").write_bytes(b"half a file")
    # A trial whose writer stopped after a side table, before its `trials` row (the commit point).
    stray = pa.table({"trial_key": ["unfinished"], "process": [0], "stream": [0], "iteration": [0],
                      "latency_ms": [1.0], "run_delay_ms": pa.array([None], pa.float64())})
    pq.write_table(stray.replace_schema_metadata({"perfsite.schema_version": "3"}),
                   first / "latencies" / "unfinished.parquet")
    sql = ("SELECT (SELECT count(*) FROM trials) AS trials, (SELECT count(*) FROM history) AS history, "
           "(SELECT count(*) FROM latencies) AS requests, (SELECT count(DISTINCT env_id) FROM environments) AS envs")
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(tmp_path / "results"),
                              "--format", "json")
    assert code == 0, err
    requests = len(ResultsDir(first).read_table("latencies")) - 1  # the stray trial's request is not counted
    assert json.loads(out) == [{"trials": 16, "history": 16, "requests": 2 * requests, "envs": 1}]
    # One experiment's folder is a store too (the rule of find_experiments).
    code, out, err = run_main(monkeypatch, capsys, "query", "SELECT count(*) AS n FROM trials", "--results",
                              str(first), "--format", "csv")
    assert code == 0 and out == "n\n8\n", err


def test_an_older_store_reads_with_the_columns_added_since_null(monkeypatch, capsys):
    v1 = ROOT / "tests" / "data" / "v1" / "v1-sample"
    sql = ("SELECT count(*) AS requests, count(run_delay_ms) AS delays, "
           "(SELECT count(spec_path) FROM runs) AS spec_paths FROM latencies")
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(v1), "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"requests": len(ResultsDir(v1).read_table("latencies")), "delays": 0,
                                "spec_paths": 0}]


def test_a_newer_schema_version_is_refused(tmp_path, monkeypatch, capsys):
    folder = write_results(tmp_path / "results")
    newest = sorted((folder / "trials").glob("*.parquet"))[0]
    table = pq.read_table(newest)
    pq.write_table(table.replace_schema_metadata({b"perfsite.schema_version": b"99"}), newest)
    code, _, err = run_main(monkeypatch, capsys, "query", "SELECT 1", "--results", str(tmp_path / "results"))
    assert code == 1 and "Traceback" not in err
    assert f"{newest} was written by a newer perfsite (results schema version 99)" in " ".join(err.split())


def test_a_damaged_file_is_one_paragraph(tmp_path, monkeypatch, capsys):
    folder = write_results(tmp_path / "results")
    damaged = sorted((folder / "nodes").glob("*.parquet"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])  # cut short, as by a copy that failed
    code, _, err = run_main(monkeypatch, capsys, "query", "SELECT 1", "--results", str(tmp_path / "results"))
    flat = " ".join(err.split())
    assert code == 1 and "Traceback" not in err and "\n\n" not in err.strip()
    assert flat.startswith(f"error: A file of the results store {tmp_path / 'results'} is not readable Parquet")
    assert str(damaged) in flat and "Delete it" in flat


HOSTILE = "evil\x1b[2J\u202eyb\nsecond line"


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_untrusted_values_are_shown_escaped_in_every_form(tmp_path, monkeypatch, capsys, fmt):
    rd = ResultsDir(tmp_path / "results" / "x")
    rd.write_row("trials", "k1", _trial("x", "r1", "e1", HOSTILE, 1, np.random.default_rng(0)))
    code, out, err = run_main(monkeypatch, capsys, "query", "SELECT version, latency_p50_ms FROM trials",
                              "--results", str(tmp_path / "results"), "--format", fmt)
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out and "second line" in out
    if fmt == "json":
        assert json.loads(out)[0]["version"] == HOSTILE  # escaped by JSON itself: nothing lost
    else:
        assert "evil\\x1b[2J\\u202eyb second line" in out  # one line per row


def test_csv_and_markdown_forms(store, monkeypatch, capsys):
    sql = ("SELECT version, count(*) AS trials, max(latency_p50_ms) AS slowest, list(DISTINCT git_commit "
           "ORDER BY git_commit)[1] AS first_commit FROM history GROUP BY version ORDER BY version")
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    trials = _table(store, "trials")
    assert [r["version"] for r in rows] == ["enc-int8", "fp32", "int8"]
    fp32 = trials[trials["version"] == "fp32"]
    assert int(rows[1]["trials"]) == len(fp32)
    assert float(rows[1]["slowest"]) == fp32["latency_p50_ms"].max()  # every digit kept
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "markdown")
    assert out.splitlines()[:2] == ["| version | trials | slowest | first_commit |", "|---|--:|--:|---|"]
    assert out.splitlines()[3].startswith(f"| `fp32` | {len(fp32)} | {fp32['latency_p50_ms'].max():.6g} | `")


def test_a_csv_file_keeps_values_exact_while_the_terminal_shows_them_safe(store, tmp_path, monkeypatch, capsys):
    """`--format csv --output FILE` wrote a newline as a space and ESC as the text `\\x1b`: a node name did not
    round-trip, though nothing reaches a terminal from a file."""
    sql = "SELECT 'l1' || chr(10) || 'l2' AS z, chr(27) || 'x' AS w"
    code, _, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "csv",
                            "--output", str(tmp_path / "z.csv"))
    assert code == 0, err
    with open(tmp_path / "z.csv", newline="", encoding="utf-8") as f:
        assert list(csv.reader(f)) == [["z", "w"], ["l1\nl2", "\x1bx"]]
    code, out, _ = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "csv")
    assert out == "z,w\nl1 l2,\\x1bx\n"  # the terminal: one line a row, control characters escaped


def test_json_refuses_two_columns_of_one_name_rather_than_drop_one(store, tmp_path, monkeypatch, capsys):
    """`SELECT * FROM trials JOIN processes …` has two `throughput_ips` (and `trial_key`) columns: the JSON form
    kept the processes' values under the name and dropped the trials' without a word (exit 0). It is refused,
    naming the columns, and no --output file is written; the other forms keep both columns."""
    sql = ("SELECT * FROM trials t JOIN processes p ON t.trial_key = p.trial_key "
           "WHERE t.trial_key = (SELECT min(trial_key) FROM processes)")
    target = tmp_path / "joined.json"
    code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(store), "--format", "json",
                              "--output", str(target))
    assert code == 1 and out == ""
    assert err.startswith("error: The answer has more than one column named ")
    assert "`throughput_ips`" in err and "`trial_key`" in err and "--format json" in err
    assert "Traceback" not in err and not target.exists()
    code, out, err = run_main(monkeypatch, capsys, "query", "SELECT 1 AS a, 2 AS a", "--results", str(store),
                              "--format", "csv")
    assert (code, out) == (0, "a,a\n1,2\n"), err


def test_output_file(store, tmp_path, monkeypatch, capsys):
    target = tmp_path / "answers" / "versions.json"
    code, out, err = run_main(monkeypatch, capsys, "query", "SELECT DISTINCT version FROM trials ORDER BY 1",
                              "--results", str(store), "--format", "json", "--output", str(target))
    assert code == 0, err
    assert out == f"wrote {target} (3 rows)\n"
    assert json.loads(target.read_text()) == [{"version": v} for v in ("enc-int8", "fp32", "int8")]


def test_an_output_file_inside_the_store_is_refused_and_the_store_is_unchanged(store, monkeypatch, capsys):
    """`perfsite query SQL --output results/x/trials/K.parquet` wrote the answer over a trial (exit 0), and every
    later command refused the store as damaged. An --output inside the store the query reads is refused before
    the query runs, however it is written (relative to another folder, or the store given as a file:// URL)."""
    trial = sorted((store / "cnn" / "trials").glob("*.parquet"))[0]
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    monkeypatch.chdir(store / "cnn")
    for output, results in (("trials/" + trial.name, str(store)), ("../answer.csv", store.as_uri())):
        code, out, err = run_main(monkeypatch, capsys, "query", "SELECT 1 AS a", "--results", results,
                                  "--output", output)
        flat = " ".join(err.split())
        assert code == 1 and out == "" and "Traceback" not in err, err
        assert flat == (f"error: --output {output} is inside the results store {store}, which this command reads: a "
                        "file written there would replace or sit among the results perfsite stores. Nothing was "
                        "measured or written. Allowed: a file outside every results store for --output."), flat
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_every_documented_query_runs(tmp_path, monkeypatch, capsys):
    """The examples of docs/query.md on a store with every table (the site fixture's)."""
    write_results(tmp_path / "results")
    text = (ROOT / "docs" / "query.md").read_text(encoding="utf-8")
    queries = re.findall(r"```sql\n(.*?)```", text, re.S)
    assert len(queries) >= 4
    for sql in queries:
        code, out, err = run_main(monkeypatch, capsys, "query", sql, "--results", str(tmp_path / "results"))
        assert code == 0 and re.search(r"\(\d+ rows?\)$", out.strip()), (sql, err)


def test_without_duckdb_the_error_names_the_extra(store, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb now raises ModuleNotFoundError
    for module in ("generator.results.query", "generator.cli.query"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    code, _, err = run_main(monkeypatch, capsys, "query", "SELECT 1", "--results", str(store))
    flat = " ".join(err.split())
    assert code == 1 and "Traceback" not in err
    assert flat.startswith("error: duckdb is not installed, and `perfsite query` needs it")
    assert "pip install 'perfsite[query]'" in flat


def test_a_store_whose_name_is_a_glob_reads_only_its_own_files(tmp_path):
    """Issue 35, the library-special-characters class: DuckDB globs every path it reads, so the store
    `results*` also read the files of `results-old` beside it (twice the trials, and their figures)."""
    from generator.cli.query import query_command

    write_results(tmp_path / "results*")
    write_results(tmp_path / "results-old")
    alone = query_command("select count(*) as n from trials", str(tmp_path / "results*"), "csv", None)
    for name in ("results[1]", "results?"):
        shutil.copytree(tmp_path / "results*", tmp_path / name)
        assert query_command("select count(*) as n from trials", str(tmp_path / name), "csv", None) == alone
    trials = len(list((tmp_path / "results*" / "cnn-int8" / "trials").glob("*.parquet")))
    assert alone.splitlines() == ["n", str(trials)]
