"""The report pages' jargon, explained where it appears: a hover text (an HTML <abbr>) on every occurrence, and
the glossary page (docs/glossary.md, kept equal to GLOSSARY by tests/test_glossary.py).

Each generated page gets Markdown abbreviation definitions (`*[cv]: ...`, the `abbr` extension) for the terms
it uses, and one for each configuration label it shows (`b8 t1 c2`: batch 8, 1 intra-op thread, 2 requests in
flight), appended after its text, so that a reader who meets a term anywhere on the page can hover it.
"""

from __future__ import annotations

import re

# Term -> what it means, in one plain sentence (no Markdown: it becomes an attribute).
GLOSSARY: dict[str, str] = {
    "cv": "coefficient of variation: the standard deviation of the request latencies divided by their mean",
    "p50": "the median request latency: half the requests were faster",
    "p90": "the 90th percentile of request latency: 90 % of the requests were at least this fast",
    "p95": "the 95th percentile of request latency: 95 % of the requests were at least this fast",
    "p99": "the 99th percentile, reported from 460 samples on; below that p95 stands in for a trial's latency "
           "headline, and a generative page shows a dash",
    "sweet spot": "the configuration with the highest throughput within the latency threshold (a generative "
                  "experiment's: the most output tokens/s whose TTFT and TPOT are within the limits, per workload)",
    "TTFT": "time to first token: a generative request's prefill pass over the prompt and the greedy choice",
    "TPOT": "time per output token: the mean of a generative request's decode steps after its first token",
    "ITL": "inter-token latency: the time of each decode step, one token each",
    "spinning": "onnxruntime's intra-op threads busy-wait for work instead of sleeping (lower latency, more CPU)",
    "intra-op": "threads that split the work of one operator (onnxruntime's intra_op_num_threads)",
    "inter-op": "threads that run independent operators of one request at the same time",
    "preempted": "a request during which the scheduler gave this process's CPU to another process for a while",
    "clean requests": "requests no other process took the CPU from; the headline figures come from them",
    "uncertain": "a trial whose interval is too wide to settle any finding it takes part in",
    "settled": "a finding whose interval separates it from the alternatives, after the correction for every "
               "finding of the report",
    "unsettled": "a finding the data cannot decide: shown with the reason, never as a fact",
    "profiled pass": "inferences run under onnxruntime's profiler, which times every node and slows it down",
    "model_run": "onnxruntime's own timing of one whole session.run in the profiled pass",
    "MOP": "millions of operations per inference: floating-point operations plus integer operations",
    "GOP/s": "billions of operations per second achieved: operations divided by the node's measured time",
    "GFLOP/s": "billions of floating-point operations per second",
    "KiB moved": "the weights and activations a node reads and writes, in KiB, counted from tensor sizes",
    "roofline": "the fastest a node could run: its operations per byte times the measured bandwidth, capped at "
                "the measured peak",
    "of roofline": "the achieved rate as a share of the roofline's attainable rate at the node's operations "
                   "per byte",
    "Of roofline": "the achieved rate as a share of the roofline's attainable rate at the node's operations "
                   "per byte",
    "fingerprint": "a hash of a machine's hardware and software (CPU, cores, instruction sets, memory, OS, Python "
                   "and library versions); results of different fingerprints are never pooled",
    "nchwc": "onnxruntime's blocked memory layout for convolutions; nodes whose names end in _nchwc were "
             "rewritten for it, and the Original nodes column names the model's layers they compute",
    "QDQ": "QuantizeLinear and DequantizeLinear pairs around an operator: a static INT8 model's format, which "
           "onnxruntime fuses into integer kernels where it has them",
    "mixed": "a runtime precision: the kernel's inputs and outputs are of more than one element type (INT8 in, "
             "FP32 out, as a dynamically quantized MatMul)",
    "out of budget": "a trial whose measuring stopped at measure.budget_s before its interval reached "
                     "measure.target: its figures hold with the wider interval shown",
    "oversubscribed": "a trial asking for more threads (intra-op threads times requests in flight) than the "
                      "machine has cores: requests wait for each other's threads, so their latencies vary by design",
}

# The term, not preceded or followed by a word character or "-". The check before it is a lookbehind *after*
# the literal term (the character before it and the term itself), so that the pattern starts with the literal:
# re then skips to each occurrence of it, where a leading lookbehind was tried at every position of a page.
_TERMS = {term: re.compile(rf"{re.escape(term)}(?<![\w-]{re.escape(term)})(?![\w-])") for term in GLOSSARY}
# A configuration label, by the same trick: the "b" first and the check that no word character precedes it
# after it (a leading \b made re try the whole pattern at every position of a page: 0.1 CPU-s an experiment).
_CONFIG_LABEL = re.compile(r"b(?<!\wb)(\d+) t(\d+) c(\d+)\b")


def config_label_text(batch: str, threads: str, concurrency: str) -> str:
    return (f"batch {batch}, {threads} intra-op thread{'s' if threads != '1' else ''}, {concurrency} request"
            f"{'s' if concurrency != '1' else ''} in flight at once")


def abbreviations(markdown: str) -> str:
    """The abbreviation definitions for the terms and configuration labels this page's Markdown uses, as
    lines to append to it (empty when it uses none)."""
    # The plain substring test first: a report page is up to megabytes of Markdown, and the word-bounded
    # search scans all of it for a term the page never uses.
    lines = [f"*[{term}]: {text}" for term, text in GLOSSARY.items()
             if term in markdown and _TERMS[term].search(markdown)]
    labels = dict.fromkeys(m.group(0) for m in _CONFIG_LABEL.finditer(markdown))
    lines += [f"*[{label}]: {config_label_text(*_CONFIG_LABEL.fullmatch(label).groups())}" for label in labels]
    return "\n".join(lines)
