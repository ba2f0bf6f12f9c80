"""The machine and software a measurement ran on, and its fingerprint.

The fingerprint hashes what decides performance (CPU model, cores, instruction sets, memory, OS and kernel,
library versions, providers) and nothing that changes between two runs on the same machine (hostname, time,
measured peaks). Results measured on environments with different fingerprints are never pooled.

Everything degrades to ``None`` where the platform does not tell (no ``/proc/cpuinfo`` on macOS or Windows).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CPUINFO = Path("/proc/cpuinfo")
MEMINFO = Path("/proc/meminfo")

# /proc/cpuinfo flag -> name shown on pages; only extensions that change which kernels onnxruntime runs.
ISA_FLAGS: dict[str, str] = {
    "sse4_2": "SSE4.2",
    "avx": "AVX",
    "avx2": "AVX2",
    "fma": "FMA",
    "f16c": "F16C",
    "avx512f": "AVX-512F",
    "avx512bw": "AVX-512BW",
    "avx512vl": "AVX-512VL",
    "avx512_vnni": "AVX512-VNNI",
    "avx_vnni": "AVX-VNNI",
    "amx_tile": "AMX-TILE",
    "amx_int8": "AMX-INT8",
    "amx_bf16": "AMX-BF16",
    # arm64 lists its extensions under "Features".
    "asimd": "NEON",
    "sve": "SVE",
}

# Fields that identify the environment; hostname, captured_at and the measured limits are left out on purpose.
FINGERPRINT_FIELDS = (
    "cpu_model", "physical_cores", "logical_cores", "isa", "memory_gb", "os",
    "python", "onnxruntime", "onnx", "numpy", "providers",
)


@dataclass(frozen=True)
class Environment:
    """One row of the ``environments`` table (see generator.results.schema)."""

    env_id: str
    fingerprint: str
    hostname: str | None
    cpu_model: str | None
    physical_cores: int | None
    logical_cores: int | None
    isa: tuple[str, ...] | None
    memory_gb: float | None
    os: str | None
    python: str | None
    onnxruntime: str | None
    onnx: str | None
    numpy: str | None
    providers: tuple[str, ...] | None
    peak_gflops_fp32: float | None
    peak_gops_int8: float | None
    bandwidth_gbs: float | None
    captured_at: str
    limits_probed_at: str | None = None  # when the limits above were probed (generator.machine.probe)
    limits_quality: str | None = None  # the probe's quality in words: "settled: …", "unsettled: …"
    limits_settled: bool | None = None  # two undisturbed probes agreed (generator.machine.probe); None: older

    def row(self) -> dict[str, Any]:
        """The row as plain Python values (lists for the list columns)."""
        d = asdict(self)
        for key in ("isa", "providers"):
            d[key] = list(d[key]) if d[key] is not None else None
        return d


def capture_environment() -> Environment:
    """Describe this machine and the installed software; the peaks are left ``None`` (not probed here)."""
    cpu = _read_cpuinfo(CPUINFO)
    described: dict[str, Any] = {
        "cpu_model": cpu.get("model") or platform.processor() or None,
        "physical_cores": cpu.get("physical_cores") or _psutil_physical_cores(),
        "logical_cores": os.cpu_count(),
        "isa": cpu.get("isa"),
        "memory_gb": _memory_gb(),
        "os": platform.platform() or None,
        "python": platform.python_version(),
        **_library_versions(),
        "providers": _providers(),
    }
    fp = fingerprint(described)
    return Environment(
        env_id=fp[:12], fingerprint=fp, hostname=socket.gethostname() or None, **described,
        peak_gflops_fp32=None, peak_gops_int8=None, bandwidth_gbs=None,
        captured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def fingerprint(described: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the identifying fields (sorted keys, lists for tuples)."""
    data = {k: list(v) if isinstance(v, tuple) else v
            for k, v in described.items() if k in FINGERPRINT_FIELDS}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _read_cpuinfo(path: Path) -> dict[str, Any]:
    """Model name, instruction sets and physical cores from /proc/cpuinfo; {} where it does not exist."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return {}
    return parse_cpuinfo(text)


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Parse /proc/cpuinfo text (x86 or arm64).

    Physical cores are the unique (physical id, core id) pairs; ``None`` when the kernel does not list them
    (some VMs, arm64), so that the caller falls back to psutil.
    """
    model = None
    flags: set[str] = set()
    cores: set[tuple[str, str]] = set()
    physical = None
    for block in text.split("\n\n"):
        entry = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                entry[key.strip().lower()] = value.strip()
        model = model or entry.get("model name") or entry.get("hardware") or entry.get("cpu model")
        flags.update((entry.get("flags") or entry.get("features") or "").split())
        physical = entry.get("physical id", physical)
        if "core id" in entry:
            cores.add((physical or "0", entry["core id"]))
    isa = [name for flag, name in ISA_FLAGS.items() if flag in flags]
    return {"model": model, "isa": tuple(isa), "physical_cores": len(cores) or None}


def _psutil_physical_cores() -> int | None:
    try:
        import psutil

        return psutil.cpu_count(logical=False)
    except Exception:  # psutil missing or the platform refuses: the column is nullable
        return None


def _memory_gb() -> float | None:
    """Total memory in GiB, rounded to 0.1: a few kB reserved differently by the kernel must not change it."""
    total = None
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        try:
            import psutil

            total = psutil.virtual_memory().total
        except Exception:  # no psutil, or an exotic platform
            total = None
    return round(total / 2**30, 1) if total else None


def _library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in ("onnxruntime", "onnx", "numpy"):
        try:
            versions[name] = str(__import__(name).__version__)
        except Exception:  # not installed or broken: recorded as unknown
            versions[name] = None
    return versions


def _providers() -> tuple[str, ...] | None:
    try:
        import onnxruntime

        return tuple(onnxruntime.get_available_providers())
    except Exception:  # onnxruntime missing: nothing can run, but describing the machine still works
        return None
