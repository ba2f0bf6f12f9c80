"""A small, fixed results directory for the site tests, written through the real results store.

The figures are synthetic but plausible (a small CNN on 2 cores: FP32 vs static INT8, batch 1 and 8, 1 and 2
threads) and fully deterministic, so pages built from them can be snapshotted. `payload=True` puts hostile
text (HTML, Markdown, template syntax) wherever results may carry untrusted strings.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from generator.results.store import ResultsDir, TrialFiles
from generator.spec import canonical_json, spec_from_json, spec_to_json

EXPERIMENT = "cnn-int8"
PAYLOAD = (
    "<script>alert('x')</script><img src=x onerror=alert(1)> | [a](javascript:alert(2)) {{ 7*7 }} *b* _c_"
)
NOTES = "quant_pre_process: symbolic shape inference failed; retried with skip_symbolic_shape=True"
ENV = {
    "env_id": "a1b2c3d4e5f6", "fingerprint": "a1b2c3d4e5f6" + "0" * 52, "hostname": "bench-1",
    "cpu_model": "AMD EPYC 7B13", "physical_cores": 1, "logical_cores": 2, "isa": ["AVX", "AVX2", "FMA"],
    "memory_gb": 7.8, "os": "Linux 6.1.0", "python": "3.11.9", "onnxruntime": "1.31.1", "onnx": "1.23.2",
    "numpy": "2.4.0", "providers": ["CPUExecutionProvider"], "captured_at": "2026-01-05T10:00:00Z",
}
# (node name, op type, share of kernel time); the If's sub-graph node has a parent and must not be summed.
NODES = [
    ("conv1", "Conv", 0.31), ("relu1", "Relu", 0.04), ("pool1", "MaxPool", 0.06),
    ("conv2", "Conv", 0.27), ("relu2", "Relu", 0.03), ("conv3", "Conv", 0.18),
    ("gap", "GlobalAveragePool", 0.02), ("fc", "Gemm", 0.05), ("softmax", "Softmax", 0.01),
    ("branch", "If", 0.03),
]


DESCRIPTION = "Is static INT8 faster than FP32 for this CNN, and at which batch size?"


def spec_dict(description: str = DESCRIPTION, percentile: str = "p95") -> dict:
    return {
        "name": EXPERIMENT, "description": description + "\n\nSecond paragraph: ResNet-style, 32×32 inputs.",
        "models": {"fp32": {"path": "models/cnn.onnx"},
                   "int8": {"from": "fp32", "quantize": {"mode": "static_qdq"}}},
        "inputs": {"x": {"shape": ["batch", 3, 32, 32], "dtype": "float32"}},
        "sweep": {"batch": [1, 8], "threads": [1, 2]},
        "measure": {"percentile": percentile}, "latency_threshold_ms": 12.0,
    }


def _latency_ms(version: str, batch: int, threads: int) -> float:
    per_item = {"fp32": 1.9, "int8": 1.05}.get(version, 1.5)
    amortized = 1.0 if batch == 1 else 0.78  # larger batches use the cores better
    return per_item * batch * amortized * (1.0 if threads == 1 else 0.58)


def trial_row(key: str, version: str, batch: int, threads: int, failed: bool, noisy: bool, n: int) -> dict:
    mean = _latency_ms(version, batch, threads)
    row = {
        "experiment": EXPERIMENT, "trial_key": key, "run_id": "run-0001", "env_id": ENV["env_id"],
        "spec_sha256": "", "version": version, "model_sha256": hashlib.sha256(version.encode()).hexdigest(),
        "model_bytes": {"fp32": 1_843_200, "int8": 512_000}.get(version, 900_000), "batch": batch,
        "version_source": {"fp32": "models/cnn.onnx", "int8": "fp32 → quantize(static_qdq)"}.get(version),
        "version_notes": NOTES if version == "int8" else None,
        "threads": threads, "concurrency": 1, "optimization_level": "all", "provider": "cpu",
        "spinning": True, "inter_op_threads": 1, "dims": "{}", "config_label": f"b{batch} t{threads} c1",
        "status": "failed" if failed else "ok", "quick": False, "percentile": "p95",
        "started_at": f"2026-01-05T10:{n:02d}:00Z", "finished_at": f"2026-01-05T10:{n:02d}:30Z",
    }
    if failed:
        return {**row, "error": "worker crashed (SIGSEGV) while creating the session"}
    spread = 0.31 if noisy else 0.03
    row.update(
        latency_mean_ms=mean, latency_p50_ms=mean * 0.98, latency_p90_ms=mean * 1.09,
        latency_p95_ms=mean * 1.14, latency_p99_ms=None, latency_std_ms=mean * (0.21 if noisy else 0.05),
        latency_min_ms=mean * 0.9,
        latency_max_ms=mean * 1.6, latency_headline_ms=mean * 1.14, throughput_ips=1000.0 * batch / mean,
        iterations=180, duration_s=3.0, cv=0.21 if noisy else 0.05, processes=3, process_median_spread=spread,
        cores_used=1.1 if noisy else threads * 0.97, cores_expected=float(threads), noisy=noisy,
        noise_reasons="spread;cores" if noisy else None, load_ms=41.0 + batch, first_run_ms=mean * 3.2,
        peak_rss_mb=88.0 + 2 * batch, arena_mb=6.0 * batch, profiled=True, profile_error=None,
        profiled_latency_us=mean * 1000 * 1.12, model_run_us=mean * 1000 * 1.05,
        kernel_sum_us=mean * 1000 * 0.93,
    )
    return row


def processes(key: str, row: dict) -> list[dict]:
    out = []
    for p, factor in enumerate((0.99, 1.0, 1.03 if not row.get("noisy") else 1.31)):
        median = row["latency_p50_ms"] * factor
        out.append({"trial_key": key, "process": p, "round": p, "iterations": 60, "items": 60 * row["batch"],
                    "wall_s": 1.0, "cpu_s": row["cores_used"], "cores_used": row["cores_used"],
                    "latency_median_ms": median, "latency_mean_ms": median * 1.02,
                    "throughput_ips": 1000.0 * row["batch"] / median, "load_ms": row["load_ms"],
                    "first_run_ms": row["first_run_ms"], "peak_rss_mb": row["peak_rss_mb"]})
    return out


def latencies(key: str, row: dict, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    values = row["latency_p50_ms"] * rng.lognormal(0.0, 0.05, size=60)
    return pa.table({"trial_key": [key] * 60, "process": np.repeat([0, 1, 2], 20), "stream": [0] * 60,
                     "iteration": np.tile(np.arange(20), 3), "latency_ms": values})


def nodes(key: str, row: dict, version: str, payload: bool | str) -> list[dict]:
    kernels, text = row["kernel_sum_us"], payload if isinstance(payload, str) else PAYLOAD
    out = []
    for i, (name, op, share) in enumerate(NODES):
        if payload and i < 2:
            name, op = f"{name}{text}", f"{op}{text}" if i == 0 else op
        precision = "INT8" if version == "int8" and op.startswith(("Conv", "Gemm")) else "FP32"
        out.append({"trial_key": key, "exec_order": i, "node_name": name, "op_type": op, "provider": "CPU",
                    "parent": None, "calls": 1, "dur_mean_us": kernels * share, "dur_p50_us": kernels * share,
                    "runtime_precision": precision,
                    "original_nodes": [name] + ([f"bn{i}"] if op == "Conv" else []),
                    "weights": [f"{name}.weight", f"{name}.bias"] if op in ("Conv", "Gemm") else [],
                    "thread_id": 1, "start_offset_us": float(i)})
    out.append({"trial_key": key, "exec_order": len(NODES), "node_name": "branch/then/identity",
                "op_type": "Identity", "parent": "branch", "calls": 1, "dur_mean_us": kernels * 0.02})
    return out


def write_results(root: Path, payload: bool | str = False, quick: bool = False, only_failed: bool = False,
                  percentile: str = "p95", failed_versions: tuple[str, ...] = ()) -> Path:
    """Write the fixed experiment under root/<experiment>/ and return the experiment folder. `quick` marks
    every trial as measured in quick mode; `only_failed` makes every trial a failure, `failed_versions` every
    trial of these versions; `payload` a string: that text instead of PAYLOAD. `percentile` the spec's headline
    percentile: with p99, as the runner stores it for trials of 60 requests (under P99_MIN_SAMPLES), p95 of the
    stored requests stands in for it."""
    text = payload if isinstance(payload, str) else PAYLOAD
    spec = spec_from_json(spec_dict(text if payload else DESCRIPTION, percentile))
    sha = hashlib.sha256(canonical_json(spec).encode()).hexdigest()
    rd = ResultsDir(root / EXPERIMENT)
    rd.write_spec(sha, spec_to_json(spec))
    env = {**ENV, "cpu_model": text} if payload else ENV
    rd.write_row("environments", ENV["env_id"], env)
    rd.write_row("runs", "run-0001", {"run_id": "run-0001", "experiment": EXPERIMENT, "spec_sha256": sha,
                                      "env_id": ENV["env_id"], "started_at": "2026-01-05T10:00:00Z",
                                      "git_commit": "0123456789abcdef", "git_dirty": False, "quick": False,
                                      "host_noise_s": 2.0, "host_noise_window_s": 0.25, "host_noise_windows": 8,
                                      "host_noise_fastest_ms": 8.1, "host_noise_slowest_ms": 14.62,
                                      "host_noise_spread": 0.525})
    plan = [(v, b, t) for b in (1, 8) for t in (1, 2) for v in ("fp32", "int8")]
    if payload:
        plan.append((text, 1, 1))
    for n, (version, batch, threads) in enumerate(plan):
        key = hashlib.sha256(f"{version}-{batch}-{threads}".encode()).hexdigest()[:20]
        failed = only_failed or version in failed_versions or (version, batch, threads) == ("int8", 8, 2)
        noisy = (version, batch, threads) == ("fp32", 8, 2)
        row = {**trial_row(key, version, batch, threads, failed, noisy, n), "spec_sha256": sha}
        row["quick"] = quick
        row["percentile"] = percentile
        if payload:
            row["version_notes"] = text
        if payload and failed:
            row["error"] = text
        if failed:
            rd.write_trial(TrialFiles(trial=row, processes=[], latencies=[], nodes=[]))
            continue
        requests = latencies(key, row, n)
        if percentile == "p99":  # the stored p95 is that of the stored requests, as the runner's would be
            p95 = float(np.percentile(requests["latency_ms"].to_numpy(), 95))
            row.update(latency_p95_ms=p95, latency_headline_ms=p95)
        files = TrialFiles(trial=row, processes=processes(key, row), latencies=requests,
                           nodes=nodes(key, row, version, payload))
        rd.write_trial(files)
    return rd.path
