"""`perfsite generate A B`: two decoders' prefill and decode judged apart, with intervals across processes.

A quantized version can make prefill slower and decode faster (4-bit weights on a small decoder did): one
tokens/s ratio hides that. Each of `processes` processes holds both models and alternates their requests
(generator.generate.worker), which of the two it loads first alternating too; each gives, per model, its median
TTFT and its median TPOT; the verdict for each phase is the paired interval of the per-process ratios B / A
(generator.results.intervals.paired, the interval the paired diff uses, without its guards for noisy processes):
slower or faster when the 95 % interval excludes 1 and the ratio is past the threshold, no change when the
interval lies within the threshold band, unsettled otherwise, with the reason.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from generator import processes
from generator.analysis.generative import PHASES, PhaseVerdict, phase_verdict
from generator.errors import ModelError, RunError
from generator.generate.oneshot import GenerateOptions, checked_layout, generation_failed

ADVICE = "run more --processes or --requests"  # what an unsettled phase asks of `perfsite generate A B`


@dataclass(frozen=True)
class GenerationComparison:
    a: str
    b: str
    processes: int
    requests: int
    threshold: float
    same_tokens: bool  # the first request's greedy tokens, A against B
    phases: tuple[PhaseVerdict, ...]

    def as_dict(self) -> dict:
        return asdict(self)


def compare_generation(a: Path, b: Path, options: GenerateOptions, processes_n: int, threshold: float,
                       progress: Callable[[str], None] | None = None) -> GenerationComparison:
    # Checked once here (one paragraph, not one per child), and handed to the children, which then load each
    # model once, into its session.
    layouts = [asdict(checked_layout(model, options)) for model in (a, b)]
    if processes_n < 2:
        raise RunError(f"--processes {processes_n}: a comparison needs at least 2 processes, so that its interval "
                       "holds the process-to-process variation; allowed: 2 or more.")
    say = progress or (lambda _text: None)
    answers = []
    with tempfile.TemporaryDirectory(prefix="perfsite-generate-") as tmp:
        for i in range(processes_n):
            say(f"process {i + 1}/{processes_n}: {options.requests} requests of each model, alternating")
            job = {"models": [str(a), str(b)], "layouts": layouts, "load_order": [i % 2, 1 - i % 2],
                   **asdict(options)}
            (Path(tmp) / f"job{i}.json").write_text(json.dumps(job))
            answers.append(_one_process(Path(tmp), i))
    per_process = {phase: ([], []) for phase in PHASES}
    for answer in answers:
        for side, version in enumerate(answer["versions"]):
            per_process["ttft"][side].append(float(np.median(version["ttft_ms"])))
            steps = [np.mean(s) for s in version["steps_ms"] if s]
            per_process["tpot"][side].append(float(np.median(steps)) if steps else math.nan)
    same = answers[0]["versions"][0]["tokens"] == answers[0]["versions"][1]["tokens"]
    # One new token is a prefill alone: no decode step to judge.
    judged = [phase for phase in PHASES if phase != "tpot" or options.new_tokens > 1]
    phases = tuple(phase_verdict(phase, *per_process[phase], threshold, advice=ADVICE) for phase in judged)
    return GenerationComparison(a=str(a), b=str(b), processes=processes_n, requests=options.requests,
                                threshold=threshold, same_tokens=same, phases=phases)


def _one_process(tmp: Path, index: int) -> dict:
    out = tmp / f"out{index}.json"
    command = [sys.executable, "-m", "generator.generate.worker", str(tmp / f"job{index}.json"), str(out)]
    done = processes.run(command, timeout=processes.MAX_PROCESS_SECONDS, env=processes.measuring_env())
    answer = json.loads(out.read_text()) if out.is_file() else {}
    if "error" in answer:  # the worker's own account: the model and onnxruntime's reason
        raise generation_failed(answer["model"], answer["error"], f" in measuring process {index + 1}")
    if done.returncode != 0 or "versions" not in answer:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["(no message)"])[-1]
        raise ModelError(f"Measuring process {index + 1} of `perfsite generate` failed (exit status "
                         f"{done.returncode}): {last}")
    return answer


def comparison_text(c: GenerationComparison) -> str:
    lines = [f"{Path(c.a).name} (A) against {Path(c.b).name} (B): {c.processes} processes of {c.requests} "
             f"request{'s' if c.requests != 1 else ''} of each, alternating; B / A with its 95 % interval across "
             "processes"]
    for p in c.phases:
        lines.append(f"  {PHASES[p.phase]:<31} A {p.a_ms:.3g} ms, B {p.b_ms:.3g} ms: B/A {p.ratio:.3g} "
                     f"[{p.low:.3g}, {p.high:.3g}] {p.verdict} ({p.reason})")
    if not c.same_tokens:
        lines.append("  The two generated different tokens from the same prompt (the first request's): expected of "
                     "a quantized version of the same model, and of two different models; the timing compares the "
                     "same number of tokens.")
    return "\n".join(lines) + "\n"
