"""The count mode's summary: Markdown (terminal, pull-request comment, ``$GITHUB_STEP_SUMMARY``) and JSON.

Pure functions of the records; the CLI writes the files.
"""

from __future__ import annotations

from typing import Any

from generator.counting.count import CountResult
from generator.counting.verdict import CountVerdict
from generator.diff.report import code
from generator.numbers import counted
from generator.site.escape import md_text
from generator.terminal_text import safe


def count_markdown(result: CountResult, verdict: CountVerdict) -> str:
    """A heading with the verdict, one table row per version (its model file and inputs in code spans: inert in
    Markdown, readable in a terminal), and how the counts were taken."""
    versions = (verdict.baseline, verdict.candidate)
    rows = [f"| {md_text(safe(v.name))} | {code(safe(v.model_path.name))} | {code(safe(v.inputs or 'unknown'))} | "
            f"{v.instructions:,.0f} | {v.spread_pct:.3f} % |" for v in versions]
    differ = ([] if versions[0].inputs == versions[1].inputs else
              ["", "The two models were fed different inputs (above): the ratio compares the work of each on its "
                   "own inputs, not the same work done two ways."])
    return "\n".join([
        f"## perfsite count: {verdict.verdict}",
        "",
        f"Candidate / baseline: **{verdict.ratio:.4f}** ({verdict.reason}).",
        "",
        "| version | model | inputs | instructions per inference (median) | spread |",
        "|---|---|---|---:|---:|",
        *rows,
        *differ,
        "",
        f"{counted(result.iterations, 'counted inference')} per version after "
        f"{counted(result.warmup, 'warm-up run')}, in one valgrind {result.valgrind or '(version unknown)'} "
        f"process (callgrind), onnxruntime {result.onnxruntime}, {counted(result.threads, 'intra-op thread')}; "
        f"every count includes ~{result.marker_instructions:,.0f} instructions of perfsite's marker and Python "
        f"call. Counted in {result.seconds:.0f} s. Counts are not time: see "
        "perfsite's docs/count-mode.md.",
        "",
    ])


def count_json(result: CountResult, verdict: CountVerdict, exit_code: int) -> dict[str, Any]:
    """The verdict and every count, for CI scripts and dashboards."""
    return {
        "verdict": verdict.verdict,
        "reason": verdict.reason,
        "ratio": verdict.ratio,
        "threshold": verdict.threshold,
        "exit_code": exit_code,
        "versions": [{"role": role, "name": v.name, "model": str(v.model_path), "inputs": v.inputs,
                      "instructions_per_inference": v.instructions, "spread_pct": v.spread_pct,
                      "counts": list(v.counts)}
                     for role, v in (("baseline", verdict.baseline), ("candidate", verdict.candidate))],
        "iterations": result.iterations,
        "warmup": result.warmup,
        "marker_instructions": result.marker_instructions,
        "threads": result.threads,
        "valgrind": result.valgrind,
        "onnxruntime": result.onnxruntime,
        "seconds": result.seconds,
    }
