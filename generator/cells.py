"""A table cell as a plain Python value, the one rule every stage reads pandas and pyarrow cells with."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def clean(value: Any) -> Any:
    """A cell as a plain Python value: None for every flavour of missing (None, NaN, pd.NA)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        return clean(value.item())  # numpy scalar
    return value
