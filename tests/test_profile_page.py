"""Profile pages: every section from a fixed results directory with static analysis (`layers`) and probed
machine limits, snapshotted; hostile text stays inert; the sweet spot and measured comparisons appear.

The fixture reuses the site fixture's trials (tests/test_site_fixture.py) and adds what the profile needs:
executed nodes with real-looking fused names, shapes, sizes and pool shares, hand-written `layers` rows, and an
environment with measured peaks. Regenerate the snapshots after an intended change with
`PERFSITE_UPDATE_SNAPSHOTS=1 pytest tests/test_profile_page.py` and review the diff.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from perfsite_testing import check_snapshots
from test_site_fixture import ENV, PAYLOAD, _latencies, _processes, _trial_row

from generator.results.store import ResultsDir, TrialFiles, load_experiment
from generator.site import pages as site_pages
from generator.site.escape import md_text
from generator.spec import canonical_json, spec_from_json, spec_to_json

EXPERIMENT = "cnn-profile"
SNAPSHOTS = Path(__file__).parent / "snapshots" / "profile"
UPDATE = os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1"
CHART_RE = re.compile(r'<script type="application/json" id="([a-z0-9-]+)">(.*?)</script>')
PROBED = {"peak_gflops_fp32": 180.0, "peak_gops_int8": 340.0, "bandwidth_gbs": 18.0,
          "limits_probed_at": "2026-01-05T09:58:00+00:00", "limits_quality": "clean (1 probe)"}

# Original nodes of the model file at batch 1: op type, FLOPs, MACs, integer ops, params, weight bytes,
# input bytes, output bytes, counted. Activations and operations scale with the batch, weights do not.
LAYERS = {
    "fp32": {
        "/conv1/Conv": ("Conv", 7_077_888, 3_538_944, 0, 1_792, 7_168, 49_152, 1_048_576, True),
        "/bn1/BatchNormalization": ("BatchNormalization", 524_288, 0, 0, 256, 1_024, 1_048_576, 1_048_576, True),
        "/relu/Relu": ("Relu", 262_144, 0, 0, 0, 0, 1_048_576, 1_048_576, True),
        "/maxpool/MaxPool": ("MaxPool", 589_824, 0, 0, 0, 0, 1_048_576, 262_144, True),
        "/layer1/conv/Conv": ("Conv", 37_781_504, 18_890_752, 0, 36_928, 147_712, 262_144, 262_144, True),
        "/layer1/Add": ("Add", 65_536, 0, 0, 0, 0, 524_288, 262_144, True),
        "/layer1/relu/Relu": ("Relu", 65_536, 0, 0, 0, 0, 262_144, 262_144, True),
        "/avgpool/GlobalAveragePool": ("GlobalAveragePool", 65_536, 0, 0, 0, 0, 262_144, 256, True),
        "/fc/Gemm": ("Gemm", 1_300, 640, 0, 650, 2_600, 256, 40, True),
        "/branch/If": ("If", None, None, None, 0, 0, 4, 40, False),
    },
    "int8": {
        "input_QuantizeLinear": ("QuantizeLinear", 24_576, 0, 0, 2, 5, 49_152, 12_288, True),
        "input_DequantizeLinear": ("DequantizeLinear", 0, 0, 0, 0, 0, 12_288, 49_152, True),
        "/conv1/Conv": ("Conv", 0, 3_538_944, 7_077_888, 1_792, 1_984, 12_288, 262_144, True),
        "/conv1/Conv_output_QuantizeLinear": ("QuantizeLinear", 0, 0, 524_288, 2, 5, 1_048_576, 262_144, True),
        "/maxpool/MaxPool": ("MaxPool", 589_824, 0, 0, 0, 0, 262_144, 65_536, True),
        "/layer1/conv/Conv": ("Conv", 0, 18_890_752, 37_781_504, 36_928, 37_120, 65_536, 65_536, True),
        "/avgpool/GlobalAveragePool": ("GlobalAveragePool", 65_536, 0, 0, 0, 0, 262_144, 256, True),
        "/fc/Gemm": ("Gemm", 1_300, 640, 0, 650, 2_600, 256, 40, True),
        "/branch/If": ("If", None, None, None, 0, 0, 4, 40, False),
    },
}

# Executed nodes: name, op type, share of kernel time, original nodes, ORT sizes at batch 1 (activation,
# output bytes; None: not reported), pool share with 2 threads, input and output shapes at batch 1.
EXECUTED = {
    "fp32": [
        ("/relu/Relu_output_0_nchwc", "Conv", 0.42, ["/conv1/Conv", "/bn1/BatchNormalization", "/relu/Relu"],
         (49_152, 1_048_576), 0.45, [[1, 3, 64, 64], [64, 3, 3, 3]], [[1, 64, 64, 64]]),
        ("/maxpool/MaxPool_output_0_nchwc", "MaxPool", 0.08, ["/maxpool/MaxPool"], (1_048_576, 262_144), 0.4,
         [[1, 64, 64, 64]], [[1, 64, 32, 32]]),
        ("/layer1/relu/Relu_output_0_nchwc", "Conv", 0.33, ["/layer1/conv/Conv", "/layer1/Add", "/layer1/relu/Relu"],
         None, 0.47, [[1, 64, 32, 32], [64, 64, 3, 3]], [[1, 64, 32, 32]]),
        ("/avgpool/GlobalAveragePool_output_0_nchwc", "GlobalAveragePool", 0.05, ["/avgpool/GlobalAveragePool"],
         (262_144, 256), 0.0, [[1, 64, 32, 32]], [[1, 64, 1, 1]]),
        ("ReorderOutput", "ReorderOutput", 0.03, ["/avgpool/GlobalAveragePool"], (256, 256), 0.0,
         [[1, 64, 1, 1]], [[1, 64, 1, 1]]),
        ("/fc/Gemm", "Gemm", 0.06, ["/fc/Gemm"], (256, 40), 0.0, [[1, 64], [10, 64]], [[1, 10]]),
        ("/branch/If", "If", 0.03, ["/branch/If"], (4, 40), None, [[1]], [[1, 10]]),
    ],
    "int8": [
        ("input_QuantizeLinear", "QuantizeLinear", 0.06, ["input_QuantizeLinear"], (49_152, 12_288), 0.0,
         [[1, 3, 64, 64]], [[1, 3, 64, 64]]),
        ("/conv1/Conv_token_1", "QLinearConv", 0.30, ["input_DequantizeLinear", "/conv1/Conv",
                                                     "/conv1/Conv_output_QuantizeLinear"],
         (12_288, 262_144), 0.3, [[1, 3, 64, 64], [64, 3, 3, 3]], [[1, 64, 64, 64]]),
        ("Transpose", "Transpose", 0.04, ["input_DequantizeLinear"], (12_288, 12_288), 0.0,
         [[1, 3, 64, 64]], [[1, 64, 64, 3]]),
        ("/maxpool/MaxPool_token_2", "NhwcMaxPool", 0.07, ["/maxpool/MaxPool"], (262_144, 65_536), 0.0,
         [[1, 64, 64, 64]], [[1, 32, 32, 64]]),
        ("/layer1/conv/Conv_token_3", "QLinearConv", 0.38, ["/layer1/conv/Conv"], (65_536, 65_536), 0.35,
         [[1, 32, 32, 64], [64, 64, 3, 3]], [[1, 32, 32, 64]]),
        ("/avgpool/GlobalAveragePool", "GlobalAveragePool", 0.06, ["/avgpool/GlobalAveragePool"],
         (262_144, 256), 0.0, [[1, 64, 32, 32]], [[1, 64, 1, 1]]),
        ("/fc/Gemm", "Gemm", 0.06, ["/fc/Gemm"], (256, 40), 0.0, [[1, 64], [10, 64]], [[1, 10]]),
        ("/branch/If", "If", 0.03, ["/branch/If"], (4, 40), None, [[1]], [[1, 10]]),
    ],
}


def spec_dict(description: str = "Where does the time of the example CNN go, and how close to the machine?") -> dict:
    return {
        "name": EXPERIMENT, "description": description,
        "models": {"fp32": {"path": "models/cnn.onnx"},
                   "int8": {"from": "fp32", "quantize": {"mode": "static_qdq"}}},
        "inputs": {"x": {"shape": ["batch", 3, 64, 64], "dtype": "float32"}},
        "sweep": {"batch": [1, 8], "threads": [1, 2]},
        "measure": {"percentile": "p95"}, "latency_threshold_ms": 12.0,
        "compare": [{"a": "fp32", "b": "int8"}], "profile": [{"batch": 1}],
        "whatif": {"Conv": 2.0, "/fc/Gemm": 1.5, "Attention": 3.0},
    }


def _batched(batch: int, shapes: list[list[int]]) -> str:
    """Activation shapes (leading 1) at the batch size; weight shapes as they are."""
    return json.dumps([[batch, *s[1:]] if len(s) > 1 and s[0] == 1 else s for s in shapes], separators=(",", ":"))


def _nodes(key: str, row: dict, version: str, payload: bool) -> list[dict]:
    kernels, batch, threads = row["kernel_sum_us"], row["batch"], row["threads"]
    out = []
    for i, (name, op, share, originals, sizes, pool, ins, outs) in enumerate(EXECUTED[version]):
        if payload and i == 0:
            name = f"{name}{PAYLOAD}"
        integer = version == "int8" and op.startswith("QLinear")
        out.append({
            "trial_key": key, "exec_order": i, "node_name": name, "op_type": op, "provider": "CPUExecutionProvider",
            "parent": None, "calls": 1, "dur_mean_us": kernels * share, "dur_p50_us": kernels * share * 0.97,
            "input_shapes": _batched(batch, ins), "output_shapes": _batched(batch, outs),
            "runtime_precision": "INT8" if integer else "FP32", "original_nodes": originals,
            "weights": [f"{o.strip('/').split('/')[0]}.weight" for o in originals if o.endswith(("Conv", "Gemm"))],
            "activation_bytes": sizes[0] * batch if sizes else None,
            "output_bytes": sizes[1] * batch if sizes else None,
            "pool_share": pool if threads > 1 else None, "thread_id": 1, "start_offset_us": float(i),
        })
    out.append({"trial_key": key, "exec_order": len(out), "node_name": "/branch/then/Identity",
                "op_type": "Identity", "parent": "/branch/If", "calls": 1, "dur_mean_us": kernels * 0.02})
    return out


def _layers(key: str, version: str, batch: int) -> list[dict]:
    rows = []
    for position, (node, values) in enumerate(LAYERS[version].items()):
        op, flops, macs, int_ops, params, weight_bytes, in_bytes, out_bytes, counted = values
        scale = (lambda v: None if v is None else v * batch)  # noqa: E731  (activations and operations)
        rows.append({
            "trial_key": key, "node": node, "op_type": op, "domain": "", "position": position,
            "flops": scale(flops), "macs": scale(macs), "int_ops": scale(int_ops), "params": params,
            "weight_bytes": weight_bytes, "input_bytes": scale(in_bytes), "output_bytes": scale(out_bytes),
            "input_shapes": "[]", "output_shapes": "[]", "counted": counted,
        })
    return rows


def write_profile_results(root: Path, payload: bool = False, probed: bool | dict = True) -> Path:
    """The fixed experiment under root/<experiment>/: fp32 and int8 at batch 1 and 8, 1 and 2 threads (int8
    at b8 t2 failed), with nodes, layers and an environment probed unless `probed` is false (a dict: these
    limits instead of PROBED's)."""
    spec = spec_from_json(spec_dict(PAYLOAD if payload else spec_dict()["description"]))
    sha = hashlib.sha256(canonical_json(spec).encode()).hexdigest()
    rd = ResultsDir(root / EXPERIMENT)
    rd.write_spec(sha, spec_to_json(spec))
    limits = {**PROBED, **probed} if isinstance(probed, dict) else PROBED if probed else {}
    rd.write_row("environments", ENV["env_id"], {**ENV, **limits, "physical_cores": 2})
    rd.write_row("runs", "run-0001", {"run_id": "run-0001", "experiment": EXPERIMENT, "spec_sha256": sha,
                                      "env_id": ENV["env_id"], "started_at": "2026-01-05T10:00:00Z"})
    plan = [(v, b, t) for b in (1, 8) for t in (1, 2) for v in ("fp32", "int8")]
    for n, (version, batch, threads) in enumerate(plan):
        key = hashlib.sha256(f"profile-{version}-{batch}-{threads}".encode()).hexdigest()[:20]
        failed = (version, batch, threads) == ("int8", 8, 2)
        row = {**_trial_row(key, version, batch, threads, failed, False, n), "spec_sha256": sha,
               "experiment": EXPERIMENT}
        if failed:
            rd.write_trial(TrialFiles(trial=row, processes=[], latencies=[], nodes=[]))
            continue
        rd.write_trial(TrialFiles(trial=row, processes=_processes(key, row), latencies=_latencies(key, row, n),
                                  nodes=_nodes(key, row, version, payload), layers=_layers(key, version, batch)))
    return rd.path


def _profile_pages(folder: Path) -> dict[str, str]:
    view = site_pages.experiment_view(load_experiment(folder), EXPERIMENT)
    return {page.path: page.markdown for page in site_pages.profile_pages(site_pages.template_env(), view)}


def _generated(tmp_path: Path) -> dict[str, str]:
    """Snapshot name -> text: every profile page and, pretty-printed beside it, every chart in it."""
    out = {}
    for path, markdown in _profile_pages(write_profile_results(tmp_path)).items():
        name = path.removeprefix(f"{site_pages.REPORTS_DIR}/")
        out[name] = markdown
        for chart_id, spec in CHART_RE.findall(markdown):
            (chart,) = json.loads(spec)
            out[f"{name.removesuffix('.md')}.{chart_id}.json"] = json.dumps(chart, indent=1, sort_keys=True,
                                                                            ensure_ascii=False) + "\n"
    return out


def test_profile_pages_match_snapshots(tmp_path):
    generated = _generated(tmp_path)
    check_snapshots(generated, SNAPSHOTS)


def test_profile_pages_are_byte_identical_across_runs(tmp_path):
    assert _generated(tmp_path / "a") == _generated(tmp_path / "b")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, str]:
    return _profile_pages(write_profile_results(tmp_path_factory.mktemp("profile")))


