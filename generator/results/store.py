"""The results directory: atomic per-trial files in, whole tables out.

Layout (see docs/architecture.md)::

    results/<experiment>/trials/<trial_key>.parquet      written last: its presence means "finished"
    results/<experiment>/{processes,latencies,nodes,layers,agreement,timeline}/<trial_key>.parquet
    results/<experiment>/{decode_steps,phase_*}/<trial_key>.parquet      a generative trial's only
    results/<experiment>/environments/<env_id>.parquet
    results/<experiment>/runs/<run_id>.parquet
    results/<experiment>/specs/<spec_sha256>.json

Every file is first written under a dot-prefixed temporary name in its final folder and then renamed, which is
atomic on POSIX: a reader (pyarrow datasets skip dot files) never sees a half-written file, whatever moment the
writer dies at. A trial's side tables are renamed into place before its `trials` row, so a trial either has all
its files or is not in `trials` at all; rows of other tables whose trial is not in `trials` are dropped on read.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from generator.errors import ResultsError
from generator.paths import atomic_write_bytes, replaced_by_builds
from generator.results import migrate
from generator.results.cells import decoded
from generator.results.location import (
    ALLOWED,
    LocalFolder,
    StoreRoot,
    join,
    open_location,
    shown,
)
from generator.results.migrate import SpecLookup
from generator.results.profiled import with_profiled_times
from generator.results.schema import METADATA_KEY, SCHEMA_VERSION, TABLES, arrow_schema
from generator.spec import Spec, spec_from_json

TRIAL_TABLES = ("processes", "latencies", "nodes", "layers", "agreement", "timeline", "decode_steps",
                "phase_ops", "phase_nodes")
# Written only by the trials that have rows for them (a generative trial's steps): an empty file per other trial
# would be one more write and read a trial for nothing.
WHEN_FILLED = ("decode_steps", "phase_ops", "phase_nodes")


@contextlib.contextmanager
def _writing(path: str) -> Iterator[None]:
    """A failed write to the results (disk full, quota, permissions changed mid-run) as a ResultsError naming
    the file: the trials stored before it stay whole, since each is committed by its own rename."""
    try:
        yield
    except OSError as e:
        raise ResultsError(
            f"Cannot write {path}: {e.strerror or e}. Every trial stored before it is kept and whole; free space "
            "(or fix the folder's permissions) and run the same command again to measure the rest."
        ) from e


# Tables whose files hold one row or a few (a trial's row, its processes, its output agreement, a machine, a
# run): compressing them saves nothing (their size is the footer: the schema and statistics of every column)
# and costs each read a decompression set-up per column (a trials file has 66 columns): uncompressed they are
# the same size and a whole experiment reads 8 % sooner. Tables of many rows (requests, nodes, layers,
# timeline) stay zstd, a third to a seventh of their raw size.
UNCOMPRESSED = frozenset({"trials", "processes", "agreement", "environments", "runs"})


def compression(table: str) -> str:
    return "none" if table in UNCOMPRESSED else "zstd"


def table_to_parquet_bytes(table: str, rows: Iterable[Mapping[str, Any]]) -> bytes:
    """Rows (dicts keyed by column name; missing keys are null) -> Parquet bytes with the table's schema."""
    schema = arrow_schema(table)
    names = schema.names
    rows = list(rows)
    unknown = {k for r in rows for k in r} - set(names)
    if unknown:
        # A column not in the schema is a bug in perfsite, not a user error.
        raise ValueError(f"columns not in the {table} schema: {sorted(unknown)}")
    columns = {n: [r.get(n) for r in rows] for n in names}
    arrow = pa.Table.from_pydict(columns, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(arrow, sink, compression=compression(table))
    return sink.getvalue().to_pybytes()


@dataclass(frozen=True)
class TrialFiles:
    """Everything one finished trial writes: its row and the rows of its side tables."""

    trial: Mapping[str, Any]
    processes: list[Mapping[str, Any]]
    latencies: list[Mapping[str, Any]] | pa.Table
    nodes: list[Mapping[str, Any]]
    layers: list[Mapping[str, Any]] = field(default_factory=list)
    agreement: list[Mapping[str, Any]] = field(default_factory=list)
    timeline: list[Mapping[str, Any]] = field(default_factory=list)
    decode_steps: list[Mapping[str, Any]] = field(default_factory=list)
    phase_ops: list[Mapping[str, Any]] = field(default_factory=list)
    phase_nodes: list[Mapping[str, Any]] = field(default_factory=list)


class ResultsDir:
    """One experiment's results folder: a local folder or a prefix of an object store (generator.results.location)."""

    def __init__(self, path: StoreRoot):
        self.where = open_location(path)
        # Messages and summaries name it: the Path of a local folder, the URL of an object store (without any
        # credentials written into it).
        self.path: Path | str = self.where.path if isinstance(self.where, LocalFolder) else shown(path)

    @property
    def name(self) -> str:
        return self.path.name if isinstance(self.path, Path) else posixpath.basename(str(self.path).rstrip("/"))

    @property
    def lock_folder(self) -> Path:
        return self.where.lock_folder

    def _rel(self, table: str, key: str) -> str:
        return f"{table}/{key}.parquet"

    def ensure_writable(self) -> None:
        if not isinstance(self.where, LocalFolder):
            self.where.ensure_writable()
            return
        replaced = replaced_by_builds(self.path)
        if replaced is not None:
            raise ResultsError(
                f"Cannot write results to {self.path}: it is {replaced}. Allowed: a results folder outside every "
                "site folder and outside .perfsite/build and .perfsite/cache; choose one with --results DIR (the "
                "default is <project>/results).")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / f".write-probe-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            # Name the path that is in the way: with --results pointing at a file, mkdir says "Not a directory".
            blocker = next((p for p in (self.path, *self.path.parents) if p.exists()), self.path)
            reason = f"{blocker} is a file, not a folder" if blocker.is_file() else e.strerror or str(e)
            raise ResultsError(
                f"Cannot write results to {self.path}: {reason}. Allowed: a folder perfsite can create and write "
                "(not a file, not read-only); choose one with --results DIR, or fix the folder's permissions."
            ) from e

    def write_trial(self, files: TrialFiles) -> None:
        """Write a trial's side tables, then its `trials` row: the commit marker, written last, in a folder or
        an object store alike (readers ignore side tables without it). A trial measured again (--force) loses
        its old marker first, so that no reader, and no writer killed half-way, pairs the old row with new data."""
        key = files.trial["trial_key"]
        with _writing(self.where.shown(self._rel("trials", key))):
            self.where.remove(self._rel("trials", key))
        for table in TRIAL_TABLES:
            rows = getattr(files, table)
            if table in WHEN_FILLED and not rows:
                continue
            data = _latency_bytes(rows) if isinstance(rows, pa.Table) else table_to_parquet_bytes(table, rows)
            self._write(self._rel(table, key), data)
        self._write(self._rel("trials", key), table_to_parquet_bytes("trials", [files.trial]))

    def _write(self, rel: str, data: bytes) -> None:
        with _writing(self.where.shown(rel)):
            if isinstance(self.where, LocalFolder):
                atomic_write_bytes(self.where.path / rel, data)  # looked up here: tests make the disk fill up
            else:
                self.where.write(rel, data)

    def write_row(self, table: str, key: str, row: Mapping[str, Any]) -> None:
        self._write(self._rel(table, key), table_to_parquet_bytes(table, [row]))

    def write_file(self, name: str, data: bytes) -> None:
        """Store a file another results folder wrote (a Ray node's, generator.runner.cluster) under the same name,
        atomically; `name` must be `<table>/<key>.parquet`, so that what a node sends lands only where it belongs."""
        table, _, file = name.partition("/")
        if table not in TABLES or "/" in file or file.startswith(".") or not file.endswith(".parquet"):
            raise ResultsError(f"Refused to store {name!r} in {self.path}: allowed are `<table>/<key>.parquet` names "
                               f"of the tables {', '.join(TABLES)}.")
        self._write(name, data)

    def write_spec(self, sha256: str, canonical_json: str) -> None:
        rel = f"specs/{sha256}.json"
        if not self.where.exists(rel):
            self._write(rel, canonical_json.encode())

    def has_table(self, table: str) -> bool:
        return bool(self.where.names(table))

    def stored_trial_keys(self) -> set[str]:
        return {name.removesuffix(".parquet") for name in self.where.names("trials")}

    def stored_ok_keys(self) -> set[str]:
        """Trials finished with status ok and whole (generator.results.integrity); failed, incomplete or
        misnamed ones are measured again by the next run."""
        if not self.stored_trial_keys():
            return set()
        report = self.check()
        trials = report.trials
        return set(trials.loc[trials["status"] == "ok", "trial_key"]) - set(report.incomplete)

    def check(self):
        """The folder's generator.results.integrity report (duplicate or misnamed trial files, lost tables)."""
        from generator.results.integrity import PROFILED_TABLES, REQUIRED_TABLES, check

        present = {t: set(self.where.names(t)) for t in REQUIRED_TABLES + PROFILED_TABLES}
        return check(self.path, self.read_table("trials", with_files=True), present)

    def remove_trial(self, key: str) -> None:
        """Forget a stored trial (for --force): the `trials` row first, so no reader sees a partial trial."""
        for table in ("trials", *TRIAL_TABLES):
            self.where.remove(self._rel(table, key))

    def read_spec_json(self, sha256: str) -> dict:
        rel = f"specs/{sha256}.json"
        try:
            return json.loads(self.where.read(rel))
        except (OSError, ValueError) as e:
            raise ResultsError(
                f"The stored spec {self.where.shown(rel)} is missing or unreadable ({e}); the results in "
                f"{self.path} cannot be rendered without it. Re-run the experiment with `perfsite run SPEC "
                f"--results {_parent(self.path)}` to store it again."
            ) from e

    def read_table(self, table: str, with_files: bool = False) -> pd.DataFrame:
        """A whole table as a DataFrame with the schema's columns (empty with the right columns if none);
        `with_files` adds `_file`, the name of the file each row came from."""
        names = self.where.names(table)
        if not names:
            empty = arrow_schema(table).empty_table().to_pandas()
            return empty.assign(_file=pd.Series(dtype=str)) if with_files else empty
        sources = self.where.sources(table, names)
        specs = self._stored_spec()
        parts = [_read_file(source, self.where.shown(f"{table}/{name}"), table, specs)
                 for source, name in zip(sources, names, strict=True)]
        if with_files:
            parts = [t.append_column("_file", pa.array([name] * t.num_rows, pa.string()))
                     for name, t in zip(names, parts, strict=True)]
        return pa.concat_tables(parts, promote_options="default").to_pandas()

    def _stored_spec(self) -> SpecLookup:
        """The folder's stored specs by sha256, for migrating its older files (None when missing)."""
        @functools.cache
        def lookup(sha256: str) -> dict | None:
            try:
                return json.loads(self.where.read(f"specs/{sha256}.json"))
            except (OSError, ValueError, ResultsError):
                return None
        return lookup


def _parent(path: Path | str) -> Path | str:
    return path.parent if isinstance(path, Path) else str(path).rstrip("/").rsplit("/", 1)[0]


def _latency_bytes(table: pa.Table) -> bytes:
    # A column the writer did not give (e.g. run_delay_ms) is null.
    table = migrate.with_every_column(table, "latencies")
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


class _ReadTables:
    """Tables already read in this process, by their file's content (and table name): a process that reads a
    store again (a build after `run`'s check of it, `diff`'s two sides sharing files, a notebook, a test suite)
    decoded, checked and cast every file again, a millisecond or two each. Keyed by a digest of the bytes, not
    by path and time, so that a file rewritten in place within the file clock's tick is never served stale; a
    migrated file is not kept (its columns may come from the store's stored spec). At most MAX_BYTES of
    tables, the least recently used dropped first: a build's page workers each read other experiments, and
    each holds its own."""

    MAX_BYTES = 64 << 20

    def __init__(self) -> None:
        self._tables: OrderedDict[tuple[str, bytes], pa.Table] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, table: str, data: bytes, parse: Callable[[], tuple[pa.Table, bool]]) -> pa.Table:
        key = (table, hashlib.blake2b(data, digest_size=20).digest())
        with self._lock:
            if key in self._tables:
                self._tables.move_to_end(key)
                return self._tables[key]
        parsed, keep = parse()
        if keep and parsed.nbytes <= self.MAX_BYTES // 8:
            with self._lock:
                if key not in self._tables:
                    self._tables[key] = parsed
                    self._bytes += parsed.nbytes
                while self._bytes > self.MAX_BYTES:
                    self._bytes -= self._tables.popitem(last=False)[1].nbytes
        return parsed


