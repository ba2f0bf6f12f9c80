"""Synthesized results for the profile pages: the site results' trials (support/results.py) with what a profile
needs: executed nodes with real-looking fused names, shapes, sizes and pool shares, hand-written `layers` rows,
and an environment with measured peaks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from generator.results.store import ResultsDir, TrialFiles
from generator.spec import canonical_json, spec_from_json, spec_to_json
from support.results import ENV, PAYLOAD, latencies, processes, trial_row

EXPERIMENT = "cnn-profile"
PROBED = {"peak_gflops_fp32": 180.0, "peak_gops_int8": 340.0, "bandwidth_gbs": 18.0,
          "limits_probed_at": "2026-01-05T09:58:00+00:00", "limits_settled": True,
          "limits_quality": "settled: two undisturbed probes agreed within 5 % (2 probes)"}

# Original nodes of the model file at batch 1: op type, FLOPs, MACs, integer ops, params, weight bytes,
# input bytes, output bytes, counted. Activations and operations scale with the batch, weights do not.
LAYERS = {
    "fp32": {
        "/conv1/Conv": ("Conv", 7_077_888, 3_538_944, 0, 1_792, 7_168, 49_152, 1_048_576, True),
        "/bn1/BatchNormalization": ("BatchNormalization", 524_288, 0, 0, 256, 1_024, 1_048_576, 1_048_576, True),
        "/relu/Relu": ("Relu", 262_144, 0, 0, 0, 0, 1_048_576, 1_048_576, True),
        "/maxpool/MaxPool": ("MaxPool", 589_824, 0, 0, 0, 0, 1_048_576, 262_144, True),
        "/layer1/conv/Conv": ("Conv", 37_781_504, 18_890_752, 0, 36_928, 147_712, 262_144, 262_144, True),
        "/layer1/Add": ("Add", 65_536, 0, 0, 0, 0, 524_288, 262_144, True),
        "/layer1/relu/Relu": ("Relu", 65_536, 0, 0, 0, 0, 262_144, 262_144, True),
        "/avgpool/GlobalAveragePool": ("GlobalAveragePool", 65_536, 0, 0, 0, 0, 262_144, 256, True),
        "/fc/Gemm": ("Gemm", 1_300, 640, 0, 650, 2_600, 256, 40, True),
        "/branch/If": ("If", None, None, None, 0, 0, 4, 40, False),
    },
    "int8": {
        "input_QuantizeLinear": ("QuantizeLinear", 24_576, 0, 0, 2, 5, 49_152, 12_288, True),
        "input_DequantizeLinear": ("DequantizeLinear", 0, 0, 0, 0, 0, 12_288, 49_152, True),
        "/conv1/Conv": ("Conv", 0, 3_538_944, 7_077_888, 1_792, 1_984, 12_288, 262_144, True),
        "/conv1/Conv_output_QuantizeLinear": ("QuantizeLinear", 0, 0, 524_288, 2, 5, 1_048_576, 262_144, True),
        "/maxpool/MaxPool": ("MaxPool", 589_824, 0, 0, 0, 0, 262_144, 65_536, True),
        "/layer1/conv/Conv": ("Conv", 0, 18_890_752, 37_781_504, 36_928, 37_120, 65_536, 65_536, True),
        "/avgpool/GlobalAveragePool": ("GlobalAveragePool", 65_536, 0, 0, 0, 0, 262_144, 256, True),
        "/fc/Gemm": ("Gemm", 1_300, 640, 0, 650, 2_600, 256, 40, True),
        "/branch/If": ("If", None, None, None, 0, 0, 4, 40, False),
    },
}

# Executed nodes: name, op type, share of kernel time, original nodes, ORT sizes at batch 1 (activation,
# output bytes; None: not reported), pool share with 2 threads, input and output shapes at batch 1.
EXECUTED = {
    "fp32": [
        ("/relu/Relu_output_0_nchwc", "Conv", 0.42, ["/conv1/Conv", "/bn1/BatchNormalization", "/relu/Relu"],
         (49_152, 1_048_576), 0.45, [[1, 3, 64, 64], [64, 3, 3, 3]], [[1, 64, 64, 64]]),
        ("/maxpool/MaxPool_output_0_nchwc", "MaxPool", 0.08, ["/maxpool/MaxPool"], (1_048_576, 262_144), 0.4,
         [[1, 64, 64, 64]], [[1, 64, 32, 32]]),
        ("/layer1/relu/Relu_output_0_nchwc", "Conv", 0.33, ["/layer1/conv/Conv", "/layer1/Add", "/layer1/relu/Relu"],
         None, 0.47, [[1, 64, 32, 32], [64, 64, 3, 3]], [[1, 64, 32, 32]]),
        ("/avgpool/GlobalAveragePool_output_0_nchwc", "GlobalAveragePool", 0.05, ["/avgpool/GlobalAveragePool"],
         (262_144, 256), 0.0, [[1, 64, 32, 32]], [[1, 64, 1, 1]]),
        ("ReorderOutput", "ReorderOutput", 0.03, ["/avgpool/GlobalAveragePool"], (256, 256), 0.0,
         [[1, 64, 1, 1]], [[1, 64, 1, 1]]),
        ("/fc/Gemm", "Gemm", 0.06, ["/fc/Gemm"], (256, 40), 0.0, [[1, 64], [10, 64]], [[1, 10]]),
        ("/branch/If", "If", 0.03, ["/branch/If"], (4, 40), None, [[1]], [[1, 10]]),
    ],
    "int8": [
        ("input_QuantizeLinear", "QuantizeLinear", 0.06, ["input_QuantizeLinear"], (49_152, 12_288), 0.0,
         [[1, 3, 64, 64]], [[1, 3, 64, 64]]),
        ("/conv1/Conv_token_1", "QLinearConv", 0.30, ["input_DequantizeLinear", "/conv1/Conv",
                                                     "/conv1/Conv_output_QuantizeLinear"],
         (12_288, 262_144), 0.3, [[1, 3, 64, 64], [64, 3, 3, 3]], [[1, 64, 64, 64]]),
        ("Transpose", "Transpose", 0.04, ["input_DequantizeLinear"], (12_288, 12_288), 0.0,
         [[1, 3, 64, 64]], [[1, 64, 64, 3]]),
        ("/maxpool/MaxPool_token_2", "NhwcMaxPool", 0.07, ["/maxpool/MaxPool"], (262_144, 65_536), 0.0,
         [[1, 64, 64, 64]], [[1, 32, 32, 64]]),
        ("/layer1/conv/Conv_token_3", "QLinearConv", 0.38, ["/layer1/conv/Conv"], (65_536, 65_536), 0.35,
         [[1, 32, 32, 64], [64, 64, 3, 3]], [[1, 32, 32, 64]]),
        ("/avgpool/GlobalAveragePool", "GlobalAveragePool", 0.06, ["/avgpool/GlobalAveragePool"],
         (262_144, 256), 0.0, [[1, 64, 32, 32]], [[1, 64, 1, 1]]),
        ("/fc/Gemm", "Gemm", 0.06, ["/fc/Gemm"], (256, 40), 0.0, [[1, 64], [10, 64]], [[1, 10]]),
        ("/branch/If", "If", 0.03, ["/branch/If"], (4, 40), None, [[1]], [[1, 10]]),
    ],
}


# Each profiling process's figure, relative to the median (three processes, as a run's first rounds give).
PROCESS_FACTORS = (0.99, 1.0, 1.02)


def spec_dict(description: str = "Where does the time of the example CNN go, and how close to the machine?") -> dict:
    return {
        "name": EXPERIMENT, "description": description,
        "models": {"fp32": {"path": "models/cnn.onnx"},
                   "int8": {"from": "fp32", "quantize": {"mode": "static_qdq"}}},
        "inputs": {"x": {"shape": ["batch", 3, 64, 64], "dtype": "float32"}},
        "sweep": {"batch": [1, 8], "threads": [1, 2]},
        "measure": {"percentile": "p95"}, "latency_threshold_ms": 12.0,
        "compare": [{"a": "fp32", "b": "int8"}], "profile": [{"batch": 1}],
        "whatif": {"Conv": 2.0, "/fc/Gemm": 1.5, "Attention": 3.0},
    }


def _batched(batch: int, shapes: list[list[int]]) -> str:
    """Activation shapes (leading 1) at the batch size; weight shapes as they are."""
    return json.dumps([[batch, *s[1:]] if len(s) > 1 and s[0] == 1 else s for s in shapes], separators=(",", ":"))


def _nodes(key: str, row: dict, version: str, payload: bool) -> list[dict]:
    kernels, batch, threads = row["kernel_sum_us"], row["batch"], row["threads"]
    out = []
    for i, (name, op, share, originals, sizes, pool, ins, outs) in enumerate(EXECUTED[version]):
        if payload and i == 0:
            name = f"{name}{PAYLOAD}"
        integer = version == "int8" and op.startswith("QLinear")
        out.append({
            "trial_key": key, "exec_order": i, "node_name": name, "op_type": op, "provider": "CPUExecutionProvider",
            "parent": None, "calls": 1, "dur_mean_us": kernels * share, "dur_p50_us": kernels * share * 0.97,
            # Three profiling processes, the median the node's figure (generator.runner.profiles).
            "dur_process_p50_us": [kernels * share * 0.97 * f for f in PROCESS_FACTORS],
            "input_shapes": _batched(batch, ins), "output_shapes": _batched(batch, outs),
            "runtime_precision": "INT8" if integer else "FP32", "original_nodes": originals,
            "weights": [f"{o.strip('/').split('/')[0]}.weight" for o in originals if o.endswith(("Conv", "Gemm"))],
            "activation_bytes": sizes[0] * batch if sizes else None,
            "output_bytes": sizes[1] * batch if sizes else None,
            "pool_share": pool if threads > 1 else None, "thread_id": 1, "start_offset_us": float(i),
        })
    out.append({"trial_key": key, "exec_order": len(out), "node_name": "/branch/then/Identity",
                "op_type": "Identity", "parent": "/branch/If", "calls": 1, "dur_mean_us": kernels * 0.02})
    return out


def _layers(key: str, version: str, batch: int) -> list[dict]:
    rows = []
    for position, (node, values) in enumerate(LAYERS[version].items()):
        op, flops, macs, int_ops, params, weight_bytes, in_bytes, out_bytes, counted = values
        scale = (lambda v: None if v is None else v * batch)  # noqa: E731  (activations and operations)
        rows.append({
            "trial_key": key, "node": node, "op_type": op, "domain": "", "position": position,
            "flops": scale(flops), "macs": scale(macs), "int_ops": scale(int_ops), "params": params,
            "weight_bytes": weight_bytes, "input_bytes": scale(in_bytes), "output_bytes": scale(out_bytes),
            "input_shapes": "[]", "output_shapes": "[]", "counted": counted,
        })
    return rows


def write_profile_results(root: Path, payload: bool = False, probed: bool | dict = True) -> Path:
    """The fixed experiment under root/<experiment>/: fp32 and int8 at batch 1 and 8, 1 and 2 threads (int8
    at b8 t2 failed), with nodes, layers and an environment probed unless `probed` is false (a dict: these
    limits instead of PROBED's)."""
    spec = spec_from_json(spec_dict(PAYLOAD if payload else spec_dict()["description"]))
    sha = hashlib.sha256(canonical_json(spec).encode()).hexdigest()
    rd = ResultsDir(root / EXPERIMENT)
    rd.write_spec(sha, spec_to_json(spec))
    limits = {**PROBED, **probed} if isinstance(probed, dict) else PROBED if probed else {}
    rd.write_row("environments", ENV["env_id"], {**ENV, **limits, "physical_cores": 2})
    rd.write_row("runs", "run-0001", {"run_id": "run-0001", "experiment": EXPERIMENT, "spec_sha256": sha,
                                      "env_id": ENV["env_id"], "started_at": "2026-01-05T10:00:00Z"})
    plan = [(v, b, t) for b in (1, 8) for t in (1, 2) for v in ("fp32", "int8")]
    for n, (version, batch, threads) in enumerate(plan):
        key = hashlib.sha256(f"profile-{version}-{batch}-{threads}".encode()).hexdigest()[:20]
        failed = (version, batch, threads) == ("int8", 8, 2)
        row = {**trial_row(key, version, batch, threads, failed, False, n), "spec_sha256": sha,
               "experiment": EXPERIMENT}
        if not failed:
            row.update(profile_processes=len(PROCESS_FACTORS), profiler_cost_process_us=[0.0] * len(PROCESS_FACTORS),
                       profiled_latency_process_us=[row["profiled_latency_us"] * f for f in PROCESS_FACTORS],
                       model_run_process_us=[row["model_run_us"] * f for f in PROCESS_FACTORS])
        if failed:
            rd.write_trial(TrialFiles(trial=row, processes=[], latencies=[], nodes=[]))
            continue
        rd.write_trial(TrialFiles(trial=row, processes=processes(key, row), latencies=latencies(key, row, n),
                                  nodes=_nodes(key, row, version, payload), layers=_layers(key, version, batch)))
    return rd.path