def _section(markdown: str, heading: str) -> str:
    """The text of one `## heading` section of a page."""
    start = markdown.index(f"\n## {heading}")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:] if end < 0 else markdown[start:end]


def test_every_section_of_the_issue_is_on_each_profiled_configuration(pages):
    page = pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"]
    assert re.findall(r"^## .*", page, re.M) == ["## b1 t1 c1", "## b1 t2 c1", "## b8 t2 c1 · sweet spot"]
    for heading in ("b1 t2 c1", "b8 t2 c1 · sweet spot"):
        section = _section(page, heading)
        for part in ("### Model summary", "### Machine limits", "### Layer summaries", "#### By execution provider",
                     "### FLOPs profile", "### Layer results", "### Estimated speedup", "### Thread-pool efficiency",
                     "### Unattributed time", 'data-chart="chart-roofline-', 'data-chart="chart-ops-time-'):
            assert part in section, f"{heading}: {part} missing"


def test_model_summary_shows_static_totals_and_share_of_the_probed_peak(pages):
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert "| Instruction sets | AVX, AVX2, FMA |" in section
    assert "| FLOPs per request (GFLOP, a multiply-add counts 2) | 0.0464 |" in section
    assert "| Parameters (millions) | 0.0396 |" in section
    assert re.search(r"\| Achieved GFLOP/s .* \| [\d.]+ \([\d.]+% of the measured FP32 peak\) \|", section)
    assert "If: listed, not guessed" in section
    assert "| FP32 peak (GFLOP/s) | 180 | 180 |" in section


