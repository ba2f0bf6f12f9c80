"""The one-shot profile's measurement: one model file at one configuration as a spec of its own, measured by the
runner into a temporary results folder and read back with the results store, like any `perfsite run`.

So the profile shares every rule of the sweep: the measurement and profiled child processes (a crash inside
onnxruntime becomes one line), the quick mode's caps, the clean-request and noise rules, the limits probe and
its cache, the re-probe when a layer beats the cached limits, and the tables the site's profile page reads.
The spec is built in memory and validated like a file's; its `path` is the model file, so that the errors the
runner can still raise name the file the user gave.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.errors import RunError
from generator.oneshot.files import InputFile
from generator.oneshot.shapes import ResolvedInputs
from generator.processes import MAX_PROCESS_SECONDS
from generator.results.store import ExperimentResults, load_experiment
from generator.runner.orchestrate import measure_settings, run_experiment
from generator.runner.sides import RunOptions, SilentProgress
from generator.spec import LoadedSpec
from generator.spec.model import Spec

EXPERIMENT = "profile"
VERSION = "model"  # the one version of the spec: the model file as given
# Beyond the timed phase: model load, warmup and the profiled pass of a large model.
TIMEOUT_MARGIN_S = 600.0
# Shorter than any measurement process: the sweep's adaptive rounds stop after `repeats`, here one process.
ONE_PROCESS_BUDGET_S = 0.001


@dataclass(frozen=True)
class ProfileOptions:
    """How to measure: the session's configuration and the loop's length (the command line's options)."""

    threads: int
    iterations: int = 100
    warmup: int = 10
    profile_iterations: int = 10
    max_seconds: float = 60.0
    provider: str = "cpu"
    optimization_level: str = "all"
    spinning: bool = True
    quick: bool = False


def one_configuration_spec(model_path: Path, resolved: ResolvedInputs, files: Mapping[str, InputFile],
                           options: ProfileOptions) -> LoadedSpec:
    """The spec of one trial: the model, its inputs at their resolved shapes (or their `--input` files), one
    value per sweep axis and one measurement process. ``options.threads`` must be resolved (> 0)."""
    # The spec's rule: a process may be killed only after its timed phase could end (timeout_s > max_seconds),
    # both within a day; at the one-day maximum the loop gives up its last second.
    timeout_s = min(options.max_seconds + TIMEOUT_MARGIN_S, MAX_PROCESS_SECONDS)
    data = {
        "name": EXPERIMENT,
        "models": {VERSION: {"path": str(model_path)}},
        "inputs": {i.name: _input(i.name, i.shape, first=n == 0, files=files)
                   for n, i in enumerate(resolved.inputs)},
        "sweep": {"batch": [resolved.batch], "threads": [options.threads], "provider": [options.provider],
                  "optimization_level": [options.optimization_level], "spinning": [options.spinning]},
        "measure": {"warmup": options.warmup, "min_iterations": options.iterations, "min_seconds": 0.0,
                    "max_seconds": float(min(options.max_seconds, timeout_s - 1.0)), "repeats": 1,
                    "budget_s": ONE_PROCESS_BUDGET_S, "profile_iterations": options.profile_iterations,
                    "timeout_s": float(timeout_s)},
    }
    return LoadedSpec.of(Spec.model_validate(data), model_path, allow_outside=True)


def _input(name: str, shape: tuple[int, ...], first: bool, files: Mapping[str, InputFile]) -> dict[str, Any]:
    """A file as given, or random data at the resolved shape; the first input's first axis is the batch (the
    `batch` placeholder: a file's rows are its batch already)."""
    if name in files:
        return {"file": str(files[name].path), "key": files[name].key}
    return {"shape": ["batch", *shape[1:]] if first and shape else list(shape)}


def measure_trial(loaded: LoadedSpec, quick: bool, folder: Path, say: Callable[[str], None]) -> ExperimentResults:
    """Run the one trial into ``folder``/results and read it back; RunError (naming the model) when the timed
    or the profiled runs failed, KeyboardInterrupt when interrupted (nothing is kept)."""
    options = RunOptions(results_dir=folder / "results", quick=quick, cache_dir=folder / "models")
    summary = run_experiment(loaded, options, _Progress(say, measure_settings(loaded, quick)))
    if summary.interrupted:
        raise KeyboardInterrupt
    if summary.failed:
        raise RunError(f"{loaded.path}: the timed runs failed: {summary.failed[0][1]}.")
    results = load_experiment(options.results_dir)
    trial = results.trials.iloc[-1]
    if not trial["profiled"]:
        raise RunError(f"{loaded.path}: the profiled runs failed: {trial['profile_error']}.")
    return results


class _Progress(SilentProgress):
    """The runner's progress (generator.runner.sides.Progress) as the one-shot's lines of text."""

    def __init__(self, say: Callable[[str], None], settings: Mapping[str, Any]) -> None:
        self.say, self.settings = say, settings

    def message(self, text: str) -> None:
        self.say(text)

    def start(self, total: int, estimate_s: float, upper_bound: bool = False) -> None:
        self.say(f"Measuring {self.settings['min_iterations']} requests, then profiling "
                 f"{self.settings['profile_iterations']}...")
