"""Valgrind's side of the count mode: the command line that runs the worker under callgrind, and the parser
of the dump files it writes (one per counted inference).

A dump file (callgrind's format, https://valgrind.org/docs/manual/cl-format.html) starts with header lines such
as ``desc: Trigger: Client Request: LABEL`` and ends with ``totals: N`` (older writers: ``summary: N``): the
instructions executed (event ``Ir``) while collection was on since the previous dump.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from generator.errors import RunError

OUT_NAME = "callgrind.out"
_TRIGGER = "desc: Trigger: Client Request: "
_TOTAL = re.compile(r"^(?:totals|summary):\s+(\d+)")

# --instr-atstart=no: Python's start-up, onnxruntime's import, session creation and warm-up run uninstrumented
#   (measured: ~3 s instead of ~30 s); the worker switches instrumentation on before the first counted call.
# --collect-atstart=no: nothing is counted outside perfsite's marker.
# --dump-line=no / --dump-instr=no: only per-function totals, which keeps each per-inference dump small.
VALGRIND_OPTIONS = ("--tool=callgrind", "--quiet", "--instr-atstart=no", "--collect-atstart=no", "--dump-line=no",
                    "--dump-instr=no")


def find_valgrind() -> str:
    """The valgrind executable; RunError says how to install it."""
    found = shutil.which("valgrind")
    if not found:
        raise RunError("`perfsite count` runs the models under valgrind (callgrind), which is not installed. "
                       "Install it, e.g. `apt-get install valgrind` (Debian/Ubuntu; macOS is not supported by "
                       "valgrind), then run the command again.")
    return found


def valgrind_version(valgrind: str) -> str:
    """``3.19.0`` from ``valgrind-3.19.0`` (empty when valgrind does not answer)."""
    try:
        text = subprocess.run([valgrind, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return text.strip().removeprefix("valgrind-")


def valgrind_command(valgrind: str, out_dir: Path, program: Sequence[str]) -> list[str]:
    return [valgrind, *VALGRIND_OPTIONS, f"--callgrind-out-file={out_dir / OUT_NAME}", *program]


def read_dumps(out_dir: Path) -> dict[str, int]:
    """Instructions per client-request label, from every dump file under ``out_dir``. The dump written at exit
    (no label) is ignored; a label dumped twice is a bug in the worker and raises."""
    counts: dict[str, int] = {}
    for path in sorted(out_dir.glob(OUT_NAME + ".*")):
        label, total = parse_dump(path.read_text(errors="replace"))
        if label is None:
            continue
        if label in counts:
            raise RuntimeError(f"callgrind label {label!r} dumped twice in {out_dir}")
        counts[label] = total
    return counts


def parse_dump(text: str) -> tuple[str | None, int]:
    """(label, instructions) of one dump file; label None for a dump not triggered by perfsite's marker."""
    label, total = None, None
    for line in text.splitlines():
        if line.startswith(_TRIGGER):
            label = line[len(_TRIGGER):].strip()
        elif (match := _TOTAL.match(line)) is not None:
            total = int(match.group(1))
    if total is None:
        raise RunError(f"A callgrind dump has no totals line; is this valgrind's callgrind? Start: {text[:200]!r}")
    return label, total
