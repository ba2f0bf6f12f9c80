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
import tempfile
import traceback
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.errors import ResultsError, RunError
from generator.oneshot.files import InputFile, describe, parse_input_files
from generator.oneshot.owned import check_replaceable
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
from generator.paths import experiment_holding, inside_scratch
from generator.processes import owned_tempdir

TEST_FAULT_ENV = "PERFSITE_TEST_FAULT"  # "render": the page fails after the JSON is written (tests)

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
    from generator.oneshot.record import build_record
    from generator.oneshot.trial import measure_trial, one_configuration_spec
    from generator.runner.orchestrate import measure_settings

    say = progress or (lambda _text: None)
    model_path = Path(model_path).absolute()
    resolved, files = given_inputs(model_path, dims, shapes, inputs)
    for note in index_notes(model_path, files):
        say(note)
    json_path, html_path = output_paths(model_path, Path(out_dir) if out_dir is not None else Path.cwd())
    check_output_folder(json_path, html_path, given=out_dir is not None)
    if options.threads <= 0:
        env = capture_environment()
        options = dataclasses.replace(options, threads=env.physical_cores or env.logical_cores or 1)
    loaded = one_configuration_spec(model_path, resolved, files, options)
    measured = measure_settings(loaded, options.quick)
    # The same probe and the same per-user cache as `perfsite run` (generator.machine.probe.probe_cache_dir); the
    # runner says when it probes, after it has checked the model file (a missing external-data file, a model
    # onnxruntime cannot load are refused before the machine is measured).
    with owned_tempdir("perfsite-profile-") as tmp:
        analysis = analyse_trial(measure_trial(loaded, options.quick, Path(tmp), say), model_path)
    settings = {**dataclasses.asdict(options), "iterations": measured["min_iterations"],
                **{k: measured[k] for k in ("warmup", "profile_iterations", "max_seconds")}}
    record = build_record(model_path, resolved, settings, analysis)
    record["files"] = {"json": str(json_path), "html": str(html_path)}
    record["input_files"] = describe(files)  # inputs fed from --input files; the others are random
    # The measured figures first: a page that fails to render must not take the measurement with it.
    _write(json_path, json.dumps(record, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    _write(html_path, _rendered(record, analysis.view, json_path, html_path), kept=json_path)
    return ProfileOutcome(record, json_path, html_path)


def index_notes(model_path: Path, fed: Collection[str]) -> list[str]:
    """What random values the inputs that index a table got (generator.index_inputs), other than those fed from
    files: a reader of the figures knows which ids the model saw."""
    from generator.index_inputs import index_tables
    from generator.inputs import DEFAULT_INT_RANGE

    return [table.note(name, min(table.rows, DEFAULT_INT_RANGE[1]))
            for name, table in index_tables(model_path).items() if name not in fed]


def check_output_folder(json_path: Path, html_path: Path, given: bool) -> None:
    """Refuse, before anything is measured, a report folder that cannot be created or written and a report
    path that is a folder: otherwise the measurement would be lost at the end (ResultsError); and a file at a
    report's path that perfsite did not write, which the report would replace (generator.oneshot.owned)."""
    folder = json_path.parent
    where = f"--out {folder}" if given else f"the current folder {folder} (no --out given)"
    allowed = "Allowed: --out with a folder you can write to (created if missing) or, by default, the current folder."
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ResultsError(f"{where}: it is a file, not a folder. {allowed}")
    # As for results and example models: a report written there would go with the next `perfsite build`. (A
    # site perfsite built is no such place for a report: a rebuild keeps the files it did not write.)
    if (scratch := inside_scratch(folder)) is not None:
        raise ResultsError(f"{where}: it is inside {scratch}, perfsite's own scratch folder, which every `perfsite "
                           "build` empties: the report would be lost. Allowed: --out with a folder you can write to "
                           "(created if missing) outside .perfsite/build and .perfsite/cache, or, by default, the "
                           "current folder.")
    if (experiment := experiment_holding(json_path)) is not None:
        raise ResultsError(f"{where}: it is inside {experiment}, an experiment's results folder that `perfsite "
                           "run` writes: the report would sit among its trials, where `perfsite build` and `perfsite "
                           "query` read every file. Nothing was measured. Allowed: --out with a folder outside every "
                           "results store.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):  # mode bits do not tell: root, ACLs, read-only mounts
            pass
    except OSError as e:
        raise ResultsError(f"{where}: cannot write the report there ({e.strerror or e}). {allowed}") from e
    for path in (json_path, html_path):
        if os.path.isdir(path):
            raise ResultsError(f"{where}: {path} is a folder, and the report is written to that path. Move or "
                               f"rename it, or choose another folder. {allowed}")
        check_replaceable(path, f"a {json_path.name} or {html_path.name} an earlier `perfsite profile` wrote is "
                                "replaced")


def given_inputs(model_path: Path, dims: Sequence[str], shapes: Sequence[str],
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


def _rendered(record: dict[str, Any], view: Any, json_path: Path, html_path: Path) -> str:
    from generator.oneshot.html import render_html

    try:
        if os.environ.get(TEST_FAULT_ENV) == "render":
            raise RuntimeError("a rendering failure the tests asked for")
        return render_html(record, view)
    except Exception as e:  # a bug in the page; the message keeps where it happened, the JSON keeps the figures
        frame = traceback.extract_tb(e.__traceback__)[-1]
        raise ResultsError(
            f"The measurement is kept in {json_path}, but rendering the report page {html_path} failed "
            f"({type(e).__name__}: {e}, at {Path(frame.filename).name}:{frame.lineno}). This is a bug in perfsite: "
            "please report it with that JSON file, which holds every measured figure."
        ) from e


def _write(path: Path, text: str, kept: Path | None = None) -> None:
    from generator.paths import atomic_write_bytes

    try:
        atomic_write_bytes(path, text.encode("utf-8"))  # an ordinary file's mode, for the user to share
    except OSError as e:
        also = f" The measurement is kept in {kept}." if kept is not None else ""
        raise ResultsError(f"Cannot write {path}: {e.strerror or e}. Choose another folder with --out.{also}") from e
