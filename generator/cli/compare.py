"""`perfsite compare`: an ad-hoc comparison of two versions from stored results, as plain terminal text.

The words for ratios are the compare page's (generator.site.compare_page), so the terminal and the site never
disagree. Names from results (versions, op types, node names, advice) are untrusted: control characters are
replaced so that a node name cannot move the cursor or recolour the terminal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from generator.analysis.compare import compare_versions
from generator.analysis.compare_choice import OPTION_CONFIG
from generator.analysis.generative import generative_pair, generative_report
from generator.analysis.per_machine import MachineResults, per_environment
from generator.analysis.records_compare import Comparison, VersionTiming
from generator.errors import ResultsError, given_twice
from generator.numbers import num, pct
from generator.results.store import find_experiments, load_experiment
from generator.site.charts_compare import config_text
from generator.site.compare_page import (
    kernel_note,
    latency_words,
    precision_counts,
    ratio_cell,
    sweet_spot_version,
    throughput_words,
)
from generator.terminal_text import safe

TOP_KERNELS = 10  # kernel rows printed, most time first
_VALUE_INT = re.compile(r"[+-]?\d+")
_VALUE_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?")
_BOOLS = {"true": True, "on": True, "yes": True, "false": False, "off": False, "no": False}


def parse_config(text: str | None) -> dict[str, Any] | None:
    """`batch=1,threads=2,spinning=off` as a configuration (ints, floats and on/off typed); None when empty."""
    if not text or not text.strip():
        return None
    config: dict[str, Any] = {}
    for item in text.split(","):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key or not value:
            raise ResultsError(
                f"--config {text!r}: {item.strip()!r} is not KEY=VALUE. Give configuration axes and values "
                "separated by commas, e.g. --config batch=1,threads=2."
            )
        if config.get(key, _typed(value)) != _typed(value):
            raise ResultsError(given_twice("--config", key, config[key], _typed(value)))
        config[key] = _typed(value)
    return config


def _typed(value: str) -> Any:
    if _VALUE_INT.fullmatch(value):
        return int(value)
    if _VALUE_FLOAT.fullmatch(value):
        return float(value)
    return _BOOLS.get(value.lower(), value)


def experiment_dir(results_root: Path, experiment: str | None) -> Path:
    """The experiment folder to compare in: the one named, or the only one under results_root."""
    found = find_experiments(Path(results_root))
    names = ", ".join(p.name for p in found) or "none"
    if experiment is not None:
        match = [p for p in found if p.name == experiment]
        if not match:
            raise ResultsError(
                f"No experiment {experiment!r} under {results_root} (experiments there: {names}). Check "
                "--experiment against the spec's `name`, or point --results at another results root."
            )
        return match[0]
    if len(found) != 1:
        raise ResultsError(
            f"{results_root} holds {'no experiment' if not found else 'several experiments'} ({names}). "
            + ("Run `perfsite run SPEC` first." if not found else "Choose one with --experiment NAME.")
        )
    return found[0]


def compare_command(results_root: Path, a: str, b: str | None = None, config: str | None = None,
                    experiment: str | None = None, machine: str | None = None) -> str:
    """`perfsite compare`: compare version b (default: the best throughput under the latency threshold)
    against a in stored results, at `config` (`batch=1,threads=2`; default: A's sweet spot), as text. Results of
    several machines are compared machine by machine (generator.analysis.per_machine): each machine's answer,
    or the one `machine` names."""
    results = load_experiment(experiment_dir(results_root, experiment))
    every = per_environment(results)
    parts = _chosen(every, machine, results_root)
    if results.spec.generate is not None:
        return "\n".join(_generative_section(part, a, b, parse_config(config), len(every) > 1, results.name)
                         for part in parts)
    if len(parts) == 1 and machine is None:
        comparison = compare_versions(results, a, b, parse_config(config), config_where=OPTION_CONFIG)
        return format_comparison(comparison, results.name)
    sections, errors = [], []
    for part in parts:
        # Of the store's machines, not of those --machine chose ("of 1 machine" read as a store of one).
        where = f"On {safe(part.machine.label)} (environment {part.machine.env_id}), of {len(every)} machine"
        where += "s" if len(every) != 1 else ""
        try:
            comparison = compare_versions(part.results, a, b, parse_config(config), config_where=OPTION_CONFIG)
        except ResultsError as e:
            errors.append(e)
            sections.append(f"{where}: not compared: {safe(str(e))}\n")
            continue
        sections.append(f"{where}:\n{format_comparison(comparison, results.name)}")
    if len(errors) == len(parts):
        raise errors[0]
    return "\n".join(sections)


def _generative_section(part: MachineResults, a: str, b: str | None, config: dict[str, Any] | None,
                        several: bool, name: str) -> str:
    """A generative experiment's pair in the terminal: its prefill and decode judged apart at each configuration
    both versions ran (`config`: those matching it), as its page judges them (generator.analysis.generative)."""
    r = part.results
    report = generative_report(r.spec, r.trials, r.processes, r.decode_steps, r.environments, r.agreement)
    versions = list(dict.fromkeys(row.version for row in report.rows))
    for side, version in (("--a", a), ("--b", b)):
        if version is not None and version not in versions:
            raise ResultsError(f"{side} {version!r}: no ok trial of that version in experiment {name!r} (versions "
                               f"with ok trials: {', '.join(versions) or 'none'}).")
    others = [v for v in versions if v != a and (b is None or v == b)]
    if not others:
        raise ResultsError(f"No other version than {a!r} to compare with in experiment {name!r}; give --b.")
    wanted = tuple((config or {}).items())
    lines = [f"On {safe(part.machine.label)} (environment {part.machine.env_id}):"] if several else []
    for other in others:
        pair = generative_pair(report, r.processes, r.spec.regression, a, other, wanted)
        lines.append(f"{safe(name)}: {safe(other)} (B) against {safe(a)} (A), prefill and decode apart; B / A of "
                     "each process's median, paired by round, 95 % interval")
        rows = [[safe(c.config_label), "prefill (TTFT)" if v.phase == "ttft" else "decode (TPOT)", num(v.a_ms),
                 num(v.b_ms), f"{v.ratio:.3f}", _interval_text(v.low, v.high), f"{v.verdict}: {safe(v.reason)}"]
                for c in pair.comparisons for v in c.phases]
        if not rows:
            lines.append("  no configuration both versions ran" + (" matches --config" if wanted else ""))
            continue
        lines += ["  " + line for line in table(["configuration", "phase", "A (ms)", "B (ms)", "B/A", "interval",
                                                 "verdict"], rows, [False, False, True, True, True, False, False])]
    for spot in report.sweet_spots:
        where = f"{safe(spot.row.version)} at {safe(spot.row.config_label)}" if spot.row else "none"
        lines.append(f"Sweet spot for prompts of {spot.prompt_tokens} tokens and {spot.new_tokens} new: {where} "
                     f"({safe(spot.reason)})")
    return "\n".join(lines) + "\n"


def _interval_text(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return "—"
    return "unbounded" if math.isinf(high) or low <= 0 else f"{low:.3f}–{high:.3f}"


def _chosen(parts: list[MachineResults], machine: str | None, results_root: Path) -> list[MachineResults]:
    """The machines to compare on: every one, or the one `--machine` names (its label, or its env_id or the
    first digits of it)."""
    if machine is None:
        return parts
    wanted = " ".join(machine.split()).casefold()
    found = [p for p in parts if p.machine.label.casefold() == wanted] or \
        [p for p in parts if len(wanted) >= 4 and p.machine.env_id.startswith(wanted)]
    if len(found) != 1:
        names = "; ".join(f"{p.machine.label} ({p.machine.env_id})" for p in parts)
        raise ResultsError(
            f"--machine {machine!r}: {'no machine' if not found else 'more than one machine'} of the results in "
            f"{results_root} is named so (machines: {names}). Give a machine's name as listed, or the first "
            "digits (4 or more) of its environment id; without --machine every machine's answer is printed."
        )
    return found


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """Rows as aligned text columns (`right`: right-align a column, for figures)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(row) for row in rows)]


