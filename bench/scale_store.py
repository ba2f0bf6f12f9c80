"""A big synthetic results store for bench/site_scale.py: seeded, deterministic, written through the store.

The figures are made up but shaped like real profiled runs: CNN backbones and transformer encoders of about a
thousand executed nodes each (`/backbone/layer3/layer3.1/conv2/Conv_nchwc`, `/encoder/layer.7/attention/self/
query/MatMul`), with the versions a user compares (FP32, static and dynamic INT8 with their `_quant` and
`_token_N` nodes, FP16 with its inserted casts), shapes that follow the batch, three environments, and per trial
its processes, requests, executed nodes, model-file layers, one timeline and the output agreement. Every file is
written by `ResultsDir` in the results schema, so the store is what `perfsite run` would have left.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from generator.results.store import ResultsDir, TrialFiles
from generator.spec import canonical_json, spec_from_json, spec_to_json

TRIALS_PER_EXPERIMENT = 40
ENVIRONMENTS = (
    ("c0ffee000001", "ci-runner-7", "AMD EPYC 7B13", 2, ["AVX", "AVX2", "FMA"], 95.0, 180.0, 17.5),
    ("c0ffee000002", "lab-xeon-3", "Intel(R) Xeon(R) Platinum 8375C", 16, ["AVX2", "FMA", "AVX512F", "VNNI"],
     610.0, 2300.0, 60.0),
    ("c0ffee000003", "arm-server-1", "Neoverse-N1", 8, ["NEON", "DOTPROD"], 160.0, 640.0, 40.0),
)
FAMILIES = ("resnet", "bert", "mobilenet", "vit", "yolo")
VERSIONS = ("fp32", "int8-static", "int8-dyn", "fp16", "fp32-opt-basic")
SOURCES = {"fp32": None, "int8-static": {"quantize": {"mode": "static_qdq"}},
           "int8-dyn": {"quantize": {"mode": "dynamic"}}, "fp16": {"fp16": {}}, "fp32-opt-basic": None}
CONFIGS = [(b, t, c) for b in (1, 4, 8, 16) for t in (1, 2, 4) for c in (1, 2)]
EXPERIMENT_WORDS = ("detector", "classifier", "encoder", "segmenter", "ranker", "ocr", "speech", "search")


@dataclass(frozen=True)
class ExecutedNode:
    """One executed node of a version at batch 1: name, op type, original nodes, weights, work and output size."""

    name: str
    op_type: str
    originals: tuple[str, ...]
    weights: tuple[str, ...]
    share: float  # relative time
    flops: float  # per item
    out_elems: int  # per item
    precision: str


def _cnn_nodes(rng: np.random.Generator, count: int, prefix: str) -> list[tuple[str, str, int, int]]:
    """(path, op type, channels, spatial) of an FP32 CNN's executed nodes, stage by stage, until `count`."""
    out, block = [], 0
    while len(out) < count:
        stage = min(4, 1 + block // max(1, count // 40))
        channels, spatial = 64 * 2 ** (stage - 1), 56 // 2 ** (stage - 1)
        base = f"/{prefix}/layer{stage}/layer{stage}.{block}"
        for conv in ("conv1", "conv2", "conv3"):
            out.append((f"{base}/{conv}/Conv", "Conv", channels, spatial))
            if conv != "conv3":
                out.append((f"{base}/relu{conv[-1]}/Relu", "Relu", channels, spatial))
        out.append((f"{base}/Add", "Add", channels, spatial))
        out.append((f"{base}/relu/Relu", "Relu", channels, spatial))
        if rng.random() < 0.3:
            out.append((f"{base}/downsample/downsample.0/Conv", "Conv", channels, spatial))
        block += 1
    return out[:count]


def _transformer_nodes(count: int, prefix: str) -> list[tuple[str, str, int, int]]:
    ops = [("attention/self/query/MatMul", "MatMul"), ("attention/self/query/Add", "Add"),
           ("attention/self/key/MatMul", "MatMul"), ("attention/self/value/MatMul", "MatMul"),
           ("attention/self/Reshape", "Reshape"), ("attention/self/Transpose", "Transpose"),
           ("attention/self/MatMul", "MatMul"), ("attention/self/Div", "Div"),
           ("attention/self/Softmax", "Softmax"), ("attention/self/MatMul_1", "MatMul"),
           ("attention/output/dense/MatMul", "MatMul"), ("attention/output/LayerNorm/LayerNormalization",
                                                         "LayerNormalization"),
           ("intermediate/dense/MatMul", "MatMul"), ("intermediate/intermediate_act_fn/Gelu", "Gelu"),
           ("output/dense/MatMul", "MatMul"), ("output/LayerNorm/LayerNormalization", "LayerNormalization")]
    out, layer = [], 0
    while len(out) < count:
        out += [(f"/{prefix}/layer.{layer}/{path}", op, 768, 128) for path, op in ops]
        layer += 1
    return out[:count]


WORK = {"Conv": 9.0, "MatMul": 6.0, "Gemm": 6.0}  # relative work per output element by op type


def executed_nodes(rng: np.random.Generator, family: str, count: int, version: str) -> list[ExecutedNode]:
    """The executed nodes of one version of a `count`-node FP32 model (fused and renamed as onnxruntime does)."""
    prefix = {"resnet": "backbone", "mobilenet": "features", "yolo": "model", "bert": "encoder",
              "vit": "blocks"}[family]
    plain = (_transformer_nodes(count, prefix) if family in ("bert", "vit") else _cnn_nodes(rng, count, prefix))
    out = []
    for i, (path, op, channels, spatial) in enumerate(plain):
        elems = channels * spatial * spatial if op == "Conv" or family not in ("bert", "vit") else channels * spatial
        work = WORK.get(op, 0.0) * elems * channels
        originals, weights = (path,), ((f"{path.strip('/').replace('/', '.')}.weight",) if op in WORK else ())
        name, kind, precision = path, op, "FP32"
        if version == "fp32" and op == "Conv":
            name = f"{path}_nchwc"
        elif version == "int8-static" and op in WORK:
            name, kind, precision = f"{path}_quant", "QLinearConv" if op == "Conv" else "QLinearMatMul", "INT8"
        elif version == "int8-dyn" and op in WORK:
            name, kind, precision = f"{path}_quant", "ConvInteger" if op == "Conv" else "MatMulInteger", "INT8"
        elif version == "fp16":
            precision = "FP16"
        share = (work or elems) * rng.uniform(0.7, 1.3)
        out.append(ExecutedNode(name, kind, originals, weights, share, 2.0 * work, elems, precision))
        if version == "int8-static" and op in WORK and i % 3 == 0:
            out.append(ExecutedNode(f"{path}_output_QuantizeLinear_token_{i}", "QuantizeLinear", (path,), (),
                                    elems * 0.4, 0.0, elems, "INT8"))
        if version == "int8-dyn" and op in WORK:
            out.append(ExecutedNode(f"{path}_quant_scales_mul", "Mul", (path,), (), elems * 0.2, 0.0, elems, "FP32"))
        if version == "fp16" and i % 25 == 0:
            out.append(ExecutedNode(f"InsertedPrecisionFreeCast_{path.strip('/').replace('/', '_')}", "Cast",
                                    (path,), (), elems * 0.3, 0.0, elems, "mixed"))
    return out[:count]


@dataclass(frozen=True)
class Plan:
    """One experiment of the store: its name, model family, node count, versions and trials."""

    name: str
    family: str
    nodes: int
    versions: tuple[str, ...]
    trials: tuple[tuple[str, tuple[int, int, int], int], ...]  # (version, (batch, threads, concurrency), env)


def plans(total_trials: int, total_nodes: int, seed: int) -> list[Plan]:
    """Experiments of about TRIALS_PER_EXPERIMENT trials each (at least 20 experiments from 800 trials on),
    node counts drawn around total_nodes / total_trials."""
    rng = np.random.default_rng(seed)
    count = max(1, -(-total_trials // TRIALS_PER_EXPERIMENT))
    per_node = total_nodes / total_trials
    out, left = [], total_trials
    for e in range(count):
        n_trials = left // (count - e)
        left -= n_trials
        family = FAMILIES[e % len(FAMILIES)]
        versions = VERSIONS[: 2 + e % 4]
        envs = (0, 1, 2) if e % 3 == 0 else (e % 3,)
        product = [(v, cfg, env) for env in envs for cfg in CONFIGS for v in versions]
        chosen = [product[i] for i in sorted(rng.choice(len(product), n_trials, replace=False))]
        name = f"{family}-{EXPERIMENT_WORDS[e % len(EXPERIMENT_WORDS)]}-{e:02d}"
        out.append(Plan(name, family, int(per_node * rng.uniform(0.8, 1.2)), versions, tuple(chosen)))
    return _exact_nodes(out, total_nodes)


def _exact_nodes(experiments: list[Plan], total_nodes: int) -> list[Plan]:
    """Nudge node counts so that executed node rows add up to total_nodes (each trial stores its version's)."""
    rows = sum(p.nodes * len(p.trials) for p in experiments)
    scale = total_nodes / rows
    return [Plan(p.name, p.family, max(20, round(p.nodes * scale)), p.versions, p.trials) for p in experiments]


def spec_json(plan: Plan) -> dict:
    models = {}
    for v in plan.versions:
        models[v] = {"path": f"models/{plan.family}.onnx"} if SOURCES[v] is None else {"from": "fp32", **SOURCES[v]}
    sweep = {"batch": sorted({c[0] for _, c, _ in plan.trials}), "threads": sorted({c[1] for _, c, _ in plan.trials}),
             "concurrency": sorted({c[2] for _, c, _ in plan.trials})}
    shape = ["batch", 128] if plan.family in ("bert", "vit") else ["batch", 3, 224, 224]
    compare = [{"a": "fp32", "b": v} for v in plan.versions[1:3]]
    return {"name": plan.name, "description": f"Which {plan.family} version serves fastest on which machine?",
            "models": models, "inputs": {"input": {"shape": shape, "dtype": "float32"}}, "sweep": sweep,
            "measure": {"percentile": "p90"}, "latency_threshold_ms": 40.0, "compare": compare,
            "profile": [{"batch": 1, "threads": 2, "concurrency": 1}], "whatif": {"Conv": 2.0}}


def environment_row(env: int) -> dict:
    env_id, host, cpu, cores, isa, fp32, int8, bw = ENVIRONMENTS[env]
    return {"env_id": env_id, "fingerprint": env_id + "0" * 52, "hostname": host, "cpu_model": cpu,
            "physical_cores": cores, "logical_cores": cores * 2, "isa": isa, "memory_gb": 64.0,
            "os": "Linux 6.1.0", "python": "3.11.9", "onnxruntime": "1.32.0", "onnx": "1.23.2", "numpy": "2.4.0",
            "providers": ["CPUExecutionProvider"], "peak_gflops_fp32": fp32, "peak_gops_int8": int8,
            "bandwidth_gbs": bw, "captured_at": "2026-01-05T10:00:00Z", "limits_probed_at": "2026-01-05T10:00:00Z",
            "limits_quality": "clean: 5 probes"}


def write_experiment(root: Path, plan: Plan, seed: int, slower: float = 1.0) -> Path:
    """Write one experiment's store under root/<name>; `slower` scales every time (a changed re-run)."""
    rng = np.random.default_rng([seed, int(hashlib.sha256(plan.name.encode()).hexdigest()[:8], 16)])
    spec = spec_from_json(spec_json(plan))
    sha = hashlib.sha256(canonical_json(spec).encode()).hexdigest()
    rd = ResultsDir(root / plan.name)
    rd.write_spec(sha, spec_to_json(spec))
    for env in sorted({t[2] for t in plan.trials}):
        rd.write_row("environments", ENVIRONMENTS[env][0], environment_row(env))
        rd.write_row("runs", f"run-{plan.name}-{env}", {
            "run_id": f"run-{plan.name}-{env}", "experiment": plan.name, "spec_sha256": sha,
            "env_id": ENVIRONMENTS[env][0], "started_at": "2026-01-05T10:00:00Z", "git_commit": "0123456789ab",
            "git_dirty": False, "perfsite_version": "0.1.0", "quick": False, "command": "perfsite run spec.yaml"})
    templates = {v: executed_nodes(np.random.default_rng([seed, i]), plan.family, plan.nodes, v)
                 for i, v in enumerate(plan.versions)}
    for n, (version, config, env) in enumerate(plan.trials):
        rd.write_trial(_trial_files(rng, plan, sha, n, version, config, env, templates[version], slower))
    return rd.path


def _trial_files(rng: np.random.Generator, plan: Plan, sha: str, n: int, version: str,
                 config: tuple[int, int, int], env: int, nodes: list[ExecutedNode], slower: float) -> TrialFiles:
    batch, threads, concurrency = config
    key = hashlib.sha256(f"{plan.name}/{version}/{config}/{env}".encode()).hexdigest()[:20]
    speed = ENVIRONMENTS[env][5] * min(threads, ENVIRONMENTS[env][3]) / 2 * (0.6 if "int8" in version else 1.0)
    total_flops = sum(x.flops for x in nodes) * batch
    kernel_us = max(50.0, total_flops / speed / 1e3 * slower) * rng.uniform(0.95, 1.05)
    shares = np.array([x.share for x in nodes])
    durations = kernel_us * shares / shares.sum()
    latency_ms = kernel_us / 1000 * 1.08 * concurrency ** 0.3
    trial = _trial_row(plan, sha, key, n, version, config, env, latency_ms, kernel_us)
    return TrialFiles(
        trial=trial, processes=_processes(key, trial), latencies=_latencies(rng, key, latency_ms, concurrency),
        nodes=_node_rows(key, nodes, durations, batch, threads),
        layers=_layer_rows(key, nodes, batch), timeline=_timeline_rows(key, nodes, durations, batch, kernel_us),
        agreement=[] if version == "fp32" else [{
            "trial_key": key, "version": version, "reference_version": "fp32", "output": "logits",
            "max_abs": 0.02, "max_rel": 0.01, "mean_abs": 0.003, "cosine": 0.9995, "top1_agreement": 1.0,
            "samples": 4}])


def _trial_row(plan: Plan, sha: str, key: str, n: int, version: str, config: tuple[int, int, int], env: int,
               latency_ms: float, kernel_us: float) -> dict:
    batch, threads, concurrency = config
    minute = f"{10 + n // 60:02d}:{n % 60:02d}"
    return {
        "experiment": plan.name, "trial_key": key, "run_id": f"run-{plan.name}-{env}", "env_id": ENVIRONMENTS[env][0],
        "spec_sha256": sha, "version": version, "model_sha256": hashlib.sha256(version.encode()).hexdigest(),
        "model_bytes": plan.nodes * 90_000 // (4 if "int8" in version else 2 if version == "fp16" else 1),
        "version_source": f"models/{plan.family}.onnx" if SOURCES[version] is None else f"fp32 → {version}",
        "batch": batch, "threads": threads, "concurrency": concurrency, "optimization_level": "all",
        "provider": "cpu", "spinning": True, "inter_op_threads": 1, "dims": "{}",
        "config_label": f"b{batch} t{threads} c{concurrency}", "status": "ok", "quick": False, "percentile": "p90",
        "latency_mean_ms": latency_ms, "latency_p50_ms": latency_ms * 0.98, "latency_p90_ms": latency_ms * 1.09,
        "latency_p95_ms": latency_ms * 1.14, "latency_p99_ms": latency_ms * 1.3, "latency_std_ms": latency_ms * 0.05,
        "latency_min_ms": latency_ms * 0.9, "latency_max_ms": latency_ms * 1.6,
        "latency_headline_ms": latency_ms * 1.09, "throughput_ips": 1000.0 * batch * concurrency / latency_ms,
        "iterations": 600, "duration_s": 3.0, "cv": 0.05, "processes": 3, "process_median_spread": 0.03,
        "cores_used": threads * 0.97, "cores_expected": float(threads), "noisy": False, "load_ms": 120.0,
        "first_run_ms": latency_ms * 3, "peak_rss_mb": 300.0 + batch * 20, "arena_mb": 40.0 * batch,
        "profiled": True, "model_run_us": kernel_us * 1.04, "kernel_sum_us": kernel_us,
        "profiled_latency_us": kernel_us * 1.1, "started_at": f"2026-01-05T{minute}:00Z",
        "finished_at": f"2026-01-05T{minute}:30Z", "preemption_known": True, "preempted_share": 0.01,
        "usable_processes": 3}


def _processes(key: str, row: dict) -> list[dict]:
    median = row["latency_p50_ms"]
    return [{"trial_key": key, "process": p, "round": p, "iterations": 200, "items": 200 * row["batch"],
             "wall_s": 1.0, "cpu_s": row["cores_used"], "cores_used": row["cores_used"],
             "latency_median_ms": median * f, "latency_mean_ms": median * f * 1.02,
             "throughput_ips": 1000.0 * row["batch"] / (median * f), "load_ms": 120.0, "first_run_ms": median * 3,
             "peak_rss_mb": row["peak_rss_mb"], "clean_requests": 198, "clean_throughput_ips":
             1000.0 * row["batch"] / (median * f), "delay_threads": row["threads"]}
            for p, f in enumerate((0.99, 1.0, 1.02))]


def _latencies(rng: np.random.Generator, key: str, latency_ms: float, streams: int) -> pa.Table:
    n = 600
    return pa.table({"trial_key": [key] * n, "process": np.repeat([0, 1, 2], n // 3),
                     "stream": np.tile(np.arange(n // 3) % streams, 3), "iteration": np.tile(np.arange(n // 3), 3),
                     "latency_ms": latency_ms * rng.lognormal(0.0, 0.05, size=n),
                     "run_delay_ms": np.zeros(n)})


def _shape(node: ExecutedNode, batch: int) -> str:
    return json.dumps([[batch, node.out_elems]], separators=(",", ":"))


def _node_rows(key: str, nodes: list[ExecutedNode], durations: np.ndarray, batch: int, threads: int) -> list[dict]:
    types = {"INT8": '["int8"]', "FP16": '["float16"]'}
    start, out = 0.0, []
    for i, (x, d) in enumerate(zip(nodes, durations.tolist(), strict=True)):
        shape, dtype = _shape(x, batch), types.get(x.precision, '["float"]')
        out.append({"trial_key": key, "exec_order": i, "node_name": x.name, "op_type": x.op_type,
                    "provider": "CPUExecutionProvider", "calls": 1, "dur_mean_us": d, "dur_p50_us": d * 0.99,
                    "dur_min_us": d * 0.9, "dur_max_us": d * 1.3, "dur_std_us": d * 0.05, "input_shapes": shape,
                    "output_shapes": shape, "input_types": dtype, "output_types": dtype,
                    "runtime_precision": x.precision, "original_nodes": list(x.originals),
                    "weights": list(x.weights), "mapping_method": "exact",
                    "activation_bytes": 4 * batch * x.out_elems, "parameter_bytes": 4096 * len(x.weights),
                    "output_bytes": 4 * batch * x.out_elems, "pool_share": 0.45 if threads > 1 else None,
                    "thread_id": 1, "start_offset_us": start})
        start += d
    return out


def _layer_rows(key: str, nodes: list[ExecutedNode], batch: int) -> list[dict]:
    seen: dict[str, dict] = {}
    for x in nodes:
        for original in x.originals:
            if original in seen:
                continue
            op = original.rsplit("/", 1)[-1].split("_")[0]
            shape = _shape(x, batch)
            seen[original] = {
                "trial_key": key, "node": original, "op_type": op, "domain": "", "position": len(seen),
                "flops": x.flops * batch, "macs": x.flops * batch / 2, "int_ops": 0.0,
                "params": 1024 * len(x.weights), "weight_bytes": 4096 * len(x.weights),
                "input_bytes": 4 * batch * x.out_elems, "output_bytes": 4 * batch * x.out_elems,
                "input_shapes": shape, "output_shapes": shape, "counted": True, "attributes": "{}",
                "input_types": '["float"]', "output_types": '["float"]', "weight_details": json.dumps(
                    [{"name": w, "shape": [64, 64, 3, 3], "dtype": "float32"} for w in x.weights])}
    return list(seen.values())


def _timeline_rows(key: str, nodes: list[ExecutedNode], durations: np.ndarray, batch: int,
                   kernel_us: float) -> list[dict]:
    start, out = 0.0, []
    for i, (x, d) in enumerate(zip(nodes, durations.tolist(), strict=True)):
        out.append({"trial_key": key, "exec_order": i, "node_name": x.name, "op_type": x.op_type,
                    "provider": "CPUExecutionProvider", "thread_id": 1, "start_us": start, "dur_us": d,
                    "pool_share": 0.4, "input_shapes": _shape(x, batch), "output_shapes": _shape(x, batch),
                    "activation_bytes": 4 * batch * x.out_elems, "parameter_bytes": 4096 * len(x.weights),
                    "output_bytes": 4 * batch * x.out_elems, "run_index": 7, "model_run_us": kernel_us * 1.04,
                    "kernel_sum_us": kernel_us})
        start += d
    return out

