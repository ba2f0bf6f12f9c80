"""docs/results.md, written from the schema: every table of a results folder, its columns with type, unit and
meaning, and the schema's version history. The schema (generator.results.schema) is the one source; a test
checks that the page is current, so the documentation cannot drift from what `perfsite run` writes.

Regenerate with ``python -m generator.results.reference > docs/results.md``.
"""

from __future__ import annotations

import pyarrow as pa

from generator.results.schema import PROFILE_ITERATIONS_RULE, SCHEMA_HISTORY, SCHEMA_VERSION, TABLES, Column

# What one row of each table is, and the file it lives in.
TABLE_ROWS = {
    "trials": ("trials/<trial_key>.parquet", "trial (a version at a configuration); written last, so its "
               "presence means the trial finished"),
    "processes": ("processes/<trial_key>.parquet", "measurement process of a trial, the unit of repetition"),
    "latencies": ("latencies/<trial_key>.parquet", "timed request"),
    "nodes": ("nodes/<trial_key>.parquet", "executed node of the profiled pass"),
    "layers": ("layers/<trial_key>.parquet", "node of the version's model file, from the static analysis"),
    "agreement": ("agreement/<trial_key>.parquet", "output of the version against its reference version"),
    "timeline": ("timeline/<trial_key>.parquet", "kernel call of the representative profiled inference"),
    "decode_steps": ("decode_steps/<trial_key>.parquet", "decode step of a measurement process of a generative "
                     "trial (no file for other trials)"),
    "phase_ops": ("phase_ops/<trial_key>.parquet", "op type in a generative trial's profiled prefill or decode "
                  "step (no file for other trials)"),
    "phase_nodes": ("phase_nodes/<trial_key>.parquet", "top-level node in a generative trial's profiled prefill or "
                    "decode step (no file for other trials)"),
    "environments": ("environments/<env_id>.parquet", "machine and software environment"),
    "runs": ("runs/<run_id>.parquet", "`perfsite run`"),
}
INTRO = """\
# Results reference

`perfsite run` writes one folder per experiment, `results/<experiment>/`, holding one Parquet file per trial
in each table's folder (and `specs/<spec_sha256>.json`, the validated spec each trial was measured with).
Read a whole table with `pandas.read_parquet("results/<experiment>/trials")`; join tables on `trial_key`
(and `env_id`, `run_id`). To ask across every experiment, commit and machine at once, `perfsite query "SQL"` has
each table as a view ([querying results with SQL](query.md)). This page is generated from
`generator/results/schema.py`, the only place the columns are defined
(`python -m generator.results.reference > docs/results.md`); a test keeps it current.

Every file carries the schema version in its Parquet metadata (`perfsite.schema_version`); see
[schema versions](#schema-versions) for what each version changed and how perfsite reads older files.
"""

VERSIONS_INTRO = """\
perfsite reads files of every version up to its own (`generator/results/migrate.py`, in memory: nothing on
disk is rewritten, so one store may hold experiments of several versions and every one builds). A column added
since a file's version reads as empty (pages say "not recorded") unless the table below gives a rule. A file of
a newer version is refused: it was written by a newer perfsite, upgrade to read it. `perfsite query` reads the
files as stored: columns a file lacks are NULL there, with no rule applied.
"""


def results_reference() -> str:
    """The Markdown of docs/results.md."""
    parts = [INTRO, f"\n**Schema version {SCHEMA_VERSION}.**\n"]
    for name, columns in TABLES.items():
        path, row = TABLE_ROWS[name]
        parts.append(f"\n## `{name}`\n\n`{path}`: one row per {row}.\n\n")
        parts.append("| column | type | unit | meaning |\n|---|---|---|---|\n")
        parts += [_row(c) for c in columns]
    return "".join(parts) + _versions()


def _versions() -> str:
    """The "Schema versions" section: what each version changed and how files written with it are read."""
    rows = "".join(f"| {v} | {_cell(h.changed)} | {_cell(h.read_as)} |\n" for v, h in sorted(SCHEMA_HISTORY.items()))
    return (f"\n## Schema versions\n\n{VERSIONS_INTRO}\n| version | changed | read today as |\n|--:|---|---|\n"
            f"{rows}\nHow a trial of versions 1 to 3 gets `profile_iterations`: {_cell(PROFILE_ITERATIONS_RULE)}.\n")


def _row(c: Column) -> str:
    required = "" if c.nullable else " (never null)"
    return f"| `{c.name}` | {_type(c.type)} | {_cell(c.unit) or '—'} | {_cell(c.meaning)}{required} |\n"


def _type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"list of {_type(t.value_type)}"
    return {"string": "string", "double": "float64", "int64": "int64", "bool": "bool"}.get(str(t), str(t))


def _cell(text: str) -> str:
    """Schema text in a table cell: pipes escaped, and angle brackets (`specs/<sha>.json`) shown, not taken
    for HTML tags."""
    return text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    print(results_reference(), end="")
