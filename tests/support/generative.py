"""A generative experiment for the tests: a tiny decoder built from code in FP32, dynamic INT8 and INT4, measured
by the real `perfsite run` in quick mode (tests/conftest.py's `generative_results`, made once a session)."""

from __future__ import annotations

from pathlib import Path

from generator.models.builder import model_bytes, write_if_changed
from generator.models.decoder import DecoderShape, build_decoder
from support.cli import perfsite, write_spec

# Two layers, MatMuls of 64 and 128 (INT4's blocks of 16 fit), a 48-row position table.
TINY = DecoderShape(layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=97, max_positions=48)
PROMPTS, NEW_TOKENS = (4, 12), 4
SPEC = """\
    name: gen
    description: a tiny decoder, three versions
    models:
      fp32: {path: models/decoder.onnx}
      int8: {from: fp32, quantize: {mode: dynamic}}
      int4: {from: fp32, quantize: {mode: int4, block_size: 16}}
    generate:
      prompt_tokens: [4, 12]
      new_tokens: [4]
    measure: {warmup: 1, min_iterations: 8, min_seconds: 0.05, repeats: 3, budget_s: 0.01, percentile: p90}
    limits: {ttft_ms: 1000, tpot_ms: 1000}
    compare:
      - {a: fp32, b: int4}
    """


def write_generative_project(folder: Path) -> Path:
    """The project: the decoder under models/ and spec.yaml; returns the spec's path."""
    write_if_changed(folder / "models" / "decoder.onnx", model_bytes(build_decoder(TINY)))
    return write_spec(folder, SPEC)


def run_generative_experiment(folder: Path, env: dict[str, str]) -> Path:
    """The experiment measured into folder/results; returns the experiment's results folder. Quick mode's two
    processes a trial (budget_s 0.01 stops the adaptive rounds after them): two rounds pair the versions."""
    spec = write_generative_project(folder)
    run = perfsite("run", str(spec), "--results", "results", cwd=folder, env=env)
    assert run.returncode == 0, run.stderr
    return folder / "results" / "gen"
