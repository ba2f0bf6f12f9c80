"""Child processes and temporary folders that never outlive the perfsite process that made them.

`kill -9` of `perfsite run` or `perfsite profile` used to leave the measurement worker running until its time
limit (a run started at once was measured on a loaded machine) and its temporary folder behind; `kill -9` of
`perfsite build` left mkdocs writing as an orphan. Children get `die_with_parent` as their preexec_fn (Linux's
PR_SET_PDEATHSIG: the kernel sends them SIGKILL when the parent dies, whatever killed it), and temporary
folders carry their creator's pid in their name, so the next perfsite removes those of dead processes.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

PR_SET_PDEATHSIG = 1


# A day: the longest a measurement process may time or run (spec `measure.timeout_s`, `max_seconds`, `budget_s`;
# `perfsite profile --max-seconds`). Beyond about 25 days the operating system's timers cannot even represent a
# child's timeout (subprocess raised OverflowError at 3e6 s), and no measurement needs a day.
MAX_PROCESS_SECONDS = 86_400.0


_forking_pid = os.getpid()


def _remember_forking_pid() -> None:
    global _forking_pid
    _forking_pid = os.getpid()


# Runs in the parent just before it forks a child that has a preexec_fn (CPython's PyOS_BeforeFork), so the
# child knows which process it was forked from.
os.register_at_fork(before=_remember_forking_pid)


def die_with_parent() -> None:
    """For subprocess' preexec_fn: SIGKILL this child when its parent dies (Linux; elsewhere nothing). A parent
    killed between the fork and the prctl would not be noticed (the child already has a new parent): the child
    checks and leaves at once."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != _forking_pid:
        os._exit(1)


def alive(pid: int) -> bool:
    """Whether another process with this pid runs (ours counts as gone: a leftover of an earlier holder)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[str]:
    """A temporary folder `<prefix><pid>-<random suffix>`, removed on exit; first, those of dead processes."""
    clean_stale_tempdirs(prefix)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as folder:
        yield folder


def process_tempdir(prefix: str) -> Path:
    """A temporary folder `<prefix><pid>-<random suffix>` that lasts as long as this process (removed at exit, or
    by the next perfsite after a crash), for files a whole command needs; first, those of dead processes are
    removed."""
    clean_stale_tempdirs(prefix)
    folder = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")
    atexit.register(shutil.rmtree, folder, True)
    return Path(folder)


def clean_stale_tempdirs(prefix: str, parent: str | None = None) -> list[Path]:
    """Remove `<prefix><pid>-*` folders whose process is gone; returns what was removed."""
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)-")
    removed = []
    root = Path(parent or tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            match = pattern.match(entry.name)
            if match and entry.is_dir() and not entry.is_symlink() and not alive(int(match.group(1))):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


# A Ctrl-C that arrives while os.fork runs Python's at-fork callbacks (logging registers one) raises in that
# callback, and Python ignores exceptions there ("Exception ignored in: _releaseLock"): the signal was lost and
# an interrupted `perfsite run` went on to the end and exited 0. The CLI's handler counts the signals it turned
# into KeyboardInterrupt, so that code starting a child can tell that one went missing and raise it again.
_interrupts = 0


def count_interrupts() -> None:
    """Turn SIGINT into KeyboardInterrupt as Python does, counting them (CLI start, main thread only). A SIGINT
    ignored by the parent shell (a background job) stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def _on_sigint(signum: int, frame: object) -> None:
    global _interrupts
    _interrupts += 1
    raise KeyboardInterrupt


def interrupts() -> int:
    return _interrupts


def raise_if_interrupted_since(seen: int) -> None:
    """KeyboardInterrupt if a SIGINT arrived since `interrupts()` returned `seen` and was swallowed on the way."""
    if _interrupts != seen:
        raise KeyboardInterrupt
