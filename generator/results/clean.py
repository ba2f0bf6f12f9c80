"""Which requests are *clean*: the results contract's rule, shared by the runner (headline figures), the
analysis (intervals) and the pages (the preempted share beside every figure).

A request is **preempted** when the scheduler kept its threads waiting for a CPU (Linux's run-delay, summed
over the calling thread and the session's pool threads, generator.runner.measure) for more than
``PREEMPTED_SHARE`` of its latency and more than ``PREEMPTED_MIN_MS``: on a quiet machine the delay is zero for
nearly every request, and a neighbour that takes the core costs a whole time slice (milliseconds), so the rule
separates the two without tuning. Every other request is clean. Where the delay is unknown (not Linux, no
schedstat, a results folder of schema version 1) every request counts as clean and ``preemption_known`` is
false, which the pages say.

When the configuration asks for more threads than the machine has CPUs (threads × concurrency > logical
cores), its own threads keep each other waiting and the delay no longer tells a neighbour apart: delays are
stored but the rule does not apply (``applies``).
"""

from __future__ import annotations

import numpy as np

PREEMPTED_SHARE = 0.01
PREEMPTED_MIN_MS = 0.01
# A process is judged by its clean requests; with fewer than this share of them it says nothing reliable
# (the clean ones would be the requests a busy scheduler happened to spare, not a sample of the model's).
MIN_CLEAN_SHARE = 0.25
MIN_CLEAN_REQUESTS = 5
# Processes that kept enough clean requests a side needs for a verdict (`perfsite diff`, the compare pages, the
# chooser): one process's requests share its fate, so they cannot say how far another window would differ.
MIN_JUDGED_PROCESSES = 2


def applies(threads: int, concurrency: int, logical_cores: int | None) -> bool:
    """Whether run-delay can tell a neighbour's preemption from the configuration's own oversubscription."""
    return logical_cores is None or threads * concurrency <= logical_cores


def preempted_mask(latency_ms: np.ndarray, run_delay_ms: np.ndarray | None) -> np.ndarray:
    """True where a request was preempted (module docstring); all False when the delays are unknown."""
    lat = np.asarray(latency_ms, dtype=np.float64)
    if run_delay_ms is None:
        return np.zeros(lat.shape, dtype=bool)
    delay = np.nan_to_num(np.asarray(run_delay_ms, dtype=np.float64), nan=0.0)
    return (delay > PREEMPTED_SHARE * lat) & (delay > PREEMPTED_MIN_MS)


def usable(clean_requests: int, requests: int) -> bool:
    """Whether a process kept enough clean requests to be judged by them."""
    return clean_requests >= MIN_CLEAN_REQUESTS and clean_requests >= MIN_CLEAN_SHARE * requests
