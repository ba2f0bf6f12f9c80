"""The job a measurement child process receives: one frozen record, built by the sweep (generator.runner.sweep,
which the one-shot `perfsite profile` measures through too), written as JOB.json and read back by the worker
(generator.runner.worker). What the worker answers per mode is described in that module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from generator.errors import RunError

MODES = ("measure", "profile", "outputs", "phases")


@dataclass(frozen=True)
class WorkerJob:
    """What one child process does: a timed measurement process, the profiled pass, or the outputs pass."""

    mode: str  # one of MODES
    model_path: str  # the model the session loads
    original_model_path: str  # the version's model before onnxruntime's rewrites: node names map back to it
    config: Mapping[str, Any]  # generator.plan.Config.as_dict(): batch, threads, concurrency, ...
    feeds_path: str  # the trial's inputs (.npz)
    measure: Mapping[str, Any]  # the spec's measure settings (warmup, min_iterations, ... timeout_s)
    work_dir: str  # where the child writes profiles, the optimized model and latency files
    extra_feeds_paths: tuple[str, ...] = field(default=())  # outputs mode (or record_outputs): more input batches
    # Profile mode: also record the outputs as outputs mode does, after the profiled inferences: the trials that
    # the agreement check compares then pay no process of their own for it.
    record_outputs: bool = False
    # Measure mode: after the timed loop, profile this many inferences in the same process (0: none), so that
    # per-layer times come from every profiled process of the trial's first rounds, interleaved with the other
    # versions' like the timed ones. `profile_full`: this process also maps the nodes to the model file and
    # records the static analysis, the timeline and (with record_outputs) the outputs, once per trial.
    profile_requests: int = 0
    profile_full: bool = False
    # The profiler-cost calibration chain (generator.machine.profiler_cost.calibration_model_bytes), written once
    # per group by the sweep; empty: the worker writes it into its work folder.
    calibration_model: str = ""
    # A generative trial (measure mode): the decoder's KV layout (generator.decode.convention.DecoderLayout's
    # fields), read once by the parent; each request is then a greedy generation (generator.runner.generative).
    decoder: Mapping[str, Any] | None = None
    engine: str = "onnxruntime"  # what generates a generative trial's tokens: onnxruntime or genai

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise RunError(f"Job field `mode` is {self.mode!r}; allowed: {', '.join(MODES)}.")

    def single_stream(self) -> WorkerJob:
        """The same job with one request in flight (the profiled and outputs passes run one stream)."""
        return replace(self, config={**self.config, "concurrency": 1})

    def to_json(self) -> str:
        data = asdict(self)
        data["config"], data["measure"] = dict(self.config), dict(self.measure)
        data["extra_feeds_paths"] = list(self.extra_feeds_paths)
        data["decoder"] = dict(self.decoder) if self.decoder is not None else None
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> WorkerJob:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise RunError("The job file holds no JSON object.")
        try:
            return cls(**{**data, "extra_feeds_paths": tuple(data.get("extra_feeds_paths") or ())})
        except TypeError as e:
            raise RunError(f"The job file does not match generator.runner.protocol.WorkerJob: {e}.") from e

    @property
    def work(self) -> Path:
        return Path(self.work_dir)


def profile_path(out_path: Path) -> Path:
    """Where a measurement process that also profiles writes its profile: OUT.profile.json beside OUT.json."""
    return out_path.with_name(f"{out_path.stem}.profile.json")
