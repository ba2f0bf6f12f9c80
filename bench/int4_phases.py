"""Does the INT4 finding of the demo's generative page hold when timed by hand? Prefill and decode of the example
decoder in FP32 and 4-bit weights, timed with nothing but `InferenceSession.run` and numpy.

The decoder is built from code as `make demo` builds it; its INT4 version is made with onnxruntime's
`MatMulNBitsQuantizer` directly (block 32, symmetric, accuracy level 4: what `quantize: {mode: int4}` asks
for). A request is a prefill pass over a fixed prompt, then `--new - 1` decode steps feeding each argmax token
back with the presents as the next pasts; the two models alternate request by request, each first in turn. The
script prints each phase's median for both and the ratio INT4 / FP32, with its spread over blocks of requests,
and, given `--results` (a results folder holding the demo's `decoder` experiment), the ratios perfsite's page
states at the same configuration, and whether the two agree (the hand-timed ratio inside perfsite's interval, or
on the same side of 1 as a settled verdict). 2-core VM, 2026-12-07, idle, against `perfsite run
experiments/decoder.yaml` measured just before:

    prefill (TTFT)  fp32 12 ms  int4 13.6 ms  int4/fp32 1.14 (blocks of 8: 1.11 to 1.16)
                    perfsite's page: 1.153 [1.131, 1.175] slower: agrees
    decode (TPOT)   fp32 0.692 ms  int4 0.456 ms  int4/fp32 0.66 (blocks of 8: 0.57 to 0.71)
                    perfsite's page: 0.582 [0.536, 0.632] faster: agrees

(`--prompt 32`: prefill 1.00 by hand, 0.988 [0.766, 1.274] unsettled on the page; decode 0.53 and 0.633
[0.499, 0.803] faster.)

Usage: ``python bench/int4_phases.py [--requests 48] [--prompt 128] [--new 16] [--results results]``. Exit
status 1 when a phase of perfsite's page disagrees with the hand-timed ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

from generator.models.decoder import DecoderShape, build_decoder

BLOCK = 8
PHASES = {"ttft": "prefill (TTFT)", "tpot": "decode (TPOT)"}


def session(model: onnx.ModelProto, folder: Path, name: str) -> ort.InferenceSession:
    path = folder / f"{name}.onnx"
    onnx.save(model, path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def request(sess: ort.InferenceSession, shape: DecoderShape, prompt: np.ndarray, new: int) -> tuple[float, float]:
    """One greedy generation timed by hand: the prefill's ms and the mean decode step's ms."""
    layers, length = shape.layers, prompt.shape[1]
    empty = np.zeros((1, shape.kv_heads, 0, shape.head_dim), np.float32)
    past = {f"past_key_values.{n}.{kv}": empty for n in range(layers) for kv in ("key", "value")}
    names = [o.name for o in sess.get_outputs()]
    ids, positions, steps = prompt, np.arange(length, dtype=np.int64)[None, :], []
    for step in range(new):
        feeds = {"input_ids": ids, "attention_mask": np.ones((1, length + step), np.int64),
                 "position_ids": positions, **past}
        start = time.perf_counter()
        out = dict(zip(names, sess.run(None, feeds), strict=True))
        steps.append((time.perf_counter() - start) * 1e3)
        token = out["logits"][:, -1, :].argmax(axis=-1)
        past = {f"past_key_values.{n}.{kv}": out[f"present.{n}.{kv}"] for n in range(layers) for kv in ("key", "value")}
        ids, positions = token[:, None].astype(np.int64), np.full((1, 1), length + step, np.int64)
    return steps[0], float(np.mean(steps[1:]))


def pages_ratios(results: Path, prompt: int, new: int) -> dict[str, tuple[float, float, float, str]]:
    """perfsite's phase verdicts for int4 against fp32 at batch 1, one thread, this prompt and output length."""
    from generator.analysis.generative import generative_report
    from generator.results.store import load_experiment

    exp = load_experiment(results / "decoder")
    report = generative_report(exp.spec, exp.trials, exp.processes, exp.decode_steps, exp.environments)
    label = f"b1 t1 c1 prompt={prompt} new={new}"
    for pair in report.pairs:
        for c in pair.comparisons:
            if (pair.a, pair.b, c.config_label) == ("fp32", "int4", label):
                return {v.phase: (v.ratio, v.low, v.high, v.verdict) for v in c.phases}
    sys.exit(f"{results}/decoder has no int4 against fp32 at {label}: run `make demo` (or pass --prompt/--new)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=16)
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    shape = DecoderShape()
    fp32 = build_decoder(shape)
    quantizer = MatMulNBitsQuantizer(build_decoder(shape), block_size=32, is_symmetric=True, accuracy_level=4)
    quantizer.process()
    prompt = np.random.default_rng(0).integers(0, shape.vocab, (1, args.prompt), dtype=np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        sessions = {"fp32": session(fp32, Path(tmp), "fp32"), "int4": session(quantizer.model.model, Path(tmp), "int4")}
        for sess in sessions.values():
            request(sess, shape, prompt, args.new)  # warm-up
        figures: dict[str, dict[str, list[float]]] = {v: {"ttft": [], "tpot": []} for v in sessions}
        for i in range(args.requests):
            for version in (("fp32", "int4") if i % 2 == 0 else ("int4", "fp32")):
                ttft, tpot = request(sessions[version], shape, prompt, args.new)
                figures[version]["ttft"].append(ttft)
                figures[version]["tpot"].append(tpot)
    page = pages_ratios(args.results, args.prompt, args.new) if args.results else {}
    disagree = []
    for phase, name in PHASES.items():
        a, b = np.array(figures["fp32"][phase]), np.array(figures["int4"][phase])
        ratio = float(np.median(b) / np.median(a))
        blocks = [np.median(b[i:i + BLOCK]) / np.median(a[i:i + BLOCK]) for i in range(0, len(a), BLOCK)]
        print(f"{name:<15} fp32 {np.median(a):.3g} ms  int4 {np.median(b):.3g} ms  int4/fp32 {ratio:.2f} "
              f"(blocks of {BLOCK}: {min(blocks):.2f} to {max(blocks):.2f})")
        if phase in page:
            point, low, high, verdict = page[phase]
            inside = low <= ratio <= high
            same_side = {"slower": ratio > 1, "faster": ratio < 1}.get(verdict, True)
            agree = inside or (verdict in ("slower", "faster") and same_side)
            print(f"{'':<15} perfsite's page: {point:.3f} [{low:.3f}, {high:.3f}] {verdict}: "
                  f"{'agrees' if agree else 'DISAGREES'}")
            if not agree:
                disagree.append(phase)
    sys.exit(1 if disagree else 0)


if __name__ == "__main__":
    main()
