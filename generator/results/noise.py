"""The thresholds of the noise rules, a fact of the results contract: the runner flags trials with them when it
writes, the diff judges stored processes with them when it reads (docs/methodology.md explains each rule).
"""

NOISE_CV = 0.10  # request latencies' coefficient of variation over the clean requests
NOISE_SPREAD = 0.05  # 2 σ of the per-process clean medians over their median
NOISE_CORES_SHARE = 0.8  # cores used below this share of the cores expected (preemption unknown only)
NOISE_PREEMPTED_SHARE = 0.5  # more than this share of requests preempted