_TABLES = _ReadTables()


def _read_file(source: Any, path: str, table: str, specs: SpecLookup) -> pa.Table:
    """One file of a table (`source`: a local path or the object's bytes; `path`: as messages name it; `specs`:
    its folder's stored specs, which migrating an older file may need)."""
    try:
        data = source.read_bytes() if isinstance(source, Path) else source  # an object store's: its bytes
    except OSError as e:
        raise _unreadable(path, table, e) from e
    return _TABLES.get(table, data, lambda: _parsed(pa.BufferReader(data), path, table, specs))


def _parsed(source: Any, path: str, table: str, specs: SpecLookup) -> tuple[pa.Table, bool]:
    """_read_file's table, and whether it is the file's alone (a migrated file's may depend on `specs`)."""
    try:
        pf = pq.ParquetFile(source)
        stored = pf.schema_arrow  # built anew on every access
        check_version(path, stored.metadata or {})
        data = pf.read(use_threads=False)  # a trial's file is small: Arrow's thread pool cost a third more CPU
        version = _version(stored)
        if version < SCHEMA_VERSION:
            migrated = migrate.migrated(data, table, version, specs)
            _check_latencies(path, table, migrated)
            return migrated, False
        _check_columns(path, table, data)
        _check_latencies(path, table, data)
        schema = arrow_schema(table)
        if stored.names != schema.names or data.schema.equals(schema, check_metadata=True):
            return data, True  # other columns are kept as stored; the schema's own need no cast
        return data.cast(schema, safe=False), True
    except ResultsError:
        raise
    except Exception as e:  # pyarrow raises several types for corrupt files
        raise _unreadable(path, table, e) from e


