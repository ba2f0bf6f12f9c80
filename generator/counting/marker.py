"""perfsite's own marker for callgrind: a tiny C library, compiled at run time, that wraps one inference.

Callgrind can only switch counting on and off at native code: Python functions are invisible to it, and
onnxruntime's wheels are stripped (they export ``OrtGetApiBase`` and the Python module's init, no ``Run`` to
name in ``--toggle-collect``). So perfsite brings its own native function, ``perfsite_counted_inference``: it
switches collection on with a callgrind client request, calls a Python callable through the C API
(``PyObject_CallObject``, passed in as a function pointer so that no Python headers are needed), switches
collection off and dumps the counters under a label. One dump per inference gives a count per inference, and
so a spread over repeated inferences.

Compiling needs a C compiler (``cc``) and valgrind's headers (``valgrind/callgrind.h``, in Debian's
``valgrind`` package); both are checked here, with a message that says what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from generator.errors import RunError

MARKER_SOURCE = r"""
#include <valgrind/callgrind.h>

typedef void *(*python_call)(void *callable, void *args);

/* 1 under valgrind: the worker refuses to count outside it. */
int perfsite_running_on_valgrind(void) { return RUNNING_ON_VALGRIND; }

/* Start instrumenting (valgrind runs with --instr-atstart=no, so Python's start-up and the models' loading
   run several times faster). Flushes valgrind's translations once. */
void perfsite_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }

/* Count one call of `callable`: collection on, the call, collection off, a dump labelled `label` (which also
   zeroes the counters for the next one). Returns the call's result (NULL with the Python error set). */
void *perfsite_counted_inference(python_call call, void *callable, const char *label) {
    CALLGRIND_TOGGLE_COLLECT;
    void *result = call(callable, 0);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(label);
    return result;
}
"""
MARKER_FUNCTION = "perfsite_counted_inference"
HEADER = "valgrind/callgrind.h"


def compile_marker(work_dir: Path) -> Path:
    """Compile the marker into ``work_dir/perfsite_marker.so``; RunError names what is missing."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise RunError("`perfsite count` compiles a small marker library and found no C compiler (cc). Install "
                       "one, e.g. `apt-get install gcc` (Debian/Ubuntu), or set CC.")
    source, library = work_dir / "perfsite_marker.c", work_dir / "perfsite_marker.so"
    source.write_text(MARKER_SOURCE)
    try:
        done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source)],
                              capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise RunError(f"`perfsite count` could not run the C compiler {compiler}: {e.strerror or e}.") from e
    if done.returncode != 0:
        raise RunError(_compile_error(compiler, done.stderr))
    return library


def _compile_error(compiler: str, stderr: str) -> str:
    if HEADER in stderr:
        return (f"`perfsite count` needs valgrind's headers ({HEADER}), which {compiler} did not find. They come "
                "with Debian's and Ubuntu's `valgrind` package (`apt-get install valgrind`; on Fedora: "
                "valgrind-devel).")
    last = " ".join(stderr.strip().splitlines()[-3:]) or "no message"
    return f"`perfsite count` could not compile its marker library with {compiler}: {last}."
