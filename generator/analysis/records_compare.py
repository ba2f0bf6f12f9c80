"""Records of a comparison of two model versions: what the compare page and `perfsite compare` render.

Frozen dataclasses only, no logic beyond small derived properties. Field names are a contract with the site
(pages, charts, CLI): add fields at the end with defaults, never rename or remove one.

Units are in the names: `_ms`, `_us`, `_ips` (items per second), `share` is a fraction of 1 (0.25 = 25 %).
Version "A" is the baseline, "B" the candidate; ratios are always B / A.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.analysis.accounting import TimeAccounting


@dataclass(frozen=True)
class RatioCI:
    """A ratio B / A with its 95 % confidence interval.

    `significant` is True when the interval excludes 1; the page then shows the change, otherwise "no
    significant difference" (or "not compared" when `unjudged` says why no verdict can be given). `note` says
    why the interval is less trustworthy than usual (e.g. a single measurement process, so only
    request-to-request variation is in it); `flagged` is True when there is one.
    """

    point: float
    low: float
    high: float
    significant: bool
    note: str | None = None
    processes_a: int = 0
    processes_b: int = 0
    # Why no verdict is given (never significant then): a side kept fewer than two processes with enough clean
    # requests, as `perfsite diff` refuses to judge (generator.diff.noise); a layer ratio of such a pair
    # carries its reason too. None: judged.
    unjudged: str | None = None
    unjudged_from: str = "every request, preempted ones included"  # what an unjudged ratio's figures are from

    @property
    def flagged(self) -> bool:
        return self.note is not None

    @property
    def change(self) -> float:
        """Relative change B vs A (0.25 = B is 25 % higher)."""
        return self.point - 1.0


@dataclass(frozen=True)
class ConfigPoint:
    """One ok trial of any version: a point of the latency/throughput chart."""

    version: str
    trial_key: str
    config_label: str
    config: dict[str, Any]  # every axis, including `dims` placeholders, e.g. {"batch": 1, "threads": 2, ...}
    latency_ms: float  # at the spec's percentile (trials.latency_headline_ms)
    throughput_ips: float
    uncertain: bool  # too uncertain to settle any finding it takes part in (its page's flag)
    is_sweet_spot: bool  # the version's sweet spot under the threshold
    role: str | None = None  # "a" / "b" for the two trials compared at layer level, else None
    on_pareto: bool = False  # on the frontier over all versions
    order: int = 0  # position along the version's line (batch, threads, concurrency, other axes)
    model_bytes: int | None = None


@dataclass(frozen=True)
class SweetSpot:
    """A version's (or, with version None, the overall) sweet spot: the highest throughput whose latency at
    the spec's percentile is within the threshold. `trial_key` None means there is none; `reason` says why."""

    version: str | None
    trial_key: str | None
    threshold_ms: float | None
    reason: str | None = None
    config_label: str | None = None
    latency_ms: float | None = None
    throughput_ips: float | None = None


@dataclass(frozen=True)
class VersionTiming:
    """Latency (spec percentile) and throughput of one compared trial, with their own 95 % CIs (Student's t over
    the measurement processes, a bootstrap of the requests with one: generator.analysis.stats.own_interval)."""

    version: str
    latency_ms: float | None
    latency_ci_low: float | None
    latency_ci_high: float | None
    throughput_ips: float | None
    throughput_ci_low: float | None
    throughput_ci_high: float | None
    processes: int
    trial_key: str | None = None
    percentile: str = "p90"
    note: str | None = None  # e.g. "1 measurement process: the interval covers request-to-request noise only"


@dataclass(frozen=True)
class LayerTypeRow:
    """Time per executed operator type in A and B (top-level kernels, µs per inference)."""

    op_type: str
    time_a_us: float
    time_b_us: float
    delta_us: float  # B - A
    ratio: RatioCI | None  # None when the type ran in only one version
    share_a: float  # of A's kernel time
    share_b: float
    precision_counts_a: dict[str, int]  # executed nodes per runtime precision (FP32, FP16, INT8, mixed, other)
    precision_counts_b: dict[str, int]
    nodes_a: int = 0
    nodes_b: int = 0
    ops_a: tuple[str, ...] = ()  # the executed kernels' own op types in A (`QLinearConv` where op_type is Conv)
    ops_b: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelRow:
    """One layer group of the original model (or an unmatched executed part) with its time in A and B.

    `layer` names the group by its original FP32-side node names; `executed_a`/`executed_b` are the executed
    node names whose time is counted; `only_in` is "a"/"b" when time exists in one version only.
    """

    layer: str
    op_type: str
    time_a_us: float
    time_b_us: float
    precision_a: str | None
    precision_b: str | None
    delta_us: float
    ratio: RatioCI | None
    only_in: str | None
    note: str | None
    executed_a: tuple[str, ...]
    executed_b: tuple[str, ...]
    weights: tuple[str, ...]
    original_nodes: tuple[str, ...] = ()  # every original node key of the group (both versions, stripped)
    share_a: float = 0.0
    share_b: float = 0.0
    kind: str = "layer"  # "layer" (a group of original layers) or "overhead" (a precision conversion)
    ops_a: tuple[str, ...] = ()  # the executed kernels' own op types in A (`QLinearConv` where op_type is Conv)
    ops_b: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuantOverhead:
    """Time of executed nodes that only convert precision (Q/DQ, DynamicQuantizeLinear, casts, requantize
    multiplications), kept apart from the layers: B's (and A's, when it has any)."""

    time_b_us: float
    share_b: float
    by_op: dict[str, float]  # B: op type -> µs
    time_a_us: float = 0.0
    share_a: float = 0.0
    by_op_a: dict[str, float] = field(default_factory=dict)
    nodes_b: int = 0
    nodes_a: int = 0


