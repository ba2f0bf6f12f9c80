"""Whether a file at a report's path is a report perfsite wrote, which `perfsite profile` may replace.

`perfsite profile cnn.onnx` writes cnn.perf.json and cnn.perf.html in the current folder; a file of the user's
under one of those names was replaced without a word (exit 0). A report is recognised by what every release
wrote into it: the JSON record begins with its format, `{"format": "perfsite.profile"` (json.dumps keeps the
record's key order, and `format` is its first key), and the page holds that record in its
`<script type="application/json" id="perfsite-record">` island (generator/oneshot/report.html.j2).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import BinaryIO

from generator.errors import ResultsError
from generator.oneshot.record import FORMAT

_JSON_START = re.compile(rb'\A\{\s*"format"\s*:\s*"' + re.escape(FORMAT.encode()) + rb'"')
_HTML_START = b"<!DOCTYPE html>"
_HTML_RECORD = b'<script type="application/json" id="perfsite-record">'
_CHUNK = 1 << 20


def check_replaceable(path: Path, allowed: str) -> None:
    """ResultsError unless `path` is free or a report an earlier `perfsite profile` wrote. Checked before
    anything is measured: the refusal costs nothing, a measurement thrown away would."""
    if not os.path.lexists(path):
        return
    if os.path.islink(path):
        what = "is a symbolic link, which the report would replace"
    elif not os.path.isfile(path):
        return  # a folder: check_output_folder says so, in its own words
    elif _written_by_perfsite(path):
        return
    else:
        what = "already exists and is not a report perfsite wrote"
    raise ResultsError(f"{path} {what}; writing the profile there would replace it. Nothing was measured. "
                       f"Allowed: remove or rename that file, or write the report elsewhere with --out DIR; "
                       f"{allowed}.")


def _written_by_perfsite(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            if path.name.endswith(".json"):
                return _JSON_START.match(file.read(256)) is not None
            return file.read(len(_HTML_START)) == _HTML_START and _holds(file, _HTML_RECORD)
    except OSError:  # unreadable: not known to be ours
        return False


def _holds(file: BinaryIO, marker: bytes) -> bool:
    """Whether the rest of `file` holds `marker`, read a chunk at a time (a page can be many megabytes)."""
    tail = b""
    while chunk := file.read(_CHUNK):
        if marker in tail + chunk:
            return True
        tail = chunk[-len(marker):]
    return False
