"""`perfsite generate MODEL`: time a decoder's greedy generation on this machine, without a spec.

One process (this one) runs warm-up requests, then the timed ones; each request is the same deterministic
prompt. The figures are this process's: no interval across processes, which a spec's runs give.
"""

from __future__ import annotations

import contextlib
import json
import resource
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from generator.decode.convention import DecoderLayout, decoder_layout
from generator.errors import ModelError, PerfsiteError, RunError
from generator.generate.summary import GenerationSummary, figure, summarize
from generator.paths import data_file_problem


@dataclass(frozen=True)
class GenerateOptions:
    prompt_tokens: int = 128
    new_tokens: int = 32
    batch: int = 1
    threads: int = 1
    requests: int = 10
    warmup: int = 1

    @property
    def context(self) -> int:
        """The positions the cache holds at the last step: the prompt and every new token but the last."""
        return self.prompt_tokens + self.new_tokens - 1


def checked_layout(model: Path, options: GenerateOptions) -> DecoderLayout:
    """The model's layout once the file and the request are checked: one paragraph for each mistake, before
    anything runs."""
    problem = data_file_problem(model)
    if problem:
        raise ModelError(f"The model file {model} {problem}. Allowed: an ONNX decoder file.")
    if options.new_tokens < 1 or options.prompt_tokens < 1:
        raise RunError(f"--new-tokens {options.new_tokens} and --prompt-tokens {options.prompt_tokens}: each must be "
                       "at least 1 (a request is a prompt and at least its first new token).")
    layout = decoder_layout(model)
    longest = layout.longest_request()
    if longest is not None and options.prompt_tokens + options.new_tokens > longest:
        raise RunError(f"{model}: a prompt of {options.prompt_tokens} tokens and {options.new_tokens} new tokens "
                       f"reach position {options.context - 1}, past the {layout.max_positions} rows of the position "
                       f"table `position_ids` indexes. Allowed: --prompt-tokens + --new-tokens at most {longest}.")
    return layout


@contextlib.contextmanager
def run_errors_named(model: Path) -> Iterator[None]:
    """onnxruntime's failure while generating (a fixed batch of 1 given --batch 2, positions past a table the
    graph does not name) as one paragraph naming the model, not a traceback."""
    try:
        yield
    except PerfsiteError:
        raise
    except Exception as e:  # onnxruntime's own exception types
        from generator.machine.session import onnxruntime_reason

        raise generation_failed(model, onnxruntime_reason(e)) from e


@contextlib.contextmanager
def quiet_onnxruntime() -> Iterator[None]:
    """onnxruntime's logger held to fatal messages while sessions are made (a session keeps the severity it was
    made with): a kernel's failure while generating is raised, and said once, by run_errors_named."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    try:
        yield
    finally:
        ort.set_default_logger_severity(2)  # onnxruntime's default: warnings


def generation_failed(model: Path | str, reason: str, where: str = "") -> RunError:
    return RunError(f"{model}: onnxruntime failed while generating{where}: {reason}. Check --batch, "
                    "--prompt-tokens and --new-tokens against the sizes the model accepts.")


def generate(model: Path, options: GenerateOptions,
             progress: Callable[[str], None] | None = None) -> GenerationSummary:
    from generator.decode.loop import DecodeLoop, prompt_ids
    from generator.machine.session import open_session

    layout = checked_layout(model, options)
    with quiet_onnxruntime():  # its sessions then print no coloured line of a failure the paragraph below tells
        session, _ = open_session(model, {"threads": options.threads})
    loop = DecodeLoop(session, layout, prompt_ids(layout, options.batch, options.prompt_tokens),
                      options.new_tokens)
    say = progress or (lambda _text: None)
    say(f"Generating {options.new_tokens} tokens after a {options.prompt_tokens}-token prompt, batch "
        f"{options.batch}: {options.warmup} warm-up and {options.requests} timed requests")
    with run_errors_named(model):
        for _ in range(options.warmup):
            loop.generate()
        generations = [loop.generate() for _ in range(options.requests)]
    return summarize(generations, layout.kv_bytes(options.batch, options.context), peak_rss_mb())


def peak_rss_mb() -> float:
    """This process's peak resident memory: kilobytes on Linux, bytes on macOS."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def summary_text(model: Path, s: GenerationSummary, threads: int) -> str:
    def row(name: str, figures: dict, unit: str = "ms") -> str:
        return (f"  {name:<32} {figure(figures['p50']):>9} {figure(figures['p90']):>9} "
                f"{figure(figures['p99']):>9}  {unit}")

    lines = [f"{model.name}: {s.requests} requests of a {s.prompt_tokens}-token prompt and {s.new_tokens} new "
             f"tokens, batch {s.batch}, {threads} thread(s), greedy; one process",
             f"  {'':<32} {'p50':>9} {'p90':>9} {'p99':>9}",
             row("time to first token (TTFT)", s.ttft_ms),
             row("time per output token (TPOT)", s.tpot_ms),
             row("inter-token latency (ITL)", s.itl_ms),
             f"  end to end (p50)                 {figure(s.e2e_ms_p50):>9} ms",
             f"  prefill                          {figure(s.prefill_tokens_per_s):>9} tokens/s",
             f"  output                           {figure(s.output_tokens_per_s):>9} tokens/s",
             f"  KV cache at the longest context  {figure(s.kv_cache_mb):>9} MiB",
             f"  peak memory of this process      {figure(s.peak_rss_mb):>9} MiB"]
    if None in (s.ttft_ms["p99"], s.itl_ms["p99"]):
        lines.append("  — : too few samples for that percentile (p90 needs 10, p99 100).")
    return "\n".join(lines) + "\n"


def json_text(model: Path, options: GenerateOptions, s: GenerationSummary, layers: Sequence = ()) -> str:
    """The `--json` file's text (the CLI writes it); `layers`: `--layers`' phases (generator.generate.layers)."""
    record = {"format": "perfsite-generate/1", "model": str(model), "options": options.__dict__, **s.as_dict()}
    if layers:
        record["layers"] = [p.as_dict() for p in layers if p is not None]
    return json.dumps(record, indent=2) + "\n"
