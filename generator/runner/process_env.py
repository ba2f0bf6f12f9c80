"""What a worker process knows of itself: its peak memory, and the test hook that makes it fail on purpose."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def peak_rss_mb() -> float | None:
    """Peak resident memory of this process in MiB.

    On Linux, VmHWM of /proc/self/status: the high-water mark of this address space, which starts afresh at
    exec. ru_maxrss does not: it survives fork and execve, so every worker would report the orchestrator's
    peak at the time it forked (all trials showed the same 807 MiB). Elsewhere ru_maxrss (KiB on Linux-like
    systems, bytes on macOS), or psutil on Windows."""
    hwm = _vm_hwm_mb()
    if hwm is not None:
        return hwm
    try:
        import resource
    except ImportError:  # Windows
        return _psutil_peak_mb()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


def _vm_hwm_mb() -> float | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:  # not Linux
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return None


def _psutil_peak_mb() -> float | None:
    try:
        import psutil

        peak = getattr(psutil.Process().memory_info(), "peak_wset", None)
        return peak / 2**20 if peak else None
    except Exception:  # psutil missing: the column is nullable
        return None


def test_fault(model_path: str) -> None:
    """The orchestrator's tests make one version's worker crash, hang or run out of memory."""
    fault = os.environ.get("PERFSITE_TEST_FAULT")
    target = os.environ.get("PERFSITE_TEST_FAULT_VERSION", "")
    if not fault or target not in str(model_path):
        return
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "hang":
        while True:
            time.sleep(3600)
    elif fault == "oom":
        _exhaust_memory()


def _exhaust_memory() -> None:
    """Allocate until MemoryError, under an address-space cap so that the test never starves the machine."""
    try:
        import resource

        cap = _address_space_bytes() + 512 * 2**20
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):
        pass  # no cap possible here: the allocation below still ends in MemoryError or the OOM killer
    hoard = []
    while True:
        hoard.append(bytearray(64 * 2**20))


def _address_space_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise OSError("VmSize not found")
