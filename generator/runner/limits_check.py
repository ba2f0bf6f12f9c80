"""After a sweep: did any layer run faster than the machine's settled limits allow? Then probe once more.

A layer above a limit proves the limit too low (both agreeing probes ran while a neighbour held the machine),
or, for memory traffic, that the layer's data came from the caches. `perfsite run` re-probes once per cached
probe, by the same rule as the first (generator.machine.probe.reprobe: a re-probe that settles raises the
limits, one that does not leaves them); what still exceeds the limits afterwards, the pages mark "limit
underestimated" (generator.analysis.limits). Unsettled limits are not checked: no page uses them, and the next
run probes them again anyway (generator.machine.probe.ensure_limits).

The operations and bytes of each executed node follow the same rule as the profile pages
(generator.layers.work), so that the runner and the pages agree on which layer exceeds what.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import pandas as pd

from generator.cells import clean
from generator.layers.work import split_sums, traffic_bytes
from generator.machine import probe
from generator.machine.environment import Environment
from generator.results.profiled import ensured, with_profiled_times
from generator.results.store import ResultsDir


@dataclass(frozen=True)
class LimitExcess:
    """One executed node that ran above a limit of the environment."""

    trial_key: str
    node_name: str
    limit: str  # "FP32 peak", "INT8 peak" or "bandwidth"
    achieved: float  # GOP/s or GB/s
    allowed: float  # the limit, scaled to the trial's threads for the compute peaks

    @property
    def text(self) -> str:
        unit = "GB/s" if self.limit == "bandwidth" else "GOP/s"
        return f"{self.node_name} reached {self.achieved:.4g} {unit}, above the measured {self.limit} " \
            f"{self.allowed:.4g}"


def limit_excesses(nodes: pd.DataFrame, layers: pd.DataFrame, trials: pd.DataFrame,
                   env: Environment) -> list[LimitExcess]:
    """Every top-level executed node of `trials` whose operations per second exceed the compute peak (scaled
    by threads ÷ physical cores, as the pages scale it) or whose bytes per second exceed the bandwidth."""
    out: list[LimitExcess] = []
    nodes = ensured(nodes)
    for _, trial in trials.iterrows():
        key = str(trial["trial_key"])
        top = nodes[(nodes["trial_key"] == key) & nodes["parent"].isna()]
        static = layers[layers["trial_key"] == key].drop_duplicates("node").set_index("node")
        if top.empty or static.empty:
            continue
        cores = env.physical_cores or env.logical_cores or 1
        scale = min(int(clean(trial.get("threads")) or cores), cores) / cores
        for (_, node), sums in zip(top.iterrows(), split_sums(top, static), strict=True):
            out.extend(_node_excesses(key, node, sums, env, scale))
    return out


def _node_excesses(key: str, node: pd.Series, sums: dict[str, float] | None, env: Environment,
                   scale: float) -> list[LimitExcess]:
    dur_us = float(clean(node.get("dur_us")) or 0.0)
    if sums is None or dur_us <= 0:
        return []
    found = []
    ops, integer = sums["flops"] + sums["int_ops"], sums["int_ops"] > sums["flops"]
    name, peak = ("INT8 peak", env.peak_gops_int8) if integer and env.peak_gops_int8 else ("FP32 peak",
                                                                                            env.peak_gflops_fp32)
    if peak and ops > 0 and ops / (dur_us * 1e3) > peak * scale:
        found.append(LimitExcess(key, str(node["node_name"]), name, ops / (dur_us * 1e3), peak * scale))
    moved = traffic_bytes(node, sums)
    if env.bandwidth_gbs and moved and moved / (dur_us * 1e3) > env.bandwidth_gbs:
        found.append(LimitExcess(key, str(node["node_name"]), "bandwidth", moved / (dur_us * 1e3), env.bandwidth_gbs))
    return found


def recheck_limits(results: ResultsDir, measured: Collection[str], env: Environment, quick: bool,
                   say: Callable[[str], None]) -> Environment:
    """After a sweep: when a layer of the `measured` trials ran above settled limits and the cached probe was not
    already re-probed, probe again (probe.reprobe) and store the environment row with the new limits; the
    environment as it stands afterwards."""
    cached = probe.cached_limits(probe.probe_cache_dir(), env.fingerprint, quick=True)
    if not measured or cached is None or cached.reprobed or not cached.settled or not env.limits_settled:
        return env
    trials = results.read_table("trials")
    trials = trials[trials["trial_key"].isin(set(measured)) & (trials["status"] == "ok")]
    nodes = with_profiled_times(results.read_table("nodes"), trials)
    excesses = limit_excesses(nodes, results.read_table("layers"), trials, env)
    if not excesses:
        return env
    say(f"{excesses[0].text}{f' (and {len(excesses) - 1} more)' if len(excesses) > 1 else ''}: the cached "
        "machine limits are too low, probing the machine again.")
    env = probe.reprobe(env, quick, warn=say)
    results.write_row("environments", env.env_id, env.row())
    return env
