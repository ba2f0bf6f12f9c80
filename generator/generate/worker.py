"""One measuring process of `perfsite generate A B`: both decoders in one process, their requests alternating.

``python -m generator.generate.worker JOB.json OUT.json``. The job names the model files, their layouts (read
once by the parent, generator.decode.convention) and the generation (prompt and new tokens, batch, threads,
requests, warm-up); the answer holds, per model in job order, each timed request's TTFT and its decode steps and
the first request's tokens; or, when a model fails in its warm-up, the error and that model. Every round runs A
then B, so that each request follows the other model's (generator.runner.generative.timed_generation_group says
why: in A B, B A rounds a model's requests fell in two groups 3-6 % apart); the sessions are made in the job's
`load_order`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def measure(job: dict) -> dict:
    from generator.decode.convention import DecoderLayout
    from generator.decode.loop import DecodeLoop, shared_prompt
    from generator.machine.session import onnxruntime_reason, open_session

    layouts = [DecoderLayout(**fields) for fields in job["layouts"]]
    shared = shared_prompt(layouts, job["batch"], job["prompt_tokens"])  # token ids every model accepts
    # Sessions are made in the job's order (the comparison alternates it between processes): the one made first
    # ran 4-6 % slower in A/A comparisons of one file with its copy (2026-12-07).
    sessions = {k: open_session(job["models"][k], {"threads": job["threads"]})[0] for k in job["load_order"]}
    loops = [DecodeLoop(sessions[k], layout, shared, job["new_tokens"]) for k, layout in enumerate(layouts)]
    timed: list[list] = [[] for _ in loops]
    for k, loop in enumerate(loops):
        try:
            for _ in range(job["warmup"]):
                loop.generate()
        except Exception as e:  # onnxruntime's: said with the model it came from (generator.generate.compare)
            return {"error": onnxruntime_reason(e), "model": job["models"][k]}
    for _ in range(job["requests"]):
        for k in range(len(loops)):
            timed[k].append(loops[k].generate())
    return {"versions": [{"ttft_ms": [g.ttft_ms for g in gens], "steps_ms": [g.steps_ms.tolist() for g in gens],
                          "tokens": gens[0].tokens.tolist()} for gens in timed]}


def main() -> None:
    job_path, out_path = sys.argv[1:3]
    answer = measure(json.loads(Path(job_path).read_text()))
    Path(out_path).write_text(json.dumps(answer))


if __name__ == "__main__":
    main()
