"""generator.processes: what child processes and interrupts leave behind (the kill tests in test_run and
test_faults run the real thing; these pin the rules they rely on)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from generator import processes


def test_a_ctrl_c_during_the_at_fork_callbacks_is_raised_where_the_child_was_started(tmp_path):
    # A SIGINT that lands while the child is forked (here from an at-fork callback that runs Python code, as
    # logging's does) is held until the child exists, then raised in the code that started it: no "Exception
    # ignored" traceback, nothing lost, and the child (which would have run on) is killed.
    script = tmp_path / "fork.py"
    script.write_text(textwrap.dedent("""\
        import os, signal, subprocess, sys, time
        os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
        from generator import processes
        started = time.monotonic()
        try:
            processes.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=60)
        except KeyboardInterrupt:
            print(f"interrupted where the child was started after {time.monotonic() - started:.0f} s")
        else:
            print("the interrupt was lost")
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.strip() == "interrupted where the child was started after 0 s", done.stdout + done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_started_child_takes_ctrl_c_again():
    # SIGINT is blocked while forking, and a signal mask outlives exec: the child must unblock it.
    blocked = "import signal; print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))"
    done = processes.run([sys.executable, "-c", blocked], timeout=60, text=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # and the parent's is restored


def test_measuring_children_get_one_blas_thread_unless_the_user_chose(monkeypatch):
    """numpy's BLAS threads spin at import beside the measured session: a measuring child gets one, unless the
    user's environment names a count, which is kept."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert processes.measuring_env({"PYTHONHASHSEED": "0"})["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    env = processes.measuring_env({"PYTHONHASHSEED": "0"})
    assert env["OPENBLAS_NUM_THREADS"] == "4" and env["PYTHONHASHSEED"] == "0"
