"""onnxruntime-genai as a second engine for a version (`engine: genai` in the spec): its generator produces the
same greedy tokens as perfsite's decode loop (generator.decode.loop) from the same prompt, and perfsite times it
the same way, request by request, so that the two engines compare on the pages like two versions.

onnxruntime-genai reads a model folder holding `genai_config.json` and the model file by a relative name. The
folder is made in the process's scratch space: the config written from the decoder's layout (the convention's
names, its KV heads and head size), the model file and its external data files linked in under their own names.
End-of-sequence is out of reach (`min_length` is the whole request), as in perfsite's loop: exactly
`new_tokens` tokens.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from generator.decode.convention import DecoderLayout
from generator.decode.loop import Generation
from generator.errors import RunError

INSTALL = "pip install 'perfsite[genai]'"


def genai_module() -> Any:
    """The onnxruntime_genai module; RuntimeMissingError (one paragraph) when it is not installed."""
    try:
        import onnxruntime_genai
    except ImportError as e:
        raise RunError(
            f"`engine: genai` generates with onnxruntime-genai, which is not installed here ({e}). Install it "
            f"with `{INSTALL}` (onnxruntime-genai 0.18), or remove `engine: genai` to generate with perfsite's own "
            "decode loop on onnxruntime.") from e
    return onnxruntime_genai


def engine_label(engine: str | None) -> str:
    """What generates a version's tokens, as the results and pages name it: `onnxruntime` (perfsite's own decode
    loop) or `onnxruntime-genai 0.18.0`. RunError when onnxruntime-genai is asked for and not installed."""
    if engine != "genai":
        return "onnxruntime"
    return f"onnxruntime-genai {genai_module().__version__}"


def engine_key(engine: str | None) -> str | None:
    """What a trial key adds for the version's engine: nothing for perfsite's own loop (keys stored before
    engines existed stay valid), the engine and its release otherwise."""
    return None if engine != "genai" else engine_label(engine)


def model_folder(model_path: Path, layout: DecoderLayout, threads: int, max_length: int, folder: Path) -> Path:
    """A folder onnxruntime-genai can open: `genai_config.json` and links to the model file and the external
    data files it names."""
    folder.mkdir(parents=True, exist_ok=True)
    model_path = Path(model_path).resolve()
    for name in (model_path.name, *_external_files(model_path)):
        link = folder / name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(model_path.parent / name, link)
    names = {"input_ids": "input_ids", "attention_mask": "attention_mask",
             "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"}
    if layout.has_position_ids:
        names["position_ids"] = "position_ids"
    # hidden_size and num_attention_heads are not read for a decoder whose past and present are separate
    # tensors (past_present_share_buffer false); the KV heads and head size are the graph's.
    config = {
        "model": {
            "type": "llama", "vocab_size": layout.vocab, "context_length": max_length,
            "bos_token_id": 0, "pad_token_id": 0, "eos_token_id": layout.vocab - 1,
            "decoder": {
                "filename": model_path.name, "num_hidden_layers": layout.layers,
                "num_key_value_heads": layout.kv_heads, "num_attention_heads": layout.kv_heads,
                "head_size": layout.head_dim, "hidden_size": layout.kv_heads * layout.head_dim,
                "session_options": {"log_id": "perfsite", "provider_options": [], "intra_op_num_threads": threads,
                                    "inter_op_num_threads": 1},
                "inputs": names,
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
            },
        },
        "search": {"do_sample": False, "num_beams": 1, "max_length": max_length, "past_present_share_buffer": False},
    }
    (folder / "genai_config.json").write_text(json.dumps(config, indent=1))
    return folder


def _external_files(model_path: Path) -> list[str]:
    model = onnx.load(str(model_path), load_external_data=False)
    found = {entry.value for tensor in model.graph.initializer for entry in tensor.external_data
             if entry.key == "location"}
    return sorted(found)


class GenaiLoop:
    """DecodeLoop's interface on onnxruntime-genai's generator: `generate()` is one timed request, a generator
    made for it (what an application does per request), the prompt appended (the prefill) and the first token
    chosen as its time to first token, then one `generate_next_token` per further token."""

    def __init__(self, model: Any, prompt: np.ndarray, new_tokens: int) -> None:
        self.og, self.model = genai_module(), model
        self.prompt = np.ascontiguousarray(prompt, dtype=np.int32)
        self.new_tokens = new_tokens

    def _generator(self) -> Any:
        batch, length = self.prompt.shape
        params = self.og.GeneratorParams(self.model)
        total = length + self.new_tokens
        params.set_search_options(max_length=total, min_length=total, batch_size=batch)
        return self.og.Generator(self.model, params)

    def generate(self) -> Generation:
        batch, length = self.prompt.shape
        steps = np.empty(max(self.new_tokens - 1, 0))
        start = time.perf_counter_ns()
        generator = self._generator()
        generator.append_tokens(self.prompt)
        generator.generate_next_token()
        ttft_ms = (time.perf_counter_ns() - start) / 1e6
        for step in range(1, self.new_tokens):
            began = time.perf_counter_ns()
            generator.generate_next_token()
            steps[step - 1] = (time.perf_counter_ns() - began) / 1e6
        tokens = np.stack([np.asarray(generator.get_sequence(b))[length:] for b in range(batch)]).astype(np.int64)
        return Generation(ttft_ms=ttft_ms, steps_ms=steps, tokens=tokens, prompt_tokens=length)

    def prefill_logits(self) -> np.ndarray:
        """The logits at the prompt's last position after the prefill ([batch, vocab])."""
        generator = self._generator()
        generator.append_tokens(self.prompt)
        return np.asarray(generator.get_output("logits"))[:, -1, :]


def open_model(model_path: Path, layout: DecoderLayout, threads: int, max_length: int, folder: Path) -> Any:
    return genai_module().Model(str(model_folder(model_path, layout, threads, max_length, folder)))
