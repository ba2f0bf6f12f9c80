"""The same versions and configurations across machines: figures with 95 % intervals side by side, the best
machine under the latency threshold, and where the time goes on each machine.

- **Figures**: a trial's headline latency and throughput as stored, each with the 95 % interval of
  generator.results.intervals.one_side over its measurement processes (each process judged by its clean
  requests, generator.analysis.stats.process_samples): the interval's relative half-width, on the log scale,
  around the stored figure, as the runner's `ci_halfwidth` is. One process gives no interval.
- **Rows**: one per version and configuration that two machines or more measured successfully. A machine that
  measured a configuration several times (different measurement settings, or the model file changed) shows
  its most recently finished ok trial.
- **Best machine under the threshold**: generator.analysis.summaries.sweet_spot over the trials of every
  machine, per version and over all versions: the highest throughput whose headline latency is at or under the
  spec's `latency_threshold_ms`, each machine at its own best configuration. Against the runner-up machine the
  throughput ratio gets Welch's interval with the between-run drift floor (two machines are never measured in
  the same rounds), so that the page says "about as fast" when the interval includes 1.
- **Layer types**: per version, time per op type of the profiled pass at one configuration profiled on two
  machines or more (the default profiled one, batch 1 at the most threads, when it is among them).

Pure functions over an experiment's tables, deterministic (ties broken by label, configuration, trial key).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from generator.analysis import stats
from generator.analysis.machines import Machine, machines
from generator.analysis.profile import op_type_times
from generator.analysis.records_compare import RatioCI
from generator.analysis.summaries import (
    TrialSummary,
    default_profile_entry,
    sweet_spot,
    trial_summary,
)
from generator.results import intervals
from generator.spec.fields import QUANTILES

MIN_MACHINES = 2  # environments an experiment needs for its machines page


@dataclass(frozen=True)
class Figure:
    """A figure and its 95 % interval (None without one: a single measurement process)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    processes: int = 0


@dataclass(frozen=True)
class MachinePoint:
    """One ok trial on one machine, with its intervals (a point of the chart, a cell of the tables)."""

    env_id: str
    trial: TrialSummary
    latency_ms: Figure
    throughput_ips: Figure
    throughput_figures: tuple[float, ...] = ()  # each measurement process's (clean) throughput


@dataclass(frozen=True)
class ConfigRow:
    """One version at one configuration, a cell per machine (None: not measured there, or failed)."""

    version: str
    config_label: str
    cells: tuple[MachinePoint | None, ...]  # in MachineComparison.machines order
    fastest: str  # env_id with the lowest headline latency


@dataclass(frozen=True)
class BestMachine:
    """The best machine under the threshold for one version (or every version when `version` is None)."""

    version: str | None
    best: MachinePoint | None  # None: no machine met the threshold
    per_machine: tuple[TrialSummary | None, ...]  # each machine's own sweet spot (MachineComparison order)
    runner_up: MachinePoint | None = None  # the best other machine's sweet spot
    ratio: RatioCI | None = None  # throughput of best / runner-up
    lowest: MachinePoint | None = None  # the lowest latency anywhere, when no machine met the threshold


@dataclass(frozen=True)
class OpTypeRow:
    op_type: str  # untrusted text
    times_us: tuple[float | None, ...]  # per inference, per machine of the table
    shares: tuple[float | None, ...]


@dataclass(frozen=True)
class LayerTypeTable:
    """Time per op type of one version at one configuration on each machine that profiled it."""

    version: str
    config_label: str
    machines: tuple[str, ...]  # env_ids, MachineComparison order
    trial_keys: tuple[str, ...]
    rows: tuple[OpTypeRow, ...]
    kernel_sum_us: tuple[float, ...]


@dataclass(frozen=True)
class MachineComparison:
    machines: tuple[Machine, ...]
    percentile: str
    threshold_ms: float | None
    points: tuple[MachinePoint, ...]  # every ok trial, machines order then version and configuration
    rows: tuple[ConfigRow, ...]  # versions in spec order, then configuration order
    single: int  # version × configurations measured successfully on one machine only
    best: tuple[BestMachine, ...]  # per version, spec order
    overall: BestMachine
    layer_types: tuple[LayerTypeTable, ...]
    # What a trial's throughput counts: a generative trial's items are its output tokens (runner.generative_rows).
    unit: str = "items/s"

    def label(self, env_id: str) -> str:
        return next(m.label for m in self.machines if m.env_id == env_id)


