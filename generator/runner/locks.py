"""Per-trial locks, so that two `perfsite run` processes on one results directory never measure the same trial.

A lock is an `flock` on `<results>/.locks/<trial_key>.lock` (for a store on object storage, a folder of this
machine's: `ResultsDir.lock_folder`): the kernel drops it when its holder dies, even by SIGKILL, so a crashed run
never leaves a trial locked for ever.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Sequence
from pathlib import Path


class TrialLock:
    @staticmethod
    @contextlib.contextmanager
    def many(lock_folder: Path, keys: Sequence[str]) -> Iterator[set[str]]:
        """Try to lock each key without waiting; yield the keys this process holds."""
        folder = Path(lock_folder)
        folder.mkdir(parents=True, exist_ok=True)
        fds: list[int] = []
        held: set[str] = set()
        try:
            for key in keys:
                fd = os.open(folder / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                fds.append(fd)
                held.add(key)
            yield held
        finally:
            for fd in fds:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
