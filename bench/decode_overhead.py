"""What perfsite's decode loop costs per token, against a bare `InferenceSession.run` loop on the same model.

Both generate the same greedy tokens from the same prompt with one session (generator.decode.loop: DecodeLoop,
its inputs made before the clock starts; bare_generate, written as a user would hand-time it). They alternate
request by request, each first in turn, so that a change of the machine's speed falls on both, and the ratio of
their median end-to-end times is printed with its spread over blocks of requests (2-core VM, 2026-12-07, beside
another session's work):

    decoder: 4 layers, hidden 256, 8 heads (2 key/value), 128-token prompt, 32 new tokens, 1 thread(s)
    perfsite loop  39.0 ms median end to end (TTFT 12.5 ms, 0.84 ms per later token), 60 requests
    bare loop      40.2 ms median end to end, 60 requests
    ratio perfsite / bare: 0.97 (blocks of 8: 0.82 to 1.10); target ≤ 1.03

Usage: ``python bench/decode_overhead.py [--requests 40] [--prompt 128] [--new 32] [--threads 1]``. Exit status 1
when the ratio is above 1.03.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

from generator.decode.convention import decoder_layout
from generator.decode.loop import DecodeLoop, bare_generate, prompt_ids
from generator.models.builder import model_bytes, write_if_changed
from generator.models.decoder import DecoderShape, build_decoder

TARGET = 1.03
BLOCK = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    shape = DecoderShape()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "decoder.onnx"
        write_if_changed(path, model_bytes(build_decoder(shape)))
        layout = decoder_layout(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        prompt = prompt_ids(layout, 1, args.prompt)
        loop = DecodeLoop(session, layout, prompt, args.new)
        loop.generate(), bare_generate(session, layout, prompt, args.new)  # warm-up
        ours, bare, ttft, steps = [], [], [], []
        for i in range(args.requests):
            # ABBA: which loop runs first alternates, so that neither always follows the other.
            if i % 2:
                ms, tokens = bare_generate(session, layout, prompt, args.new)
            generation = loop.generate()
            if not i % 2:
                ms, tokens = bare_generate(session, layout, prompt, args.new)
            ours.append(generation.e2e_ms)
            ttft.append(generation.ttft_ms)
            steps.append(generation.steps_ms.mean())
            bare.append(ms)
            if not np.array_equal(tokens, generation.tokens):
                sys.exit("the two loops generated different tokens: one of them is wrong")
    ratio = float(np.median(ours) / np.median(bare))
    blocks = [np.median(ours[i:i + BLOCK]) / np.median(bare[i:i + BLOCK]) for i in range(0, len(ours), BLOCK)]
    print(f"decoder: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads ({shape.kv_heads} "
          f"key/value), {args.prompt}-token prompt, {args.new} new tokens, {args.threads} thread(s)")
    print(f"perfsite loop  {np.median(ours):.1f} ms median end to end (TTFT {np.median(ttft):.1f} ms, "
          f"{np.median(steps):.2f} ms per later token), {len(ours)} requests")
    print(f"bare loop      {np.median(bare):.1f} ms median end to end, {len(bare)} requests")
    print(f"ratio perfsite / bare: {ratio:.2f} (blocks of {BLOCK}: {min(blocks):.2f} to {max(blocks):.2f}); "
          f"target ≤ {TARGET}")
    sys.exit(0 if ratio <= TARGET else 1)


if __name__ == "__main__":
    main()
