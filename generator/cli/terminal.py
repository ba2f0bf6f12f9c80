"""Terminal output of the CLI: the progress bar and the summaries. Only the CLI imports this."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from generator.errors import PerfsiteError
from generator.numbers import counted
from generator.paths import experiment_holding
from generator.plan import Trial
from generator.runner.orchestrate import RunSummary
from generator.terminal_text import safe

err = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)


class ProgressBar:
    """Progress over the trials with an ETA, drawn on stderr; messages (model building) go above it."""

    def __init__(self, experiment: str):
        self.experiment = experiment
        self.bar = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("{task.fields[last]}"), console=err, transient=not sys.stderr.isatty(),
        )
        self.task = None
        self.warned: set[str] = set()

    def __enter__(self) -> ProgressBar:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)

    def message(self, text: str) -> None:
        # A warning once: the two sides of a paired run meet the same unusable cache folder, for instance.
        if text.startswith("Warning:"):
            if text in self.warned:
                return
            self.warned.add(text)
        # Warnings name files and trials, whose names a user or a sync tool chose: no control character raw.
        # soft_wrap: rich would fold a long path at the console's width (80 columns in a CI log), with a line
        # break inside the name; the terminal wraps instead, and a copied path stays whole.
        self.bar.console.print(safe(text, lines=True), markup=False, soft_wrap=True)

    def start(self, total: int, estimate_s: float, upper_bound: bool = False) -> None:
        if upper_bound:
            self.message(f"{self.experiment}: up to {counted(total, 'trial')} to measure, about "
                         f"{_duration(estimate_s)} at most (each measuring node skips the trials it finds stored)")
        else:
            self.message(f"{self.experiment}: {counted(total, 'trial')} to measure, about {_duration(estimate_s)}")
        self.task = self.bar.add_task(self.experiment, total=total, last="")

    def trial_done(self, trial: Trial, status: str) -> None:
        mark = "" if status == "ok" else f" ({status})"
        self.bar.update(self.task, advance=1, last=f"{trial.label}{mark}")

    def converging(self, label: str, halfwidth: float | None, target: float, spent_s: float,
                   budget_s: float) -> None:
        width = f"± {halfwidth:.1%}" if halfwidth is not None else "no interval yet"
        if self.task is not None:
            self.bar.update(self.task, last=f"converging {label}: {width} → ± {target:.0%}, "
                                            f"{spent_s:.0f} of {budget_s:.0f} s")


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def print_dry_run(summary: RunSummary) -> None:
    table = Table(title=f"{summary.experiment}: {counted(len(summary.planned), 'trial')}", title_justify="left")
    for col in ("version", "configuration", "trial key", "state"):
        table.add_column(col)
    for p in summary.planned:
        # A run on a Ray cluster has no key before a node measured: the key holds the node's fingerprint.
        key = p.key or "set by the measuring node"
        table.add_row(p.trial.version, p.trial.config.label, key, "stored" if p.stored else "to measure")
    out.print(table)
    longest = summary.longest_s or 0.0
    # On a busy machine trials measure on until measure.budget_s: the minimum alone said 6 s of a 50 s run.
    upto = (f" (up to {_duration(longest)} if every trial needs its whole measure.budget_s)"
            if longest > 1.5 * summary.estimate_s else "")
    out.print(
        f"{len(summary.to_measure)} to measure, about {_duration(summary.estimate_s)}{upto}; "
        f"results in {summary.results_dir}"
    )


def print_run_summary(summary: RunSummary, interrupted_line: bool = True) -> None:
    """What a run measured, failed, left or stored; with `interrupted_line`, what an interruption means for
    running the command again (a paired run says its own, once: generator.cli.diff)."""
    stored = len(summary.planned) - len(summary.to_measure)
    parts = [f"{summary.ok_count} measured", f"{stored} already stored"]
    if summary.failed:
        parts.append(f"{len(summary.failed)} failed")
    if summary.skipped_locked:
        parts.append(f"{len(summary.skipped_locked)} left to another perfsite run in progress")
    out.print(f"{summary.experiment}: " + ", ".join(parts) + f". Results in {summary.results_dir}")
    for label, reason in summary.failed:  # the reason can quote a node name: untrusted text
        out.print(f"  failed: {safe(label)}: {safe(reason)}", markup=False)
    if summary.exhausted:
        out.print(f"  {len(summary.exhausted)} trial(s) ran out of measuring budget before their interval reached "
                  f"the target (measure.budget_s): {', '.join(summary.exhausted[:5])}"
                  f"{' …' if len(summary.exhausted) > 5 else ''}", markup=False)
    if summary.interrupted and interrupted_line:
        out.print("Interrupted: finished trials are kept; run the same command again to measure the rest.")


def check_output_files(outputs: dict[str, Path | None], inputs: dict[str, Path] | None = None,
                       stores: dict[str, Path] | None = None) -> None:
    """Before any work: no two output options may name one file (the last written silently replaced the first),
    no output may be a file the command reads (`perfsite count A.onnx B.onnx --json A.onnx` overwrote the
    baseline model with the verdict), and none may go inside a results store the command reads (`perfsite query
    SQL --output results/x/trials/K.parquet` replaced a trial with the answer). `outputs` maps an option
    (`--json`) to its file, `inputs` a role (`the baseline model`) to a file the command reads, `stores` a role
    (`the results store results`) to a local results folder it reads."""
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        key = os.path.realpath(path)
        if key in seen:
            raise PerfsiteError(f"{seen[key]} and {option} both name {path}: one would replace the other. Allowed: "
                                "a file of its own for each output option.")
        seen[key] = option
        _check_place(option, path)
        for role, read in (inputs or {}).items():
            if key == os.path.realpath(read):
                raise PerfsiteError(f"{option} {path} is {role}, which this command reads: writing there would "
                                    "replace it. Nothing was measured or written. Allowed: a file of its own for "
                                    f"{option} (created, or replaced when it is an earlier output).")
        for role, folder in (stores or {}).items():
            if Path(key).is_relative_to(os.path.realpath(folder)):
                raise PerfsiteError(f"{option} {path} is inside {role}, which this command reads: a file written "
                                    "there would replace or sit among the results perfsite stores. Nothing was "
                                    f"measured or written. Allowed: a file outside every results store for {option}.")
        experiment = experiment_holding(Path(key))
        if experiment is not None:
            raise PerfsiteError(f"{option} {path} is inside {experiment}, an experiment's results folder that "
                                "`perfsite run` writes: a file written there could replace a trial's. Nothing was "
                                f"measured or written. Allowed: a file outside every results store for {option}.")


def _check_place(option: str, path: Path) -> None:
    """An output file must be able to exist where it is named: not a folder, and not below a file (`--output
    site/x.csv` where `site` is a file said only "Cannot write site/x.csv: File exists", and `perfsite diff
    --measure` said so after measuring both checkouts)."""
    problem = _place_problem(path)
    if problem:
        raise PerfsiteError(f"{option} {path}: {problem}. Nothing was measured or written. Allowed: a path of a "
                            f"file for {option}, whose folder exists or can be created (it is then created).")


def _place_problem(path: Path) -> str | None:
    if path.is_dir():
        return f"it is a folder, and the output is a file; name a file in it (e.g. {path / 'answer.txt'})"
    for folder in path.absolute().parents:
        if folder.is_dir():
            return None
        if os.path.lexists(folder):
            what = "a broken link" if folder.is_symlink() else "a file"
            return f"{folder} is {what}, not a folder, so no file can be created inside it"
    return None


def write_output(path: Path, text: str) -> None:
    """Write a command's output file (summary, verdict, export), creating its folder; a user error if it cannot."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        reason = _place_problem(path) or e.strerror or str(e)
        raise PerfsiteError(f"Cannot write {path}: {reason}. Choose a writable path.") from e