def compare_machines(results: Any, versions: list[str], percentile: str, threshold_ms: float | None,
                     first_values: dict[str, Any]) -> MachineComparison | None:
    """The machines comparison of one experiment (generator.results.store.ExperimentResults), None with fewer
    than MIN_MACHINES environments. `versions` in spec order; `first_values`: each axis's first swept value."""
    found = machines(results.environments, results.trials)
    if len(found) < MIN_MACHINES:
        return None
    order = {m.env_id: i for i, m in enumerate(found)}
    latest = _latest_ok(results.trials, order)
    points = _points(results, latest, percentile)
    version_rank = {v: i for i, v in enumerate(versions)}
    points.sort(key=lambda p: (order[p.env_id], version_rank.get(p.trial.version, len(versions)),
                               p.trial.version, p.trial.sort_key(), p.trial.trial_key))
    rows, single = _rows(points, [m.env_id for m in found], version_rank)
    known = sorted({p.trial.version for p in points}, key=lambda v: (version_rank.get(v, len(versions)), v))
    best = tuple(best_machine([p for p in points if p.trial.version == v], found, threshold_ms, v) for v in known)
    return MachineComparison(
        machines=tuple(found), percentile=percentile, threshold_ms=threshold_ms, points=tuple(points),
        rows=tuple(rows), single=single, best=best, overall=best_machine(points, found, threshold_ms, None),
        layer_types=tuple(t for v in known if (t := layer_type_table(results.nodes, points, found, v,
                                                                       first_values)) is not None),
        unit="output tokens/s" if getattr(results.spec, "generate", None) is not None else "items/s",
    )


def _latest_ok(trials: pd.DataFrame, order: dict[str, int]) -> list[TrialSummary]:
    """Per machine, version and configuration, the most recently finished ok trial (`trials` is in finishing
    order, as generator.results.store.load_experiment sorts it)."""
    chosen: dict[tuple, TrialSummary] = {}
    for _, row in trials.iterrows():
        t = trial_summary(row)
        if t.ok and t.env_id in order:
            chosen[(t.env_id, t.version, t.sort_key())] = t
    return list(chosen.values())


def _points(results: Any, trials: list[TrialSummary], percentile: str) -> list[MachinePoint]:
    """Each trial with its intervals. process_samples gets the whole tables: it finds a trial's rows through
    their index (generator.results.by_trial, built once an experiment), where a piece of a split table would
    be indexed again, for each trial."""
    known = _preemption_known(results.trials)
    out = []
    for t in trials:
        samples = stats.process_samples(results.processes, results.latencies, t.trial_key,
                                        known.get(t.trial_key, False), t.ci_sequential)
        out.append(MachinePoint(t.env_id, t, _latency_figure(t, samples, percentile),
                                _figure(t.throughput_ips, list(samples.throughput_ips), samples.sequential),
                                samples.throughput_ips))
    return out


def _preemption_known(trials: pd.DataFrame) -> dict[str, bool]:
    """Per trial, whether its requests carry run-delay (results schema 2): only then are clean requests known."""
    return {str(k): isinstance(v, bool | np.bool_) and bool(v)
            for k, v in zip(trials["trial_key"], trials["preemption_known"], strict=True)}


def _latency_figure(t: TrialSummary, samples: stats.ProcessSamples, percentile: str) -> Figure:
    # The interval follows the stored headline, p95 where it stands in for p99 (generator.results.headline).
    q_name = t.headline_percentile or percentile
    q = stats.percentile_of(q_name) if q_name in QUANTILES else 0.5
    return _figure(t.latency_headline_ms, [float(np.quantile(x, q)) for x in samples.latencies_ms if x.size],
                   samples.sequential)


def _figure(value: float | None, per_process: list[float], sequential: bool = False) -> Figure:
    """The stored figure with the relative half-width of the t interval over the per-process figures (the
    confidence sequence, as the runner stopped on it, for a trial measured `sequential`ly)."""
    ci = intervals.one_side(per_process, sequential=sequential)
    finite = sum(1 for v in per_process if v is not None and math.isfinite(v) and v > 0)
    if value is None or ci is None or not math.isfinite(ci.half):
        return Figure(value, processes=finite)
    return Figure(value, value * math.exp(-ci.half), value * math.exp(ci.half), finite)


