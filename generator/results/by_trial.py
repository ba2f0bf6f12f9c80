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

import numpy as np
import pandas as pd

_INDEXES: dict[int, tuple[int, dict[str, np.ndarray]]] = {}  # id(table) -> (its length, key -> positions)


def trial_rows(table: pd.DataFrame, trial_key: str) -> pd.DataFrame:
    """The rows of `table` whose `trial_key` is `trial_key`, in the table's order: the same frame (index,
    columns, dtypes) as `table[table["trial_key"] == trial_key]`."""
    positions = _index(table).get(trial_key)
    return table.iloc[positions] if positions is not None else table.iloc[0:0]


def _index(table: pd.DataFrame) -> dict[str, np.ndarray]:
    found = _INDEXES.get(id(table))
    if found is not None and found[0] == len(table):
        return found[1]
    index = {str(k): v for k, v in table.groupby("trial_key", sort=False).indices.items()} if len(table) else {}
    if found is None:  # the entry goes with the table: an id is reused only after its object is gone
        weakref.finalize(table, _INDEXES.pop, id(table), None)
    _INDEXES[id(table)] = (len(table), index)
    return index
