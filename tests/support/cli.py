"""The command line and files around it: the repository root, the real `perfsite` in a child process, spec files,
snapshot checks."""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository


def write_spec(folder: Path, text: str, name: str = "spec.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def perfsite(*args: str, cwd: Path | None = None, env: dict | None = None, fresh: bool = False,
             **kw) -> subprocess.CompletedProcess:
    """Run the real `perfsite` command line in a child process.

    By default the child is a fork of this (test) process, which has imported perfsite already: most of a fresh
    interpreter's second or two goes to importing onnxruntime, pandas and altair, and the suite runs hundreds of
    commands. The child is still a process of its own (its own folder, environment, standard streams and exit
    status) and runs the same `main()` as the console script. `fresh=True` starts a new interpreter instead, for
    the tests that need one (signals sent from outside, a killed build, anything that must not inherit this
    process's state); start_perfsite leaves a forked command running for a test to signal."""
    full_env = {**os.environ, **(env or {})}
    if fresh or not hasattr(os, "fork") or set(kw) - _FORK_KEYWORDS:
        return subprocess.run([sys.executable, "-m", "generator.cli", *args], cwd=cwd, capture_output=True,
                              text=True, env=full_env, **kw)
    return _forked(list(args), cwd, full_env, **kw)


# Anything else gets a fresh interpreter. A preexec_fn runs in the forked child before the command, as subprocess
# runs it before exec: one that changes what exec would grant (a capability dropped from the bounding set) must
# change the running process's own too (tests/test_bad_input.py's read-only folders drop it from both).
_FORK_KEYWORDS = frozenset({"timeout", "input", "preexec_fn"})


def _forked(args: list[str], cwd: Path | None, env: dict, timeout: float | None = None,
            input: str | None = None, preexec_fn=None) -> subprocess.CompletedProcess:
    return _fork(args, cwd, env, (input or "").encode(), preexec_fn, new_session=False).wait(timeout)


def _fork(args: list[str], cwd: Path | None, env: dict, stdin_bytes: bytes, preexec_fn,
          new_session: bool) -> Started:
    """The command in a forked child of this (warm) process, its output in temporary files: the one way
    `perfsite` (run to its end) and `start_perfsite` (left running) start a command."""
    main = _warm()
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    with tempfile.TemporaryFile() as stdin:
        stdin.write(stdin_bytes)
        stdin.seek(0)
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            if new_session:
                with contextlib.suppress(OSError):  # (it is new: never a group leader already)
                    os.setsid()
            _child(main, args, cwd, env, (stdin.fileno(), out.fileno(), err.fileno()), preexec_fn)
    return Started(pid, args, out, err)


# What the commands import on use (each a second or so in a fresh interpreter): imported once per test process,
# before the first fork, so that every forked command starts with them loaded.
_WARM_MODULES = ("generator.runner.orchestrate", "generator.runner.paired", "generator.site",
                 "generator.diff.report", "generator.oneshot", "generator.cli.profile", "generator.cli.diff",
                 "generator.cli.compare", "generator.cli.count", "generator.cli.query", "generator.machine.session")


@functools.cache
def _warm():
    for name in _WARM_MODULES:
        importlib.import_module(name)
    from generator.cli.app import app, main
    from generator.site.page_base import template_env

    app.command_line  # noqa: B018 - built here once, not in every forked command (generator.cli.app._BuiltOnce)

    # The page templates compiled once too (about 0.6 s a build, 2026-11-27): jinja2 keeps them in the
    # environment, one per process (functools.cache), which every forked build inherits.
    env = template_env()
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)

    return main


