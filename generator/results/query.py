"""SQL over a whole results store: one DuckDB view per table, the union of every experiment's Parquet files.

Why DuckDB: it reads the store's Parquet files where they are, with no import step, and answers the questions
perfsite has no page for (medians per commit and machine, across experiments) in SQL that users already know.
Why fsspec: DuckDB's own S3 reader is the httpfs extension, downloaded at run time; a store on S3 (or anywhere
fsspec reaches) is read through the fsspec filesystem registered with DuckDB instead, so nothing is downloaded.
Extensions are neither installed nor loaded, and once the views exist the connection may read the store and
nothing else: a query cannot fetch a file, load an extension or change those settings; and it writes nothing
(its statements are judged by kind before any runs: DuckDB lets it write where it may read).

Which files count is the results contract's: `<experiment>/<table>/*.parquet` under the root (or the root itself
when it is one experiment, as `store.find_experiments` decides), never a dot-prefixed file (a writer's temporary
file), and rows of the per-trial tables only for trials that finished (have a `trials` row, as `load_experiment`
keeps them). Files of a newer schema version are refused, as every reader refuses them.
"""

from __future__ import annotations

import posixpath
import re
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pyarrow as pa
from fsspec.spec import AbstractFileSystem

from generator.errors import ResultsError
from generator.results.location import (
    is_transport_error,
    local_path,
    open_filesystem,
    refuse_special_file,
    remote_failure,
    shown,
)
from generator.results.schema import METADATA_KEY, TABLES
from generator.results.store import TRIAL_TABLES, check_version

HISTORY = "history"
VIEWS = (*TABLES, HISTORY)
# Where a figure was measured, in words that stay the same across runs: the target a `--ray --target` run named
# (trials.target_name), else the CPU model and its logical CPUs. Not env_id (it changes with every onnxruntime or
# numpy upgrade) and not hostname (CI runners get a new one per job); both stay in the history view.
TARGET_SQL = ("coalesce(cpu_model, 'unknown CPU') || ', ' "
              "|| coalesce(CAST(logical_cores AS VARCHAR), '?') || ' CPUs'")
_SQL_TYPES = {pa.string(): "VARCHAR", pa.float64(): "DOUBLE", pa.int64(): "BIGINT", pa.bool_(): "BOOLEAN",
              pa.list_(pa.string()): "VARCHAR[]", pa.list_(pa.float64()): "DOUBLE[]", pa.list_(pa.int64()): "BIGINT[]"}


@dataclass(frozen=True)
class StoreFiles:
    """The Parquet files of a store, by table, as DuckDB names them (local paths, or URLs for fsspec)."""

    name: str  # the store as the user gave it, for messages
    root: str  # the folder DuckDB may read: a local path or a URL
    files: dict[str, tuple[str, ...]]
    filesystem: AbstractFileSystem | None  # registered with DuckDB for a URL; None for a local path


