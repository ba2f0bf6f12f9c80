"""Summaries of one experiment's results for the report pages: DataFrames in, frozen records out, no I/O.

Columns are those of ``generator.results.schema``. Every function is deterministic: ties are broken by the
trial key so that the same results always give the same records (and byte-identical pages).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.axes import AXES
from generator.cells import clean
from generator.results.headline import stored_percentile

# Configuration axes that are columns of `trials`; any other sweep axis lives in the `dims` JSON column.
AXIS_COLUMNS = AXES


def optional_float(value: Any) -> float | None:
    value = clean(value)
    return None if value is None else float(value)


def optional_int(value: Any) -> int | None:
    value = clean(value)
    return None if value is None else int(value)


def _str(value: Any) -> str | None:
    value = clean(value)
    return None if value is None else str(value)


def parse_dims(value: Any) -> tuple[tuple[str, Any], ...]:
    """The `dims` JSON object as a sorted tuple of (placeholder, value); empty when missing."""
    text = clean(value)
    if not text:
        return ()
    return tuple(sorted(json.loads(text).items()))


@dataclass(frozen=True)
class TrialSummary:
    """One trial's configuration and figures, as the pages show them."""

    trial_key: str
    version: str
    env_id: str
    config_label: str
    batch: int
    threads: int
    concurrency: int
    optimization_level: str
    provider: str
    spinning: bool
    inter_op_threads: int
    dims: tuple[tuple[str, Any], ...]
    status: str
    error: str | None
    quick: bool
    latency_headline_ms: float | None
    latency_mean_ms: float | None
    latency_p50_ms: float | None
    latency_std_ms: float | None
    throughput_ips: float | None
    cores_used: float | None
    cores_expected: float | None
    cv: float | None
    process_median_spread: float | None
    processes: int | None
    iterations: int | None
    noisy: bool
    noise_reasons: tuple[str, ...]
    load_ms: float | None
    first_run_ms: float | None
    peak_rss_mb: float | None
    arena_mb: float | None
    profiled: bool
    profile_error: str | None
    model_run_us: float | None
    kernel_sum_us: float | None
    profiled_latency_us: float | None
    percentiles_ms: tuple[tuple[str, float | None], ...]  # (p50, ...), (p90, ...), ... as measured
    # Results schema 2: preemption accounting and adaptive measurement (None / False in older results).
    preemption_known: bool = False
    preempted_share: float | None = None
    ci_halfwidth: float | None = None  # relative half-width of the headline's 95 % interval
    target: float | None = None
    budget_exhausted: bool = False
    measuring_s: float | None = None
    profile_iterations: int | None = None  # inferences the profiled pass's statistics are over, as stored
    target_name: str | None = None  # the kind of machine a Ray run measured it on (`--target`, `targets:`)
    # The percentile latency_headline_ms reports: the trial's stored one, p95 standing in for p99 below
    # generator.results.headline.P99_MIN_SAMPLES requests (None when the trial's percentile was not stored).
    headline_percentile: str | None = None
    usable_processes: int | None = None  # processes with enough clean requests (None: preemption unknown)
    # Results schema 5: the profiled inferences of several processes (generator.runner.profiles).
    profile_processes: int | None = None
    profile_rounds: tuple[int, ...] | None = None  # each profiling process's round; None: not recorded
    run_id: str | None = None
    profiled_latency_process_us: tuple[float, ...] = ()
    profiler_cost_process_us: tuple[float, ...] = ()
    # Why the trial is too uncertain to settle any finding it takes part in (generator.analysis.findings
    # .uncertain_trials), set by the pages; None: not flagged.
    uncertain: str | None = None
    ci_sequential: bool = False  # its intervals are confidence sequences (generator.results.sequential)

    @property
    def ok(self) -> bool:
        figures = (self.latency_headline_ms, self.throughput_ips)
        return self.status == "ok" and None not in figures

    @property
    def clean_figures(self) -> bool:
        """Whether the figures are the clean requests of the usable processes: False when preemption is unknown
        or no process kept enough clean requests, and the runner fell back to every request of every process
        (generator.runner.aggregate.measurement_columns)."""
        return self.preemption_known and self.usable_processes != 0

    @property
    def judged_processes(self) -> int | None:
        """The processes the figures and the headline's interval are computed over: the usable ones when the
        figures are clean, every process otherwise."""
        if self.clean_figures and self.usable_processes is not None:
            return self.usable_processes
        return self.processes

    @property
    def oversubscribed(self) -> bool:
        """More threads than the machine has cores (cores_expected is capped by them): the requests wait for
        each other, so their latencies vary by design (generator.runner.aggregate.noise_reasons)."""
        wanted = self.threads * self.concurrency
        return self.cores_expected is not None and wanted > self.cores_expected

    def axis_value(self, axis: str) -> Any:
        """The value of a configuration axis, whether a trials column or a `dims` placeholder."""
        if axis in AXIS_COLUMNS:
            return getattr(self, axis)
        return dict(self.dims).get(axis)

    def sort_key(self) -> tuple:
        """Order of configurations along a version's line: batch, then threads, concurrency, the rest."""
        rest = (self.optimization_level, self.provider, self.spinning, self.inter_op_threads)
        return (self.batch, self.threads, self.concurrency, tuple(str(v) for v in rest), str(self.dims))


