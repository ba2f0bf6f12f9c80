"""One trial's rows of an experiment's table, through an index built once per table.

The pages of one experiment look up trials by key hundreds of times (every comparison, every chooser card,
every profile section), and a comparison `table[table["trial_key"] == key]` scans the whole table each time:
the `nodes` table of a 40-trial sweep of a thousand-node model has 40,000 rows. The index (key -> row
positions, in the table's order) is built on the first look-up of a table and dropped with the table.

Tables are read once (generator.results.store) and never changed in place afterwards; an index found stale
(the table's length changed) is built again.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class _Index:
    length: int  # of the table when the index was built
    positions: dict[str, np.ndarray]  # trial key -> row positions
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)  # the rows taken so far


_INDEXES: dict[int, _Index] = {}  # by id(table)


def trial_rows(table: pd.DataFrame, trial_key: str) -> pd.DataFrame:
    """The rows of `table` whose `trial_key` is `trial_key`, in the table's order: the same frame (index,
    columns, dtypes) as `table[table["trial_key"] == trial_key]`. A trial's rows are taken once and the same
    frame is given to every caller: pandas copies on write, so no caller's change reaches another."""
    index = _index(table)
    rows = index.frames.get(trial_key)
    if rows is None:
        positions = index.positions.get(trial_key)
        if positions is None:
            rows = table.iloc[0:0]
        elif positions[-1] - positions[0] + 1 == len(positions):  # one block, as read (a file per trial)
            rows = table.iloc[positions[0]:positions[-1] + 1]  # a view: no column copied
        else:
            rows = table.iloc[positions]
        index.frames[trial_key] = rows
    return rows


def _index(table: pd.DataFrame) -> _Index:
    found = _INDEXES.get(id(table))
    if found is not None and found.length == len(table):
        return found
    positions = {str(k): v for k, v in table.groupby("trial_key", sort=False).indices.items()} if len(table) else {}
    if found is None:  # the entry goes with the table: an id is reused only after its object is gone
        weakref.finalize(table, _INDEXES.pop, id(table), None)
    _INDEXES[id(table)] = _Index(len(table), positions)
    return _INDEXES[id(table)]