def format_comparison(c: Comparison, experiment: str | None = None) -> str:
    """A comparison as plain text for the terminal (what the compare page says, without the charts)."""
    lines = _header(c, experiment) + [""] + _verdict(c) + [""] + _sweet_spot(c)
    for section in (_layer_types(c), _kernels(c), _advice(c)):
        if section:
            lines += [""] + section
    return "\n".join(lines) + "\n"


def _header(c: Comparison, experiment: str | None) -> list[str]:
    where = f"{safe(experiment)}: " if experiment else ""
    lines = [f"{where}A = {safe(c.a)}, B = {safe(c.b)} (ratios are B / A)"]
    if c.b_was_default:
        lines.append(f"B was chosen: {safe(c.b_reason or 'the best throughput under the latency threshold')}")
    if c.config_label:
        detail = f" ({safe(config_text(c.config))})" if c.config else ""
        reason = f", {safe(c.config_reason)}" if c.config_reason else ""
        lines.append(f"Compared at {safe(c.config_label)}{detail}{reason}")
        if c.other_configs:
            lines.append(f"Other configurations both ran: {safe(', '.join(c.other_configs))}")
    else:
        lines.append("A and B have no successful configuration in common: no layer-level comparison.")
    quick = ([f"note: measured in quick mode (a preview: warm-up and measurement shrunk), so the figures are "
              f"rough: {safe(', '.join(c.quick))}; measure without --quick before drawing conclusions"]
             if c.quick else [])
    return lines + quick + [f"note: {safe(n)}" for n in c.notes]


def _timing(t: VersionTiming | None, latency: bool) -> str:
    if t is None:
        return "—"
    if latency:
        return f"{num(t.latency_ms)} ms [{num(t.latency_ci_low)}–{num(t.latency_ci_high)}]"
    return f"{num(t.throughput_ips)} items/s [{num(t.throughput_ci_low)}–{num(t.throughput_ci_high)}]"


