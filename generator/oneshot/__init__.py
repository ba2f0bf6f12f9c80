"""One-shot profile of a model file, without a spec: ``perfsite profile MODEL.onnx``.

Resolve the input shapes (generator.oneshot.shapes, generator.oneshot.files), measure the model at that one
configuration through the runner into a temporary results folder (generator.oneshot.trial), read it back with
the site's analysis (generator.oneshot.analysis), gather everything into one versioned record
(generator.oneshot.record) and write ``MODEL.perf.json`` and a self-contained ``MODEL.perf.html``
(generator.oneshot.html). The CLI prints generator.oneshot.text's summary.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.errors import ResultsError, RunError
from generator.oneshot.files import InputFile, describe, parse_input_files
from generator.oneshot.shapes import (
    ResolvedInputs,
    ShapeError,
    make_input_feeds,
    model_inputs,
    parse_dims,
    parse_shapes,
    resolve_inputs,
)
from generator.oneshot.text import summary_text
from generator.oneshot.trial import ProfileOptions
from generator.processes import owned_tempdir

__all__ = ["ProfileOptions", "ProfileOutcome", "ShapeError", "output_paths", "profile_model", "summary_text"]


@dataclass(frozen=True)
class ProfileOutcome:
    record: dict[str, Any]
    json_path: Path
    html_path: Path


def output_paths(model_path: Path, out_dir: Path) -> tuple[Path, Path]:
    """``OUT/MODEL.perf.json`` and ``OUT/MODEL.perf.html`` (MODEL: the file name without ``.onnx``)."""
    stem = model_path.name[:-5] if model_path.name.lower().endswith(".onnx") else model_path.name
    return out_dir / f"{stem}.perf.json", out_dir / f"{stem}.perf.html"


def profile_model(model_path: Path, options: ProfileOptions, dims: Sequence[str] = (), shapes: Sequence[str] = (),
                  out_dir: Path | None = None, progress: Callable[[str], None] | None = None,
                  inputs: Sequence[str] = ()) -> ProfileOutcome:
    """Measure and profile ``model_path`` once (see the module docstring) and write its JSON and HTML files.

    ``dims``/``shapes``/``inputs`` are the raw ``--dim NAME=VALUE``, ``--shape INPUT=D1,D2,..`` and
    ``--input NAME=FILE`` texts; ``options.threads`` 0 means one per physical core. User errors raise
    PerfsiteError children.
    """
    from generator.machine.environment import capture_environment
    from generator.oneshot.analysis import analyse_trial
    from generator.oneshot.html import render_html
    from generator.oneshot.record import build_record
    from generator.oneshot.trial import measure_trial, one_configuration_spec
    from generator.runner.orchestrate import measure_settings

    say = progress or (lambda _text: None)
    model_path = Path(model_path).absolute()
    resolved, files = _inputs(model_path, dims, shapes, inputs)
    if options.threads <= 0:
        env = capture_environment()
        options = dataclasses.replace(options, threads=env.physical_cores or env.logical_cores or 1)
    loaded = one_configuration_spec(model_path, resolved, files, options)
    measured = measure_settings(loaded, options.quick)
    # The same probe and the same per-user cache as `perfsite run` (generator.machine.probe.probe_cache_dir).
    say("Measuring the machine's peak and bandwidth (cached once per machine)...")
    with owned_tempdir("perfsite-profile-") as tmp:
        analysis = analyse_trial(measure_trial(loaded, options.quick, Path(tmp), say), model_path)
    settings = {**dataclasses.asdict(options), "iterations": measured["min_iterations"],
                **{k: measured[k] for k in ("warmup", "profile_iterations", "max_seconds")}}
    record = build_record(model_path, resolved, settings, analysis)
    json_path, html_path = output_paths(model_path, Path(out_dir) if out_dir is not None else Path.cwd())
    record["files"] = {"json": str(json_path), "html": str(html_path)}
    record["input_files"] = describe(files)  # inputs fed from --input files; the others are random
    _write(record, render_html(record, analysis.view), json_path, html_path)
    return ProfileOutcome(record, json_path, html_path)


def _inputs(model_path: Path, dims: Sequence[str], shapes: Sequence[str],
            inputs: Sequence[str]) -> tuple[ResolvedInputs, dict[str, InputFile]]:
    """Every input at its shape, from the model's declarations and the options; the `--input` files."""
    declared = model_inputs(model_path)
    files = parse_input_files(inputs, model_path, declared)
    given = parse_shapes(shapes, model_path)
    both = sorted(set(files) & set(given))
    if both:
        raise RunError(f"{model_path}: the input {both[0]!r} has both --input and --shape; its file sets its "
                       "shape, so give one of them.")
    resolved = resolve_inputs(model_path, declared, parse_dims(dims, model_path),
                              {**given, **{name: f.shape for name, f in files.items()}})
    # The inputs are made here once only to check them: their errors name the command's options and the model
    # before anything is probed or measured (the runner makes the same arrays again, from the same seed).
    make_input_feeds(model_path, resolved, files=files)
    return resolved, files


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write(record: dict[str, Any], page: str, json_path: Path, html_path: Path) -> None:
    from generator.results.store import atomic_write_bytes

    text = json.dumps(record, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    for path, data in ((json_path, text), (html_path, page)):
        try:
            atomic_write_bytes(path, data.encode("utf-8"))
            # The temporary file was created 0600; the outputs are ordinary files for the user to share.
            path.chmod(0o666 & ~_umask())
        except OSError as e:
            raise ResultsError(f"Cannot write {path}: {e.strerror or e}. Choose another folder with --out.") from e
