"""Several results stores read as one (`perfsite build --results A --results s3://bucket/x`).

An experiment is its name: the folders of one name in several stores are one experiment. A trial is its key, as
within one folder (generator.results.integrity): a key stored in two stores is one trial, counted once, from the
first store given that holds it, and the stores holding it are named once per pair of stores. A trial's side
tables always come from the store its `trials` row came from, so a trial is never stitched from two stores.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from generator.results.location import StoreRoot, is_url, shown
from generator.results.store import TRIAL_TABLES, ExperimentResults


def folder_key(root: StoreRoot) -> str:
    """A store or experiment folder however it is spelt: a URL without its last slash, a path resolved."""
    return str(root).rstrip("/") if is_url(root) else os.path.realpath(root)


def store_roots(results: StoreRoot | Sequence[StoreRoot]) -> tuple[StoreRoot, ...]:
    """One root or several, as a tuple in the order given, each store once however it is spelt (`r1`, `./r1/`
    and its absolute path; a URL with and without its last slash): a store given twice was read as two, and
    each of its trials named as "stored both in r1/tiny and in r1/tiny"."""
    roots = (results,) if isinstance(results, str | Path) else results
    seen: dict[str, StoreRoot] = {}
    for root in roots:
        seen.setdefault(folder_key(root), root)
    return tuple(seen.values())


def merge_by_name(experiments: Sequence[ExperimentResults]) -> tuple[list[ExperimentResults], list[str]]:
    """Experiments of one name (read from several stores, in the order the stores were given) merged into one,
    in the order their names first appear; and one sentence per pair of stores that hold the same trials."""
    by_name: dict[str, list[ExperimentResults]] = {}
    for experiment in experiments:
        by_name.setdefault(experiment.name, []).append(experiment)
    merged = [merge(parts) for parts in by_name.values()]
    return [m for m, _ in merged], [note for _, notes in merged for note in notes]


def merge(parts: Sequence[ExperimentResults]) -> tuple[ExperimentResults, list[str]]:
    """One experiment from its folders in several stores (the first part's path names it), and the notes on
    trials stored in more than one."""
    if len(parts) == 1:
        return parts[0], []
    kept: list[set[str]] = []
    notes: list[str] = []
    for i, part in enumerate(parts):
        keys = set(part.trials["trial_key"])
        for earlier, earlier_keys in zip(parts[:i], kept, strict=False):
            both = keys & earlier_keys
            if both:
                notes.append(_twice(both, earlier, part))
            keys -= earlier_keys
        kept.append(keys)
    notes += _unrelated(parts)
    trials = pd.concat([_only(p.trials, k) for p, k in zip(parts, kept, strict=True)], ignore_index=True)
    trials = trials.sort_values(["finished_at", "trial_key"], kind="stable").reset_index(drop=True)
    newest = next(p for p in parts if trials["trial_key"].iloc[-1] in set(p.trials["trial_key"]))
    tables = {t: pd.concat([_only(getattr(p, t), k) for p, k in zip(parts, kept, strict=True)], ignore_index=True)
              for t in TRIAL_TABLES}
    return dataclasses.replace(
        parts[0], spec=newest.spec, trials=trials, **tables,
        environments=_union(parts, "environments", "env_id"),
        runs=_union(parts, "runs", "run_id").sort_values("started_at", kind="stable").reset_index(drop=True),
        problems=tuple(dict.fromkeys(q for p in parts for q in p.problems)),
        incomplete={k: v for p, keys in zip(parts, kept, strict=True) for k, v in p.incomplete.items() if k in keys},
    ), notes


def _unrelated(parts: Sequence[ExperimentResults]) -> list[str]:
    """Folders of one name in two stores that share no version name: more likely two experiments that happen to
    share a name than one measured in two places. Merged as one all the same (the rule for a name), but said:
    the pages would otherwise call one store's trials "versions no longer in its newest spec"."""
    first = set(parts[0].trials["version"].astype(str))
    return [f"{shown(p.path)} and {shown(parts[0].path)} share the name {parts[0].name} but no version name "
            f"({', '.join(sorted(set(p.trials['version'].astype(str)))) or 'none'} against "
            f"{', '.join(sorted(first)) or 'none'}): two different experiments? They are shown as one; give one "
            "of them another `name:` (and results folder) to show them apart."
            for p in parts[1:] if first and not first & set(p.trials["version"].astype(str))]


def _twice(keys: set[str], first: ExperimentResults, second: ExperimentResults) -> str:
    listed = ", ".join(sorted(keys)[:3]) + (" …" if len(keys) > 3 else "")
    count = f"{len(keys)} trial{'s' if len(keys) > 1 else ''}"
    return (f"{count} ({listed}) {'are' if len(keys) > 1 else 'is'} stored both in {shown(first.path)} and in "
            f"{shown(second.path)}; each counted once, from {shown(first.path)} (the first --results given).")


def _only(df: pd.DataFrame, keys: set[str]) -> pd.DataFrame:
    return df[df["trial_key"].isin(keys)]


def _union(parts: Sequence[ExperimentResults], table: str, key: str) -> pd.DataFrame:
    frames = [getattr(p, table) for p in parts]
    return pd.concat(frames, ignore_index=True).drop_duplicates(key).reset_index(drop=True)