@dataclass(frozen=True)
class QueryResult:
    """A query's answer: column names and rows of Python values (None for SQL NULL)."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def run_query(results: str | Path, sql: str) -> QueryResult:
    """Run one SQL text over the views of the store at `results`: the last statement's rows are returned, and
    only the last statement may return rows (the statements before it prepare it)."""
    con = open_store(results)
    try:
        _check_writes_nothing(con, sql, str(results))
        cursor = _interruptible(con, sql)
        if cursor is None:  # DuckDB's answer to a text with no statement at all (empty, blanks, comments)
            raise ResultsError(f"The query for the store {results} holds no SQL statement. Allowed: SQL over the "
                               f"views {', '.join(VIEWS)} (their columns: docs/query.md), e.g. "
                               "`SELECT version, count(*) FROM trials GROUP BY version`.")
        if cursor.description is None:  # a statement that returns no rows
            return QueryResult((), [])
        return QueryResult(tuple(d[0] for d in cursor.description), cursor.fetchall())
    except duckdb.InterruptException as e:
        raise KeyboardInterrupt from e
    except duckdb.Error as e:
        raise ResultsError(_query_failed(str(results), e)) from e
    finally:
        con.close()


def _interruptible(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyConnection | None:
    """`con.execute(sql)` in a thread of its own, so that a Ctrl-C reaches this (main) thread at once and stops
    DuckDB (`con.interrupt()`). Left to DuckDB, a Ctrl-C that landed as a query started was lost and the query
    ran on (for hours, for a big one); one that it saw came back as a RuntimeError traceback."""
    outcome: dict[str, Any] = {}
    finished = threading.Event()
    # A cursor is a connection of its own to the same database (views, locked settings): DuckDB refuses any call
    # on a connection busy in another thread, but a cursor can be interrupted while it runs.
    cursor = con.cursor()

    def execute() -> None:
        try:
            outcome["cursor"] = cursor.execute(sql)
        except BaseException as e:  # handed to the main thread, which raises it
            outcome["error"] = e
        finally:
            finished.set()

    # Waited for with an Event, not Thread.join: a KeyboardInterrupt inside join() leaves Python 3.11's thread
    # marked stopped while it runs on (the next join returns at once), and the cursor then cannot be closed.
    threading.Thread(target=execute, name="perfsite-query", daemon=True).start()
    try:
        while not finished.wait(0.1):
            pass
    except KeyboardInterrupt:
        cursor.interrupt()
        finished.wait()
        cursor.close()  # the connection refuses to close while its cursor is open on an interrupted query
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["cursor"]


# Statements that change nothing outside the connection's memory. DuckDB's `allowed_directories` can only say
# "the store's folder", for reading and writing alike: `COPY (...) TO 'results/x/trials/K.parquet'` overwrote a
# trial, and through the fsspec filesystem of an s3:// store it would have written into the bucket. So the SQL is
# judged by its statements' kinds first: no COPY, EXPORT, ATTACH, PREPARE/EXECUTE (which could run a COPY), CALL
# (`enable_logging` writes files), PRAGMA (`COPY FROM DATABASE` is one), INSTALL or LOAD; an EXPLAIN by what it
# explains (EXPLAIN ANALYZE runs it). CREATE, INSERT, UPDATE, DELETE, DROP and ALTER touch in-memory tables
# only, ATTACH being refused; SET is DuckDB's to refuse (the settings are locked).
_WRITES_NOTHING = {"SELECT", "CREATE", "CREATE_FUNC", "INSERT", "UPDATE", "DELETE", "DROP", "ALTER", "SET",
                   "VARIABLE_SET", "TRANSACTION", "MULTI"}
_EXPLAIN = re.compile(r"\s*(?:(?:--[^\n]*\n|/\*.*?\*/)\s*)*EXPLAIN\s+(?:\([^)]*\)\s*)?(?:ANALY[SZ]E\s+)?",
                      re.IGNORECASE | re.DOTALL)


def _check_writes_nothing(con: duckdb.DuckDBPyConnection, sql: str, store: str) -> None:
    """Refuse SQL holding a statement that could write a file (see _WRITES_NOTHING), or an answer that would be
    lost (see _check_one_answer), before any of it runs."""
    statements = con.extract_statements(sql)
    for statement in statements:
        kind = _kind(statement)
        inner = _EXPLAIN.match(statement.query) if kind == "EXPLAIN" else None
        if inner is not None and inner.end() < len(statement.query):
            kind = "EXPLAIN" if _explained_writes(con, statement.query[inner.end():]) else "SELECT"
        if kind not in _WRITES_NOTHING:
            text = " ".join(statement.query.split())
            text = text if len(text) <= 80 else text[:77] + "..."
            raise ResultsError(
                f"The query for the store {store} holds a statement perfsite does not run: `{text}` ({kind}). "
                "`perfsite query` reads the store and writes nothing, there or anywhere. Allowed: SELECT (also "
                "WITH, DESCRIBE, SHOW, SUMMARIZE, PIVOT, and EXPLAIN of one), and in-memory CREATE, INSERT, "
                f"UPDATE, DELETE or DROP, over the views {', '.join(VIEWS)} (their columns: docs/query.md), "
                "reading nothing but the store's files; perfsite installs and loads no DuckDB extension.")
    _check_one_answer(statements, store)


# Statements whose rows are their answer (a PIVOT is a MULTI statement: it creates an enum type, then selects).
_ANSWERS = {"SELECT", "EXPLAIN", "MULTI"}


def _check_one_answer(statements: list[Any], store: str) -> None:
    """Refuse a statement that returns rows before the last: one answer is printed, the last statement's, so
    `SELECT count(*) FROM trials; SELECT count(*) FROM processes` printed the second count alone, exit 0, and
    the first was lost without a word. Statements before the last may prepare (CREATE, INSERT, SET …)."""
    lost = [s for s in statements[:-1] if _kind(s) in _ANSWERS]
    if lost:
        text = " ".join(lost[0].query.split())
        text = text if len(text) <= 80 else text[:77] + "..."
        raise ResultsError(
            f"The query for the store {store} holds {len(lost) + 1} statements that return rows, and `perfsite "
            f"query` prints one answer, the last statement's: the rows of `{text}` would be lost. Allowed: one "
            "statement that returns rows, last; the statements before it may prepare it (CREATE TEMP TABLE, "
            "INSERT, SET …), e.g. `CREATE TEMP TABLE t AS SELECT … FROM trials; SELECT … FROM t`. Run the others "
            "as queries of their own, or join their rows with UNION ALL.")


def _explained_writes(con: duckdb.DuckDBPyConnection, sql: str) -> bool:
    return any(_kind(s) not in _WRITES_NOTHING for s in con.extract_statements(sql))


def _kind(statement: Any) -> str:
    try:
        return statement.type.name
    except ValueError:  # a kind this duckdb module has no name for (`UPDATE EXTENSIONS`): not one of ours
        return "UNKNOWN"


def open_store(results: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per table of the store (`VIEWS`), reading only the store."""
    store = list_store(results)
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        con.execute("SET parquet_metadata_cache = true")  # footers are read by the version check, views, query
        if store.filesystem is not None:
            con.register_filesystem(store.filesystem)
        _check_versions(con, store)
        _create_views(con, store)
        _read_only_store(con, store.root)
    except BaseException:
        con.close()
        raise
    return con