def _unreadable(path: str, table: str, e: Exception) -> ResultsError:
    return ResultsError(
        f"The results file {path} is not readable Parquet ({type(e).__name__}: {' '.join(str(e).split())}); "
        f"allowed in {posixpath.dirname(path)}: Parquet files written by perfsite. It was probably damaged outside "
        f"perfsite; {_removal_advice(path, table)}")


def _removal_advice(path: str, table: str) -> str:
    """What to delete so that the results directory is consistent again, and what the next run does about it."""
    if table == "trials" or table in TRIAL_TABLES:
        # A side table alone would not be measured again: the trial's row in trials/ marks it as stored.
        files = ", ".join(f"{t}/{posixpath.basename(path)}" for t in ("trials", *TRIAL_TABLES))
        return (f"delete that trial's files under {posixpath.dirname(posixpath.dirname(path))} ({files}); the "
                "next `perfsite run` "
                "measures it again.")
    if table == "environments":
        return "delete it; the next `perfsite run` on that machine writes it again."
    return "delete it; only that run's description (command, git commit) is lost, its trials stay."


def _version(schema: pa.Schema) -> int:
    return int((schema.metadata or {}).get(METADATA_KEY, b"0"))


def _check_columns(path: str, table: str, data: pa.Table) -> None:
    """A file of today's schema version holds every column of its table (perfsite writes them all, null where
    unknown); one without is damaged, and the readers would fail on it with a KeyError far from the file."""
    present = set(data.column_names)  # a new list on every access
    missing = [name for name in arrow_schema(table).names if name not in present]
    if missing:
        raise ResultsError(
            f"The results file {path} lacks the column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(f'`{m}`' for m in missing[:6])}{' …' if len(missing) > 6 else ''}, which results schema "
            f"{SCHEMA_VERSION} gives every `{table}` file (docs/results.md). It was probably edited or damaged "
            f"outside perfsite; {_removal_advice(path, table)}")


