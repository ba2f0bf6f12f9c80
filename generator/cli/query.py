"""`perfsite query "SQL"`: the answer of generator.results.query as a terminal table, CSV, JSON or Markdown.

Values come from results that others wrote (version names, node names, hostnames, error messages): in the table,
CSV and Markdown forms every cell goes through `safe` (control characters escaped, one line per row); JSON
escapes them itself (`ensure_ascii`). A CSV *file* (`--output`) keeps values exact, quoted as CSV quotes them.
Table and Markdown round numbers to 6 significant digits for reading; CSV and JSON keep every digit.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generator.errors import PerfsiteError
from generator.results.location import local_path
from generator.results.query import QueryResult, run_query
from generator.terminal_text import safe

CELL_WIDTH = 60  # the table form cuts longer cells (with an ellipsis); the other forms keep them whole


def query_command(sql: str, results: str, fmt: str, output: Path | None) -> str:
    """The answer in `fmt`, or, with `output`, the line that says where it was written."""
    if fmt not in FORMATS:
        raise PerfsiteError(f"--format {fmt!r} is not known. Allowed: {', '.join(FORMATS)}.")
    if output is not None:
        from generator.cli.terminal import check_output_files  # imported on use: it brings the runner

        folder = local_path(results)
        check_output_files({"--output": output}, stores={f"the results store {folder}": folder} if folder else None)
    answer = run_query(results, sql)
    if output is None:
        return FORMATS[fmt](answer)
    # A CSV file is read by programs, not shown: values as stored (the csv module quotes a newline), so that
    # a node name round-trips. The other forms are for reading and stay as on the terminal.
    text = csv_text(answer, raw=True) if fmt == "csv" else FORMATS[fmt](answer)
    from generator.cli.terminal import write_output  # imported on use: it brings the runner (half a second)

    write_output(output, text)
    return f"wrote {output} ({_rows(len(answer.rows))})\n"


def table_text(answer: QueryResult) -> str:
    """Aligned columns under a header, numbers to the right, and the row count."""
    if not answer.columns:
        return "(no rows)\n"
    cells = [[safe(c, CELL_WIDTH) for c in answer.columns]]
    cells += [[safe(_display(v), CELL_WIDTH) for v in row] for row in answer.rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(answer.columns))]
    numeric = [_is_numeric_column(answer, i) for i in range(len(answer.columns))]
    lines = [_table_line(cells[0], widths, [False] * len(widths)), "  ".join("-" * w for w in widths)]
    lines += [_table_line(r, widths, numeric) for r in cells[1:]]
    return "\n".join(line.rstrip() for line in lines) + f"\n({_rows(len(answer.rows))})\n"


def csv_text(answer: QueryResult, raw: bool = False) -> str:
    """RFC 4180 CSV with a header row; NULL is an empty field, lists and structs are JSON. For the terminal
    every value is shown `safe` (one line, control characters escaped); `raw` (a file) keeps it exact."""
    shown = (lambda text: text) if raw else safe
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if answer.columns:
        writer.writerow([shown(c) for c in answer.columns])
    writer.writerows([shown(_exact(v)) if v is not None else "" for v in row] for row in answer.rows)
    return buffer.getvalue()


def json_text(answer: QueryResult) -> str:
    """A JSON array with one object per row (NULL, NaN and infinities as null, times in ISO 8601). Two columns
    of one name are refused: an object holds one value per name, and `SELECT *` over a join (trials and
    processes both have `throughput_ips`) kept the last column's values under the name, dropping the other."""
    _refuse_repeated_names(answer.columns)
    records = [dict(zip(answer.columns, (_json_value(v) for v in row), strict=True)) for row in answer.rows]
    return json.dumps(records, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def _refuse_repeated_names(columns: list[str] | tuple[str, ...]) -> None:
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        names = ", ".join(f"`{safe(name)}`" for name in repeated)
        raise PerfsiteError(
            f"The answer has more than one column named {names}, and a JSON object holds one value per name: --format "
            "json would keep one of them and drop the others. Allowed for --format json: a distinct name for each "
            "column; name them with AS (e.g. `SELECT t.throughput_ips AS trial_ips, p.throughput_ips AS "
            "process_ips …` rather than `SELECT *` over a join), or use --format table, csv or markdown, which "
            "keep every column.")


def markdown_text(answer: QueryResult) -> str:
    """A Markdown table for a pull request or an issue: text as inert code spans, numbers as they read."""
    from generator.diff.report import cell, code  # imported on use: it brings the site generator (half a second)

    if not answer.columns:
        return ""
    numeric = [_is_numeric_column(answer, i) for i in range(len(answer.columns))]
    lines = ["| " + " | ".join(cell(safe(c)) for c in answer.columns) + " |",
             "|" + "|".join("--:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(_markdown_cell(v, code) for v in row) + " |" for row in answer.rows]
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Callable[[QueryResult], str]] = {
    "table": table_text, "csv": csv_text, "json": json_text, "markdown": markdown_text}


def _rows(count: int) -> str:
    return f"{count} row{'' if count == 1 else 's'}"


def _table_line(cells: list[str], widths: list[int], right: list[bool]) -> str:
    return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True))


def _is_numeric_column(answer: QueryResult, index: int) -> bool:
    values = [row[index] for row in answer.rows if row[index] is not None]
    return bool(values) and all(_is_number(v) for v in values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def _markdown_cell(value: Any, code: Callable[[str], str]) -> str:
    """A number as it reads, anything else as an inert code span (`code`: the diff summary's)."""
    if value is None:
        return ""
    return _display(value) if _is_number(value) else code(safe(_display(value)))


def _display(value: Any) -> str:
    """A value for reading: numbers to 6 significant digits, NULL as nothing."""
    if isinstance(value, float | decimal.Decimal) and not isinstance(value, bool):
        return f"{value:.6g}"
    return "" if value is None else _exact(value)


def _exact(value: Any) -> str:
    """A value with every digit kept (Python's shortest round-tripping float), lists and structs as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | dict):
        return json.dumps(_json_value(value), ensure_ascii=False)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _json_value(value: Any) -> Any:
    """A DuckDB value as JSON: non-finite floats become null (JSON has no NaN), decimals floats."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return _json_value(float(value))
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | str):
        return value
    return _exact(value)  # dates and times, UUIDs, intervals, blobs: their text
