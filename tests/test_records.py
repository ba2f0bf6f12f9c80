"""generator.results.records.records gives DataFrame.to_dict("records"), value for value and type for type."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from generator.results.records import records


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if a is pd.NaT:
        return b is pd.NaT
    return a is b if isinstance(a, np.ndarray) else a == b


def _check(df: pd.DataFrame) -> None:
    expected, got = df.to_dict("records"), records(df)
    assert len(expected) == len(got)
    for e, g in zip(expected, got, strict=True):
        assert list(e) == list(g)
        assert all(_same(e[k], g[k]) for k in e), (e, g)


def test_records_equal_to_dict_for_the_tables_column_kinds():
    text = pd.array(["Conv", None, "Add"], dtype=pd.StringDtype("pyarrow", na_value=np.nan))
    df = pd.DataFrame({"op_type": text, "exec_order": [2, 0, 1], "dur_us": [1.5, np.nan, 3.0],
                       "shapes": [((1, 3),), (), None], "ok": [True, False, True]})
    _check(df)
    _check(df.iloc[0:0])
    _check(df[df["exec_order"] > 0])


def test_records_leave_other_kinds_to_pandas():
    boxed = pd.Series([np.float64(1.0), "x"], dtype=object)  # to_dict makes the numpy float a Python one
    df = pd.DataFrame({"at": pd.to_datetime(["2026-01-05", None]), "boxed": boxed})
    _check(df)


def test_records_of_a_text_column_missing_as_na_are_none_as_to_dict_gives():
    for storage in ("python", "pyarrow"):
        df = pd.DataFrame({"name": pd.array(["a", None], dtype=pd.StringDtype(storage, na_value=pd.NA))})
        _check(df)
        assert records(df)[1]["name"] is None
