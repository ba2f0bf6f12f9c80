"""The records a sweep passes between its planning (generator.runner.orchestrate) and its measuring
(generator.runner.sweep): progress reporting, options, planned trials, summaries and one spec's side."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from generator.machine.environment import Environment
from generator.plan import Trial
from generator.results.store import ResultsDir
from generator.spec import LoadedSpec
from generator.versions import ModelVersion


class Progress(Protocol):
    """What the runner reports; the CLI draws it. Library code never prints."""

    def message(self, text: str) -> None: ...
    # upper_bound: a Ray run, whose trial keys come from the nodes that measure them, so the driver cannot tell
    # which of `total` are stored already (a node skips those).
    def start(self, total: int, estimate_s: float, upper_bound: bool = False) -> None: ...
    def trial_done(self, trial: Trial, status: str) -> None: ...
    def converging(self, label: str, halfwidth: float | None, target: float, spent_s: float,
                   budget_s: float) -> None: ...


class SilentProgress:
    def message(self, text: str) -> None:
        pass

    def start(self, total: int, estimate_s: float, upper_bound: bool = False) -> None:
        pass

    def trial_done(self, trial: Trial, status: str) -> None:
        pass

    def converging(self, label: str, halfwidth: float | None, target: float, spent_s: float,
                   budget_s: float) -> None:
        pass


@dataclass(frozen=True)
class RunOptions:
    results_dir: Path | str  # a folder, or a URL of one on object storage (generator.results.location)
    force: bool = False
    only: str | None = None
    dry_run: bool = False
    quick: bool = False
    cache_dir: Path | None = None
    # Paired runs: the diff's latency threshold, so that a pair stops once its interval settles the verdict.
    decide_latency_ratio: float | None = None
    # `--ray [ADDRESS]`: fan the sweep out on a Ray cluster (generator.runner.cluster); "auto" finds it.
    ray: str | None = None
    # `--target NAME`: measure on the nodes offering that target only (Ray runs).
    target: str | None = None


@dataclass(frozen=True)
class PlannedTrial:
    trial: Trial
    key: str
    stored: bool


@dataclass
class RunSummary:
    experiment: str
    results_dir: Path | str
    planned: list[PlannedTrial]
    estimate_s: float
    measured: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped_locked: list[str] = field(default_factory=list)
    interrupted: bool = False
    exhausted: list[str] = field(default_factory=list)  # trials stopped by their budget, unconverged
    longest_s: float | None = None  # every trial to measure spending its whole measure.budget_s
    # Failures never stored (a Ray task lost again and again): in `failed` but not in `measured`, where a stored
    # failure is in both.
    unstored_failures: int = 0

    @property
    def ok_count(self) -> int:
        """Trials measured and stored ok."""
        return len(self.measured) - (len(self.failed) - self.unstored_failures)

    @property
    def to_measure(self) -> list[PlannedTrial]:
        return [p for p in self.planned if not p.stored]


@dataclass(eq=False)  # identity: sides are keys of dicts
class Side:
    """One spec's part of a sweep: where its trials go and what they are measured with."""

    loaded: LoadedSpec
    results: ResultsDir
    env: Environment
    versions: dict[str, ModelVersion]
    settings: dict
    quick: bool
    run_id: str
    summary: RunSummary
    preexisting: set[str]
    label: str | None = None  # baseline or candidate in a paired run
    decide_latency_ratio: float | None = None  # RunOptions.decide_latency_ratio
    # A run fanned out on Ray (generator.runner.cluster): the target asked for and the node measuring; None locally.
    target: str | None = None
    node_id: str | None = None


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


