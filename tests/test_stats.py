"""Process-level confidence intervals: coverage under no difference, power under a real one, small samples,
determinism and speed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from generator.analysis.stats import (
    ProcessSamples,
    bootstrap_latency,
    latency_ratio,
    percentile_of,
    process_samples,
    scaled_ratio_ci,
    small_sample_note,
    throughput_ratio,
)


def _trial(seed: int, processes: int = 5, requests: int = 200, scale: float = 1.0,
           process_sd: float = 0.04) -> ProcessSamples:
    """Requests of independent processes: each process has its own level (the machine state it got), and
    requests vary around it; throughput follows the process's mean latency."""
    rng = np.random.default_rng(seed)
    levels = scale * np.exp(rng.normal(0.0, process_sd, processes))
    lat = tuple(level * rng.lognormal(0.0, 0.15, requests) for level in levels)
    return ProcessSamples(lat, tuple(1000.0 / a.mean() for a in lat))


def test_identical_distributions_rarely_differ():
    latency_hits = throughput_hits = 0
    for seed in range(100):
        a, b = _trial(2 * seed), _trial(2 * seed + 1)
        latency_hits += not latency_ratio(a, b, 0.9, resamples=400)[0].significant
        throughput_hits += not throughput_ratio(a, b, resamples=400)[0].significant
    assert latency_hits >= 90 and throughput_hits >= 90


def test_pooled_requests_would_have_called_them_different():
    """Why the process is the unit: a plain bootstrap of pooled requests is far too narrow."""
    false_positives = 0
    for seed in range(30):
        a, b = _trial(2 * seed, process_sd=0.08), _trial(2 * seed + 1, process_sd=0.08)
        pooled_a, pooled_b = np.concatenate(a.latencies_ms), np.concatenate(b.latencies_ms)
        ratio = latency_ratio(ProcessSamples((pooled_a,), (1.0,)), ProcessSamples((pooled_b,), (1.0,)), 0.5,
                              resamples=400)[0]
        false_positives += ratio.significant
    assert false_positives >= 10


def test_a_twenty_percent_shift_is_significant():
    for seed in range(10):
        a, b = _trial(seed), _trial(seed + 100, scale=1.2)
        lat = latency_ratio(a, b, 0.9, resamples=500)[0]
        thr = throughput_ratio(a, b, resamples=500)[0]
        assert lat.significant and lat.low > 1.0 and 1.1 < lat.point < 1.35
        assert thr.significant and thr.high < 1.0


def test_sides_are_pooled_percentiles_and_the_ratio_is_that_of_per_process_figures():
    a, b = _trial(1), _trial(2)
    ratio, boot_a, boot_b = latency_ratio(a, b, percentile_of("p90"))
    assert boot_a.point == pytest.approx(np.percentile(np.concatenate(a.latencies_ms), 90))
    # The ratio: geometric mean of the per-process p90s of B over that of A, inside its t interval.
    per_process = [np.exp(np.mean(np.log([np.percentile(x, 90) for x in s.latencies_ms]))) for s in (a, b)]
    assert ratio.point == pytest.approx(per_process[1] / per_process[0])
    assert ratio.low < ratio.point < ratio.high
    low, high = boot_a.interval()
    assert low < boot_a.point < high
    assert (ratio.processes_a, ratio.processes_b, ratio.note) == (5, 5, None)


def test_one_process_gives_a_flagged_interval_from_requests_alone():
    one = _trial(3, processes=1, requests=300)
    ratio = latency_ratio(one, _trial(4, processes=1, requests=300), 0.5, resamples=500)[0]
    assert ratio.flagged and "one measurement process" in ratio.note
    assert ratio.low < ratio.point < ratio.high and ratio.high - ratio.low > 0
    assert small_sample_note(2, 5).startswith("two measurement processes")
    assert small_sample_note(3, 3) is None


def test_tiny_samples_and_missing_throughput():
    a = ProcessSamples((np.array([1.0]), np.array([1.2, 1.1])), (float("nan"), float("nan")))
    ratio, boot_a, _ = latency_ratio(a, a, 0.9, resamples=200)
    assert np.isfinite(ratio.low) and np.isfinite(ratio.high) and boot_a.processes == 2
    assert throughput_ratio(a, a) == (None, None, None)
    with pytest.raises(ValueError):
        bootstrap_latency([np.array([])], 0.5, np.random.default_rng(0))


def test_deterministic():
    a, b = _trial(5), _trial(6)
    assert latency_ratio(a, b, 0.9)[0] == latency_ratio(a, b, 0.9)[0]
    assert throughput_ratio(a, b)[0] == throughput_ratio(a, b)[0]


def test_process_samples_reads_the_tables():
    latencies = pd.DataFrame({"trial_key": ["k"] * 5 + ["other"], "process": [0, 0, 1, 1, 1, 0],
                              "stream": 0, "iteration": [0, 1, 0, 1, 2, 0], "latency_ms": [1, 2, 3, 4, 5, 9.0]})
    processes = pd.DataFrame({"trial_key": ["k", "k"], "process": [1, 0], "throughput_ips": [10.0, None]})
    s = process_samples(processes, latencies, "k")
    assert s.processes == 2 and [list(x) for x in s.latencies_ms] == [[1, 2], [3, 4, 5]]
    assert np.isnan(s.throughput_ips[0]) and s.throughput_ips[1] == 10.0


def test_scaled_ratio_borrows_process_variation():
    from generator.analysis.records_compare import RatioCI

    narrow = RatioCI(1.0, 0.99, 1.01, False, processes_a=3, processes_b=3)
    wide = RatioCI(1.0, 0.8, 1.25, False, note="two measurement processes: ...", processes_a=2, processes_b=2)
    assert scaled_ratio_ci(0.0, 5.0, narrow) is None
    tight = scaled_ratio_ci(100.0, 50.0, narrow)
    loose = scaled_ratio_ci(100.0, 50.0, wide, rel_se_a=0.05)
    assert tight.point == loose.point == 0.5 and tight.significant
    assert loose.high - loose.low > tight.high - tight.low and loose.note == wide.note
    assert scaled_ratio_ci(100.0, 101.0, wide).significant is False
    # A layer whose profiled times spread 440 times their mean: an interval as good as unbounded, not a crash
    # (`perfsite diff` ended in OverflowError on one in a fresh clone's make test).
    huge = scaled_ratio_ci(9.518, 9.408, wide, rel_se_a=439.77)
    assert huge.significant is False and huge.low < 1e-300 and 1e300 < huge.high < math.inf


@pytest.mark.parametrize(("df", "quantile"), [(1, 12.706204736), (2, 4.302652730), (3.5, 2.940089), (10, 2.228138852),
                                              (30, 2.042272456), (1e6, 1.959966)])
def test_student_t_quantiles_are_the_tables(df, quantile):
    """The 97.5 % quantile of Student's t (from scipy.special.stdtrit, not scipy.stats: a second's import in every
    page-building process), against published tables; fractional degrees of freedom come from Welch's formula."""
    from generator.results.intervals import t_quantile

    assert t_quantile(df) == pytest.approx(quantile, rel=1e-6)
