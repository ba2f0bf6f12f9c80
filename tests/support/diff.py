"""Synthetic `perfsite diff` sides: small, fixed results directories written through the real results store.

Every side is shaped like a real run (5 measurement processes of 120 requests each, a profiled pass of 10
iterations, an environment row, the stored spec) and deterministic, so verdicts and the Markdown summary are
byte-stable. `Side` says what differs between a baseline and a candidate; `git` runs git in a test repository.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from generator.results.store import ResultsDir, TrialFiles
from generator.spec import canonical_json, spec_from_json, spec_to_json

EXPERIMENT = "cnn"
PAYLOAD = "<script>alert(1)</script>|`x`"
ENV = {
    "env_id": "a1b2c3d4e5f6", "fingerprint": "a1b2c3d4e5f6" + "0" * 52, "hostname": "bench-1",
    "cpu_model": "AMD EPYC 7B13", "physical_cores": 1, "logical_cores": 2, "isa": ["AVX", "AVX2", "FMA"],
    "memory_gb": 7.8, "os": "Linux 6.1.0", "python": "3.11.9", "onnxruntime": "1.31.1", "onnx": "1.23.2",
    "numpy": "2.4.0", "providers": ["CPUExecutionProvider"], "captured_at": "2026-01-05T10:00:00Z",
}
OTHER_ENV = {**ENV, "env_id": "ffffeeee0000", "fingerprint": "ffffeeee0000" + "1" * 52, "onnxruntime": "1.30.0"}
# (layer, share of the profiled time); each is one executed Conv fused with its Relu, like onnxruntime's NCHWc.
LAYERS = [("/conv1/Conv", 0.10), ("/layer1/conv/Conv", 0.30), ("/layer2/conv/Conv", 0.30),
          ("/layer3/conv/Conv", 0.25), ("/avgpool/GlobalAveragePool", 0.05)]


@dataclass
class Side:
    """What differs between a baseline and a candidate: per-configuration latency factors, layer factors,
    layers added, the environment, starved processes, thresholds in the stored spec."""

    latency: dict[int, float] = field(default_factory=lambda: {1: 1.0, 4: 1.0})
    layer_factor: dict[str, float] = field(default_factory=dict)
    added: tuple[str, ...] = ()
    env: dict = field(default_factory=lambda: dict(ENV))
    starved: int = 0  # processes of every trial that got 0.4 of a core
    regression: dict | None = None
    version: str = "fp32"
    node_payload: bool = False
    finished: str = "2026-01-05T10:00:30Z"
    seed: int = 0
    process_factors: tuple[float, ...] = (0.99, 1.0, 1.01, 1.0, 0.995)  # each process's latency vs the median
    pair_id: str | None = None  # the same on both sides: measured in one paired run
    failed: tuple[int, ...] = ()  # batch sizes whose trial failed (onnxruntime refused the input)
    quick: bool = False  # measured in quick mode
    sequential: bool | None = None  # ci_sequential: measured until its confidence sequence settled (None: older)
    at_budget: bool = False  # budget_exhausted: measuring ran to the budget without settling


def spec_dict(side: Side) -> dict:
    spec = {"name": EXPERIMENT, "models": {side.version: {"path": "models/cnn.onnx"}},
            "inputs": {"input": {"shape": ["batch", 3, 32, 32], "dtype": "float32"}},
            "sweep": {"batch": [1, 4]}, "measure": {"repeats": 5, "profile_iterations": 10}}
    return spec | ({"regression": side.regression} if side.regression else {})


def write_side(root: Path, side: Side) -> Path:
    """The fixed experiment under root/cnn/, shaped by `side`; returns root."""
    spec = spec_from_json(spec_dict(side))
    sha = hashlib.sha256(canonical_json(spec).encode()).hexdigest()
    rd = ResultsDir(root / EXPERIMENT)
    rd.write_spec(sha, spec_to_json(spec))
    rd.write_row("environments", side.env["env_id"], side.env)
    for n, batch in enumerate(sorted(side.latency)):
        median_ms = 0.8 * batch ** 0.8 * side.latency[batch]
        key = hashlib.sha256(f"{side}-{batch}".encode()).hexdigest()[:20]
        rng = np.random.default_rng(side.seed * 100 + n)
        row = trial_row(key, side, batch, sha, median_ms)
        if batch in side.failed:
            rd.write_trial(TrialFiles(trial=failed_row(row, batch), processes=[], latencies=[], nodes=[]))
            continue
        rd.write_trial(TrialFiles(trial=row, processes=processes(key, side, batch, median_ms),
                                  latencies=latencies(key, side, median_ms, rng), nodes=nodes(key, side, median_ms)))
    return root


def failed_row(row: dict, batch: int) -> dict:
    """The trial row of a configuration that failed, as the runner writes one: no figures, the reason."""
    figures = ("latency_headline_ms", "latency_p50_ms", "throughput_ips", "processes", "cores_used", "profiled",
               "profile_iterations")
    return {k: v for k, v in row.items() if k not in figures} | {
        "status": "failed", "error": f"Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while "
                                     f"running Reshape node. Name:'/head/Reshape{PAYLOAD}' Input shape:{{{batch},4}}"}


def trial_row(key: str, side: Side, batch: int, sha: str, median_ms: float) -> dict:
    return {
        "experiment": EXPERIMENT, "trial_key": key, "run_id": "run-1", "env_id": side.env["env_id"],
        "spec_sha256": sha, "version": side.version, "model_sha256": hashlib.sha256(repr(side.added).encode())
        .hexdigest(), "batch": batch, "threads": 1, "concurrency": 1, "optimization_level": "all",
        "provider": "cpu", "spinning": True, "inter_op_threads": 1, "dims": "{}",
        "config_label": f"b{batch} t1 c1", "status": "ok", "quick": side.quick, "percentile": "p90",
        "latency_headline_ms": median_ms * 1.05, "latency_p50_ms": median_ms, "throughput_ips": 1000 * batch /
        median_ms, "processes": 5, "cores_used": 1.0, "cores_expected": 1.0, "noisy": False, "profiled": True,
        "profile_iterations": 10, "started_at": side.finished, "finished_at": side.finished,
        "pair_id": side.pair_id, "pair_side": "candidate" if side.pair_id else None,
        "ci_sequential": side.sequential, "budget_exhausted": side.at_budget,
    }


def processes(key: str, side: Side, batch: int, median_ms: float) -> list[dict]:
    out = []
    for p, factor in enumerate(side.process_factors):
        cores = 0.4 if p < side.starved else 1.0
        out.append({"trial_key": key, "process": p, "round": p, "iterations": 120, "items": 120 * batch,
                    "wall_s": 0.1, "cpu_s": 0.1 * cores, "cores_used": cores,
                    "latency_median_ms": median_ms * factor, "throughput_ips": 1000 * batch / (median_ms * factor)})
    return out


def latencies(key: str, side: Side, median_ms: float, rng: np.random.Generator) -> pa.Table:
    factors = np.repeat(side.process_factors, 120)
    values = median_ms * factors * rng.lognormal(0.0, 0.03, size=600)
    return pa.table({"trial_key": [key] * 600, "process": np.repeat(np.arange(5), 120), "stream": [0] * 600,
                     "iteration": np.tile(np.arange(120), 5), "latency_ms": values})


def nodes(key: str, side: Side, median_ms: float) -> list[dict]:
    layers = list(LAYERS) + [(name, 0.2) for name in side.added]
    out = []
    for i, (layer, share) in enumerate(layers):
        time_us = median_ms * 1000 * share * side.layer_factor.get(layer, 1.0)
        name = layer.replace("/conv/Conv", "/relu/Relu_output_0_nchwc")
        if side.node_payload and i == 1:
            layer, name = layer + PAYLOAD, name + PAYLOAD
        out.append({"trial_key": key, "exec_order": i, "node_name": name, "op_type": layer.rsplit("/", 1)[-1],
                    "parent": None, "calls": 1, "dur_mean_us": time_us * 1.01, "dur_p50_us": time_us,
                    "dur_std_us": time_us * 0.02, "original_nodes": [layer, layer.replace("Conv", "Relu")]})
    return out


def sides(tmp_path: Path, baseline: Side, candidate: Side) -> tuple[str, str]:
    return (str(write_side(tmp_path / "baseline", baseline)), str(write_side(tmp_path / "candidate", candidate)))


REGRESSION = Side(latency={1: 1.3, 4: 1.0}, layer_factor={"/layer2/conv/Conv": 1.5}, added=("/layer4/conv/Conv",),
                  finished="2026-01-05T11:00:00Z")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()
