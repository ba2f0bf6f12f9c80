"""The machines an experiment was measured on, and how pages name them.

A *machine* on the pages is one environment (one `env_id`): results of environments with different fingerprints
are never pooled (generator.machine.environment), so two environments on the same hardware that differ only in
software (an onnxruntime upgrade on one laptop) are two machines, each named with the software it runs.

How a machine is named (`Machine.label`, plain text that may be untrusted: pages escape it):

1. the *target name* its trials carry (`perfsite run --target NAME`), when there is one;
2. otherwise a short CPU model and the first 6 hex digits of the fingerprint (`AMD EPYC 7B13 · 72765a`): the
   prefix keeps the label the same whatever other machines the store holds. The hostname is never part of a
   label: it can be private, and CI runners get a new one per job; pages show it, escaped, in the machine table;
3. a machine with the same hardware as another gets the software it differs in (`· onnxruntime 1.32.0`);
4. two labels still equal (one target name on two machines) each get the fingerprint prefix.

DataFrames in (columns of generator.results.schema), frozen records out, no I/O, deterministic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from generator.analysis.limits import unsettled_reason
from generator.analysis.run_summaries import EnvironmentSummary, environment_summary
from generator.cells import clean

# Where a trial's target name is stored: `trials.target_name` (written by `perfsite run --ray --target NAME`), or a
# string column of `environments` of these names; `trials.target` is the float `measure.target`, which the string
# check leaves out. Every name found for an environment is shown: trials under two target names with one
# fingerprint ran on identical hardware and software, one environment.
TARGET_COLUMNS = ("target_name", "target")
HARDWARE_FIELDS = ("cpu_model", "physical_cores", "logical_cores", "isa", "memory_gb")
SOFTWARE_FIELDS = ("onnxruntime", "onnx", "numpy", "python", "os", "providers")
PREFIX = 6  # fingerprint hex digits in a label
MAX_CPU = 32  # characters of the CPU model kept in a label
MAX_TARGET = 40  # characters of a target name kept in a label
# Vendor marks, the clock and words every CPU model repeats: `Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz`
# reads `Intel Xeon Platinum 8375C`.
_CPU_NOISE = re.compile(r"\((?:R|TM)\)|\b(?:CPU|Processor|\d+-Core)\b|@.*$", re.IGNORECASE)


@dataclass(frozen=True)
class Machine:
    """One environment trials of the experiment ran on (its hardware, software stack and trial count), named, with
    what only this page shows: target names, hostname, providers and measured limits (only settled ones:
    generator.analysis.limits)."""

    env: EnvironmentSummary
    label: str  # untrusted text (a target name): escape when rendering
    targets: tuple[str, ...]  # target names its trials carry (untrusted)
    hostname: str | None  # untrusted, possibly private: escaped, never in a label
    providers: tuple[str, ...]
    peak_gflops_fp32: float | None
    peak_gops_int8: float | None
    bandwidth_gbs: float | None
    limits_quality: str | None
    limits_probed_at: str | None
    limits_unknown: str | None = None  # probed, but not settled: why (the peaks above are then None)
    same_hardware: tuple[str, ...] = ()  # env_ids of the other machines with this hardware
    software_differs: tuple[str, ...] = ()  # the software fields it differs from them in

    @property
    def env_id(self) -> str:
        return self.env.env_id

    def field(self, name: str) -> Any:
        """A hardware or software field (HARDWARE_FIELDS, SOFTWARE_FIELDS): the environment's, or providers."""
        return self.providers if name == "providers" else getattr(self.env, name)

    def hardware(self) -> tuple[Any, ...]:
        return tuple(self.field(f) for f in HARDWARE_FIELDS)


def machines(environments: pd.DataFrame, trials: pd.DataFrame) -> list[Machine]:
    """The environments `trials` reference, named (module docstring), ordered by label then env_id."""
    counts = trials["env_id"].astype(str).value_counts().to_dict() if len(trials) else {}
    rows = environments.drop_duplicates("env_id")
    found = [_machine(row, trials, int(counts[str(row["env_id"])])) for _, row in rows.iterrows()
             if str(row["env_id"]) in counts]
    named = _named(_with_siblings(found))
    return sorted(named, key=lambda m: (m.label.casefold(), m.env_id))


def _machine(row: pd.Series, trials: pd.DataFrame, count: int) -> Machine:
    env_id = str(row["env_id"])

    def number(name: str) -> float | None:
        v = clean(row.get(name))
        return None if v is None else float(v)

    peaks = {name: number(name) for name in ("peak_gflops_fp32", "peak_gops_int8", "bandwidth_gbs")}
    quality = clean(row.get("limits_quality"))
    unknown = unsettled_reason(clean(row.get("limits_settled")), quality) if any(peaks.values()) else None
    return Machine(
        env=environment_summary(row, count), label="",
        targets=target_names(row, trials[trials["env_id"].astype(str) == env_id]),
        hostname=clean(row.get("hostname")), providers=_strings(clean(row.get("providers"))),
        **(dict.fromkeys(peaks) if unknown else peaks), limits_quality=quality,
        limits_probed_at=clean(row.get("limits_probed_at")), limits_unknown=unknown,
    )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in value) if value is not None else ()


def target_names(environment: pd.Series, trials: pd.DataFrame) -> tuple[str, ...]:
    """The target names stored for an environment (its row, or its trials' rows), sorted, without blanks."""
    names = {environment.get(c) for c in TARGET_COLUMNS}
    for column in (c for c in TARGET_COLUMNS if c in trials):
        names.update(trials[column].tolist())
    return tuple(sorted({" ".join(n.split()) for n in names if isinstance(n, str) and n.strip()}))


def short_cpu(cpu_model: str | None) -> str:
    """The CPU model without vendor marks, clock and filler words, at most MAX_CPU characters."""
    text = " ".join(_CPU_NOISE.sub(" ", cpu_model or "").split()) or "unknown CPU"
    return _cut(text, MAX_CPU)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _with_siblings(found: list[Machine]) -> list[Machine]:
    """Each machine with the machines of identical hardware and the software fields it differs from them in."""
    out = []
    for m in found:
        siblings = [o for o in found if o.env_id != m.env_id and o.hardware() == m.hardware()]
        differs = tuple(f for f in SOFTWARE_FIELDS if any(o.field(f) != m.field(f) for o in siblings))
        out.append(replace(m, same_hardware=tuple(sorted(o.env_id for o in siblings)), software_differs=differs))
    return out


def _named(found: list[Machine]) -> list[Machine]:
    labels = {m.env_id: _base_label(m) for m in found}
    # One target name on two machines: each gets its fingerprint prefix; a clash beyond that (two fingerprints
    # sharing a prefix) gets the whole env_id.
    for digits in (PREFIX, len(max(labels, key=len, default=""))):
        taken = list(labels.values())
        for m in found:
            if taken.count(labels[m.env_id]) > 1:
                labels[m.env_id] += f" · {m.env_id[:digits]}"
    return [replace(m, label=labels[m.env_id]) for m in found]


def _base_label(m: Machine) -> str:
    cpu = f"{short_cpu(m.env.cpu_model)} · {m.env_id[:PREFIX]}"
    base = _cut(" / ".join(m.targets), MAX_TARGET) if m.targets else cpu
    software = [f"{f} {software_text(m, f)}" for f in m.software_differs[:2]]
    return " · ".join([base, *software])


def software_text(m: Machine, field: str) -> str:
    value = m.field(field)
    if isinstance(value, tuple):
        return "+".join(value) or "none"
    return "unknown" if value is None else str(value)