def trial_summary(row: pd.Series) -> TrialSummary:
    """Build a TrialSummary from one row of the `trials` table."""
    reasons = clean(row.get("noise_reasons")) or ""

    def number(column: str) -> float | None:
        return optional_float(row.get(column))

    def count(column: str) -> int | None:
        return optional_int(row.get(column))

    return TrialSummary(
        trial_key=str(row["trial_key"]), version=str(row["version"]), env_id=str(row["env_id"]),
        config_label=str(row["config_label"]), batch=int(row["batch"]), threads=int(row["threads"]),
        concurrency=int(row["concurrency"]), optimization_level=str(row["optimization_level"]),
        provider=str(row["provider"]), spinning=bool(row["spinning"]),
        inter_op_threads=int(row["inter_op_threads"]), dims=parse_dims(row["dims"]),
        status=str(row["status"]), error=clean(row.get("error")), quick=bool(clean(row.get("quick"))),
        latency_headline_ms=number("latency_headline_ms"),
        latency_mean_ms=number("latency_mean_ms"), latency_p50_ms=number("latency_p50_ms"),
        latency_std_ms=number("latency_std_ms"), throughput_ips=number("throughput_ips"),
        cores_used=number("cores_used"), cores_expected=number("cores_expected"),
        cv=number("cv"), process_median_spread=number("process_median_spread"),
        processes=count("processes"), iterations=count("iterations"),
        noisy=bool(clean(row.get("noisy"))), noise_reasons=tuple(r.strip() for r in reasons.split(";") if r.strip()),
        load_ms=number("load_ms"), first_run_ms=number("first_run_ms"),
        peak_rss_mb=number("peak_rss_mb"), arena_mb=number("arena_mb"),
        profiled=bool(clean(row.get("profiled"))), profile_error=clean(row.get("profile_error")),
        model_run_us=number("model_run_us"), kernel_sum_us=number("kernel_sum_us"),
        profiled_latency_us=number("profiled_latency_us"),
        percentiles_ms=tuple((p, number(f"latency_{p}_ms")) for p in ("p50", "p90", "p95", "p99")),
        preemption_known=bool(clean(row.get("preemption_known"))),
        preempted_share=number("preempted_share"), ci_halfwidth=number("ci_halfwidth"),
        target=number("target"), budget_exhausted=bool(clean(row.get("budget_exhausted"))),
        measuring_s=number("measuring_s"), profile_iterations=count("profile_iterations"),
        target_name=clean(row.get("target_name")), headline_percentile=_headline_percentile(row),
        usable_processes=count("usable_processes"),
        profile_processes=count("profile_processes"),
        profile_rounds=_ints(row.get("profile_rounds")),
        run_id=_str(row.get("run_id")),
        profiled_latency_process_us=_floats(row.get("profiled_latency_process_us")),
        profiler_cost_process_us=_floats(row.get("profiler_cost_process_us")),
        ci_sequential=bool(clean(row.get("ci_sequential"))),
    )


