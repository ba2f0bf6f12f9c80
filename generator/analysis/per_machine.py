"""One experiment's results split by machine, so that every comparison is of a machine with itself.

A store fed by `--target`, Ray or a results folder shared in git holds trials of several machines; a page or a
command that picked "the newest trial per version and configuration" compared fp32 on one machine with int8 on
another. Two notions of machine, each where it belongs:

- within one build (a report's pages, `perfsite compare`), a machine is one environment (`env_id`), as on the
  machines page (generator.analysis.machines): `per_environment` splits the results, and each part is reported
  as if it were the only one;
- across commits (the trend, `perfsite diff`), a machine is what `perfsite query` calls the target: the target
  name, else the CPU model and its logical CPUs (`machine_names`). An onnxruntime upgrade changes the environment
  but not the machine, and is a change the history must show, not a new series.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from generator.analysis.machines import Machine, machines
from generator.cells import clean
from generator.results.store import TRIAL_TABLES, ExperimentResults


@dataclass(frozen=True)
class MachineResults:
    machine: Machine
    results: ExperimentResults  # this machine's trials only, with their rows of every table


def per_environment(results: ExperimentResults) -> list[MachineResults]:
    """The results of each environment its trials were measured on, in machines() order (label, then env_id).
    A store of one environment gives one part holding the results unchanged."""
    found = machines(results.environments, results.trials)
    if len(found) == 1:
        return [MachineResults(found[0], results)]
    return [MachineResults(m, only_environment(results, m.env_id)) for m in found]


def only_environment(results: ExperimentResults, env_id: str) -> ExperimentResults:
    """The experiment as measured on one environment: its trials and their rows, its environment and runs."""
    trials = results.trials[results.trials["env_id"].astype(str) == env_id].reset_index(drop=True)
    keys = set(trials["trial_key"].astype(str))

    def keyed(table: pd.DataFrame) -> pd.DataFrame:
        return table[table["trial_key"].astype(str).isin(keys)].reset_index(drop=True)

    def of_env(table: pd.DataFrame) -> pd.DataFrame:
        return table[table["env_id"].astype(str) == env_id].reset_index(drop=True)

    return replace(
        results, trials=trials, environments=of_env(results.environments), runs=of_env(results.runs),
        incomplete={k: v for k, v in results.incomplete.items() if k in keys},
        **{name: keyed(getattr(results, name)) for name in TRIAL_TABLES},
    )


def machine_names(trials: pd.DataFrame, environments: pd.DataFrame) -> pd.Series:
    """Each trial's machine across history (module docstring): its target name, else "CPU model, N CPUs", as
    `perfsite query` names the target. Indexed like `trials`; plain text that may be untrusted."""
    by_env: dict[str, str] = {}
    for _, row in environments.iterrows():
        cpu = clean(row.get("cpu_model")) or "unknown CPU"
        cores = clean(row.get("logical_cores"))
        by_env[str(row["env_id"])] = f"{' '.join(str(cpu).split())}, {int(cores) if cores is not None else '?'} CPUs"
    names = []
    for _, row in trials.iterrows():
        target = clean(row.get("target_name")) if "target_name" in trials else None
        named = " ".join(target.split()) if isinstance(target, str) and target.strip() else None
        names.append(named or by_env.get(str(row["env_id"]), "unknown machine"))
    return pd.Series(names, index=trials.index, dtype=object)
