"""`perfsite count BASELINE.onnx CANDIDATE.onnx`: instructions per steady-state inference of both model files
under valgrind, the ratio and a verdict, with `perfsite diff`'s exit codes (0 ok, 1 user error, 2 slower with
`--fail-on regression`, 3 not comparable)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from generator.cli.diff import FAIL_ON, exit_code
from generator.cli.terminal import check_output_files, write_output
from generator.counting import compare_counts, count_instructions
from generator.counting.report import count_json, count_markdown
from generator.counting.verdict import check_threshold
from generator.errors import PerfsiteError
from generator.oneshot import given_inputs, index_notes
from generator.oneshot.shapes import check_model_kind, make_input_feeds
from generator.versions.checks import model_files

BASELINE, CANDIDATE = "baseline", "candidate"


def count_command(baseline: Path, candidate: Path, *, iterations: int, warmup: int, dims: Sequence[str],
                  shapes: Sequence[str], threshold: float, fail_on: str | None, json_out: Path | None,
                  markdown_out: Path | None, progress: Callable[[str], None] | None = None,
                  inputs: Sequence[str] = ()) -> tuple[str, int]:
    """The Markdown summary and the exit code."""
    if fail_on is not None and fail_on not in FAIL_ON:
        raise PerfsiteError(f"--fail-on {fail_on!r} is not known; use --fail-on regression (exit 2 when the "
                            "candidate is slower) or --fail-on never.")
    check_threshold(threshold)
    paths = {BASELINE: Path(baseline).absolute(), CANDIDATE: Path(candidate).absolute()}
    check_output_files({"--json": json_out, "--markdown": markdown_out}, _models_read(paths))
    for path in paths.values():
        check_model_kind(path)
    if paths[BASELINE] == paths[CANDIDATE]:
        # Allowed (an A/A check of the method), but said, since it is more often a slip.
        (progress or (lambda _t: None))("Baseline and candidate are the same file: an A/A check.")
    feeds = {role: _feeds(path, dims, shapes, inputs, progress) for role, path in paths.items()}
    result = count_instructions(paths, feeds, iterations=iterations, warmup=warmup, progress=progress)
    verdict = compare_counts(result, BASELINE, CANDIDATE, threshold)
    code = exit_code(verdict.verdict, fail_on)
    text = count_markdown(result, verdict)
    if markdown_out is not None:
        write_output(markdown_out, text)
    if json_out is not None:
        write_output(json_out, json.dumps(count_json(result, verdict, code), indent=2, ensure_ascii=False) + "\n")
    return text, code


def _feeds(model_path: Path, dims: Sequence[str], shapes: Sequence[str], inputs: Sequence[str],
           progress: Callable[[str], None] | None) -> dict[str, np.ndarray]:
    """The one-shot profile's inputs (generator.oneshot): the same --dim/--shape/--input rules and random
    data, seeded alike, so two versions with the same inputs get the same arrays."""
    resolved, files = given_inputs(model_path, dims, shapes, inputs)
    for note in index_notes(model_path, files):
        (progress or (lambda _t: None))(f"{model_path.name}: {note}")
    return make_input_feeds(model_path, resolved, files=files)


def _models_read(paths: dict[str, Path]) -> dict[str, Path]:
    """Each model file the count reads and its external-data files, by role (for check_output_files)."""
    read = {}
    for role, path in paths.items():
        if not os.path.isfile(path):  # missing, or a pipe or a device, which reading would never end: said next
            read[f"the {role} model"] = path
            continue
        model, *extra = model_files(path)
        read[f"the {role} model"] = model
        read.update({f"external data of the {role} model ({e.name})": e for e in extra})
    return read