def list_store(results: str | Path) -> StoreFiles:
    """Every table's files under `results` (a local folder or an fsspec URL such as s3://bucket/results)."""
    name = str(results)
    fs, root, url = _filesystem(name)
    found = _find(fs, root, name)
    relative = [posixpath.relpath(p, root).split("/") for p in found]
    # The rule of store.find_experiments: the root is one experiment when its trials/ holds trial files.
    depth = 2 if any(_is_table_file(parts, 2) and parts[0] == "trials" for parts in relative) else 3
    files: dict[str, list[str]] = {table: [] for table in TABLES}
    for path, parts in sorted(zip(found, relative, strict=True)):
        if _is_table_file(parts, depth) and parts[-2] in files:
            if not url:
                refuse_special_file(Path(path))
            files[parts[-2]].append(fs.unstrip_protocol(path) if url else path)
    if not files["trials"]:
        raise ResultsError(f"The results store {shown(name)} holds no finished trial (no <experiment>/trials/*.parquet "
                           f"file). {_ALLOWED}")
    return StoreFiles(shown(name), fs.unstrip_protocol(root) if url else root,
                      {t: tuple(f) for t, f in files.items()}, fs if url else None)


_ALLOWED = ("Allowed for --results: a folder that `perfsite run` wrote (results/ holding one folder per "
            "experiment, or one experiment's folder), or an fsspec URL of one, such as s3://bucket/results.")


def _filesystem(name: str) -> tuple[AbstractFileSystem, str, bool]:
    """The fsspec filesystem of a store, its path there, and whether it was given as a URL (read by DuckDB
    through that filesystem; a plain path DuckDB reads itself). The URL is opened as every store is
    (generator.results.location.open_filesystem); `s3://` needs s3fs installed (perfsite[s3])."""
    local = local_path(name)  # refuses `s3:/bucket` (one slash), which is no local folder either
    if local is not None:  # a path, or a file:// URL read as the folder it names (percent-decoded)
        return fsspec.filesystem("file"), local.absolute().as_posix(), False
    fs, root = open_filesystem(name)
    return fs, root, True


def _find(fs: AbstractFileSystem, root: str, name: str) -> list[str]:
    """Every file down to <experiment>/<table>/<file>, the store's deepest level."""
    try:
        if not fs.isdir(root):
            what = "is a file, not a folder" if fs.exists(root) else "does not exist"
            raise ResultsError(f"The results store {shown(name)} {what}. {_ALLOWED}")
        return fs.find(root, maxdepth=3)
    except ResultsError:
        raise
    except Exception as e:  # s3fs: credentials refused, bucket missing, endpoint unreachable
        if not is_transport_error(e):
            raise
        raise remote_failure(name, "list", e) from e


def _is_table_file(parts: list[str], depth: int) -> bool:
    """`<experiment>/<table>/<file>.parquet` (depth 3) or `<table>/<file>.parquet` (2); dot names are a
    writer's temporary files or not perfsite's."""
    return len(parts) == depth and parts[-1].endswith(".parquet") and not any(p.startswith(".") for p in parts)


def _create_views(con: duckdb.DuckDBPyConnection, store: StoreFiles) -> None:
    try:  # a view reads its files' footers when it is created (union_by_name)
        for table, files in store.files.items():
            con.execute(f"CREATE VIEW {table} AS {_table_sql(table, files)}")
    except duckdb.Error as e:
        raise ResultsError(_unreadable(store.name, e)) from e
    con.execute(f"CREATE VIEW {HISTORY} AS {_history_sql()}")


