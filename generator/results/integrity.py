"""A results folder as files on disk can disagree with what perfsite wrote: a sync tool's conflict copy
(`copy of K.parquet`), a trial file renamed by hand, a side table lost in a partial copy. Readers check here
before they count or render anything.

- A trial is its key, not its file: a `trials/` file whose name is not the key inside, or a key seen in two
  files, is reported naming both files and counted once (the file named after its key wins).
- A trial lacking a side table it must have (`processes/`, `latencies/`, and `nodes/` when it was profiled)
  is *incomplete*: `run` measures it again, and its pages say which file is missing instead of silently
  dropping the sections that file feeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from generator.errors import ResultsError

REQUIRED_TABLES = ("processes", "latencies")
PROFILED_TABLES = ("nodes",)


@dataclass(frozen=True)
class IntegrityReport:
    trials: pd.DataFrame  # one row per key, without the `_file` column
    problems: tuple[str, ...]  # one sentence each, naming the files
    incomplete: dict[str, tuple[str, ...]]  # trial key -> the side-table files it lacks (relative paths)


# Figures a page plots and a verdict divides: an infinite or negative one (a hand-edited file, a bug elsewhere)
# made `build` fail with a JSON traceback; it is refused as a damaged file instead.
FIGURES = ("latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms",
           "latency_headline_ms", "latency_min_ms", "latency_max_ms", "throughput_ips")


def check(folder: Path | str, trials: pd.DataFrame, present: Mapping[str, set[str]]) -> IntegrityReport:
    """Deduplicate `trials` (read with its `_file` column, if available) and find incomplete trials (`present`:
    the file names each side table holds); a trial whose figures are infinite or negative is a ResultsError
    naming its file. `folder` is a local Path or a store's URL (object stores: generator.results.location)."""
    folder = _Shown(folder)
    _check_figures(folder, trials)
    problems: list[str] = []
    if "_file" in trials:
        trials, problems = _one_row_per_key(folder, trials)
    incomplete = _incomplete(trials, present)
    for key, missing in incomplete.items():
        problems.append(f"{folder}: trial {key} lacks {', '.join(missing)} (lost in a partial copy?); its pages "
                        "say so, and the next `perfsite run` measures it again.")
    return IntegrityReport(trials.reset_index(drop=True), tuple(problems), incomplete)


def _one_row_per_key(folder: _Shown, trials: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    problems = []
    named = trials["_file"] == trials["trial_key"].astype(str) + ".parquet"
    if named.all() and not trials["trial_key"].duplicated().any():
        # The usual store, nothing to report: the same table as below without its sort and copies.
        return trials.drop(columns="_file").sort_index(), []
    for _, row in trials[~named].iterrows():
        problems.append(f"{folder / 'trials' / row['_file']} holds trial {row['trial_key']}, but a trial's file "
                        f"is named after its key ({row['trial_key']}.parquet): a copy or a renamed file? It is "
                        "counted once; delete the copy.")
    # The file named after its key first, so that drop_duplicates keeps it.
    ordered = trials.assign(_named=named).sort_values(["_named", "_file"], ascending=[False, True], kind="stable")
    dup = ordered["trial_key"].duplicated(keep="first")
    for _, row in ordered[dup].iterrows():
        kept = ordered[(ordered["trial_key"] == row["trial_key"]) & ~dup]["_file"].iloc[0]
        if kept == row["_file"]:  # one file holding the row twice (a hand edit, a bad merge)
            problems.append(f"Trial {row['trial_key']} is stored twice in {folder / 'trials' / kept} (two rows); "
                            "counted once.")
            continue
        problems.append(f"Trial {row['trial_key']} is stored twice, in {folder / 'trials' / kept} and "
                        f"{folder / 'trials' / row['_file']}; counted once, from {kept}.")
    kept = ordered[~dup].drop(columns=["_file", "_named"]).sort_index()
    return kept, list(dict.fromkeys(problems))


class _Shown(str):
    """A folder as messages name it, joined with `/` whether it is a local Path or a URL."""

    def __truediv__(self, name: str) -> _Shown:
        return _Shown(f"{self.rstrip('/')}/{name}")


def _incomplete(trials: pd.DataFrame, present: Mapping[str, set[str]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for _, row in trials.iterrows():
        if row.get("status") != "ok":
            continue
        key = str(row["trial_key"])
        profiled = row.get("profiled")
        profiled = bool(profiled) if isinstance(profiled, bool | np.bool_) else False  # None/NaN: not profiled
        tables = REQUIRED_TABLES + (PROFILED_TABLES if profiled else ())
        missing = tuple(f"{t}/{key}.parquet" for t in tables if f"{key}.parquet" not in present.get(t, ()))
        if missing:
            out[key] = missing
    return out


# What a `trials` row may hold beyond its figures: an unknown status was counted as failed without a word, a
# batch of 0 divided by zero on the profile page.
STATUSES = ("ok", "failed")
CONFIG_COUNTS = ("batch", "threads", "concurrency")


def _check_figures(folder: _Shown, trials: pd.DataFrame) -> None:
    for column in (c for c in FIGURES if c in trials):
        values = pd.to_numeric(trials[column], errors="coerce")
        _refuse_first(folder, trials, np.isinf(values) | (values < 0), column, "a finite number ≥ 0 (or empty)")
    if "status" in trials:
        _refuse_first(folder, trials, ~trials["status"].isin(STATUSES), "status", " or ".join(STATUSES))
    for column in (c for c in CONFIG_COUNTS if c in trials):
        values = pd.to_numeric(trials[column], errors="coerce")
        _refuse_first(folder, trials, ~(values >= 1), column, "an integer ≥ 1")


def _shown(value: object) -> str:
    return repr(value) if isinstance(value, str) else "empty" if pd.isna(value) else str(value)


def _refuse_first(folder: _Shown, trials: pd.DataFrame, bad: pd.Series, column: str, allowed: str) -> None:
    """A ResultsError naming the first bad row's file, its value and what is allowed (no-op when none)."""
    # The mask first: selecting rows copies every column of the table, a twelfth of a results folder's load
    # when done for each figure whether or not a row is bad.
    if not bad.any():
        return
    row = trials[bad].iloc[0]
    name = row["_file"] if "_file" in bad else f"{row['trial_key']}.parquet"
    raise ResultsError(
        f"{folder / 'trials' / name}: `{column}` is {_shown(row[column])}; allowed: {allowed}. The file was probably "
        f"edited or damaged outside perfsite; delete that trial's files under {folder} (trials/, processes/, "
        f"latencies/, … named {row['trial_key']}.parquet); the next `perfsite run` measures it again."
    )
