"""The diff's candidate figures in the formats continuous-benchmarking dashboards read.

- **github-action-benchmark** (https://github.com/benchmark-action/github-action-benchmark), its custom tools:
  a JSON list of `{name, unit, value, range?, extra?}` where `range` and `extra` are strings. The action reads
  `range` as `± <number>` (its `extractRangeInfo`), so the number is written plainly, without thousands
  separators. A file has one direction, named by the action's `tool:` input, so each figure has its own file:
  latency for `customSmallerIsBetter`, throughput for `customBiggerIsBetter`.
- **Bencher Metric Format** (BMF, https://bencher.dev/docs/reference/bencher-metric-format/):
  `{benchmark: {measure slug: {value, lower_value?, upper_value?}}}`, with Bencher's built-in measures
  `latency` (nanoseconds) and `throughput` (operations per second; here items per second, a generative
  configuration's output tokens per second), and for a generative configuration `time-to-first-token` and
  `time-per-output-token` (nanoseconds; measures to create in Bencher once).

Every (experiment, version, configuration) measured on both sides is one benchmark, named "experiment · version
· configuration" as in the summary. The figures are the candidate's, the side under review, each with its own
95 % interval (Student's t over its measurement processes' figures, those the diff's ratios come from);
github-action-benchmark's `extra` also carries the baseline, the change with its interval and the verdict. A
figure that is unknown or not finite is left out: JSON has no NaN, and a dashboard would draw a zero. These are
pure functions of the diff: they write nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from generator.analysis.records_compare import RatioCI
from generator.diff.phases import PHASE_NAMES
from generator.diff.report import change_text
from generator.diff.verdict import DiffResult, TrialDiff

NS_PER_MS = 1_000_000.0  # Bencher's built-in latency measure is in nanoseconds


@dataclass(frozen=True)
class _Figure:
    """One figure of one configuration, as the exports need it."""

    label: str
    unit: str
    candidate: float | None
    interval: tuple[float, float] | None  # the candidate's own 95 % interval
    baseline: float | None
    ratio: RatioCI | None


def _latency(t: TrialDiff) -> _Figure:
    return _Figure(f"latency {t.percentile}", "ms", t.latency_candidate_ms, t.latency_candidate_ci,
                   t.latency_baseline_ms, t.latency_ratio)


def _throughput(t: TrialDiff) -> _Figure:
    unit = "output tokens/s" if t.phases else "items/s"
    return _Figure("throughput", unit, t.throughput_candidate_ips, t.throughput_candidate_ci,
                   t.throughput_baseline_ips, t.throughput_ratio)


def _phases(t: TrialDiff) -> list[tuple[str, _Figure]]:
    """A generative configuration's TTFT and TPOT medians (generator.diff.phases), each with its Bencher slug."""
    return [(f"{PHASE_NAMES[p.phase].replace(' ', '-')}", _Figure(f"{PHASE_NAMES[p.phase]}, median", "ms",
                                                                   p.candidate_ms, None, p.baseline_ms, p.ratio))
            for p in t.phases]


def github_action_benchmark_latency(result: DiffResult) -> list[dict[str, Any]]:
    """Latency at each configuration's headline percentile, in ms (and a generative configuration's TTFT and
    TPOT, each a benchmark of its own): a `customSmallerIsBetter` file."""
    entries = []
    for t in result.trials:
        entries += [_benchmark_entry(t, _latency(t))] if _finite(_latency(t).candidate) else []
        entries += [_benchmark_entry(t, figure, f"{t.name} · {figure.label}") for _, figure in _phases(t)
                    if _finite(figure.candidate)]
    return entries


def github_action_benchmark_throughput(result: DiffResult) -> list[dict[str, Any]]:
    """Throughput in items per second: a `customBiggerIsBetter` file."""
    return [_benchmark_entry(t, _throughput(t)) for t in result.trials if _finite(_throughput(t).candidate)]


def bencher_metrics(result: DiffResult) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format: per configuration, the built-in `latency` (ns) and `throughput` measures."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for t in result.trials:
        figures = (("latency", _latency(t), NS_PER_MS), ("throughput", _throughput(t), 1.0),
                   *((slug, figure, NS_PER_MS) for slug, figure in _phases(t)))
        measures = {slug: _metric(figure, scale) for slug, figure, scale in figures if _finite(figure.candidate)}
        if measures:
            out[t.name] = measures
    return out


# Export format -> converter; the `perfsite diff` options that write each are in generator.cli.
EXPORT_FORMATS: dict[str, Callable[[DiffResult], Any]] = {
    "github-action-benchmark-latency": github_action_benchmark_latency,
    "github-action-benchmark-throughput": github_action_benchmark_throughput,
    "bencher": bencher_metrics,
}


def _benchmark_entry(t: TrialDiff, figure: _Figure, name: str | None = None) -> dict[str, Any]:
    value = float(figure.candidate)
    entry: dict[str, Any] = {"name": name or t.name, "unit": figure.unit, "value": value}
    lines = [figure.label]
    if _finite_interval(figure.interval):
        low, high = figure.interval
        # The action shows one symmetric ± figure; the interval is asymmetric, so the wider half is given and
        # the exact bounds go in `extra`.
        entry["range"] = f"± {max(value - low, high - value):.6g}"
        lines.append(f"95% interval {low:.6g} to {high:.6g} {figure.unit}")
    if _finite(figure.baseline):
        lines.append(f"baseline {figure.baseline:.6g} {figure.unit}")
    if figure.ratio is not None and _finite(figure.ratio.point):
        lines.append(f"change {change_text(figure.ratio)}")
    entry["extra"] = "\n".join([*lines, f"verdict: {t.verdict}"])
    return entry


def _metric(figure: _Figure, scale: float) -> dict[str, float]:
    metric = {"value": float(figure.candidate) * scale}
    if _finite_interval(figure.interval):
        metric["lower_value"] = float(figure.interval[0]) * scale
        metric["upper_value"] = float(figure.interval[1]) * scale
    return metric


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _finite_interval(interval: tuple[float, float] | None) -> bool:
    return interval is not None and all(_finite(v) for v in interval)
