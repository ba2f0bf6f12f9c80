"""A results store measured on three machines without measuring three times.

The real recorded run of tests/support/compare.py (one machine) is written back through the results store, then
copied onto two more environments: each copy gets its own environment row (fingerprint recomputed with
generator.machine.environment.fingerprint), its own run, and trial keys recomputed with generator.plan.trial_key
for the new fingerprint, as `perfsite run` on that machine would key them; its latencies, throughputs and
profiled times are scaled by the machine's speed. Everything is written with ResultsDir, so the files are valid
results of today's schema. Deterministic: the same store, byte for byte, at every call.

- the recorded machine (`AMD EPYC`, onnxruntime 1.31.1, no measured limits);
- `ARM`: a Neoverse-N1 with four cores, 0.6 × the recorded latencies, measured limits, a hostile hostname;
- `UPGRADE`: the recorded hardware with onnxruntime 1.32.0 (software only), 1.1 × the latencies.

One configuration (int8-dyn at b4 t2 c1) is left out of both copies: measured on one machine only.

`write_two_machine_results` is the store of issue 35's red team: the recorded machine and `SLOWER`, the same CPU
with another CPU count in its fingerprint, three times as slow, which measured the INT8 versions only and later,
so that "the newest trial per version and configuration" takes fp32 from one machine and INT8 from the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generator.machine.environment import fingerprint
from generator.plan import Configuration, Trial, trial_key
from generator.results.cells import DECODERS, names
from generator.results.schema import column_names
from generator.results.store import ResultsDir, TrialFiles, load_experiment
from support.compare import PAYLOAD, plain, write_compare_results

ARM = {"cpu_model": "ARM Neoverse-N1", "physical_cores": 4, "logical_cores": 4, "isa": ["NEON"],
       "os": "Linux-6.1.0-aarch64-with-glibc2.36", "hostname": PAYLOAD, "peak_gflops_fp32": 151.0,
       "peak_gops_int8": 402.0, "bandwidth_gbs": 24.5, "limits_settled": True,
       "limits_quality": "settled: two undisturbed probes agreed within 5 % (3 probes, 1 disturbed)",
       "limits_probed_at": "2026-11-20T09:00:00+00:00", "captured_at": "2026-11-20T08:59:00+00:00"}
UPGRADE = {"onnxruntime": "1.32.0", "hostname": "bench-2", "peak_gflops_fp32": 98.5, "peak_gops_int8": 180.0,
           "bandwidth_gbs": 17.2, "limits_settled": False,
           "limits_quality": "unsettled: the undisturbed probes disagreed by more than 5 %: bandwidth 5.9 against "
                             "17.2 GB/s (2 undisturbed of 4)",
           "limits_probed_at": "2026-11-21T09:00:00+00:00", "captured_at": "2026-11-21T08:59:00+00:00"}
COPIES = ((ARM, 0.6, "20261120T090000Z-arm000"), (UPGRADE, 1.1, "20261121T090000Z-upg000"))
SLOWER = {"logical_cores": 8, "physical_cores": 4, "hostname": "runner-b", "captured_at": "2030-01-01T08:00:00+00:00"}
SLOWER_FACTOR = 3.0
SLOWER_RUN = "20300101T080000Z-slow00"
LEFT_OUT = ("int8-dyn", "b4 t2 c1")
LATENCY_COLUMNS = ("latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms",
                   "latency_std_ms", "latency_min_ms", "latency_max_ms", "latency_headline_ms",
                   "latency_median_ms", "latency_ms", "profiled_latency_us", "model_run_us", "kernel_sum_us",
                   "dur_mean_us", "dur_p50_us", "dur_min_us", "dur_max_us", "dur_std_us", "start_offset_us",
                   "dur_us", "start_us")
THROUGHPUT_COLUMNS = ("throughput_ips", "clean_throughput_ips")
PER_TRIAL = ("processes", "latencies", "nodes", "layers", "agreement", "timeline")


def write_machine_results(root: Path) -> Path:
    """The recorded experiment on three machines under root/<experiment>/; returns the experiment folder."""
    folder = write_compare_results(root)
    recorded = load_experiment(folder)
    (source,) = set(recorded.trials["env_id"])
    for changes, factor, run_id in COPIES:
        copy_onto(folder, changes, factor, run_id, source=source, skip=(LEFT_OUT,), recorded=recorded)
    return folder


def write_two_machine_results(root: Path, factor: float = SLOWER_FACTOR, run: str = SLOWER_RUN) -> Path:
    """The recorded experiment and its INT8 trials on SLOWER, `factor` times as slow and measured later (by run
    `run`); returns the experiment folder."""
    folder = write_compare_results(root)
    recorded = load_experiment(folder)
    fp32 = tuple((v, c) for v, c in zip(recorded.trials["version"], recorded.trials["config_label"], strict=True)
                 if v == "fp32")
    copy_onto(folder, SLOWER, factor, run, skip=fp32, recorded=recorded, at=SLOWER["captured_at"])
    return folder


def copy_onto(folder: Path, changes: dict[str, Any], factor: float, run_id: str, source: str | None = None,
              skip: tuple[tuple[str, str], ...] = (), recorded: Any = None, at: str | None = None) -> str:
    """Copy every trial of the experiment at `folder` measured on environment `source` (by default its only
    one) onto a new environment (that environment's row with `changes`), `factor` times as slow, measured by run
    `run_id`; `skip` leaves out (version, configuration label) pairs. `recorded`: the experiment as loaded
    before (load_experiment), to read it once for several copies; `at`: when the copies started and finished
    (default: as recorded). Returns the new env_id."""
    recorded = recorded if recorded is not None else load_experiment(folder)
    envs = {e["env_id"]: e for e in _records(recorded.environments)}
    env = envs[source] if source else next(iter(envs.values()))
    run = next(r for r in _records(recorded.runs) if r["env_id"] == env["env_id"])
    spec = ResultsDir(folder).read_spec_json(recorded.trials["spec_sha256"].iloc[-1])
    side_rows: dict[str, dict[str, list]] = {}
    for table in PER_TRIAL:
        for r in _records(getattr(recorded, table)):
            side_rows.setdefault(r["trial_key"], {t: [] for t in PER_TRIAL})[table].append(r)
    rd = ResultsDir(folder)
    new_env = _environment(env, changes)
    rd.write_row("environments", new_env["env_id"], new_env)
    rd.write_row("runs", run_id, {**run, "run_id": run_id, "env_id": new_env["env_id"],
                                  "started_at": changes.get("captured_at", run["started_at"])})
    for trial in _records(recorded.trials):
        if trial["env_id"] != env["env_id"] or (trial["version"], trial["config_label"]) in skip:
            continue
        key = _key(trial, spec, new_env["fingerprint"])
        row = _scaled({**trial, "trial_key": key, "env_id": new_env["env_id"], "run_id": run_id}, factor)
        if at is not None:
            row.update(started_at=at, finished_at=at)
        rows = side_rows.get(trial["trial_key"], {t: [] for t in PER_TRIAL})
        side = {t: [_scaled(_stored_cells(t, {**r, "trial_key": key}), factor) for r in rows[t]] for t in PER_TRIAL}
        rd.write_trial(TrialFiles(trial=row, **side))
    return new_env["env_id"]


def _stored_cells(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A loaded row's decoded list and shape cells (generator.results.cells) back in their stored form: JSON text,
    or a list for Arrow list columns."""
    stored = set(column_names(table))
    out = {k: v for k, v in row.items() if k in stored}  # not the columns derived at load (results.profiled)
    for column, decoder in DECODERS.get(table, {}).items():
        value = out.get(column)
        if value is not None:
            out[column] = list(value) if decoder is names else json.dumps(_lists(value))
    return out


def _lists(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_lists(v) for v in value]
    return value


def _records(frame: Any) -> list[dict[str, Any]]:
    """Rows as plain Python values (None for missing, lists for arrays), only the schema's columns."""
    return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _environment(env: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    described = {**env, **changes}
    fp = fingerprint(described)
    return {k: v for k, v in {**described, "fingerprint": fp, "env_id": fp[:12]}.items()
            if k in column_names("environments")}


def _key(trial: dict[str, Any], spec: dict[str, Any], env_fingerprint: str) -> str:
    """The trial's key on the new machine: generator.plan.trial_key over the stored spec's inputs and
    measurement settings and the new fingerprint."""
    config = Configuration.from_mapping({a: trial[a] for a in ("batch", "threads", "concurrency",
                                                               "optimization_level", "provider", "spinning",
                                                               "inter_op_threads")} | json.loads(trial["dims"]))
    measure = {k: v for k, v in spec["measure"].items() if k != "timeout_s"}
    return trial_key(Trial(trial["version"], config), model_sha256=trial["model_sha256"], inputs=spec["inputs"],
                     measure=measure, quick=bool(trial["quick"]), env_fingerprint=env_fingerprint)


def _scaled(row: dict[str, Any], factor: float) -> dict[str, Any]:
    """Times × factor, throughputs ÷ factor (a machine `factor` times as slow)."""
    out = dict(row)
    for column in LATENCY_COLUMNS:
        if isinstance(out.get(column), int | float):
            out[column] = out[column] * factor
    for column in THROUGHPUT_COLUMNS:
        if isinstance(out.get(column), int | float):
            out[column] = out[column] / factor
    return out