def _check_latencies(path: str, table: str, data: pa.Table) -> None:
    """Every request latency is a finite number ≥ 0: a NaN one made `diff` report "no significant change"."""
    if table != "latencies" or "latency_ms" not in data.column_names or data.num_rows == 0:
        return
    values = data.column("latency_ms").to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    bad = ~(np.isfinite(values) & (values >= 0))
    if bad.any():
        raise ResultsError(
            f"The results file {path} holds {int(bad.sum()):,} request latenc{'y' if bad.sum() == 1 else 'ies'} "
            f"that {'is' if bad.sum() == 1 else 'are'} not a finite number ≥ 0 (the first: {values[bad][0]}); "
            f"allowed in `latency_ms`: finite milliseconds ≥ 0. It was probably edited or damaged outside "
            f"perfsite; {_removal_advice(path, table)}")


def check_version(path: Path | str, metadata: Mapping[bytes, bytes]) -> None:
    """Refuse files from a newer perfsite; older versions are read and migrated (``_migrated``)."""
    raw = metadata.get(METADATA_KEY)
    if raw is None:
        raise ResultsError(
            f"{path} has no perfsite schema version in its metadata: it was not written by perfsite. Remove it "
            "from the results directory."
        )
    try:
        version = int(raw)
    except ValueError:
        version = -1
    if version > SCHEMA_VERSION:
        raise ResultsError(
            f"{path} was written by a newer perfsite (results schema version {version}); this perfsite reads "
            f"versions 1 to {SCHEMA_VERSION} (docs/results.md, \"Schema versions\"). Upgrade perfsite "
            "(`pip install -U perfsite`) to read it."
        )
    if version < 1:
        raise ResultsError(f"{path} has an invalid schema version {raw!r}; remove the file.")