def _ints(value: Any) -> tuple[int, ...] | None:
    """A list cell of integers as a tuple; None when missing (older results)."""
    if value is None or isinstance(value, float):
        return None
    return tuple(int(v) if v is not None else -1 for v in value)


def _floats(value: Any) -> tuple[float, ...]:
    """A list cell (a numpy array in pandas) as a tuple of floats; () when missing."""
    if value is None or isinstance(value, float):
        return ()
    return tuple(float(v) if v is not None else math.nan for v in value)


def _headline_percentile(row: pd.Series) -> str | None:
    percentile = clean(row.get("percentile"))
    return None if percentile is None else stored_percentile(str(percentile), optional_float(row.get("latency_p99_ms")))


def trial_summaries(trials: pd.DataFrame, version_order: list[str] | None = None) -> list[TrialSummary]:
    """Every trial, ordered by version (spec order, then unknown versions by name), then configuration."""
    summaries = [trial_summary(row) for _, row in trials.iterrows()]
    order = ordered_versions(trials, version_order)
    return sorted(summaries, key=lambda t: (order.index(t.version), t.sort_key(), t.trial_key))


def ordered_versions(trials: pd.DataFrame, version_order: list[str] | None = None) -> list[str]:
    """Versions in spec order, then any other version found in the trials, by name."""
    known = list(version_order or [])
    found = sorted(set(trials["version"].astype(str)) - set(known)) if len(trials) else []
    return known + found


@dataclass(frozen=True)
class VersionBest:
    """A version's best results among its ok trials (None when it has no ok trial, or none qualifies)."""

    version: str
    best_throughput: TrialSummary | None
    best_latency: TrialSummary | None
    sweet_spot: TrialSummary | None


def sweet_spot(trials: list[TrialSummary], latency_threshold_ms: float | None) -> TrialSummary | None:
    """The highest-throughput ok trial whose headline latency is at or under the threshold.

    Ties on throughput go to the lower latency, then the trial key. None when there is no threshold or no ok
    trial meets it.
    """
    if latency_threshold_ms is None:
        return None
    under = [t for t in trials if t.ok and t.latency_headline_ms <= latency_threshold_ms]
    return min(under, key=lambda t: (-t.throughput_ips, t.latency_headline_ms, t.trial_key), default=None)


def version_bests(
    trials: list[TrialSummary], versions: list[str], latency_threshold_ms: float | None
) -> list[VersionBest]:
    """Per version: best throughput, lowest headline latency, and the sweet spot under the threshold."""
    bests = []
    for version in versions:
        ok = [t for t in trials if t.version == version and t.ok]
        bests.append(VersionBest(
            version=version,
            best_throughput=min(ok, key=lambda t: (-t.throughput_ips, t.latency_headline_ms, t.trial_key),
                                default=None),
            best_latency=min(ok, key=lambda t: (t.latency_headline_ms, -t.throughput_ips, t.trial_key),
                             default=None),
            sweet_spot=sweet_spot(ok, latency_threshold_ms),
        ))
    return bests


@dataclass(frozen=True)
class VersionInfo:
    """What ran for a version: its model file(s) and how many trials succeeded or failed."""

    version: str
    model_sha256: str | None  # of the most recently finished trial
    model_bytes: int | None
    model_files: int  # distinct model files measured under this name (more than one: the model changed)
    trials_ok: int
    trials_failed: int
    source: str | None  # how the version was made, as recorded by the run (`fp32 → quantize(static_qdq)`)
    notes: str | None  # notes from building it (e.g. a pre-processing fallback)