def _table_sql(table: str, files: tuple[str, ...]) -> str:
    """The union of a table's files, with every column of today's schema even when no file has it (a file of
    an older version lacks the columns added since: they read as NULL, "not recorded")."""
    columns = ", ".join(f'CAST(NULL AS {_SQL_TYPES[f.type]}) AS "{f.name}"' for f in _fields(table))
    typed = f"SELECT {columns} WHERE false"
    if not files:
        return typed
    listed = ", ".join(_literal(glob_literal(f)) for f in files)
    union = f"{typed} UNION ALL BY NAME SELECT * FROM read_parquet([{listed}], union_by_name = true)"
    if table not in TRIAL_TABLES:
        return union
    # Rows of a trial whose `trials` row is missing belong to a trial its writer never finished.
    return f"SELECT * FROM ({union}) WHERE trial_key IN (SELECT trial_key FROM trials)"


def _fields(table: str) -> list[pa.Field]:
    return [pa.field(c.name, c.type) for c in TABLES[table]]


def glob_literal(path: str) -> str:
    """A file path as a DuckDB glob that matches that file alone: DuckDB globs every path it reads, so a store
    folder named `results*` also read the files of `results-old` (each glob character in a class of its own)."""
    return _GLOB_CHAR.sub(r"[\1]", path)


_GLOB_CHAR = re.compile(r"([*?\[])")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _history_sql() -> str:
    """Every trial with the run that measured it (commit, start time) and where (target). A trial's `target`
    column (measure.target, the interval it aimed at) is `interval_target` here."""
    return f"""
        WITH run AS (
            SELECT DISTINCT ON (run_id) run_id, started_at, git_commit, git_dirty, perfsite_version, command
            FROM runs ORDER BY run_id, started_at),
        env AS (
            SELECT DISTINCT ON (env_id) env_id, {TARGET_SQL} AS target, hostname, cpu_model, logical_cores,
                   onnxruntime
            FROM environments ORDER BY env_id, captured_at DESC)
        SELECT t.* RENAME (target AS interval_target),
               run.git_commit, run.git_dirty, run.started_at AS run_started_at, run.perfsite_version,
               run.command, coalesce(t.target_name, env.target) AS target, env.hostname, env.cpu_model,
               env.logical_cores, env.onnxruntime
        FROM trials AS t
        LEFT JOIN run ON run.run_id = t.run_id
        LEFT JOIN env ON env.env_id = t.env_id"""


def _read_only_store(con: duckdb.DuckDBPyConnection, root: str) -> None:
    """From here on the connection reads the store's folder and nothing else, and keeps these settings: no
    other file or URL, no INSTALL or LOAD of an extension (a download), whatever SQL the user writes.

    DuckDB also lets a query read its temp_directory, `.tmp` of the current folder by default: a query from a
    project folder read files there (`read_text('.tmp/secret.txt')`). Its spills go to an empty folder of
    this connection's own instead, removed with it."""
    spill = tempfile.mkdtemp(prefix="perfsite-query-")
    weakref.finalize(con, shutil.rmtree, spill, ignore_errors=True)
    con.execute("SET temp_directory = $dir", {"dir": spill})
    # The views name their files as globs that match them alone (glob_literal), which DuckDB checks as written.
    folders = {root.rstrip("/") + "/", glob_literal(root.rstrip("/")) + "/"}
    con.execute("SET allowed_directories = $dirs", {"dirs": sorted(folders)})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _check_versions(con: duckdb.DuckDBPyConnection, store: StoreFiles) -> None:
    """Refuse the store when a file is of a newer schema version or not perfsite's (store.check_version)."""
    files = [f for table_files in store.files.values() for f in table_files]
    try:
        rows = con.execute("SELECT file_name, value FROM parquet_kv_metadata($files) WHERE key = $key",
                           {"files": [glob_literal(f) for f in files], "key": METADATA_KEY}).fetchall()
    except duckdb.Error as e:
        raise ResultsError(_unreadable(store.name, e)) from e
    versions = {name: value for name, value in rows}
    for name in files:
        check_version(name, {METADATA_KEY: versions[name]} if name in versions else {})


def _reason(error: duckdb.Error) -> str:
    """DuckDB's first paragraph, which says what is wrong ("Did you mean ..." included); the rest is a caret
    under the SQL, which a reflowed paragraph garbles, or advice to install an extension, which perfsite never
    does."""
    reason = " ".join(str(error).split("\n\n")[0].split()).rstrip(".")
    return reason if reason.endswith(("!", "?")) else reason + "."


def _unreadable(store: str, error: duckdb.Error) -> str:
    return (f"A file of the results store {store} is not readable Parquet: {_reason(error)} Allowed in a store: "
            "Parquet files written by perfsite; it was probably damaged outside perfsite. Delete it (for a "
            "trial's file, all of that trial's files: the next `perfsite run` measures it again).")


def _query_failed(store: str, error: duckdb.Error) -> str:
    return (f"The query failed on the results store {store}: {_reason(error)} Allowed: SQL over the views "
            f"{', '.join(VIEWS)} (their columns: docs/query.md), reading nothing but the store's files; "
            "perfsite installs and loads no DuckDB extension.")
