"""The diff as a Markdown summary for a pull-request comment, and as a JSON verdict file.

The summary is written to read well as plain text too (a CI log, an e-mail): the verdict is the first line,
the table has one figure per row, changes are signed percentages with their 95 % interval. Every name that
comes from a model file or a spec (node names, environment fields) is put in a code span, where neither
Markdown nor HTML is interpreted, so a hostile node name stays text in the comment.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from generator.analysis.records_compare import RatioCI
from generator.diff.layers import LayerChange
from generator.diff.noise import PAIRED_ADVICE
from generator.diff.phases import PHASE_NAMES
from generator.diff.verdict import FAILED, FASTER, NOT_COMPARABLE, SLOWER, DiffResult, TrialDiff
from generator.numbers import json_safe, num

MAX_TABLE_ROWS = 30  # configurations in the table; a PR comment has a size limit and readers a patience one
MAX_LISTED = 5  # regressions / improvements detailed, and layers named per configuration
CHANGES_PAGE = "reports/_changes/"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # a figure inside a note


def markdown_summary(result: DiffResult, site_url: str | None = None) -> str:
    """The whole summary: verdict line, sides, table, top regressions and improvements, notes, links."""
    parts = [verdict_line(result), _sides(result), _failures(result), _env_block(result), _table(result),
             _details("Top regressions", result.regressions), _details("Top improvements", result.improvements),
             _one_side(result), _notes(result), _links(result, site_url)]
    return "\n\n".join(p for p in parts if p).rstrip() + "\n"


def verdict_line(result: DiffResult) -> str:
    """The first line: the verdict and why, in one sentence."""
    n = len(result.trials)
    counted = f"of {n} configuration{'s' if n != 1 else ''} measured in both"
    if result.trials and all(t.same_measurement for t in result.trials) and result.verdict != FAILED:
        return _same_measurement_line(result)
    if result.verdict == FAILED:
        k = len(result.failed_in_candidate)
        return (f"**perfsite diff: failed**: {k} configuration{'s' if k != 1 else ''} the baseline measured "
                f"failed in the candidate (below){_and_also(result)}.")
    if result.verdict == NOT_COMPARABLE:
        return f"**perfsite diff: not comparable**: {_why_not_comparable(result)}"
    if result.verdict == SLOWER:
        k = len(result.regressions)
        return f"**perfsite diff: slower**: {k} {counted} got slower beyond the thresholds ({_limits(result)})."
    if result.verdict == FASTER:
        k = len(result.improvements)
        return f"**perfsite diff: faster**: {k} {counted} got faster, none slower ({_limits(result)})."
    return f"**perfsite diff: no significant change** in any {counted} ({_limits(result)})."


def _same_measurement_line(result: DiffResult) -> str:
    """Both sides are one stored measurement (`perfsite diff results results`): that is the news, before any
    figure, whatever the verdict (each trial against itself is "no change" or, noisy, "not comparable")."""
    line = (f"**perfsite diff: {result.verdict}**: the baseline and the candidate are the same stored measurement "
            "(one trial, run and finish time, for every configuration): nothing was measured for the candidate, "
            "so this diff says nothing about it. Measure the candidate first (`perfsite run`), or compare with "
            "`perfsite diff --measure`.")
    if result.verdict == NOT_COMPARABLE:
        line += f" Each trial against itself: {_why_not_comparable(result)}"
    return line


def _and_also(result: DiffResult) -> str:
    """What the configurations measured on both sides say besides, for the line of a failed diff."""
    regressions = len(result.regressions)
    if regressions:
        return f"; {regressions} of {len(result.trials)} measured in both got slower"
    return f"; of {len(result.trials)} measured in both, none got slower" if result.trials else ""


def _failures(result: DiffResult) -> str:
    """Each configuration that failed on one side and was measured on the other, with the reason the failing
    side recorded (from onnxruntime or the model: a code span)."""
    lines = []
    for title, failed in (("Failed in the candidate (measured in the baseline)", result.failed_in_candidate),
                          ("Failed in the baseline, measured in the candidate", result.failed_in_baseline)):
        if failed:
            lines += [f"{title}:", ""]
            lines += [f"- {cell(f.name)}: {code(_shortened(f.error))}" for f in failed[:MAX_TABLE_ROWS]]
            if len(failed) > MAX_TABLE_ROWS:
                lines.append(f"- and {len(failed) - MAX_TABLE_ROWS} more (in the JSON verdict file)")
            lines.append("")
    return "\n".join(lines).rstrip()


def _shortened(error: str, most: int = 300) -> str:
    return error if len(error) <= most else error[: most - 1] + "…"


def _why_not_comparable(result: DiffResult) -> str:
    if result.env_differences and not result.allow_env_mismatch:
        return ("the baseline and the candidate were measured on different environments (below). Measure both "
                "on the same machine, one after the other (docs/ci.md), or pass --allow-env-mismatch to "
                "compare them anyway.")
    if not result.trials:
        return ("no (experiment, version, configuration) was measured in both, so there is nothing to "
                "compare. Check that both sides ran the same spec.")
    k = sum(t.verdict == NOT_COMPARABLE for t in result.trials)
    return (f"{k} of {len(result.trials)} configurations could not be judged: their 95 % interval cannot "
            "decide (the estimate lies beyond a threshold while the interval still holds no change), or too few "
            f"measurement processes kept clean requests; see the notes. None got slower. {_advice(result)}.")


def _advice(result: DiffResult) -> str:
    if all(t.paired for t in result.trials):
        return PAIRED_ADVICE[0].upper() + PAIRED_ADVICE[1:]
    return "Measure paired (`perfsite diff --measure`) or with a larger measure.budget_s"


def _limits(result: DiffResult) -> str:
    pairs = sorted({(t.thresholds.latency_ratio, t.thresholds.throughput_ratio) for t in result.trials})
    if len(pairs) != 1:
        return "thresholds from each experiment's spec"
    lat, thr = pairs[0]
    return f"latency ratio above {lat:g} or throughput ratio below {thr:g}, with 95% confidence"


def _sides(result: DiffResult) -> str:
    return f"Baseline: {code(result.baseline)} · Candidate: {code(result.candidate)}"


def _env_block(result: DiffResult) -> str:
    if not result.env_differences:
        return ""
    head = ("Compared anyway (--allow-env-mismatch), but the environments differ:" if result.allow_env_mismatch
            else "The environments differ:")
    rows = [f"- {d.field}: {code(d.baseline)} → {code(d.candidate)}" for d in result.env_differences]
    return "\n".join([head, "", *rows])


def _ordered(result: DiffResult) -> list[TrialDiff]:
    rank = {SLOWER: 0, NOT_COMPARABLE: 1, FASTER: 2}
    regressions = {id(t): i for i, t in enumerate(result.regressions + result.improvements)}
    return sorted(result.trials, key=lambda t: (rank.get(t.verdict, 3), regressions.get(id(t), 0), t.name))


def _table(result: DiffResult) -> str:
    if not result.trials:
        return ""
    rows = ["| Configuration | Figure | Baseline | Candidate | Change (95% interval) | Verdict |",
            "|---|---|--:|--:|---|---|"]
    shown = _ordered(result)[:MAX_TABLE_ROWS]
    for t in shown:
        rows.append(f"| {cell(t.name)} | latency {t.percentile} (ms) | {num(t.latency_baseline_ms)} | "
                    f"{num(t.latency_candidate_ms)} | {change_text(t.latency_ratio)} | {t.verdict} |")
        unit = "output tokens/s" if t.phases else "items/s"
        rows.append(f"| | throughput ({unit}) | {num(t.throughput_baseline_ips)} | "
                    f"{num(t.throughput_candidate_ips)} | {change_text(t.throughput_ratio)} | |")
        rows += [f"| | {PHASE_NAMES[p.phase]}, median (ms) | {num(p.baseline_ms)} | {num(p.candidate_ms)} | "
                 f"{change_text(p.ratio)} | {p.verdict} (threshold {p.threshold:g}) |" for p in t.phases]
    hidden = len(result.trials) - len(shown)
    if hidden:
        rows += ["", f"{hidden} more configuration{'s' if hidden != 1 else ''} with no significant change "
                     "are in the JSON verdict file."]
    apart = [t.name for t in shown if _columns_disagree(t)]
    if apart:
        rows += ["", "The change is measured process by process, as the verdict judges it: the ratio of the "
                     "geometric means of each measurement process's figure (its latency percentile over its clean "
                     "requests, its clean throughput, its median TTFT and TPOT). The latency columns pool every "
                     "clean request of a trial; the throughput, TTFT and TPOT columns are the median of its "
                     "processes' figures. "
                     "The two disagree where a trial's processes disagree, as for "
                     f"{', '.join(cell(n) for n in apart[:MAX_LISTED])}{' …' if len(apart) > MAX_LISTED else ''}."]
    return "\n".join(rows)


def _columns_disagree(t: TrialDiff, tolerance: float = 0.05) -> bool:
    """The Change column and the ratio of the two figure columns differ by more than `tolerance` (log scale),
    or point opposite ways: a noisy trial's pooled figure and its processes' figures tell different stories."""
    pairs = [(t.latency_baseline_ms, t.latency_candidate_ms, t.latency_ratio),
             *((p.baseline_ms, p.candidate_ms, p.ratio) for p in t.phases)]
    if t.throughput_ratio is not None:
        pairs.append((t.throughput_baseline_ips, t.throughput_candidate_ips, t.throughput_ratio))
    for base, cand, ratio in pairs:
        if not (base and cand and base > 0 and cand > 0 and ratio.point > 0 and math.isfinite(ratio.point)):
            continue
        columns = math.log(cand / base)
        change = math.log(ratio.point)
        if abs(columns - change) > tolerance or (columns * change < 0 and abs(columns - change) > 0.01):
            return True
    return False


# An interval's end past a hundredfold either way is written as such: a layer whose profiled time spread
# hundreds of times its mean got an interval up to e^700 (analysis.stats.MAX_LOG_SPREAD), printed as a
# 300-digit percentage.
WIDE_END = 100.0


def change_text(ratio: RatioCI | None) -> str:
    """`+92.4% (+89.7% to +127%)`: the change and its 95 % interval, `—` when unknown."""
    if ratio is None or not math.isfinite(ratio.point):
        return "—"
    low = "-99% or lower" if ratio.low <= 1 / WIDE_END else signed_pct(ratio.low)
    high = f"×{WIDE_END:g} or higher" if ratio.high >= WIDE_END else signed_pct(ratio.high)
    return f"{signed_pct(ratio.point)} ({low} to {high})"


def signed_pct(ratio: float) -> str:
    """A ratio as a signed change in percent, three significant digits: 1.924 -> `+92.4%`."""
    change = (ratio - 1.0) * 100.0
    if not math.isfinite(change):
        return "—"
    text = num(abs(change))
    return f"{'-' if change < 0 and text != '0' else '+'}{text}%"


def _details(title: str, trials: tuple[TrialDiff, ...]) -> str:
    if not trials:
        return ""
    lines = [f"### {title}", ""]
    for i, t in enumerate(trials[:MAX_LISTED], start=1):
        lines.append(f"{i}. {cell(t.name)}: latency {t.percentile} {signed_pct(t.latency_ratio.point)}, "
                     f"throughput {signed_pct(t.throughput_ratio.point) if t.throughput_ratio else '—'}.")
        lines += [f"   - {line}" for line in layer_lines(t)]
    if len(trials) > MAX_LISTED:
        lines.append(f"{len(trials) - MAX_LISTED} more in the table above.")
    return "\n".join(lines)


def layer_lines(t: TrialDiff) -> list[str]:
    """What changed at layer level in one configuration, one line per kind of change."""
    layers = t.layers
    if layers.note:
        return [layers.note]
    out = []
    for label, changes in (("added", layers.added), ("removed", layers.removed),
                           ("slower", layers.regressions), ("faster", layers.improvements)):
        if changes:
            named = ", ".join(_layer_text(c) for c in changes[:MAX_LISTED])
            more = f" and {len(changes) - MAX_LISTED} more" if len(changes) > MAX_LISTED else ""
            out.append(f"{label}: {named}{more}")
    return out or ["no layer changed significantly"]


def _layer_text(c: LayerChange) -> str:
    if c.status == "added":
        return f"{code(c.layer)} ({num(c.candidate_us)} µs)"
    if c.status == "removed":
        return f"{code(c.layer)} ({num(c.baseline_us)} µs)"
    ratio = signed_pct(c.ratio.point) if c.ratio else "—"
    return f"{code(c.layer)} {num(c.baseline_us)} → {num(c.candidate_us)} µs ({ratio})"


def _one_side(result: DiffResult) -> str:
    lines = []
    for label, names in (("Only in the baseline", result.only_baseline),
                         ("Only in the candidate", result.only_candidate)):
        if names:
            shown = ", ".join(cell(n) for n in names[:MAX_TABLE_ROWS])
            more = f" and {len(names) - MAX_TABLE_ROWS} more" if len(names) > MAX_TABLE_ROWS else ""
            lines.append(f"{label} (not compared): {shown}{more}.")
    return "\n".join(lines)


def grouped_notes(trials: Sequence[TrialDiff], name: Callable[[str], str] = str) -> list[str]:
    """Per-configuration notes, those that say the same thing gathered into one line: identical notes once with
    the configurations they concern, notes that differ only in their figures (`noisy (spread 12 %)`, `… 35 %`)
    once with each configuration's figures. A changes page once ended with ~70 near-identical lines. `name`
    shows a configuration's name (`cell` for Markdown; the site's template escapes whole lines)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for t in trials:
        for note in t.notes:
            groups.setdefault(_NUMBER.sub("N", note), []).append((name(t.name), note))
    lines = []
    for pattern, members in groups.items():
        if len(members) == 1:
            lines.append(f"{members[0][0]}: {members[0][1]}")
        elif len({note for _, note in members}) == 1:
            lines.append(f"{members[0][1]}: {len(members)} configurations ({', '.join(n for n, _ in members)})")
        else:
            figures = ", ".join(f"{name} ({'/'.join(_NUMBER.findall(note))})" for name, note in members)
            lines.append(f"{pattern} — {len(members)} configurations, N: {figures}")
    return lines