def _verdict(c: Comparison) -> list[str]:
    ta, tb = c.timings or (None, None)
    rows = [
        [f"Latency {c.timing_percentile}", _timing(ta, True), _timing(tb, True), safe(latency_words(c.latency_ratio))],
        ["Throughput", _timing(ta, False), _timing(tb, False), safe(throughput_words(c.throughput_ratio))],
    ]
    lines = table(["", f"A {safe(c.a)}", f"B {safe(c.b)}", "verdict (95 % CI)"], rows, [False] * 4)
    return lines + ([VERDICT_NOTE] if c.timings else []) + [f"Outputs: {_agreement(c)}"]


# What the figures beside a verdict are, as the compare page says under its inference-time table: a hostile
# reader found 1,398 vs 4,126 items/s (2.95x) beside a verdict of 2.7x.
VERDICT_NOTE = ("Verdicts are measured process by process (the ratio of the geometric means of each process's "
                "figure); the latency columns pool every request, the throughput columns are the median over "
                "processes, so their ratio can differ where the processes disagree.")


def _agreement(c: Comparison) -> str:
    if not c.agreement:
        return "no agreement recorded between these versions"
    whose = "the spec's tolerance" if c.tolerance_set else "perfsite's default tolerance (cosine >= 0.99)"
    bad = [r for r in c.agreement if r.within_tolerance is False]
    if bad:
        return (f"DIFFER beyond {whose}: {safe(', '.join(r.output for r in bad))}; the speed of a broken model "
                "is not a result")
    worst = max((r.max_abs for r in c.agreement if r.max_abs is not None), default=None)
    checked = any(r.within_tolerance for r in c.agreement)
    verdict = f"within {whose}" if checked else "compared (no figure the tolerance needs was recorded)"
    return f"{verdict}; largest absolute difference {num(worst)}"


def _sweet_spot(c: Comparison) -> list[str]:
    spot = c.overall_sweet_spot
    if c.threshold_ms is None:
        return ["No latency threshold in the spec (latency_threshold_ms): no sweet spot."]
    if spot is None or spot.trial_key is None:
        reason = f" ({safe(spot.reason)})" if spot and spot.reason else ""
        return [f"No configuration of any version meets the {num(c.threshold_ms)} ms threshold{reason}."]
    return [f"Sweet spot under {num(c.threshold_ms)} ms: {safe(sweet_spot_version(c))} at {safe(spot.config_label)}, "
            f"{num(spot.throughput_ips)} items/s at {num(spot.latency_ms)} ms"]


def _layer_types(c: Comparison) -> list[str]:
    if not c.layer_types:
        return []
    rows = []
    for r in sorted(c.layer_types, key=lambda r: (-max(r.time_a_us, r.time_b_us), r.op_type)):
        ratio, interval = ratio_cell(r.ratio)
        rows.append([safe(r.op_type), num(r.time_a_us), num(r.time_b_us), num(r.delta_us), ratio, interval,
                     pct(r.share_b), safe(precision_counts(r.precision_counts_b))])
    headers = ["layer type", "A µs", "B µs", "delta µs", "B/A", "95 % CI", "share B", "B nodes by precision"]
    return [f"Layer types at {safe(c.config_label)} (µs per inference, profiled pass)",
            *table(headers, rows, [False, True, True, True, True, False, True, False])]


def _kernels(c: Comparison) -> list[str]:
    lines = []
    if c.coverage:
        lines.append(f"Matched time: A {pct(c.coverage.share_a)}, B {pct(c.coverage.share_b)} "
                     "(in layers matched across versions or in the quantization-overhead bucket)")
    if c.overhead:
        o = c.overhead
        ops = ", ".join(f"{safe(op)} {num(us)} µs" for op, us in sorted(o.by_op.items(), key=lambda i: -i[1]))
        lines.append(f"Quantization overhead in B: {num(o.time_b_us)} µs, {pct(o.share_b)} of B's kernel time"
                     + (f" ({ops})" if ops else ""))
    kernels = sorted(c.kernels, key=lambda k: (-max(k.time_a_us, k.time_b_us), k.layer))
    if kernels:
        rows = [[safe(k.layer)[:60], safe(k.op_type), num(k.time_a_us), num(k.time_b_us), num(k.delta_us),
                 ratio_cell(k.ratio)[0], safe(kernel_note(k))]
                for k in kernels[:TOP_KERNELS]]
        lines += [f"Layers, most time first ({min(TOP_KERNELS, len(kernels))} of {len(kernels)})",
                  *table(["layer", "op type", "A µs", "B µs", "delta µs", "B/A", "note"], rows,
                         [False, False, True, True, True, True, False])]
    return lines


def _advice(c: Comparison) -> list[str]:
    if not c.advice:
        return []
    return ["Advice:"] + [f"  - {'warning: ' if a.severity == 'warning' else ''}{safe(a.text)}" for a in c.advice]