def test_one_thread_scales_the_compute_peaks_and_has_no_pool(pages):
    page = pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-int8.md"]
    assert re.findall(r"^## .*", page, re.M) == ["## b1 t1 c1", "## b1 t2 c1 · sweet spot"]
    section = _section(page, "b1 t1 c1")
    assert "| FP32 peak (GFLOP/s) | 180 | 90.0 |" in section
    assert "| INT8 peak (GOP/s) | 340 | 170 |" in section
    assert "One intra-op thread: there is no pool" in section


def test_whatif_from_the_spec_and_from_the_compared_version(pages):
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    # One control, three scenarios: content tabs (each op type alone, the spec's factors, int8's speeds).
    assert re.findall(r'^=== "(.*)"$', section, re.M) == [
        "Each op type 2× faster", "The spec's whatif factors", "At int8's op speeds"]
    assert "    Not found among the executed nodes: Attention." in section
    assert f"    | {md_text('/fc/Gemm')} | 1.50× |" in section
    assert "    Op families only int8 ran are not in the estimate: QuantizeLinear, Transpose." in section
    assert "    | Conv | " in section.split('=== "At int8\'s op speeds"')[1]


def test_layers_far_below_the_roofline_are_listed_and_bold(pages):
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert '!!! tip "' in section and "far below the roofline" in section
    assert f"| **{md_text('/relu/Relu_output_0_nchwc')}** |" in section


