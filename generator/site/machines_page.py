"""The machines page of an experiment measured on two environments or more (generator.analysis.machine_compare):
the best machine under the latency threshold in one sentence, the machines with their measured limits, the
latency/throughput chart coloured by machine, every shared configuration side by side with 95 % intervals, and
time per layer type on each machine.

The sentences are written here, escaped (machine labels and version names are untrusted text), so that a test
can read exactly what the page says.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from generator.analysis.machine_compare import BestMachine, MachineComparison, MachinePoint, compare_machines
from generator.numbers import num
from generator.site.charts import chart_block
from generator.site.charts_machines import machines_chart
from generator.site.compare_page import factor_decimals, times
from generator.site.escape import md_text
from generator.site.page_base import REPORTS_DIR, ExperimentView, Page, render

PAGE = "machines.md"  # beside the experiment's overview page, which links it


def has_machines_page(view: ExperimentView) -> bool:
    """Whether the experiment gets a machines page: trials on two environments or more. The overview page and
    the reports index link the page under the same condition (`e.environments | length > 1`)."""
    return len(view.environments) > 1


@dataclass(frozen=True)
class MachinesView:
    c: MachineComparison
    overall: str  # the one-sentence answer, escaped Markdown
    per_version: tuple[str, ...]  # one sentence per version, escaped Markdown
    same_hardware: tuple[str, ...]  # one sentence per group of machines that differ in software only
    chart: str


def machines_pages(env: jinja2.Environment, view: ExperimentView) -> list[Page]:
    """The machines page, or nothing for an experiment measured on one environment."""
    if not has_machines_page(view):
        return []
    spec = view.spec
    c = compare_machines(view.results, list(spec.versions), view.percentile, spec.latency_threshold_ms,
                         spec.first_values)
    if c is None:
        return []
    page_view = MachinesView(c, best_sentence(c, c.overall), tuple(best_sentence(c, b) for b in c.best),
                             same_hardware_sentences(c), chart_block("chart-machines", machines_chart(c)))
    return [render(env, "machines.md.j2", f"{REPORTS_DIR}/{view.slug}/{PAGE}", "Machines", True, e=view,
                   m=page_view)]


def best_sentence(c: MachineComparison, b: BestMachine) -> str:
    """Which machine is best under the threshold, in one sentence (escaped Markdown)."""
    subject = "Over all versions" if b.version is None else f"For **{md_text(b.version)}**"
    if b.best is None:
        lowest = f"the lowest {c.percentile} latency measured is {_at(c, b, b.lowest)}" if b.lowest else ""
        if c.threshold_ms is None:
            return (f"{subject}, the spec sets no `latency_threshold_ms`, so no machine is best under a "
                    f"threshold; {lowest or 'no trial succeeded'}.")
        return f"{subject}, no machine meets the latency threshold of {_limit(c)}{': ' + lowest if lowest else ''}."
    t = b.best.trial
    return (f"{subject}, the best machine under {_limit(c)} is {_machine(c, b, b.best)}: "
            f"{num(t.throughput_ips)} {c.unit} at {md_text(t.config_label)} ({num(t.latency_headline_ms)} ms)"
            f"{_runner_up(c, b)}.")


def _limit(c: MachineComparison) -> str:
    return f"{num(c.threshold_ms)} ms ({c.percentile})"


def _machine(c: MachineComparison, b: BestMachine, point: MachinePoint) -> str:
    """The machine in bold, and the version when the sentence is about every version."""
    version = f" with {md_text(point.trial.version)}" if b.version is None else ""
    return f"**{md_text(c.label(point.env_id))}**{version}"


def _at(c: MachineComparison, b: BestMachine, point: MachinePoint) -> str:
    t = point.trial
    return f"{num(t.latency_headline_ms)} ms, on {_machine(c, b, point)} at {md_text(t.config_label)}"


def _runner_up(c: MachineComparison, b: BestMachine) -> str:
    """The comparison with the runner-up machine: a factor with its interval, or "about as fast"."""
    if b.runner_up is None or b.ratio is None:
        return "; no other machine meets the threshold"
    other, r, t = md_text(c.label(b.runner_up.env_id)), b.ratio, b.runner_up.trial
    figures = f"{num(t.throughput_ips)} {c.unit} at {md_text(t.config_label)}"
    if r.low == r.high:  # a side with one measurement process (machine_compare._throughput_ratio)
        return f", {times(r.point)}× the throughput of the runner-up, {other} ({figures}; {r.note})"
    if not r.significant:
        return (f", about as fast as the runner-up, {other} ({figures}; the 95 % interval of the throughput "
                f"ratio, {times(r.low, 2)}–{times(r.high, 2)}, includes 1)")
    d = factor_decimals(r.point)
    return (f", {times(r.point, d)}× the throughput of the runner-up, {other} ({figures}; 95 % CI "
            f"{times(r.low, d)}–{times(r.high, d)})")


def same_hardware_sentences(c: MachineComparison) -> tuple[str, ...]:
    """One sentence per group of machines with identical hardware (escaped Markdown)."""
    groups: list[tuple[str, ...]] = []
    for m in c.machines:
        group = tuple(sorted((m.env_id, *m.same_hardware)))
        if m.same_hardware and group not in groups:
            groups.append(group)
    out = []
    for group in groups:
        members = [x for x in c.machines if x.env_id in group]
        names = " and ".join([", ".join(f"**{md_text(x.label)}**" for x in members[:-1]),
                              f"**{md_text(members[-1].label)}**"])
        fields = sorted({f for x in members for f in x.software_differs})
        out.append(f"{names} run on the same hardware (CPU, cores, instruction sets, memory) and differ in "
                   f"{md_text(', '.join(fields))} only: side by side, they show what that software change did.")
    return tuple(out)
