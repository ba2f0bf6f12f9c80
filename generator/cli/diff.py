"""`perfsite diff BASELINE CANDIDATE`: compare two sets of results and answer with a verdict and an exit code.

Exit codes CI can tell apart: 0 no regression (or not asked to fail), 1 user error (PerfsiteError, from the
CLI), 2 a significant regression beyond the thresholds, or a configuration of the baseline that failed in the
candidate, with `--fail-on regression`, 3 not comparable
(different environments without --allow-env-mismatch, nothing measured in both, or too noisy to tell).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from generator.cli.terminal import write_output
from generator.diff.export import EXPORT_FORMATS
from generator.diff.report import markdown_summary, verdict_json
from generator.diff.sources import load_side, open_source
from generator.diff.verdict import FAILED, NOT_COMPARABLE, SLOWER, DiffResult, diff_experiments
from generator.errors import PerfsiteError
from generator.terminal_text import safe

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 2, 3
FAIL_ON = ("regression", "never")


def diff_command(
    baseline: str,
    candidate: str,
    results: Path | None = None,
    fail_on: str | None = None,
    latency_ratio: float | None = None,
    throughput_ratio: float | None = None,
    allow_env_mismatch: bool = False,
    markdown_out: Path | None = None,
    json_out: Path | None = None,
    site_url: str | None = None,
    exports: dict[str, Path] | None = None,
) -> tuple[str, int]:
    """Diff BASELINE against CANDIDATE (each a results folder or `git:REF`); returns the Markdown summary and
    the exit code. `results` is the results folder that `git:REF` reads (default <project root>/results).
    `exports` maps a dashboard format of generator.diff.export.EXPORT_FORMATS to the file it is written to."""
    _check_options(fail_on, latency_ratio, throughput_ratio)
    _check_site_url(site_url)
    root = results if results is not None else _default_results()
    with open_source(baseline, root) as base_src, open_source(candidate, root) as cand_src:
        base, cand = load_side(base_src), load_side(cand_src)
        result = diff_experiments(base, cand, (base_src.short, cand_src.short),
                                  (latency_ratio, throughput_ratio), allow_env_mismatch)
    if not result.trials and not result.failed_in_candidate:
        raise PerfsiteError(_nothing_shared(result))
    code = exit_code(result.verdict, fail_on)
    if result.verdict == FAILED and code == EXIT_OK and result.trials:
        # Not failed on (no --fail-on regression): what the compared configurations say decides, as without
        # the failure; machines that differ or an interval that cannot decide still exit 3.
        code = exit_code(result.verdict_of_the_compared, fail_on)
    # Layer names in the summary come from models: no escape sequence reaches a terminal or a PR comment.
    text = safe(markdown_summary(result, site_url), lines=True)
    if markdown_out is not None:
        write_output(markdown_out, text)
    if json_out is not None:
        write_output(json_out, json.dumps(verdict_json(result, code), indent=2, ensure_ascii=False) + "\n")
    for export_format, path in (exports or {}).items():
        write_output(path, json.dumps(EXPORT_FORMATS[export_format](result), indent=2, ensure_ascii=False) + "\n")
    return text, code


def check_side_options(baseline: str, candidate: str, measure: list[str] | None, given: dict[str, bool]) -> None:
    """Options that would do nothing for these sides are refused, not ignored: `--store` and `--quick` act only
    with --measure, `--results` only where a side is git:REF (`diff a b --quick` compared stored results as
    they were measured, while its user believed a quick measurement had been made)."""
    git_side = any(side.startswith("git:") for side in (baseline, candidate))
    why = {
        "--store": None if measure else "it names where --measure stores what it measures, and there is no --measure",
        "--quick": None if measure else "it shrinks the measurement --measure makes, and there is no --measure",
        "--results": ("with --measure the two checkouts are measured into --store" if measure else
                      None if git_side else f"it names the folder a git:REF side reads, and {baseline} and "
                      f"{candidate} are results folders themselves"),
    }
    idle = [(option, reason) for option, reason in why.items() if given[option] and reason]
    if idle:
        option, reason = idle[0]
        raise PerfsiteError(f"{option} would do nothing here: {reason}. Allowed: --store and --quick with "
                            "--measure, --results with a git:REF side; else leave the option out.")


def _nothing_shared(result: DiffResult) -> str:
    """Exit 3 means an interval that cannot decide (or machines that differ); no shared configuration at all
    is a question perfsite cannot answer, asked of the wrong folders: a user error."""
    def listed(labels: tuple[str, ...]) -> str:
        return ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "") or "nothing"

    return (f"{result.baseline} and {result.candidate} share no version and configuration, so there is nothing "
            f"to compare. Only in the baseline: {listed(result.only_baseline)}. Only in the candidate: "
            f"{listed(result.only_candidate)}. Allowed: two results folders (or git:REF) that measured at least "
            "one version of one experiment in the same configuration; check the folders, or the version names "
            "if one side renamed them.")


def measure_sides(baseline: str, candidate: str, patterns: list[str], store: Path | None,
                  quick: bool = False, latency_ratio: float | None = None,
                  site_url: str | None = None) -> tuple[str, str]:
    """`--measure`: measure the two checkouts paired (generator.runner.paired) and return the two results
    folders to diff. STORE defaults to <CANDIDATE>/.perfsite/paired."""
    from generator.cli.terminal import ProgressBar, print_run_summary
    from generator.runner.paired import measure_paired

    _check_options(None, latency_ratio, None)  # before measuring, not after
    _check_site_url(site_url)
    _check_checkouts(baseline, candidate)
    folder = store if store is not None else Path(candidate) / ".perfsite" / "paired"
    bars: list[ProgressBar] = []

    def progress(name: str) -> ProgressBar:
        bars.append(ProgressBar(name).__enter__())
        return bars[-1]

    try:
        run = measure_paired(Path(baseline), Path(candidate), patterns, folder, quick, progress, latency_ratio)
    finally:
        for bar in bars:
            bar.__exit__(None, None, None)
    for summary in (*(s for pair in run.summaries for s in pair), *run.one_sided):
        print_run_summary(summary, interrupted_line=False)
    if run.interrupted:
        # Pairs are measured again whole (both members in the same rounds): nothing is resumed.
        print("Interrupted: no diff was made. Running the same command again measures every pair again.",
              file=sys.stderr)
        raise KeyboardInterrupt
    return str(run.baseline_results), str(run.candidate_results)


def measured_files(baseline: str, candidate: str, patterns: list[str]) -> dict[str, Path]:
    """With --measure, the files the two checkouts' specs are read from and name, by role (for
    generator.cli.terminal.check_output_files): `--json experiments/s.yaml` wrote the verdict over a spec it
    had just measured."""
    from generator.runner.paired import files_read

    _check_checkouts(baseline, candidate)
    return files_read(Path(baseline), Path(candidate), patterns)


def _check_checkouts(baseline: str, candidate: str) -> None:
    for side in (baseline, candidate):
        if side.startswith("git:"):
            raise PerfsiteError(f"With --measure, BASELINE and CANDIDATE are checkouts (folders), not {side}: "
                                "add one with `git worktree add --detach DIR REF` and pass DIR.")


def exit_code(verdict: str, fail_on: str | None) -> int:
    """A configuration that failed in the candidate is a regression (exit 2 with --fail-on regression): no
    figure of it could be slower, and a pull request that breaks a configuration must not pass."""
    if verdict == NOT_COMPARABLE:
        return EXIT_NOT_COMPARABLE
    if verdict in (SLOWER, FAILED) and fail_on == "regression":
        return EXIT_REGRESSION
    return EXIT_OK


def _check_options(fail_on: str | None, latency: float | None, throughput: float | None) -> None:
    if fail_on is not None and fail_on not in FAIL_ON:
        raise PerfsiteError(f"--fail-on {fail_on!r} is not known; use --fail-on regression (exit 2 on a "
                            "significant regression) or --fail-on never.")
    if latency is not None and not 1.0 <= latency < math.inf:  # inf: no change could ever be a regression
        raise PerfsiteError(f"--latency-ratio {latency} must be a finite number, 1 or more: the candidate's "
                            "latency over the baseline's above which a change is a regression (e.g. 1.05).")
    if throughput is not None and not 0.0 < throughput <= 1.0:
        raise PerfsiteError(f"--throughput-ratio {throughput} must be above 0 and at most 1: the candidate's "
                            "throughput over the baseline's below which a change is a regression (e.g. 0.95).")


def _check_site_url(site_url: str | None) -> None:
    """The summary links the preview site from a pull-request comment: only a web address may be linked."""
    if site_url is not None and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", site_url, re.IGNORECASE):
        raise PerfsiteError(f"--site-url {site_url!r} is not a web address. Allowed: an http:// or https:// URL "
                            "of the published preview site, e.g. --site-url https://org.github.io/repo/, whose "
                            "changes page and reports the summary links.")


def _default_results() -> Path:
    from generator.paths import project_root

    return project_root(Path.cwd()) / "results"