def version_infos(trials: pd.DataFrame, versions: list[str]) -> list[VersionInfo]:
    """Model file, source, notes and trial counts per version, from its latest finished trial."""
    infos = []
    for version in versions:
        rows = trials[trials["version"].astype(str) == version]
        latest = rows.sort_values(["finished_at", "trial_key"], na_position="first").tail(1)
        infos.append(VersionInfo(
            version=version,
            model_sha256=_latest(latest, "model_sha256"), model_bytes=optional_int(_latest(latest, "model_bytes")),
            model_files=int(rows["model_sha256"].nunique()),
            trials_ok=int((rows["status"] == "ok").sum()),
            trials_failed=int((rows["status"] != "ok").sum()),
            source=_latest(latest, "version_source"), notes=_latest(latest, "version_notes"),
        ))
    return infos


def _latest(latest: pd.DataFrame, column: str) -> Any:
    return clean(latest[column].iloc[0]) if len(latest) and column in latest else None


@dataclass(frozen=True)
class ProfileTarget:
    """A configuration to show on a version's profile page: what was asked for, and the trial that matches."""

    wanted: tuple[tuple[str, Any], ...]  # the (partial) profile entry, axis -> value, sorted by axis
    trial: TrialSummary | None  # None when no trial of the version matches the entry


def default_profile_entry(trials: list[TrialSummary], first_values: dict[str, Any]) -> dict[str, Any]:
    """The configuration shown when the spec names none: batch 1 (else the smallest) at the most threads,
    concurrency 1 (else the smallest), and the first swept value of every other axis.

    When no trial has that configuration (`exclude: [{batch: 1, threads: 2}]` leaves it out of the plan), the
    configuration of the trial that differs from it on the fewest axes, the first in configuration order among
    equals: the profile page said "No trial with this configuration" and asked to check `profile` entries the
    spec does not have."""
    entry = dict(first_values)
    if not trials:
        return entry
    batches = {t.batch for t in trials}
    entry["batch"] = 1 if 1 in batches else min(batches)
    entry["threads"] = max(t.threads for t in trials)
    concurrencies = {t.concurrency for t in trials}
    entry["concurrency"] = 1 if 1 in concurrencies else min(concurrencies)
    nearest = min(trials, key=lambda t: (sum(not _same(t.axis_value(k), v) for k, v in entry.items()),
                                         t.sort_key(), t.trial_key))
    return {axis: nearest.axis_value(axis) for axis in entry}


def profile_targets(
    trials: list[TrialSummary], entries: list[dict[str, Any]], first_values: dict[str, Any]
) -> list[ProfileTarget]:
    """One version's configurations to show in detail.

    Each spec `profile` entry is a partial configuration: every trial of the version matching all its items
    is shown (`{}` matches every configuration), by configuration order, each trial once. Without entries,
    the single configuration of :func:`default_profile_entry`. An entry that matches nothing gives a target
    without a trial, so the page can say so.
    """
    targets: list[ProfileTarget] = []
    seen: set[str] = set()
    for entry in entries or [default_profile_entry(trials, first_values)]:
        wanted = tuple(sorted(entry.items()))
        matches = sorted((t for t in trials if all(_same(t.axis_value(k), v) for k, v in wanted)),
                         key=lambda t: (t.sort_key(), t.trial_key))
        if not matches:
            targets.append(ProfileTarget(wanted, None))
        targets += [ProfileTarget(wanted, t) for t in matches if t.trial_key not in seen]
        seen.update(t.trial_key for t in matches)
    return targets


def _same(actual: Any, wanted: Any) -> bool:
    # The spec is strict (true is not 1), and so is the match: bool and int never compare equal here.
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return type(actual) is type(wanted) and actual == wanted
    return actual == wanted
