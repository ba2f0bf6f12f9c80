"""generator.processes: what child processes and interrupts leave behind (the kill tests in test_run and
test_faults run the real thing; these pin the rules they rely on)."""

from __future__ import annotations

import contextlib
import signal

import pytest

from generator import processes


def test_a_ctrl_c_swallowed_while_forking_is_raised_again():
    # Python ignores an exception raised in an at-fork callback: the KeyboardInterrupt below is what it would
    # have swallowed, and the count still tells the code that started the child.
    seen = processes.interrupts()
    with contextlib.suppress(KeyboardInterrupt):
        processes._on_sigint(signal.SIGINT, None)
    with pytest.raises(KeyboardInterrupt):
        processes.raise_if_interrupted_since(seen)
    processes.raise_if_interrupted_since(processes.interrupts())  # nothing since: nothing raised


def test_the_counting_handler_replaces_only_pythons_own():
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job: Ctrl-C is not ours to take
        processes.count_interrupts()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.signal(signal.SIGINT, signal.default_int_handler)
        processes.count_interrupts()
        assert signal.getsignal(signal.SIGINT) is processes._on_sigint
    finally:
        signal.signal(signal.SIGINT, before)
