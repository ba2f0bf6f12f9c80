"""perfsite's greedy decode loop on onnxruntime: a prefill pass over the prompt, then one pass per new token.

Every input a pass feeds is made before the clock starts (masks of each length, each step's positions); each
pass's `present.N.*` arrays go back as the next pass's `past_key_values.N.*` as onnxruntime returned them, and
only the last position's logits are read, for the greedy choice. The model's own Concat writes each present
(the convention's cost, the same in any loop). I/O binding with onnxruntime values was tried first and was
1.05-1.12 times slower than a plain `InferenceSession.run` loop on the example decoder (bench/decode_overhead.py,
2026-12-07); this loop measured 0.97 of it. Exactly `new_tokens` tokens are generated, end-of-sequence ignored,
from a prompt fixed by its seed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import onnxruntime as ort

from generator.decode.convention import DecoderLayout


@dataclass(frozen=True)
class Generation:
    """One request: the time to its first token (prefill and the greedy choice), each later step's time, and
    the tokens it produced ([batch, new_tokens])."""

    ttft_ms: float
    steps_ms: np.ndarray
    tokens: np.ndarray
    prompt_tokens: int

    @property
    def e2e_ms(self) -> float:
        return self.ttft_ms + float(self.steps_ms.sum())


def prompt_ids(layout: DecoderLayout, batch: int, prompt_tokens: int, seed: int = 0) -> np.ndarray:
    """The deterministic prompt: token ids in [0, vocab), the same for a given seed, batch and length."""
    return np.random.default_rng(seed).integers(0, layout.vocab, (batch, prompt_tokens), dtype=np.int64)


def shared_prompt(layouts: list[DecoderLayout], batch: int, prompt_tokens: int) -> np.ndarray:
    """The one prompt several versions generate from (a configuration's, or `perfsite generate A B`'s): ids
    every version's vocabulary holds."""
    vocab = min(layout.vocab for layout in layouts)
    return prompt_ids(replace(layouts[0], vocab=vocab), batch, prompt_tokens)


class DecodeLoop:
    """Generates from one session; `generate()` is one timed request."""

    def __init__(self, session: ort.InferenceSession, layout: DecoderLayout, prompt: np.ndarray,
                 new_tokens: int) -> None:
        self.session, self.layout, self.prompt, self.new_tokens = session, layout, prompt, new_tokens
        batch, length = prompt.shape
        total = length + new_tokens
        # Every input a step feeds, made before the clock starts: masks of each length, each step's positions.
        # One buffer, viewed at each length: a mask per length grew as batch × total² (2 GiB at batch 8 and 8,192
        # positions), counted in the process's peak memory.
        ones = np.ones(batch * total, np.int64)
        self._masks = [ones[:batch * n].reshape(batch, n) for n in range(total + 1)]
        self._positions = [np.full((batch, 1), n, np.int64) for n in range(total)]
        self._prompt_positions = np.ascontiguousarray(np.broadcast_to(np.arange(length, dtype=np.int64),
                                                                      (batch, length)))
        pairs = [(n, kv) for n in range(layout.layers) for kv in ("key", "value")]
        self._past_names = [f"past_key_values.{n}.{kv}" for n, kv in pairs]
        self._outputs = ["logits", *(f"present.{n}.{kv}" for n, kv in pairs)]
        empty = np.zeros((batch, layout.kv_heads, 0, layout.head_dim), layout.kv_dtype)
        self._empty_past = dict.fromkeys(self._past_names, empty)

    def generate(self) -> Generation:
        batch, length = self.prompt.shape
        tokens = np.empty((batch, self.new_tokens), np.int64)
        steps = np.empty(max(self.new_tokens - 1, 0))
        start = time.perf_counter_ns()
        tokens[:, 0], past = self._run(self.prompt, length, self._prompt_positions, self._empty_past)
        ttft_ms = (time.perf_counter_ns() - start) / 1e6
        for step in range(1, self.new_tokens):
            began = time.perf_counter_ns()
            context = length + step  # the positions the cache holds once this step's token is in it
            tokens[:, step], past = self._run(tokens[:, step - 1:step], context, self._positions[context - 1], past)
            steps[step - 1] = (time.perf_counter_ns() - began) / 1e6
        return Generation(ttft_ms=ttft_ms, steps_ms=steps, tokens=tokens, prompt_tokens=length)

    def prefill_logits(self) -> np.ndarray:
        """The logits at the prompt's last position of a prefill pass ([batch, vocab]): what the first token is
        chosen from (the output agreement of generative versions compares them)."""
        length = self.prompt.shape[1]
        feeds = self._feeds(self.prompt, length, self._prompt_positions, self._empty_past)
        return self.session.run(["logits"], feeds)[0][:, -1, :]

    def prefill_past(self) -> dict:
        """The cache a prefill pass over the prompt leaves: the past of a decode step at the prompt's length + 1."""
        length = self.prompt.shape[1]
        return self._run(self.prompt, length, self._prompt_positions, self._empty_past)[1]

    def step(self, token: np.ndarray, context: int, past: dict) -> np.ndarray:
        """One decode pass of `token` ([batch, 1]) at position context - 1 over `past` (context - 1 positions):
        each row's greedy token."""
        return self._run(token, context, self._positions[context - 1], past)[0]

    def _feeds(self, ids: np.ndarray, total: int, positions: np.ndarray, past: dict) -> dict:
        feeds = {"input_ids": np.ascontiguousarray(ids), "attention_mask": self._masks[total], **past}
        if self.layout.has_position_ids:
            feeds["position_ids"] = positions
        return feeds

    def _run(self, ids: np.ndarray, total: int, positions: np.ndarray, past: dict) -> tuple[np.ndarray, dict]:
        """One pass: the greedy token of each row, and the presents as the next pass's past."""
        outputs = self.session.run(self._outputs, self._feeds(ids, total, positions, past))
        logits = outputs[0][:, -1, :]
        return logits.argmax(axis=-1), dict(zip(self._past_names, outputs[1:], strict=True))


def bare_generate(session: ort.InferenceSession, layout: DecoderLayout, prompt: np.ndarray,
                  new_tokens: int) -> tuple[float, np.ndarray]:
    """The same greedy generation written plainly with `InferenceSession.run` and numpy arrays, as a user
    would hand-time it (bench/decode_overhead.py compares the two): its end-to-end milliseconds and tokens."""
    batch, length = prompt.shape
    names = [o.name for o in session.get_outputs()]
    past = {f"past_key_values.{n}.{kv}": np.zeros((batch, layout.kv_heads, 0, layout.head_dim), layout.kv_dtype)
            for n in range(layout.layers) for kv in ("key", "value")}
    tokens = np.empty((batch, new_tokens), np.int64)
    ids, positions = prompt, np.broadcast_to(np.arange(length, dtype=np.int64), (batch, length))
    start = time.perf_counter_ns()
    for step in range(new_tokens):
        total = length + step
        feeds = {"input_ids": ids, "attention_mask": np.ones((batch, total), np.int64), **past}
        if layout.has_position_ids:
            feeds["position_ids"] = np.ascontiguousarray(positions)
        out = dict(zip(names, session.run(None, feeds), strict=True))
        tokens[:, step] = out["logits"][:, -1, :].argmax(axis=-1)
        past = {f"past_key_values.{n}.{kv}": out[f"present.{n}.{kv}"]
                for n in range(layout.layers) for kv in ("key", "value")}
        ids, positions = tokens[:, step:step + 1], np.full((batch, 1), total, np.int64)
    return (time.perf_counter_ns() - start) / 1e6, tokens