def _notes(result: DiffResult) -> str:
    per_trial = [f"- {line}." for line in grouped_notes(_ordered(result), cell)]
    general = [f"- {note}" for note in result.notes]
    lines = general + per_trial[:MAX_TABLE_ROWS]
    if not lines:
        return ""
    return "\n".join(["Notes:", "", *lines])


URL_SAFE = ":/?#@!$&*+,;=%~-._"


def _links(result: DiffResult, site_url: str | None) -> str:
    if not site_url:
        return ""
    # The URL is often put together in CI from a branch name, which anyone opening a pull request chooses:
    # `(`, `)`, `<`, `"`, spaces and brackets are percent-encoded so that it cannot end the link or open a tag.
    base = urllib.parse.quote(site_url.rstrip("/"), safe=URL_SAFE)
    experiments = sorted({t.experiment for t in result.trials})
    # An experiment's name is its results folder's, which a pull request names too: text and address escaped.
    reports = " · ".join(f"[{cell(e)}]({base}/reports/{urllib.parse.quote(e, safe='')}/)" for e in experiments)
    return f"Preview site: [changes]({base}/{CHANGES_PAGE})" + (f" · reports: {reports}" if reports else "")


def code(text: str) -> str:
    """Untrusted text as an inline code span: no Markdown or HTML inside is interpreted. Backticks inside are
    replaced (a span cannot hold its own delimiter reliably) and `|` escaped so it cannot split a table cell."""
    clean = " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")
    return f"`{clean}`" if clean else "``"


# Markdown that would make a label a link, an image, emphasis or code: a version name comes from a results file
# (a pull request's, for `diff git:REF`), and `[click](https://…)` there was a live link in the PR comment. An
# underscore inside a word (`int8_static`) is no emphasis, and `(…)` or `!` no link without `[…]`: they stay.
_MARKDOWN_SYNTAX = re.compile(r"[\\`*\[\]~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def cell(text: str) -> str:
    """Text made of perfsite's own labels (experiment, version, configuration), for a table cell or a line:
    slugs and generated labels, which read best as plain words (`cnn · int8-static · b1 t1 c1`); still, as they
    come from results files, no `|` may split the cell, no tag open and no link, image or emphasis form."""
    text = " ".join(str(text).split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SYNTAX.sub(lambda m: "\\" + m[0], text).replace("|", "\\|")


def verdict_json(result: DiffResult, exit_code: int) -> dict[str, Any]:
    """The verdict file: the overall verdict and exit status, then every record of the diff (NaN as null)."""
    data = asdict(result)
    data["exit_code"] = exit_code
    data["regressions"] = [t.name for t in result.regressions]
    data["improvements"] = [t.name for t in result.improvements]
    return json_safe(data)
