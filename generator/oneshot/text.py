"""The terminal summary of a one-shot profile, formatted from the JSON record's ``summary`` and ``files``.

Figures are printed exactly as the record stores them (already rounded there), so the terminal and
``MODEL.perf.json`` always agree. Node names and op types come from the model file: control characters are
shown escaped so that a name cannot drive the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from generator.analysis.limits import LIMIT_UNDERESTIMATED
from generator.runner.measure import MIN_CORES_WALL_S
from generator.terminal_text import safe

MISSING = "n/a"
NAME_WIDTH = 44


def num(value: Any) -> str:
    """A stored figure as written in the record: shortest positional form, no exponent, no grouping."""
    if value is None:
        return MISSING
    if isinstance(value, bool | int):
        return str(int(value))
    return np.format_float_positional(float(value), trim="-")


def _cores(cores: float | None) -> str:
    return num(cores) if cores is not None else f"— (not told: a process timed under {MIN_CORES_WALL_S:g} s)"


def summary_text(record: Mapping[str, Any]) -> str:
    """The summary block printed by `perfsite profile` (ends with a newline)."""
    s = record["summary"]
    lines = [f"perfsite profile  {safe(s['model'])}" + ("  (quick mode: shortened measurement)" if s["quick"] else ""),
             f"  inputs        {safe(s['inputs'])}",
             f"  provider      {safe(s['provider'])}, threads {num(s['threads'])}, optimization "
             f"{safe(s['optimization_level'])}",
             f"  measured      {num(s['iterations'])} requests in {num(s['timed_s'])} s, batch {num(s['batch'])}; "
             f"cores used {_cores(s['cores_used'])}",
             f"  throughput    {num(s['throughput_ips'])} items/s",
             "  latency ms    " + "  ".join(f"{k} {num(v)}" for k, v in s["latency_ms"].items()) + _p99_note(record),
             _noise_line(s["noise"]),
             f"  cold start    {num(s['cold_start_ms'])} ms (load {num(s['load_ms'])} ms + first run "
             f"{num(s['first_run_ms'])} ms)",
             _compute_line(s, record.get("limits", {}).get("peak_precision")),
             f"  profiled      model_run {num(s['profiled_model_run_us'])} µs, kernels "
             f"{num(s['profiled_kernel_sum_us'])} µs over {num(s['profiled_nodes'])} nodes (one profiled inference)",
             *_accounting_lines(s.get("time_accounting")),
             *_limits_lines(record.get("limits", {})),
             *_slowest_lines(s["slowest_layers"]),
             *_files_lines(record.get("files", {}))]
    return "\n".join(lines) + "\n"


def _noise_line(noise: Mapping[str, Any]) -> str:
    """Preempted requests and the noise rules that fired, as `perfsite run` judges."""
    preempted = preempted_text(noise)
    if noise.get("noisy"):
        return f"  warning       noisy: {safe('; '.join(noise.get('reasons', [])))}; {preempted}; measure again"
    return f"  noise         {preempted}"


def preempted_text(noise: Mapping[str, Any]) -> str:
    """The share of preempted requests and what the figures did with them: left out, or (no process kept
    enough clean requests: generator.runner.aggregate.measurement_columns) counted like every other."""
    share = noise.get("preempted_share")
    if not noise.get("preemption_known") or share is None:
        return "preemption unknown on this system (every request counted)"
    said = f"{100 * share:.1f} % of requests preempted by other processes"
    if not share:
        return said
    if noise.get("clean_figures", True):  # records written before the key have clean figures or none preempted
        return f"{said} (left out of the figures)"
    return f"{said} (counted in the figures: no process kept enough clean requests)"


def _p99_note(record: Mapping[str, Any]) -> str:
    if record["summary"]["latency_ms"].get("p99") is not None:
        return ""
    return f" (too few requests for a p99: it needs {record['latencies']['p99_min_samples']}, see --iterations)"


def _compute_line(s: Mapping[str, Any], precision: str | None) -> str:
    if s["total_gflop"] is None:
        return "  compute       n/a (no node of the model could be counted)"
    ints = f" + {num(s['total_int_gop'])} G integer ops" if s["total_int_gop"] else ""
    line = f"  compute       {num(s['total_gflop'])} GFLOP{ints} per request; achieved {num(s['achieved_gops'])} GOP/s"
    if s["peak_gflops"] is not None:
        # A mostly-integer model is set against the INT8 peak (the record's limits.peak_precision).
        peak = "INT8 peak" if precision == "INT8" else "peak"
        unit = "GOP/s" if precision == "INT8" else "GFLOP/s"
        line += f" = {num(s['peak_share_pct'])}% of the measured {peak} {num(s['peak_gflops'])} {unit}"
        if s["peak_share_pct"] is not None and s["peak_share_pct"] > 100:
            line += f" ({LIMIT_UNDERESTIMATED})"
    return line


def _accounting_lines(a: Mapping[str, Any] | None) -> list[str]:
    """How the profiled times add up to the measured median (generator.analysis.accounting's rule)."""
    if a is None:
        return []
    lines = [f"  time µs       kernels {num(a['kernels_us'])} + outside them {num(a['outside_kernels_us'])} "
             f"= measured median {num(a['measured_latency_us'])}",
             "                (layer times below have the profiler's own cost per kernel call removed)"]
    if not a.get("adds_up", True):
        lines.append("                the kernels take longer than the measured inference: the profiled inferences "
                     "ran slower (a neighbour?), so shares are rough")
    return lines


def _limits_lines(limits: Mapping[str, Any]) -> list[str]:
    if limits.get("unsettled_reason"):
        return [f"  limits        unknown on this machine: {safe(limits['unsettled_reason'])}; no figure is set "
                "against them: run again on a quieter machine"]
    lines = []
    if limits.get("probed_at"):
        quality = safe(limits.get("quality") or "quality unknown")
        lines.append(f"  limits        probed {safe(limits['probed_at'])}, {quality}")
    if limits.get("note"):
        lines.append(f"  warning       {safe(limits['note'])}")
    return lines


def _slowest_lines(layers: list[Mapping[str, Any]]) -> list[str]:
    if not layers:
        return ["  slowest layers: none profiled"]
    head = f"    {'node':<{NAME_WIDTH}} {'op':<18} {'time µs':>10} {'share %':>8}  bound"
    rows = [f"    {safe(r['node'], NAME_WIDTH):<{NAME_WIDTH}} {safe(r['op_type'], 18):<18} {num(r['dur_us']):>10} "
            f"{num(r['share_pct']):>8}  {r['bound']}" for r in layers]
    return [f"  slowest layers (top {len(layers)}, one profiled inference)", head, *rows]


def _files_lines(files: Mapping[str, str]) -> list[str]:
    return [f"  wrote         {safe(path)}" for path in files.values()]
