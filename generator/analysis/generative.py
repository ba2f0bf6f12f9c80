"""A generative experiment's figures for its pages and `perfsite diff`: its trials' TTFT, TPOT, ITL and tokens/s,
the sweet spot under the spec's `limits`, and each compared pair of versions judged at every configuration in
two phases apart, prefill (time to first token) and decode (time per output token).

A quantized decoder can make prefill slower and decode faster (4-bit weights on the example decoder did): one
tokens/s ratio hides that, so each phase gets its own ratio and verdict. A verdict is the paired interval of the
per-process medians B / A over the rounds both versions measured (the runner alternates versions round by
round, so a round's two processes ran moments apart): slower or faster when the 95 % interval excludes 1 and the
ratio is past the spec's regression ratio, no change when the interval lies within the band, unsettled
otherwise, with the reason. Readers get frozen records; nothing here formats text for a page.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from generator.analysis.findings.record import Figure, Finding, FindingSet, settle
from generator.analysis.limits import unsettled_reason
from generator.analysis.summaries import optional_float
from generator.axes import AXES
from generator.cells import clean
from generator.results import evidence

PHASES = {"ttft": "prefill (time to first token)", "tpot": "decode (time per output token)"}
DEFAULT_COSINE_MIN = 0.99  # as every experiment's outputs without a `tolerance:` (generator.analysis.compare)


@dataclass(frozen=True)
class PhaseVerdict:
    phase: str  # ttft or tpot
    a_ms: float  # median over processes of each process's median
    b_ms: float
    ratio: float  # B / A, geometric mean over processes (rounds)
    low: float
    high: float
    verdict: str  # faster, slower, no change, unsettled
    reason: str
    p_value: float | None = None  # of the verdict's claim (None: no claim, unsettled)
    rounds: int = 0


SPEC_ADVICE = "measure more processes (measure.repeats, measure.budget_s)"


def phase_verdict(phase: str, a: Sequence[float], b: Sequence[float], threshold: float,
                  sequential: bool = False, advice: str = SPEC_ADVICE) -> PhaseVerdict:
    """One phase judged from per-process (per-round) medians of A and B, in pairs: the claim the data shows
    (slower or faster past the threshold, or no change within it) with its p-value and the 95 % interval that
    agrees with it (a confidence sequence's for `sequential` figures: generator.results.evidence.LogTest)."""
    test = evidence.paired_test(a, b)
    a_ms, b_ms = float(np.nanmedian(a)), float(np.nanmedian(b))
    if test is None:
        return PhaseVerdict(phase, a_ms, b_ms, b_ms / a_ms, math.nan, math.nan, "unsettled",
                            "fewer than two processes gave both figures")
    test = replace(test, sequential=sequential)
    ratio, (low, high), bound = math.exp(test.estimate), test.interval(), math.log(threshold)
    if ratio > threshold:
        verdict, p = "slower", test.p_above(0.0)
    elif ratio < 1 / threshold:
        verdict, p = "faster", test.p_below(0.0)
    else:
        verdict, p = "no change", test.p_within(-bound, bound)
    if p > 0.05:
        where = "past" if verdict != "no change" else "within"
        shown = "unbounded" if math.isinf(high) or low <= 0 else f"{low:.3g}–{high:.3g}"
        return PhaseVerdict(phase, a_ms, b_ms, ratio, low, high, "unsettled",
                            f"B/A {ratio:.3g} is {where} ±{threshold - 1:.0%} but its interval over {test.n} rounds "
                            f"({shown}) does not show it (p = {p:.2g}); {advice}", p, test.n)
    return PhaseVerdict(phase, a_ms, b_ms, ratio, low, high, verdict, f"interval {low:.3g}–{high:.3g}, "
                        f"p = {p:.2g}", p, test.n)


@dataclass(frozen=True)
class GenerativeRow:
    """One ok generative trial's figures (ms, tokens/s, MiB); None where not measured (no decode step)."""

    trial_key: str
    version: str
    config_label: str
    batch: int
    threads: int
    prompt_tokens: int
    new_tokens: int
    ttft_p50_ms: float
    ttft_p90_ms: float
    ttft_p99_ms: float | None
    ttft_ms: float  # at the spec's percentile
    tpot_p50_ms: float | None
    tpot_p90_ms: float | None
    tpot_ms: float | None  # at the spec's percentile
    itl_p50_ms: float | None
    itl_p90_ms: float | None
    itl_p99_ms: float | None
    tokens_per_s: float  # output tokens per second
    prefill_tokens_per_s: float | None
    peak_rss_mb: float | None
    kv_cache_mb: float | None
    ttft_halfwidth: float | None
    tpot_halfwidth: float | None
    processes: int
    noisy: bool
    noise_reasons: str | None
    within_limits: bool | None  # None: the spec sets no limit
    sequential: bool = False  # measured until its confidence sequence looked narrow (trials.ci_sequential)
    config: tuple[tuple[str, Any], ...] = ()  # every axis and its value, generate's lengths included

    @property
    def workload(self) -> tuple[int, int]:
        """What the requests ask for (prompt and output lengths): a property of the traffic, not a setting to
        choose, so that sweet spots are per workload."""
        return self.prompt_tokens, self.new_tokens
    # The decode's memory check: a step reads every weight and the KV cache, so at the machine's measured
    # bandwidth it takes at least this long (None: no settled bandwidth, or no decode step).
    decode_floor_ms: float | None = None
    bandwidth_gbs: float | None = None  # the machine's settled memory bandwidth (None: not settled, not probed)

    @property
    def memory_share(self) -> float | None:
        """The floor's share of the measured TPOT: near 1 a decode step runs at the memory's speed (memory-
        bound); far below, something else (compute, overheads) sets its pace."""
        return self.decode_floor_ms / self.tpot_p50_ms if self.decode_floor_ms and self.tpot_p50_ms else None


@dataclass(frozen=True)
class PhaseComparison:
    config_label: str
    phases: tuple[PhaseVerdict, ...]
    trial_keys: tuple[str, str] = ("", "")  # A's and B's


@dataclass(frozen=True)
class GenerativePair:
    a: str
    b: str
    comparisons: tuple[PhaseComparison, ...]


@dataclass(frozen=True)
class StepPoint:
    version: str
    config_label: str
    context_tokens: int
    median_ms: float


@dataclass(frozen=True)
class GenerationAgreement:
    """A version's generation against its reference's on the same prompt (generator.runner.agreement)."""

    version: str
    reference: str
    config_label: str
    tokens_match: float | None  # share of the greedy tokens equal, position by position
    first_token: float | None  # share of the batch's rows whose first token agrees
    logits_cosine: float | None  # of the prefill's logits at the prompt's last position
    logits_max_abs: float | None
    within: bool  # the logits within the spec's tolerance (perfsite's default without one)


@dataclass(frozen=True)
class SweetSpot:
    """One workload's (prompt and output lengths') configuration with the most output tokens/s within the
    limits, or why there is none."""

    prompt_tokens: int
    new_tokens: int
    row: GenerativeRow | None
    reason: str
    settled: bool = False

    @property
    def finding_id(self) -> str:
        return f"{SWEET_SPOT}:prompt={self.prompt_tokens}:new={self.new_tokens}"


@dataclass(frozen=True)
class GenerativeReport:
    percentile: str
    bandwidth_note: str | None  # why no decode floor is given, when none is
    ttft_limit_ms: float | None
    tpot_limit_ms: float | None
    rows: tuple[GenerativeRow, ...]
    sweet_spots: tuple[SweetSpot, ...]  # one per workload, in prompt then output length order
    pairs: tuple[GenerativePair, ...]
    steps: tuple[StepPoint, ...]
    agreement: tuple[GenerationAgreement, ...] = ()
    cosine_min: float | None = None  # the tolerance the agreement is judged by
    max_abs: float | None = None
    # Every claim of the page (each phase verdict, the sweet spot), settled by one false-discovery rule across
    # the report (generator.analysis.findings): findings.json writes them.
    findings: FindingSet | None = None
    # Each version's engine (`engine: genai`), in the versions' order; empty when every version ran on
    # perfsite's own decode loop.
    engines: tuple[tuple[str, str], ...] = ()


def generative_report(spec, trials: pd.DataFrame, processes: pd.DataFrame, decode_steps: pd.DataFrame,
                      environments: pd.DataFrame | None = None,
                      agreement: pd.DataFrame | None = None) -> GenerativeReport | None:
    """The report of a generative experiment's stored results (one machine's, as every comparison is); None for
    an experiment that is not generative."""
    if getattr(spec, "generate", None) is None:
        return None
    limits = spec.limits
    ttft_limit = limits.ttft_ms if limits else None
    tpot_limit = limits.tpot_ms if limits else None
    ok = trials[(trials["status"] == "ok") & trials["new_tokens"].notna()]
    order = {v: i for i, v in enumerate(spec.models)}
    ok = ok.assign(_v=ok["version"].map(order)).sort_values(["_v", "batch", "threads", "prompt_tokens",
                                                               "new_tokens"], kind="stable")
    bandwidths, note = _bandwidths(environments)
    given = spec.tolerance
    tolerance = (given.cosine_min, given.max_abs) if given is not None else (DEFAULT_COSINE_MIN, None)
    rows = tuple(_row(t, ttft_limit, tpot_limit, bandwidths.get(str(t.env_id))) for t in ok.itertuples(index=False))
    spots = [_sweet_spot([r for r in rows if r.workload == w], w, ttft_limit, tpot_limit, spec.measure.percentile)
             for w in sorted({r.workload for r in rows})]
    pairs = tuple(_pair(a, b, config, rows, processes, spec.regression) for a, b, config in compared_pairs(spec, rows))
    findings = settle([*_phase_findings(pairs, rows),
                       *(f for spot in spots for f in _sweet_spot_finding(spot, rows, processes))])
    return GenerativeReport(
        percentile=spec.measure.percentile, bandwidth_note=note, ttft_limit_ms=ttft_limit, tpot_limit_ms=tpot_limit,
        rows=rows, sweet_spots=tuple(_settled_spot(spot, findings) for spot in spots),
        pairs=_settled_pairs(pairs, findings), steps=_steps(rows, decode_steps),
        agreement=_agreement(rows, agreement, *tolerance), cosine_min=tolerance[0], max_abs=tolerance[1],
        findings=findings, engines=_engines(ok))


def _engines(ok: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """Each version's engine (its newest trial's), when any version's is not perfsite's own loop."""
    if "engine" not in ok or set(ok["engine"].dropna()) <= {"onnxruntime"}:
        return ()
    newest = ok.sort_values("finished_at", kind="stable").drop_duplicates("version", keep="last")
    by_version = dict(zip(newest["version"], newest["engine"].fillna("onnxruntime"), strict=True))
    return tuple((v, by_version[v]) for v in dict.fromkeys(ok["version"]))


def compared_pairs(spec, rows: Sequence[GenerativeRow]) -> list[tuple[str, str, tuple[tuple[str, Any], ...]]]:
    """The spec's `compare:` pairs with their `config` selection (a pair without `b`: A against every other
    version); without any, the first version against each other one, at every configuration."""
    versions = list(dict.fromkeys(r.version for r in rows))
    wanted = [(p.a, p.b, tuple(dict(p.config or {}).items())) for p in spec.compare]
    if not wanted and versions:
        wanted = [(versions[0], None, ())]
    pairs = []
    for a, b, config in wanted:
        pairs += [(a, other, config) for other in versions if other != a and (b is None or other == b)]
    return list(dict.fromkeys(pairs))


def _bandwidths(environments: pd.DataFrame | None) -> tuple[dict[str, float], str | None]:
    """Each environment's settled memory bandwidth (GB/s), and why there is none where none is: a floor from a
    disturbed probe would call decode memory-bound, or not, by the neighbour's doing."""
    found, why = {}, None
    for row in (environments if environments is not None else pd.DataFrame()).to_dict("records"):
        bandwidth = optional_float(row.get("bandwidth_gbs"))
        reason = unsettled_reason(clean(row.get("limits_settled")), row.get("limits_quality") or None)
        if bandwidth and reason is None:
            found[str(row["env_id"])] = bandwidth
        else:
            why = f"the machine's memory bandwidth is not settled ({reason})" if bandwidth else \
                "the machine's memory bandwidth was not probed"
    return found, (None if found else why or "the machine's memory bandwidth was not probed")


def decode_floor_ms(model_bytes: float, kv_cache_mb: float, prompt: int, new: int, bandwidth_gbs: float) -> float:
    """The least time a decode step can take at `bandwidth_gbs`: every weight once (the model file's bytes: an
    upper bound, as an embedding table is read a row at a time) and the KV cache at the steps' mean context
    (the cache grows from prompt + 1 to prompt + new - 1 positions)."""
    mean_context = prompt + new / 2
    kv_bytes = kv_cache_mb * 2**20 * mean_context / (prompt + new - 1)
    return (model_bytes + kv_bytes) / (bandwidth_gbs * 1e9) * 1e3


# The trials columns a row takes as optional figures (null where not measured: no decode step, too few samples).
_OPTIONAL = {"ttft_p99_ms": "ttft_p99_ms", "tpot_p50_ms": "tpot_p50_ms", "tpot_p90_ms": "tpot_p90_ms",
             "tpot_ms": "tpot_headline_ms", "itl_p50_ms": "itl_p50_ms", "itl_p90_ms": "itl_p90_ms",
             "itl_p99_ms": "itl_p99_ms", "prefill_tokens_per_s": "prefill_tokens_per_s", "peak_rss_mb": "peak_rss_mb",
             "kv_cache_mb": "kv_cache_mb", "ttft_halfwidth": "ttft_ci_halfwidth",
             "tpot_halfwidth": "tpot_ci_halfwidth"}


def _row(t, ttft_limit: float | None, tpot_limit: float | None, bandwidth: float | None = None) -> GenerativeRow:
    optional = {field: optional_float(getattr(t, column)) for field, column in _OPTIONAL.items()}
    tpot = optional["tpot_ms"]
    within = None
    if ttft_limit is not None or tpot_limit is not None:
        within = ((ttft_limit is None or t.ttft_headline_ms <= ttft_limit)
                  and (tpot_limit is None or tpot is None or tpot <= tpot_limit))
    floor = None
    if bandwidth and int(t.new_tokens) > 1 and optional_float(t.model_bytes) and optional["kv_cache_mb"]:
        floor = decode_floor_ms(float(t.model_bytes), optional["kv_cache_mb"], int(t.prompt_tokens),
                                int(t.new_tokens), bandwidth)
    return GenerativeRow(
        trial_key=t.trial_key, version=t.version, config_label=t.config_label, batch=int(t.batch),
        threads=int(t.threads), prompt_tokens=int(t.prompt_tokens), new_tokens=int(t.new_tokens),
        ttft_p50_ms=float(t.ttft_p50_ms), ttft_p90_ms=float(t.ttft_p90_ms), ttft_ms=float(t.ttft_headline_ms),
        tokens_per_s=float(t.throughput_ips), processes=int(t.processes), noisy=bool(t.noisy),
        noise_reasons=t.noise_reasons if isinstance(t.noise_reasons, str) else None, within_limits=within,
        sequential=bool(clean(getattr(t, "ci_sequential", None))),
        config=tuple((a, getattr(t, a)) for a in AXES) + tuple(sorted(json.loads(t.dims or "{}").items())),
        decode_floor_ms=floor, bandwidth_gbs=bandwidth or None, **optional)


def _sweet_spot(rows: Sequence[GenerativeRow], workload: tuple[int, int], ttft_limit: float | None,
                tpot_limit: float | None, percentile: str) -> SweetSpot:
    """One workload's most output tokens/s within the limits (of every configuration without limits), and why
    none where none is."""
    within = [r for r in rows if r.within_limits is not False]
    if not within:
        fastest = min(rows, key=lambda r: r.ttft_ms)
        return SweetSpot(*workload, None, f"no configuration keeps TTFT and TPOT at {percentile} within the limits; "
                         f"the lowest TTFT is {fastest.version} at {fastest.config_label}")
    best = max(within, key=lambda r: r.tokens_per_s)
    what = "within the limits" if ttft_limit is not None or tpot_limit is not None else "of every configuration"
    return SweetSpot(*workload, best, f"the most output tokens/s {what}")


def _settled_spot(spot: SweetSpot, findings: FindingSet) -> SweetSpot:
    f = findings.get(spot.finding_id)
    if f is None:
        return spot
    return replace(spot, settled=f.settled, reason=spot.reason + ("" if f.settled else f" (unsettled: {f.reason})"))


def per_round(processes: pd.DataFrame, key: str, column: str) -> dict[int, float]:
    """A trial's processes' figure (`column`, e.g. ttft_median_ms) by the round each ran in (its index where the
    round is not stored); processes without a positive figure are left out. The page's phase verdicts and
    `perfsite diff`'s (generator.diff.phases) pair them by round."""
    if column not in processes:
        return {}
    mine = processes[processes["trial_key"] == key]
    rounds = mine["round"] if "round" in mine else mine["process"]
    return {int(r) if pd.notna(r) else int(p): float(v)
            for r, p, v in zip(rounds, mine["process"], mine[column], strict=True) if pd.notna(v) and v > 0}


def _pair(a: str, b: str, config: tuple[tuple[str, Any], ...], rows: Sequence[GenerativeRow],
          processes: pd.DataFrame, regression) -> GenerativePair:
    by = {(r.version, r.config_label): r for r in rows}
    comparisons = []
    for r in rows:
        if r.version != a or (b, r.config_label) not in by or not _matches(r, config):
            continue
        other = by[(b, r.config_label)]
        phases = []
        for phase, threshold in (("ttft", regression.ttft_ratio), ("tpot", regression.tpot_ratio)):
            if phase == "tpot" and r.new_tokens < 2:
                continue  # one new token is a prefill alone: no decode step to judge
            column = f"{phase}_median_ms"
            mine, theirs = per_round(processes, r.trial_key, column), per_round(processes, other.trial_key, column)
            rounds = sorted(set(mine) & set(theirs))
            phases.append(phase_verdict(phase, [mine[k] for k in rounds], [theirs[k] for k in rounds], threshold,
                                        sequential=r.sequential and other.sequential))
        comparisons.append(PhaseComparison(r.config_label, tuple(phases), (r.trial_key, other.trial_key)))
    return GenerativePair(a, b, tuple(comparisons))


def _matches(row: GenerativeRow, config: tuple[tuple[str, Any], ...]) -> bool:
    """The row has every item of a compare pair's `config` (values of one type, as the spec's are strict)."""
    mine = dict(row.config)
    return all(k in mine and type(mine[k]) is type(v) and mine[k] == v for k, v in config)


def _steps(rows: Sequence[GenerativeRow], decode_steps: pd.DataFrame) -> tuple[StepPoint, ...]:
    """Per trial and decode step, the median over processes of each one's median: the step time against the
    context the KV cache holds."""
    if decode_steps.empty:
        return ()
    by_key = {r.trial_key: r for r in rows}
    mine = decode_steps[decode_steps["trial_key"].isin(by_key)]
    medians = mine.groupby(["trial_key", "context_tokens"], sort=True)["median_ms"].median()
    return tuple(StepPoint(by_key[key].version, by_key[key].config_label, int(context), float(ms))
                 for (key, context), ms in medians.items())


def _agreement(rows: Sequence[GenerativeRow], agreement: pd.DataFrame | None, cosine_min: float | None,
               max_abs: float | None) -> tuple[GenerationAgreement, ...]:
    """Each generative trial's agreement rows with its reference version, in the rows' order."""
    if agreement is None or agreement.empty:
        return ()
    found = []
    for r in rows:
        mine = agreement[agreement["trial_key"] == r.trial_key]
        for reference in dict.fromkeys(mine["reference_version"]):
            by = {o: row for o, row in mine[mine["reference_version"] == reference].set_index("output").iterrows()}
            tokens, logits = by.get("greedy_tokens"), by.get("prefill_logits")
            cosine = optional_float(logits["cosine"]) if logits is not None else None
            largest = optional_float(logits["max_abs"]) if logits is not None else None
            within = (cosine is not None and (cosine_min is None or cosine >= cosine_min)
                      and (max_abs is None or (largest is not None and largest <= max_abs)))
            found.append(GenerationAgreement(
                r.version, str(reference), r.config_label,
                optional_float(tokens["top1_agreement"]) if tokens is not None else None,
                optional_float(logits["top1_agreement"]) if logits is not None else None, cosine, largest, within))
    return tuple(found)


SWEET_SPOT = "generative:sweet-spot"


def phase_finding_id(pair: GenerativePair, c: PhaseComparison, v: PhaseVerdict) -> str:
    return f"generative:{pair.b}:{pair.a}:{c.config_label}:{v.phase}"


def _phase_findings(pairs: Sequence[GenerativePair], rows: Sequence[GenerativeRow]) -> list[Finding]:
    """Each phase verdict as a finding: its claim, p-value and interval (an unsettled one keeps its reason)."""
    found = []
    for pair in pairs:
        for c in pair.comparisons:
            for v in c.phases:
                claim = v.verdict if v.verdict != "unsettled" else "unsettled"
                found.append(Finding(
                    id=phase_finding_id(pair, c, v), kind="generative phase", page="overview",
                    statement=f"{pair.b} against {pair.a} at {c.config_label}: {PHASES[v.phase]} {claim}",
                    answer=round(v.ratio, 6) if math.isfinite(v.ratio) else None, unit="ratio B/A",
                    interval=(v.low, v.high) if math.isfinite(v.low) else None,
                    p_value=v.p_value if v.verdict != "unsettled" else None,
                    weakest=None if v.verdict != "unsettled" else v.reason,
                    figures=(Figure(f"{pair.a} {v.phase} median, ms", v.a_ms), Figure(f"{pair.b} {v.phase} median, "
                                                                                     "ms", v.b_ms)),
                    trials=c.trial_keys))
    return found


def _settled_pairs(pairs: Sequence[GenerativePair], findings: FindingSet) -> tuple[GenerativePair, ...]:
    """The verdicts as the page states them: a claim the report-wide rule did not settle reads unsettled."""
    out = []
    for pair in pairs:
        comparisons = []
        for c in pair.comparisons:
            phases = []
            for v in c.phases:
                f = findings.get(phase_finding_id(pair, c, v))
                if v.verdict != "unsettled" and f is not None and not f.settled:
                    v = replace(v, verdict="unsettled", reason=f"{v.verdict} at 95 % alone, but {f.reason}")
                phases.append(v)
            comparisons.append(replace(c, phases=tuple(phases)))
        out.append(replace(pair, comparisons=tuple(comparisons)))
    return tuple(out)


def _sweet_spot_finding(sweet: SweetSpot, rows: Sequence[GenerativeRow], processes: pd.DataFrame) -> list[Finding]:
    """"The sweet spot has the most tokens/s within the limits" for one workload: tested against the runner-up
    within them (each trial's processes' clean tokens/s); a fact when no other configuration is within them."""
    spot = sweet.row
    if spot is None:
        return []
    others = sorted((r for r in rows if r.workload == spot.workload and r.within_limits is not False
                     and r is not spot), key=lambda r: -r.tokens_per_s)
    statement = (f"{spot.version} at {spot.config_label} has the most output tokens/s within the limits for "
                 f"prompts of {spot.prompt_tokens} tokens and {spot.new_tokens} new ones")
    finding_id = sweet.finding_id
    if not others:
        return [Finding(finding_id, "generative sweet spot", "overview", statement, spot.tokens_per_s, "tokens/s",
                        fact=True, trials=(spot.trial_key,))]
    runner = others[0]
    figures = [processes[processes["trial_key"] == r.trial_key]["clean_throughput_ips"].dropna().tolist()
               for r in (runner, spot)]
    test = evidence.unpaired_test(*figures)
    p = replace(test, sequential=spot.sequential and runner.sequential).p_above(0.0) if test else None
    return [Finding(finding_id, "generative sweet spot", "overview", statement, spot.tokens_per_s, "tokens/s",
                    p_value=p, weakest=f"the lead over the runner-up, {runner.version} at {runner.config_label}",
                    figures=(Figure(f"{spot.version} {spot.config_label}, tokens/s", spot.tokens_per_s),
                             Figure(f"{runner.version} {runner.config_label}, tokens/s", runner.tokens_per_s)),
                    trials=(spot.trial_key, runner.trial_key))]


def generative_pair(report: GenerativeReport, processes: pd.DataFrame, regression, a: str, b: str,
                    config: tuple[tuple[str, Any], ...] = ()) -> GenerativePair:
    """Any two versions of the report judged apart (`perfsite compare`), each verdict settled as the page's are:
    a verdict the page states uses its finding; one the page does not state (a pair outside the spec's
    `compare:`) is settled by the same rule over the report's findings with it added."""
    pair = _pair(a, b, config, report.rows, processes, regression)
    findings = settle([*report.findings.findings, *(f for f in _phase_findings((pair,), report.rows)
                                                     if report.findings.get(f.id) is None)])
    return _settled_pairs((pair,), findings)[0]