@dataclass(frozen=True)
class MatchCoverage:
    """Share of each version's top-level kernel time that is in a matched layer or in the overhead bucket."""

    share_a: float
    share_b: float
    matched_a_us: float = 0.0
    matched_b_us: float = 0.0
    overhead_a_us: float = 0.0
    overhead_b_us: float = 0.0
    total_a_us: float = 0.0
    total_b_us: float = 0.0


@dataclass(frozen=True)
class Advice:
    """One finding of a rule (generator.analysis.advice). `text` is plain text; severity: info or warning."""

    rule_id: str
    severity: str
    text: str
    # How strongly the data supports it (generator.analysis.findings): the p-value of the figure the rule fired
    # on (None: untested) and that figure in words; `fact`: it states a fact of the graph or of the outputs, no
    # timing (settled unless blocked, outside the false-discovery rule).
    p_value: float | None = None
    evidence: str | None = None
    fact: bool = False


@dataclass(frozen=True)
class AgreementRow:
    """Output agreement of a version against its reference version on the same inputs."""

    version: str
    reference_version: str
    output: str
    max_abs: float | None
    max_rel: float | None
    cosine: float | None
    top1_agreement: float | None
    mean_abs: float | None = None
    samples: int | None = None
    trial_key: str | None = None
    within_tolerance: bool | None = None  # None without the figure the tolerance needs


@dataclass(frozen=True)
class Comparison:
    """Version B against version A: performance over every configuration, and a layer-level comparison at
    one configuration present in both (`config`)."""

    a: str
    b: str
    config_label: str | None
    config: dict[str, Any] | None
    a_trial_key: str | None
    b_trial_key: str | None
    b_was_default: bool  # B was chosen (best throughput under the threshold), not named
    points: tuple[ConfigPoint, ...]
    sweet_spots: tuple[SweetSpot, ...]  # per version, in version order
    latency_ratio: RatioCI | None
    throughput_ratio: RatioCI | None
    timings: tuple[VersionTiming, VersionTiming] | None
    layer_types: tuple[LayerTypeRow, ...]
    kernels: tuple[KernelRow, ...]
    overhead: QuantOverhead | None
    coverage: MatchCoverage | None
    pareto: tuple[ConfigPoint, ...]  # frontier over all versions, by latency
    model_bytes: dict[str, int | None]
    precision_share: dict[str, dict[str, float]]  # version -> runtime precision -> share of kernel time
    precision_transitions: dict[str, int]  # version -> precision changes between consecutive kernels
    advice: tuple[Advice, ...]
    other_configs: tuple[str, ...]  # labels of the other configurations present in both versions
    agreement: tuple[AgreementRow, ...] = ()
    tolerance_set: bool = True  # False: outputs were judged by perfsite's default tolerance
    overall_sweet_spot: SweetSpot | None = None
    threshold_ms: float | None = None
    # The headline percentile as labels name it (generator.results.headline.percentile_label): over every
    # trial of the experiment (charts, sweet spots), and over A's and B's timings at the compared configuration.
    percentile: str = "p90"
    timing_percentile: str = "p90"
    b_reason: str | None = None  # why B was chosen, when it was not named
    config_reason: str | None = None  # why this configuration was chosen, when it was not named
    notes: tuple[str, ...] = ()  # plain-text caveats (no profile at this configuration, ...)
    versions: tuple[str, ...] = ()  # every version of the experiment, in spec order
    other_config_items: tuple[dict[str, Any], ...] = ()  # the configurations of `other_configs`, same order
    # A's and B's profiled time against their measured median (generator.analysis.accounting), for the lines
    # under the layer-level tables; None without complete profiled figures.
    accounting: tuple[TimeAccounting | None, TimeAccounting | None] = (None, None)
    quick: tuple[str, ...] = ()  # "version at configuration" of each compared trial measured in quick mode
