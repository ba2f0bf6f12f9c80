"""The JSON Schema of ``MODEL.perf.json`` (format ``perfsite.profile``, version 1), and a validator.

Readers of the file (scripts, CI checks) can rely on these keys and types; a change that removes or retypes
one bumps ``generator.oneshot.record.VERSION``.
"""

from __future__ import annotations

from typing import Any

from generator.oneshot.record import FORMAT, VERSION

_NUM = {"type": "number"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_INT = {"type": "integer"}
_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_NUMS = {"type": "array", "items": _NUM}


def _object(properties: dict[str, Any], extra: bool = True, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object with these properties, every one required but the `optional` ones: keys added after version 1,
    which its earlier files lack."""
    return {"type": "object", "required": sorted(set(properties) - set(optional)), "properties": properties,
            "additionalProperties": extra}


_LATENCY = _object({k: _NUM_OR_NULL for k in ("mean", "p50", "p90", "p95", "p99")})
_SLOW = _object({"node": _STR, "op_type": _STR, "dur_us": _NUM, "share_pct": _NUM_OR_NULL,
                 "bound": {"enum": ["compute", "memory", "unknown"]}})
_SUMMARY = _object({
    "model": _STR, "provider": _STR, "threads": _INT, "optimization_level": _STR, "batch": _INT,
    "quick": {"type": "boolean"}, "inputs": _STR, "iterations": _INT, "timed_s": _NUM, "cores_used": _NUM_OR_NULL,
    "throughput_ips": _NUM, "latency_ms": _LATENCY, "load_ms": _NUM, "first_run_ms": _NUM, "cold_start_ms": _NUM,
    "peak_rss_mb": _NUM_OR_NULL, "total_gflop": _NUM_OR_NULL, "total_int_gop": _NUM_OR_NULL,
    "achieved_gops": _NUM_OR_NULL, "peak_gflops": _NUM_OR_NULL, "peak_share_pct": _NUM_OR_NULL,
    "profiled_model_run_us": _NUM, "profiled_kernel_sum_us": _NUM, "profiled_nodes": _INT,
    "time_accounting": {"oneOf": [{"type": "null"}, _object({
        "kernels_us": _NUM, "outside_kernels_us": _NUM, "profiled_latency_us": _NUM_OR_NULL,
        "profiler_overhead_us": _NUM_OR_NULL, "profiler_cost_per_call_us": _NUM_OR_NULL, "measured_latency_us": _NUM,
        "adds_up": {"type": "boolean"}, "rule": _STR})]},
    "limits_exceeded": _INT,
    "slowest_layers": {"type": "array", "items": _SLOW},
    # The sweep's noise rules on the clean requests, the share of requests another process preempted (null when
    # the kernel does not tell), and whether the figures are the clean requests (false: preemption unknown, or
    # no process kept enough clean requests and every request is counted).
    "noise": _object({"noisy": {"type": "boolean"}, "reasons": {"type": "array", "items": _STR},
                      "preemption_known": {"type": "boolean"}, "preempted_share": _NUM_OR_NULL,
                      "clean_figures": {"type": "boolean"}}, optional=("clean_figures",)),
})
_INPUT = _object({"name": _STR, "dtype": _STR, "shape": {"type": "array", "items": _INT},
                  "declared": {"type": ["array", "null"], "items": {"type": ["integer", "string", "null"]}}})
_EVENT = _object({
    "exec_order": _INT, "node_name": _STR, "op_type": _STR, "provider": _STR_OR_NULL, "parent": _STR_OR_NULL,
    "thread_id": {"type": ["integer", "null"]}, "start_us": _NUM, "dur_us": _NUM, "pool_share": _NUM_OR_NULL,
    "input_shapes": _STR, "output_shapes": _STR, "read_bytes": {"type": ["integer", "null"]},
    "written_bytes": {"type": ["integer", "null"]}, "flops": _NUM_OR_NULL,
})
_LAYER = _object({
    "exec_order": _INT, "node_name": _STR, "op_type": _STR, "parent": _STR_OR_NULL, "dur_us": _NUM,
    "flops": _NUM_OR_NULL, "moved_bytes": {"type": ["integer", "null"]}, "data_time_us": _NUM_OR_NULL,
    "compute_time_us": _NUM_OR_NULL, "bound": {"enum": ["compute", "memory", "unknown"]},
    "achieved_gflops": _NUM_OR_NULL, "limit_share": _NUM_OR_NULL, "share": _NUM_OR_NULL,
    "original_nodes": {"type": "array", "items": _STR},
})
_TEMPORAL = _object({
    "bin_us": _NUM, "bin_start_us": _NUMS, "bytes_per_bin": _NUMS, "flops_per_bin": _NUMS, "traffic_gbs": _NUMS,
    "compute_gflops": _NUMS, "total_bytes": _NUM, "total_flops": _NUM, "span_us": _NUM,
    "has_flops": {"type": "boolean"}, "peak_traffic_gbs": _NUM, "peak_compute_gflops": _NUM,
})

PROFILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "perfsite one-shot profile (MODEL.perf.json)",
    **_object({
        "format": {"const": FORMAT}, "version": {"const": VERSION}, "perfsite_version": _STR,
        "generated_at": _STR,
        "model": _object({"file": _STR, "path": _STR, "sha256": _STR, "size_bytes": _INT}),
        "inputs": {"type": "array", "items": _INPUT},
        "dims": {"type": "object", "additionalProperties": _INT},
        "defaulted_dims": {"type": "array", "items": _STR},
        "settings": _object({"threads": _INT, "iterations": _INT, "warmup": _INT, "profile_iterations": _INT,
                             "max_seconds": _NUM, "provider": _STR, "optimization_level": _STR,
                             "spinning": {"type": "boolean"}, "quick": {"type": "boolean"}, "batch": _INT}),
        "summary": _SUMMARY,
        "environment": _object({"env_id": _STR, "fingerprint": _STR, "cpu_model": _STR_OR_NULL}),
        "limits": _object({"peak_gflops_fp32": _NUM_OR_NULL, "peak_gops_int8": _NUM_OR_NULL,
                           "bandwidth_gbs": _NUM_OR_NULL, "peak_gflops_threads": _NUM_OR_NULL,
                           "thread_scale": _NUM, "probed_at": _STR_OR_NULL, "quality": _STR_OR_NULL,
                           "note": _STR_OR_NULL}),
        "latencies": _object({"unit": {"const": "ms"}, "count": _INT, "mean": _NUM, "p50": _NUM, "p90": _NUM,
                              "p95": _NUM, "p99": _NUM_OR_NULL, "min": _NUM, "max": _NUM, "samples_ms": _NUMS}),
        "layers": {"type": "array", "items": _LAYER},
        "temporal": _TEMPORAL,
        "timeline": _object({"model_run_us": _NUM, "kernel_sum_us": _NUM, "events": {"type": "array",
                                                                                     "items": _EVENT}}),
        "notes": {"type": "array", "items": _STR},
        "files": _object({"json": _STR, "html": _STR}),
    }, extra=False),
}


# Added after version 1 was published, so optional: which inputs came from `--input` files (the others are random),
# which compute peak the figures are set against (INT8 for a mostly-integer model, else FP32), and whether the
# limits settled (two probes agreed; otherwise every limit figure is null and the reason is given).
PROFILE_SCHEMA["properties"]["limits"]["properties"]["peak_precision"] = {"enum": ["FP32", "INT8"]}
PROFILE_SCHEMA["properties"]["limits"]["properties"]["settled"] = {"type": "boolean"}
PROFILE_SCHEMA["properties"]["limits"]["properties"]["unsettled_reason"] = _STR_OR_NULL
PROFILE_SCHEMA["properties"]["input_files"] = {"type": "object", "additionalProperties": _object(
    {"file": _STR, "key": _STR_OR_NULL, "shape": {"type": "array", "items": _INT}}, extra=False)}


def profile_schema_errors(record: Any) -> list[str]:
    """Every place where ``record`` departs from PROFILE_SCHEMA, as ``path: message`` lines (empty: valid)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(PROFILE_SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in sorted(validator.iter_errors(record), key=lambda e: list(map(str, e.absolute_path)))]
