"""A generative trial's figures from its processes: the `trials` columns (TTFT, TPOT and ITL percentiles,
prefill tokens/s, KV-cache size, the intervals of the median TTFT and TPOT) and the `decode_steps` rows.

Every figure is over the clean requests of the processes (generator.results.clean), as a trial's latency is:
a request a neighbour preempted says more about the neighbour than about the model. TPOT is per request (the
mean of its decode steps), so that its percentiles are over requests like TTFT's; ITL pools every decode step
of every clean request. The intervals are the trial's own confidence sequences over per-process medians
(generator.results.intervals), the figures a comparison's paired intervals are made of too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from generator.decode.convention import DecoderLayout
from generator.results import intervals
from generator.results.headline import stored_percentile
from generator.runner.aggregate import ProcessOutcome, relative_halfwidth
from generator.runner.measure import latency_stats

MIB = 2**20


def generative_columns(processes: Sequence[ProcessOutcome], percentile: str, layout: DecoderLayout,
                       batch: int, prompt_tokens: int, new_tokens: int) -> dict[str, Any]:
    """The trial's generative `trials` columns."""
    ttft = latency_stats(np.concatenate([p.clean_ttft_ms for p in processes]))
    tpot_values = [p.clean_of(p.tpot_ms) for p in processes if p.tpot_ms.size]
    tpot = latency_stats(np.concatenate(tpot_values)) if tpot_values else None
    steps = [p.clean_steps_ms.ravel() for p in processes if p.steps_ms is not None and p.steps_ms.size]
    itl = latency_stats(np.concatenate(steps)) if steps else None
    medians = [p.generative_medians() for p in processes]
    return {
        "prompt_tokens": prompt_tokens, "new_tokens": new_tokens,
        "ttft_p50_ms": ttft["p50"], "ttft_p90_ms": ttft["p90"], "ttft_p99_ms": ttft["p99"],
        "ttft_headline_ms": ttft[stored_percentile(percentile, ttft["p99"])],
        "tpot_p50_ms": tpot["p50"] if tpot else None, "tpot_p90_ms": tpot["p90"] if tpot else None,
        "tpot_headline_ms": _at(np.concatenate(tpot_values), percentile) if tpot_values else None,
        "itl_p50_ms": itl["p50"] if itl else None, "itl_p90_ms": itl["p90"] if itl else None,
        "itl_p99_ms": itl["p99"] if itl else None,
        "prefill_tokens_per_s": prompt_tokens * batch / (ttft["p50"] / 1e3) if ttft["p50"] > 0 else None,
        # The longest context the cache holds: the prompt and every new token but the last (never fed back).
        "kv_cache_mb": layout.kv_bytes(batch, prompt_tokens + new_tokens - 1) / MIB,
        "ttft_ci_halfwidth": _halfwidth([m["ttft_median_ms"] for m in medians]),
        "tpot_ci_halfwidth": _halfwidth([m["tpot_median_ms"] for m in medians]),
    }


def decode_step_rows(trial_key: str, processes: Sequence[ProcessOutcome], prompt_tokens: int) -> list[dict]:
    """Per process and decode step: its median and p90 over the process's clean requests, at the context the
    step reaches (the KV cache's growth, step by step)."""
    rows = []
    for p in processes:
        steps = p.clean_steps_ms
        if not steps.size:
            continue
        medians, p90s = np.median(steps, axis=0), np.quantile(steps, 0.9, axis=0)
        rows += [{"trial_key": trial_key, "process": p.process, "step": k + 1, "context_tokens": prompt_tokens + k + 1,
                  "median_ms": float(medians[k]), "p90_ms": float(p90s[k]), "requests": int(steps.shape[0])}
                 for k in range(steps.shape[1])]
    return rows


def _at(values: np.ndarray, percentile: str) -> float:
    """The figure at the spec's percentile; p95 stands in for p99 below the requests p99 needs (as for latency)."""
    stats = latency_stats(values)
    return stats[stored_percentile(percentile, stats["p99"])]


def _halfwidth(medians: Sequence[float | None]) -> float | None:
    known = [m for m in medians if m is not None]
    return relative_halfwidth(intervals.one_side(known, sequential=True))