def _rows(points: list[MachinePoint], env_ids: list[str],
          version_rank: dict[str, int]) -> tuple[list[ConfigRow], int]:
    """A row per version and configuration measured on two machines or more; and how many were measured on
    one machine only."""
    groups: dict[tuple, dict[str, MachinePoint]] = {}
    for p in points:
        groups.setdefault((p.trial.version, p.trial.sort_key()), {})[p.env_id] = p
    ordered = sorted(groups, key=lambda k: (version_rank.get(k[0], len(version_rank)), k[0], k[1]))
    rows = []
    for key in ordered:
        cells = groups[key]
        if len(cells) < MIN_MACHINES:
            continue
        first = next(iter(cells.values())).trial
        fastest = min(cells.values(), key=lambda p: (p.trial.latency_headline_ms, env_ids.index(p.env_id)))
        rows.append(ConfigRow(first.version, first.config_label, tuple(cells.get(e) for e in env_ids),
                              fastest.env_id))
    return rows, len(groups) - len(rows)


def best_machine(points: list[MachinePoint], found: list[Machine], threshold_ms: float | None,
                 version: str | None) -> BestMachine:
    """The sweet spot over every machine's trials (module docstring); with no threshold, or none met, `best`
    is None and `lowest` the lowest headline latency measured."""
    by_key = {p.trial.trial_key: p for p in points}
    per_machine = tuple(sweet_spot([p.trial for p in points if p.env_id == m.env_id], threshold_ms) for m in found)
    winner = sweet_spot([p.trial for p in points], threshold_ms)
    if winner is None:
        lowest = min(points, key=lambda p: (p.trial.latency_headline_ms, p.trial.trial_key), default=None)
        return BestMachine(version, None, per_machine, lowest=lowest)
    others = [t for t in per_machine if t is not None and t.env_id != winner.env_id]
    second = min(others, key=lambda t: (-t.throughput_ips, t.latency_headline_ms, t.trial_key), default=None)
    runner_up = by_key[second.trial_key] if second else None
    ratio = _throughput_ratio(by_key[winner.trial_key], runner_up) if runner_up else None
    return BestMachine(version, by_key[winner.trial_key], per_machine, runner_up, ratio)


def _throughput_ratio(best: MachinePoint, other: MachinePoint) -> RatioCI:
    """best / other throughput with the interval of generator.analysis.stats.figures_ratio, unpaired with each
    run's drift (intervals.run_drift); the stored figures' ratio without an interval when a side has one process."""
    processes = (other.throughput_ips.processes, best.throughput_ips.processes)
    figures = (list(other.throughput_figures), list(best.throughput_figures))
    drift = tuple(intervals.run_drift(intervals.BETWEEN_RUN_SD, p.trial.process_median_spread) for p in (other, best))
    ci = stats.figures_ratio(figures, ((), ()), False, drift, processes)
    if ci is not None:
        return ci
    point = best.trial.throughput_ips / other.trial.throughput_ips
    return RatioCI(point, point, point, False, "a single measurement process: no interval", *processes)


def layer_type_table(nodes: pd.DataFrame, points: list[MachinePoint], found: list[Machine], version: str,
                     first_values: dict[str, Any]) -> LayerTypeTable | None:
    """Time per op type of `version` on every machine that profiled one configuration (module docstring)."""
    profiled = [p for p in points if p.trial.version == version and p.trial.profiled]
    by_config: dict[tuple, list[MachinePoint]] = {}
    for p in profiled:
        by_config.setdefault(p.trial.sort_key(), []).append(p)
    shared = {k: v for k, v in by_config.items() if len(v) >= MIN_MACHINES}
    if not shared:
        return None
    wanted = default_profile_entry([p.trial for p in profiled], first_values)
    preferred = [k for k, v in shared.items() if all(v[0].trial.axis_value(a) == x for a, x in wanted.items())]
    key = preferred[0] if preferred else min(shared, key=lambda k: (-len(shared[k]), k))
    chosen = sorted(shared[key], key=lambda p: [m.env_id for m in found].index(p.env_id))
    times = [{o.op_type: o for o in op_type_times(nodes, p.trial.trial_key)} for p in chosen]
    ops = sorted({op for t in times for op in t}, key=lambda op: (-max(t[op].dur_us if op in t else 0.0
                                                                      for t in times), op))
    rows = tuple(OpTypeRow(op, tuple(t[op].dur_us if op in t else None for t in times),
                           tuple(t[op].share if op in t else None for t in times)) for op in ops)
    return LayerTypeTable(version, chosen[0].trial.config_label, tuple(p.env_id for p in chosen),
                          tuple(p.trial.trial_key for p in chosen), rows,
                          tuple(sum(o.dur_us for o in t.values()) for t in times))

