"""The plan: versions × configurations of a spec, less `exclude`, filtered by `--only`, with trial keys."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generator.axes import AXES
from generator.errors import RunError

# Axes every configuration has, in the order a label and a sort use them.
STANDARD_AXES = AXES
AXIS_DEFAULTS: dict[str, Any] = {
    "batch": 1,
    "threads": 1,
    "concurrency": 1,
    "optimization_level": "all",
    "provider": "cpu",
    "spinning": True,
    "inter_op_threads": 1,
}


@dataclass(frozen=True, order=True)
class Configuration:
    """One point of the sweep. `dims` binds the spec's other shape placeholders (e.g. seq_len)."""

    batch: int = 1
    threads: int = 1
    concurrency: int = 1
    optimization_level: str = "all"
    provider: str = "cpu"
    spinning: bool = True
    inter_op_threads: int = 1
    dims: tuple[tuple[str, int], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Flat mapping of every axis, placeholders included."""
        d = {a: getattr(self, a) for a in STANDARD_AXES}
        d.update(dict(self.dims))
        return d

    def binding(self) -> dict[str, int]:
        """Values of the shape placeholders: `batch` and the other sweep dims."""
        return {"batch": self.batch, **dict(self.dims)}

    @property
    def label(self) -> str:
        """Short label: batch, threads, concurrency always; other axes only when not at their default."""
        parts = [f"b{self.batch}", f"t{self.threads}", f"c{self.concurrency}"]
        if self.optimization_level != "all":
            parts.append(f"opt={self.optimization_level}")
        if self.provider != "cpu":
            parts.append(self.provider)
        if not self.spinning:
            parts.append("nospin")
        if self.inter_op_threads != 1:
            parts.append(f"inter{self.inter_op_threads}")
        dims = dict(self.dims)
        if "prompt_tokens" in dims and "new_tokens" in dims:  # a generative trial: prompt and output lengths
            parts += [f"prompt={dims.pop('prompt_tokens')}", f"new={dims.pop('new_tokens')}"]
        parts += [f"{k}={v}" for k, v in dims.items()]
        return " ".join(parts)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Configuration:
        std = {a: values.get(a, AXIS_DEFAULTS[a]) for a in STANDARD_AXES}
        dims = tuple(sorted((k, int(v)) for k, v in values.items() if k not in STANDARD_AXES))
        return cls(**std, dims=dims)

    def matches(self, partial: Mapping[str, Any]) -> bool:
        """True when every axis named in `partial` has that value here."""
        mine = self.as_dict()
        return all(k in mine and mine[k] == v for k, v in partial.items())


@dataclass(frozen=True)
class Trial:
    version: str
    config: Configuration

    @property
    def label(self) -> str:
        return f"{self.version} {self.config.label}"


def sweep_axes(sweep: Any) -> dict[str, list[Any]]:
    """Every axis of a validated sweep with its values, standard axes first, placeholders after (sorted)."""
    raw = sweep.model_dump() if hasattr(sweep, "model_dump") else dict(sweep)
    axes = {a: list(raw.get(a) or [AXIS_DEFAULTS[a]]) for a in STANDARD_AXES}
    for name in sorted(k for k in raw if k not in STANDARD_AXES):
        axes[name] = list(raw[name])
    return axes


def spec_axes(spec: Any) -> dict[str, list[Any]]:
    """sweep_axes of a validated spec's sweep with a generative experiment's prompt and output lengths
    (`generate:`), placeholders of no input shape."""
    raw = spec.sweep.model_dump() if hasattr(spec.sweep, "model_dump") else dict(spec.sweep)
    generate = getattr(spec, "generate", None)
    if generate is not None:
        raw.update(prompt_tokens=list(generate.prompt_tokens), new_tokens=list(generate.new_tokens))
    return sweep_axes(raw)


def plan_configurations(spec: Any) -> list[Configuration]:
    """The sweep's cartesian product less every combination an `exclude` entry matches."""
    axes = spec_axes(spec)
    names = list(axes)
    combos = itertools.product(*axes.values())
    configs = [Configuration.from_mapping(dict(zip(names, combo, strict=True))) for combo in combos]
    excludes = list(spec.exclude or [])
    return [c for c in configs if not any(c.matches(e) for e in excludes)]


def plan_trials(spec: Any) -> list[Trial]:
    """Configurations outermost, versions inside, in spec order: the order the runner interleaves them."""
    return [Trial(v, c) for c in plan_configurations(spec) for v in spec.models]


def parse_only(only: str | None, allowed: Sequence[str]) -> dict[str, set[str]]:
    """`version=fp32,batch=1,batch=4` -> {version: {fp32}, batch: {1, 4}} (same key twice means either)."""
    filters: dict[str, set[str]] = {}
    for item in (only or "").split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in allowed:
            raise RunError(
                f"--only {only!r}: {item!r} is not KEY=VALUE with a known key. Allowed keys: "
                f"{', '.join(allowed)}; separate several with commas, e.g. --only version=fp32,batch=1."
            )
        filters.setdefault(key, set()).add(value.strip().lower())
    return filters


def filter_trials(trials: Iterable[Trial], only: str | None, axes: Sequence[str]) -> list[Trial]:
    """Keep the trials that match every key of `--only` (values compared as text, case-insensitive)."""
    filters = parse_only(only, ["version", *axes])
    kept = []
    for t in trials:
        values = {"version": t.version, **t.config.as_dict()}
        if all(str(values.get(k)).lower() in vals for k, vals in filters.items()):
            kept.append(t)
    return kept


def no_trial_message(trials: Sequence[Trial], only: str | None, axes: Sequence[str], where: str) -> str:
    """Why `--only` selected nothing, with the values each of its keys can take in this spec's sweep."""
    return (f"--only {only!r} leaves no trial of {where} to run: no planned trial matches every key. "
            + values_to_choose(trials, only, axes))


def values_to_choose(trials: Sequence[Trial], only: str | None, axes: Sequence[str]) -> str:
    """The values each key of `--only` can take in this spec's sweep, with an example."""
    filters = parse_only(only, ["version", *axes])
    available: dict[str, list[str]] = {}
    for t in trials:
        values = {"version": t.version, **t.config.as_dict()}
        for key in filters:
            text = str(values.get(key))
            if text not in available.setdefault(key, []):
                available[key].append(text)
    listed = "; ".join(f"{k}: {', '.join(v) or 'none'}" for k, v in available.items())
    example = ",".join(f"{k}={v[0]}" for k, v in available.items() if v)
    return (
        f"The values the spec's sweep has for those keys are {listed}"
        + (f"; for example --only {example}." if example else ".")
        + " The spec may have changed since the command was written: check its `models:` and `sweep:`."
    )


def unmatched_values(trials: Sequence[Trial], only: str | None, axes: Sequence[str]) -> list[str]:
    """The `KEY=VALUE` items of `--only` that no planned trial has. With a key named twice (either value), one
    misspelt value once dropped its trials without a word while the other value's ran."""
    filters = parse_only(only, ["version", *axes])
    planned: dict[str, set[str]] = {}
    for t in trials:
        for key, value in {"version": t.version, **t.config.as_dict()}.items():
            planned.setdefault(key, set()).add(str(value).lower())
    return [f"{k}={v}" for k, vals in filters.items() for v in sorted(vals) if v not in planned.get(k, set())]


def only_for_each(plans: Sequence[tuple[str, Sequence[Trial], Sequence[str]]], only: str) -> list[str | None]:
    """`--only` over several specs, each given as (its path, its planned trials, its sweep axes): the filter
    selects across them. Returns, per spec, the part of `only` that applies to it (its items whose value some
    of its trials have), or None for a spec none of whose trials matches every key (it is skipped: `--only
    seq_len=32` over the quickstart and a transformer measures the transformer only). An item no spec has is
    an error, as for one spec: a misspelt value must not quietly narrow the run."""
    items = [i.strip() for i in only.split(",") if i.strip()]
    known = sorted({"version", *(a for _, _, axes in plans for a in axes)})
    parse_only(only, known)  # KEY=VALUE with a key some spec has
    out: list[str | None] = []
    found: set[str] = set()
    for _, trials, axes in plans:
        mine = [i for i in items if i.partition("=")[0].strip() in ("version", *axes)]
        present = [i for i in mine if not unmatched_values(trials, i, axes)]
        found.update(present)
        # Every key must keep a value this spec plans: a key whose values it lacks leaves none of its trials.
        keys = {i.partition("=")[0].strip() for i in items}
        applies = keys == {i.partition("=")[0].strip() for i in present}
        out.append(",".join(present) if applies and filter_trials(trials, ",".join(present), axes) else None)
    missing = [i for i in items if i not in found]
    if missing:
        keys = sorted({i.partition("=")[0].strip() for i in missing})
        offers = [f"{key} in {path}: {', '.join(_planned_values(trials, key))}" for path, trials, axes in plans
                  for key in keys if key in ("version", *axes)]
        raise RunError(f"--only {only!r}: no planned trial of any spec has {', '.join(missing)}. The specs "
                       f"plan {'; '.join(offers)}.")
    if all(part is None for part in out):
        raise RunError(f"--only {only!r} leaves no trial to run: no spec has a trial that matches every key "
                       f"({', '.join(path for path, _, _ in plans)}).")
    return out


def _planned_values(trials: Sequence[Trial], key: str) -> list[str]:
    return list(dict.fromkeys(str({"version": t.version, **t.config.as_dict()}.get(key)) for t in trials))


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


# The version of perfsite's way of measuring (the worker's timed loop, what a process reports, how the runner
# judges rounds). Part of every trial key: bump it when a change makes figures measured before it no longer
# comparable with figures measured after it (not for a change of pages or of analysis), so that `perfsite run`
# measures stored trials again instead of mixing the two. 2: per-request run-delay, adaptive and paired rounds.
MEASUREMENT_VERSION = 2


def trial_key(
    trial: Trial,
    *,
    model_sha256: str,
    inputs: Mapping[str, Any],
    measure: Mapping[str, Any],
    quick: bool,
    env_fingerprint: str,
    target: str | None = None,
    engine: str | None = None,
) -> str:
    """Hash of everything that makes two measurements comparable; equal keys are the same trial.

    The version name is part of it so that two versions built to byte-identical files stay two trials; a changed
    model file changes the key through its sha256, so stale results are never reused; input files enter by
    their contents (the runner's keyed_inputs), and the measurement method by MEASUREMENT_VERSION. A run fanned
    out on Ray adds the target (the kind of machine asked for), so that two targets of identical machines stay
    two trials; without one the payload, and so every key stored before targets existed, is unchanged. So does
    an engine other than perfsite's own decode loop (`engine: genai`, with its release).
    """
    payload = {
        "method": MEASUREMENT_VERSION,
        "version": trial.version,
        "model_sha256": model_sha256,
        "config": trial.config.as_dict(),
        "inputs": inputs,
        "measure": measure,
        "quick": quick,
        "env": env_fingerprint,
    }
    if target is not None:
        payload["target"] = target
    if engine is not None:  # a generative version's other engine and its release (None: perfsite's own loop)
        payload["engine"] = engine
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:20]
