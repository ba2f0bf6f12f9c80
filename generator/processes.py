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
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

PR_SET_PDEATHSIG = 1


# A day: the longest a measurement process may time or run (spec `measure.timeout_s`, `max_seconds`, `budget_s`;
# `perfsite profile --max-seconds`). Beyond about 25 days the operating system's timers cannot even represent a
# child's timeout (subprocess raised OverflowError at 3e6 s), and no measurement needs a day.
MAX_PROCESS_SECONDS = 86_400.0


# numpy's BLAS (OpenBLAS) starts a thread per core when numpy is imported, and they spin for a while: 0.1 to
# 0.2 CPU-seconds of every process that imports numpy, on the cores a measurement uses, for a pool a
# measuring or counting process never calls (onnxruntime has its own kernels and threads). Such children get
# one BLAS thread unless the user's environment says otherwise.
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1"}


def measuring_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child that measures or counts: BLAS_THREADS where unset, and `extra`."""
    return {**BLAS_THREADS, **os.environ, **(extra or {})}


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
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # held by `start` in the parent
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


# A Ctrl-C that arrived while a child with a preexec_fn was forked landed in one of Python's at-fork callbacks
# (logging registers one), and Python ignores exceptions there: it printed "Exception ignored in: _releaseLock"
# with a traceback, and the signal was lost (an interrupted `perfsite run` went on to the end and exited 0). No
# Python code in a callback can raise it again: Python checks for signals at its next call, inside the callback.
# So the main thread holds SIGINT blocked while it forks; the kernel keeps a Ctrl-C pending meanwhile and
# delivers it on unblocking, in the code that started the child. The child unblocks it first (die_with_parent):
# a signal mask outlives exec.


@contextlib.contextmanager
def _interrupt_held() -> Iterator[None]:
    """SIGINT held blocked in the main thread for the block (a fork); a Ctrl-C meanwhile is raised on leaving it."""
    held = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if held else None
    try:
        yield
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a pending Ctrl-C is raised now


def start(command: list[str], **popen_kwargs: Any) -> subprocess.Popen:
    """subprocess.Popen with die_with_parent, SIGINT held while forking: a Ctrl-C meanwhile is raised here, once
    the child exists, and the child is then killed (it would die with us anyway)."""
    proc = None
    try:
        with _interrupt_held():
            proc = subprocess.Popen(command, preexec_fn=die_with_parent, **popen_kwargs)
    except BaseException:
        if proc is not None:
            proc.kill()
            proc.wait()
        raise
    return proc


def run(command: list[str], timeout: float | None = None, **popen_kwargs: Any) -> subprocess.CompletedProcess:
    """subprocess.run(capture_output=True) through `start`: output captured, the child killed on a timeout
    (subprocess.TimeoutExpired, as subprocess.run raises) or an interrupt."""
    with start(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen_kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def fork_call(work: Callable[[], None]) -> int | None:
    """Run `work` in a forked child that dies with this process, and return the child's pid (wait for it with
    `forked_ok`); None where this system cannot fork. The child leaves with os._exit: status 0 when `work`
    returned, 1 when it raised (it prints nothing: the caller does the work itself then, and reports what it
    raises). SIGINT is held while forking, as in `start`: a Ctrl-C meanwhile is raised here, the child killed."""
    if not hasattr(os, "fork"):
        return None
    pid = None
    try:
        with _interrupt_held():
            _remember_forking_pid()
            pid = os.fork()
            if pid == 0:
                _forked_child(work)
    except BaseException:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    return pid


def _forked_child(work: Callable[[], None]) -> NoReturn:
    status = 1
    try:
        die_with_parent()
        work()
        status = 0
    except BaseException:  # the parent does the work again and reports the error itself
        pass
    finally:
        os._exit(status)


def forked_ok(pid: int) -> bool:
    """Wait for a child of fork_call; whether its work returned."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