def _forget_inherited_servers() -> None:
    """A build's worker pool starts from a forkserver (generator.site.incremental); the parent's, if it started
    one, is not this process's child, and multiprocessing would ask it for workers. Start a new one on use."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    server._forkserver_pid = server._forkserver_address = server._forkserver_alive_fd = None
    server._inherited_fds = None


def _child(main, args: list[str], cwd: Path | None, env: dict, fds: tuple[int, int, int],
           preexec_fn=None) -> None:
    code = 1
    try:
        if preexec_fn is not None:
            preexec_fn()
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
        # Fresh stream objects: the inherited ones may hold a lock another thread of the parent had at the fork.
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        _forget_inherited_servers()
        if cwd is not None:
            os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # the parent's, cached at its first use, would hide this environment's TMPDIR
        sys.argv = ["perfsite", *args]
        try:
            main()
            code = 0
        except SystemExit as e:
            code = _exit_status(e.code)
        except BaseException:
            sys.excepthook(*sys.exc_info())  # what the interpreter prints for an uncaught exception
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def in_forks(calls: list, at_once: int) -> list:
    """Each call's value (or its exception, raised here), each call made in a forked child of this process,
    `at_once` children at a time: independent groups of commands (the bad-input table's rows) overlap their
    waits for measuring children and files. The values travel back pickled."""
    _warm()  # once, here: every child starts with perfsite imported
    results: list = [None] * len(calls)
    running: dict[int, tuple[int, Path]] = {}
    with tempfile.TemporaryDirectory(prefix="perfsite-forks-") as folder:
        for index, call in enumerate(calls):
            while len(running) >= at_once:
                _collect(running, results)
            out = Path(folder) / f"{index}.pickle"
            pid = os.fork()
            if pid == 0:
                _call_and_exit(call, out)
            running[pid] = (index, out)
        while running:
            _collect(running, results)
    for value in results:
        if isinstance(value, BaseException):
            raise value
    return results


def _call_and_exit(call, out: Path) -> None:
    code = 1
    try:
        try:
            value = call()
        except Exception as e:  # noqa: BLE001 - handed to the parent, which raises it
            value = e
        out.write_bytes(pickle.dumps(value))
        code = 0
    finally:
        os._exit(code)


def _collect(running: dict[int, tuple[int, Path]], results: list) -> None:
    """Wait for one of our children (never os.wait: it would reap a server a fixture started)."""
    while True:
        for pid in running:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
        else:
            time.sleep(0.01)
            continue
        break
    index, out = running.pop(pid)
    if os.waitstatus_to_exitcode(status) != 0 or not out.exists():
        results[index] = RuntimeError(f"forked call {index} ended with status {os.waitstatus_to_exitcode(status)}")
    else:
        results[index] = pickle.loads(out.read_bytes())


class Started:
    """A `perfsite` command `start_perfsite` forked and left running: signal it, then wait for its end."""

    def __init__(self, pid: int, args: list[str], out, err) -> None:
        self.pid, self._args, self._out, self._err = pid, args, out, err
        self.returncode: int | None = None

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def poll(self) -> int | None:
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = 60) -> subprocess.CompletedProcess:
        """Its end (killed after `timeout` seconds: subprocess.TimeoutExpired), with what it printed."""
        if self.returncode is None:
            self.returncode = _wait(self.pid, timeout, self._args)
        outputs = []
        for stream in (self._out, self._err):
            stream.seek(0)
            outputs.append(stream.read().decode(errors="backslashreplace"))
            stream.close()
        return subprocess.CompletedProcess(["perfsite", *self._args], self.returncode, *outputs)


def start_perfsite(*args: str, cwd: Path, env: dict | None = None) -> Started:
    """The real `perfsite` command line in a forked child of this process (as `perfsite` runs it), left running
    for a test that signals it at a moment of its choosing (SIGINT, SIGKILL): a fresh interpreter spent a second
    or two importing before it did anything. The child leads a session of its own, so that the test can also
    stop what it orphans (os.killpg(started.pid, ...))."""
    return _fork(list(args), cwd, {**os.environ, **(env or {})}, b"", None, new_session=True)


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits 1, as the interpreter does
    return 1


def _wait(pid: int, timeout: float | None, args: list[str]) -> int:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise subprocess.TimeoutExpired(["perfsite", *args], timeout)
        time.sleep(0.01)


def json_keys(value, found: set | None = None) -> set:
    """Every key of every object in a JSON-like value (a chart spec must not name a data `url`, for one)."""
    found = set() if found is None else found
    if isinstance(value, dict):
        for k, v in value.items():
            found.add(k)
            json_keys(v, found)
    elif isinstance(value, list):
        for v in value:
            json_keys(v, found)
    return found


def check_snapshots(generated: dict[str, str], folder: Path) -> None:
    """Generated files (path relative to `folder` -> text) must equal the stored snapshots, no more, no fewer.
    With PERFSITE_UPDATE_SNAPSHOTS=1 the snapshots are rewritten first: review the diff before committing."""
    if os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1":
        for stale in folder.rglob("*.*"):
            stale.unlink()
        for name, text in generated.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
    stored = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in folder.rglob("*.*")}
    if not stored:
        pytest.fail(f"no snapshots in {folder}; create them with PERFSITE_UPDATE_SNAPSHOTS=1")
    assert sorted(stored) == sorted(generated), "pages, charts or files appeared or disappeared"
    for name, text in generated.items():
        assert text == stored[name], (f"{name} differs from its snapshot; if intended, regenerate with "
                                      "PERFSITE_UPDATE_SNAPSHOTS=1 and review the diff")