def test_unprobed_environment_says_so_and_keeps_the_flops_profile(tmp_path):
    pages = _profile_pages(write_profile_results(tmp_path, probed=False))
    section = _section(pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert "Machine limits not probed" in section
    assert 'data-chart="chart-ops-time-2"' in section and 'data-chart="chart-roofline-2"' in section
    assert "of the measured FP32 peak" not in section


def test_hostile_text_in_results_stays_inert(tmp_path):
    for markdown in _profile_pages(write_profile_results(tmp_path, payload=True)).values():
        text = CHART_RE.sub("", markdown)
        assert "<script>" not in text and "<img" not in text and "{{" not in text
        assert "](javascript:" not in text
        for _, spec in CHART_RE.findall(markdown):
            assert "</script" not in spec and "<img" not in spec


def test_figures_above_a_limit_say_limit_underestimated(tmp_path):
    low = {"peak_gflops_fp32": 0.5, "peak_gops_int8": 0.5, "bandwidth_gbs": 0.01,
           "limits_quality": "disturbed (2 probes)"}
    section = _section(_profile_pages(write_profile_results(tmp_path, probed=low))[
        f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"], "b1 t2 c1")
    assert '!!! warning "Limit underestimated"' in section
    assert "Probed 2026-01-05 09:58 UTC, disturbed &#40;2 probes&#41;." in section
    assert "of the measured FP32 peak" in section and "% (limit underestimated) of the measured FP32 peak" in section
    assert re.search(r"\| \d[\d,]*\.\d% \(limit underestimated\) \|$", section, re.M)  # a layer's roofline share
    unmarked = re.findall(r"\| (\d[\d,]*\.\d)% \|$", section, re.M)  # the last column: of roofline / at the limit
    assert all(float(v.replace(",", "")) <= 100 for v in unmarked)


def test_profiled_times_add_up_to_the_measured_latency_with_the_overhead_as_its_own_line(pages):
    page = pages[f"{site_pages.REPORTS_DIR}/{EXPERIMENT}/profile-fp32.md"]
    assert "Per-layer and per-op-type times are as profiled" in page
    section = _section(page, "b1 t2 c1")
    lines = dict(re.findall(r"^\| (Kernels|Outside the kernels|Minus the profiler overhead|\*\*Measured latency)"
                            r"[^|]*\| \**(-?[\d,.]+)\** \|", section, re.M))
    names = ("Kernels", "Outside the kernels", "Minus the profiler overhead")
    parts = [float(lines[k].replace(",", "")) for k in names]
    assert sum(parts) == pytest.approx(float(lines["**Measured latency"].replace(",", "")), rel=0.01)
