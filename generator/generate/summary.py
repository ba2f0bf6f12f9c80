"""The figures of a set of generations: time to first token, time per output token, inter-token latency.

Definitions (docs/generative.md): TTFT is a request's prefill pass and its greedy choice of the first token;
TPOT a request's mean decode step (its later tokens' time over their count); ITL every decode step, pooled over
requests. A percentile is given only from enough samples to have one above it (p90 from 10, p99 from 100):
below that it would be the slowest sample under another name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from generator.decode.loop import Generation
from generator.spec.fields import QUANTILES as PERCENTILE_QUANTILES

QUANTILES = {name: PERCENTILE_QUANTILES[name] for name in ("p50", "p90", "p99")}


def percentiles(values: np.ndarray) -> dict[str, float | None]:
    """p50/p90/p99 of `values`; None where fewer than 1 / (1 - q) samples leave none above the figure."""
    n = len(values)
    return {name: (float(np.quantile(values, q)) if n and n * (1 - q) >= 1 - 1e-9 else None)
            for name, q in QUANTILES.items()}


@dataclass(frozen=True)
class GenerationSummary:
    requests: int
    batch: int
    prompt_tokens: int
    new_tokens: int
    ttft_ms: dict[str, float | None]
    tpot_ms: dict[str, float | None]  # over requests, each its mean decode step
    itl_ms: dict[str, float | None]  # over every decode step of every request
    e2e_ms_p50: float
    prefill_tokens_per_s: float  # prompt tokens of the batch over the median TTFT
    output_tokens_per_s: float  # generated tokens of the batch over the median end-to-end time
    kv_cache_mb: float  # the whole cache at the longest context (prompt + new tokens - 1)
    peak_rss_mb: float | None  # the measuring process's own peak resident memory

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(generations: Sequence[Generation], kv_cache_bytes: int, peak_rss_mb: float | None) -> GenerationSummary:
    first = generations[0]
    batch, new_tokens = first.tokens.shape
    ttft = np.array([g.ttft_ms for g in generations])
    tpot = np.array([g.steps_ms.mean() for g in generations if len(g.steps_ms)])
    itl = np.concatenate([g.steps_ms for g in generations])
    e2e = float(np.median([g.e2e_ms for g in generations]))
    prompt_tokens = first.prompt_tokens
    return GenerationSummary(
        requests=len(generations), batch=int(batch), prompt_tokens=prompt_tokens, new_tokens=int(new_tokens),
        ttft_ms=percentiles(ttft), tpot_ms=percentiles(tpot), itl_ms=percentiles(itl), e2e_ms_p50=e2e,
        prefill_tokens_per_s=batch * prompt_tokens / (float(np.median(ttft)) / 1e3),
        output_tokens_per_s=batch * new_tokens / (e2e / 1e3),
        kv_cache_mb=kv_cache_bytes / 2**20, peak_rss_mb=peak_rss_mb)


def figure(value: float | None, digits: int = 3) -> str:
    """Three significant digits; a dash for a figure too few samples give."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:,.0f}"
