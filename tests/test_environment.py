"""The environment description: columns, fingerprint rules, /proc/cpuinfo parsing, non-Linux fallbacks."""

from __future__ import annotations

import dataclasses

import onnxruntime as ort
import pyarrow as pa

from generator.machine import environment
from generator.machine.environment import capture_environment, fingerprint, parse_cpuinfo
from generator.results.schema import arrow_schema, column_names

X86_TWO_SOCKETS = "\n\n".join(
    f"processor\t: {cpu}\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: {cpu // 4}\n"
    f"core id\t\t: {(cpu % 4) // 2}\nflags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl "
    "avx512_vnni avx_vnni amx_tile amx_int8 amx_bf16"
    for cpu in range(8)
)
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes sve asimddp\n\n" \
      "processor\t: 1\nFeatures\t: fp asimd evtstrm aes sve asimddp\n"


def test_fields_are_the_environments_columns():
    env = capture_environment()
    assert [f.name for f in dataclasses.fields(env)] == column_names("environments")
    table = pa.Table.from_pylist([env.row()], schema=arrow_schema("environments"))
    assert table.num_rows == 1


def test_capture_on_this_machine():
    env = capture_environment()
    assert env.env_id == env.fingerprint[:12] and len(env.fingerprint) == 64
    assert env.onnxruntime == ort.__version__
    assert env.providers is not None and "CPUExecutionProvider" in env.providers
    assert env.logical_cores and env.logical_cores >= 1
    assert (env.peak_gflops_fp32, env.peak_gops_int8, env.bandwidth_gbs) == (None, None, None)
    assert capture_environment().fingerprint == env.fingerprint  # stable between captures


def test_hostname_and_time_do_not_change_the_fingerprint():
    row = capture_environment().row()
    other = {**row, "hostname": "elsewhere", "captured_at": "2000-01-01T00:00:00+00:00",
             "peak_gflops_fp32": 123.0}
    assert fingerprint(other) == fingerprint(row)
    assert fingerprint({**row, "onnxruntime": "0.0.1"}) != fingerprint(row)
    assert fingerprint({**row, "isa": ["AVX2"]}) != fingerprint({**row, "isa": ["AVX2", "FMA"]})


def test_parse_x86_cpuinfo():
    info = parse_cpuinfo(X86_TWO_SOCKETS)
    assert info["model"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert info["physical_cores"] == 4  # 2 sockets x 2 cores, 2 hyper-threads each
    assert info["isa"] == ("SSE4.2", "AVX", "AVX2", "FMA", "F16C", "AVX-512F", "AVX-512BW", "AVX-512VL",
                           "AVX512-VNNI", "AVX-VNNI", "AMX-TILE", "AMX-INT8", "AMX-BF16")


def test_parse_arm_cpuinfo():
    info = parse_cpuinfo(ARM)
    assert info["isa"] == ("NEON", "SVE")
    assert info["physical_cores"] is None  # no core ids: the caller falls back to psutil
    assert info["model"] is None


def test_without_proc_files(monkeypatch, tmp_path):
    """macOS / Windows: no /proc; fields fall back or stay None, nothing raises."""
    monkeypatch.setattr(environment, "CPUINFO", tmp_path / "cpuinfo")
    monkeypatch.setattr(environment, "MEMINFO", tmp_path / "meminfo")
    env = capture_environment()
    assert env.isa is None
    assert env.memory_gb is None or env.memory_gb > 0  # psutil's answer, when installed
    assert env.env_id == env.fingerprint[:12]