@dataclass(frozen=True)
class ExperimentResults:
    """Everything stored for one experiment, with orphan rows (unfinished trials) dropped, read once: list and
    shape cells decoded (generator.results.cells), files of older schema versions migrated
    (generator.results.migrate), the spec validated."""

    name: str
    path: Path | str  # a local folder, or the URL of one on an object store
    spec: Spec  # the validated spec of the newest trial: readers trust it, they validate nothing again
    trials: pd.DataFrame
    processes: pd.DataFrame
    latencies: pd.DataFrame
    nodes: pd.DataFrame
    layers: pd.DataFrame
    agreement: pd.DataFrame
    environments: pd.DataFrame
    runs: pd.DataFrame
    # One representative inference per profiled trial; empty for results written before the table existed.
    timeline: pd.DataFrame = field(default_factory=lambda: arrow_schema("timeline").empty_table().to_pandas())
    # A generative trial's decode steps (v7); empty for every other trial.
    decode_steps: pd.DataFrame = field(default_factory=lambda: arrow_schema("decode_steps").empty_table().to_pandas())
    phase_ops: pd.DataFrame = field(default_factory=lambda: arrow_schema("phase_ops").empty_table().to_pandas())
    phase_nodes: pd.DataFrame = field(default_factory=lambda: arrow_schema("phase_nodes").empty_table().to_pandas())
    # What generator.results.integrity found: one sentence per problem, and per incomplete trial the side
    # tables it lacks (its pages say so instead of dropping sections silently).
    problems: tuple[str, ...] = ()
    incomplete: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Every reader's node times (generator.results.profiled), however the record was built: loaded, merged
        # from several stores, or assembled by a test.
        if "dur_us" not in self.nodes.columns:
            object.__setattr__(self, "nodes", with_profiled_times(self.nodes, self.trials))


