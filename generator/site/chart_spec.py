"""An altair chart as its Vega-Lite dict, without altair walking the chart's inline data row by row.

`to_dict` deep-copies the whole chart and converts it object by object, the inline data's records too: a
timeline of a thousand kernel calls is tens of thousands of cells, most of a chart's cost. The records are
plain JSON already (numbers, strings, booleans, None), which altair's conversion returns unchanged; so each
inline dataset is swapped for a one-row marker while altair converts the rest, and the records are put back
where the marker landed. A dataset holding anything else (a numpy number, a date) takes altair's own route.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import altair as alt


class InlineRows(alt.Data):
    """Inline records (alt.Data(values=...)) that altair's copies of a chart share rather than copy: altair
    deep-copies a chart, records too, on every `properties`, `layer` and `encode`, and perfsite never changes
    a chart's records once the chart is made."""

    def __deepcopy__(self, memo: Any = None) -> InlineRows:  # altair's _deep_copy calls it as copier(obj)
        return self


class Chart(alt.Chart):
    """alt.Chart whose deep copies are shallow: a new chart holding the same encodings, marks, scales, axes and
    transforms. altair deep-copies every sub-chart on each `layer`, `vconcat` and `properties` of a layered
    chart, and again in `to_dict` (each re-runs LayerChart's constructor, which copies its layers twice):
    thousands of small schema objects a chart, a tenth of an experiment's pages. altair changes only a copy's
    own top-level properties (its name, params, data, layer), never an object it shares with the original,
    and perfsite never changes a chart's parts once made. (For the same reason a layered chart takes its name,
    size and title in `alt.layer(...)`: a `.properties(...)` after it runs LayerChart's constructor again.)"""

    def __deepcopy__(self, memo: Any = None) -> Chart:  # altair's _deep_copy calls it as copier(obj)
        return self.copy(deep=False)

    def properties(self, **kwargs: Any) -> Chart:
        """alt.Chart.properties without checking each value against the Vega-Lite schema (jsonschema, a
        millisecond a call): tests/test_charts_valid.py validates every chart kind (charts.unvalidated)."""
        copy = self.copy(deep=False)
        for key, value in kwargs.items():
            setattr(copy, key, value)
        return copy


def inline_rows(values: list[dict[str, Any]]) -> alt.Data:
    """A chart's inline data: alt.Data(values=values), shared by the chart's copies (InlineRows)."""
    return InlineRows(values=values)


_PLAIN = (str, int, float, bool, type(None))
_MARKER = "perfsite-inline-data"
_SUBCHARTS = ("layer", "vconcat", "hconcat", "concat", "spec")


def chart_dict(chart: alt.TopLevelMixin) -> dict[str, Any]:
    """chart.to_dict(validate=False), the same dict."""
    datasets = [d for d in _inline_data(chart) if _plain(d.values)]
    originals = [d.values for d in datasets]
    try:
        for n, data in enumerate(datasets):
            data.values = [{_MARKER: n}]
        spec = chart.to_dict(validate=False)
    finally:
        for data, values in zip(datasets, originals, strict=True):
            data.values = values
    return _restored(spec, originals) if datasets else spec


def _inline_data(chart: Any) -> Iterator[alt.Data]:
    """Every alt.Data with inline `values` in the chart and its sub-charts, each once."""
    seen: set[int] = set()
    stack = [chart]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, alt.TopLevelMixin):
            continue
        data = getattr(item, "data", alt.Undefined)
        if isinstance(data, alt.Data) and isinstance(getattr(data, "values", None), list) and id(data) not in seen:
            seen.add(id(data))
            yield data
        for name in _SUBCHARTS:
            sub = getattr(item, name, alt.Undefined)
            if sub is not alt.Undefined:
                stack.append(sub)


def _plain(values: list[Any]) -> bool:
    return all(type(row) is dict and all(type(v) in _PLAIN and type(k) is str for k, v in row.items())
               for row in values)


def _restored(spec: Any, originals: list[list[dict[str, Any]]]) -> Any:
    """The spec with every marker row replaced by its dataset's records."""
    if isinstance(spec, dict):
        values = spec.get("values")
        if (isinstance(values, list) and len(values) == 1 and isinstance(values[0], dict)
                and set(values[0]) == {_MARKER}):
            return {**spec, "values": [dict(row) for row in originals[values[0][_MARKER]]]}
        return {k: _restored(v, originals) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_restored(v, originals) for v in spec]
    return spec