def shown_spec_sha256(trials: pd.DataFrame, runs: pd.DataFrame) -> str:
    """The spec the pages follow: the newest trial's (trials sorted by finished_at), unless a run started after
    that trial finished, whose spec is then the newest the user gave: a spec edited where no trial key changes
    (its description, latency threshold, compare pairs, what-if factors) measures nothing, and its run records
    it so that the next build shows it (it showed the old one until a trial was measured again)."""
    newest = str(trials["spec_sha256"].iloc[-1])
    if runs.empty or "spec_sha256" not in runs or "started_at" not in runs:
        return newest
    last = runs.iloc[-1]
    started = pd.to_datetime(last["started_at"], utc=True, errors="coerce")
    finished = pd.to_datetime(trials["finished_at"].iloc[-1], utc=True, errors="coerce")
    # Trials' times are stored to the second (a run's start to the microsecond since schema 8): a run that starts
    # in the second its last trial finished is the later one.
    if pd.isna(started) or pd.isna(finished) or started < finished or not isinstance(last["spec_sha256"], str):
        return newest
    return last["spec_sha256"]


def load_experiment(path: StoreRoot) -> ExperimentResults:
    """Read one experiment's results folder. The spec shown is the one of the most recent trial, or of a run
    that started after it (a run that measured nothing records the spec it read: see shown_spec_sha256)."""
    rd = ResultsDir(path)
    report = rd.check()
    trials = report.trials
    if trials.empty:
        raise ResultsError(f"{shown(rd.path)} holds no finished trial; run `perfsite run SPEC` first.")
    trials = trials.sort_values(["finished_at", "trial_key"], kind="stable").reset_index(drop=True)
    keys = set(trials["trial_key"])
    tables = {t: decoded(t, _only_keys(rd.read_table(t), keys)) for t in TRIAL_TABLES}
    runs = rd.read_table("runs").sort_values("started_at", kind="stable").reset_index(drop=True)
    sha256 = shown_spec_sha256(trials, runs)
    try:
        stored = rd.read_spec_json(sha256)
    except ResultsError:
        if sha256 == trials["spec_sha256"].iloc[-1]:
            raise
        # The later run's spec lost (a partial copy of the store): the newest trial's spec, as before that run.
        sha256 = trials["spec_sha256"].iloc[-1]
        stored = rd.read_spec_json(sha256)
    spec = spec_from_json(stored, source=f"{rd.path}/specs/{sha256}.json")
    return ExperimentResults(
        name=rd.name,
        path=rd.path,
        spec=spec,
        trials=trials,
        environments=rd.read_table("environments").drop_duplicates("env_id").reset_index(drop=True),
        runs=runs,
        problems=report.problems, incomplete=report.incomplete,
        **tables,
    )


def _only_keys(df: pd.DataFrame, keys: set[str]) -> pd.DataFrame:
    return df[df["trial_key"].isin(keys)].reset_index(drop=True)


def find_experiments(results_root: StoreRoot) -> list[StoreRoot]:
    """Experiment folders under a results root (or the root itself when it is one), sorted by name: Paths
    under a local root, URLs under an object store's."""
    where = open_location(results_root)
    if not isinstance(where, LocalFolder):
        return _find_remote(results_root, where)
    root = where.path
    if root.is_file():
        raise ResultsError(
            f"The results directory {root} is a file, not a folder. Point --results at the folder that holds your "
            "experiments' results (the one `perfsite run --results` wrote).")
    if not root.is_dir():
        raise ResultsError(
            f"The results directory {root} does not exist. Run `perfsite run SPEC` first, or point "
            "--results at the folder that holds your experiments' results."
        )
    # The root is an experiment when its trials/ holds trial files: an experiment may itself be named `trials`
    # (results/trials/trials/K.parquet), and taking that root for one experiment dropped every experiment.
    if (root / "trials").is_dir() and any((root / "trials").glob("*.parquet")):
        return [root]
    return sorted(p for p in root.iterdir() if (p / "trials").is_dir())


def _find_remote(url: StoreRoot, where: Any) -> list[StoreRoot]:
    """find_experiments on an object store, where a folder is a prefix that exists while objects are under it."""
    if not where.is_store():
        raise ResultsError(f"The results store {shown(url)} does not exist (nothing is stored under it). Run "
                           f"`perfsite run SPEC --results {shown(url)}` first. {ALLOWED}")
    if where.names("trials"):
        return [url]
    return [join(url, name) for name in where.folders() if where.child(name).names("trials")]
