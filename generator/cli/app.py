"""The `perfsite` command: parse options, call one library function, format its result.

This is the only module that prints or exits. A `PerfsiteError` from anywhere becomes one paragraph on stderr
and exit status 1; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import gc
import json
import math
import os
import re
import shlex
import signal
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

import generator
from generator.bounds import MAX_ITERATIONS, MAX_THREADS, MAX_WARMUP
from generator.cli.empty_values import PerfsiteGroup, click_exceptions
from generator.cli.pipes import (
    OutputClosed,
    echo_long,
    exit_output_closed,
    raise_output_closed_from_rich,
    standard_output_closed,
)
from generator.errors import PerfsiteError, QueryMissingError, RunError, RuntimeMissingError
from generator.numbers import counted
from generator.paths import expand_home
from generator.processes import MAX_PROCESS_SECONDS
from generator.terminal_text import safe


class _BuiltOnce(typer.Typer):
    """A Typer app that builds its click command once per process: typer builds it anew on every call, evaluating
    every command's annotations (60 ms a call on 2 cores, 2026-11-27), which a process that runs main() many times
    paid each time (the tests' forked commands inherit it built). Built at the first call or `command_line`, when
    every command is registered. typer's own call also installs its exception hook, which with
    pretty_exceptions_enable=False hands every exception to the standard one: left out."""

    @functools.cached_property
    def command_line(self) -> Any:
        return typer.main.get_command(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.command_line(*args, **kwargs)


app = _BuiltOnce(
    name="perfsite",
    help="Inference-performance reports for ONNX models: YAML specs in git, Parquet results, a static site.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # A reader that stops reading ends perfsite quietly with 141 (generator.cli.pipes); an empty value is refused
    # by its option's name (generator.cli.empty_values).
    cls=PerfsiteGroup,
)

EXIT_INTERRUPTED = 130
# `build --trend N`: more commits than any repository has, and still an int git accepts.
MAX_TREND = 1_000_000


def _version(value: bool) -> None:
    if value:
        typer.echo(f"perfsite {generator.__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """perfsite: is the INT8 version really faster, where does the time go, and did this change make it slower?"""


def _store_option(value: str | list[str] | None) -> str | list[str] | None:
    """--results as typed: a store that cannot outlive the process (memory://) is refused before a spec is read
    (the store opens later, at the spec's folder). An empty word is refused by generator.cli.empty_values."""
    from generator.results.location import refuse_in_process

    for word in value if isinstance(value, list) else [value]:
        if word is not None and word.strip():
            refuse_in_process(word)
    return value


def _one_store(value: list[str] | None) -> str | None:
    """--results of a command that writes or reads one store, given as a list so that a repeat is seen: a
    second --results replaced the first without a word (`query … --results r1 --results r2` read r2 only)."""
    if not value:
        return None
    if len(value) > 1:
        from generator.results.location import shown

        raise typer.BadParameter(f"given {len(value)} times ({', '.join(shown(v) for v in value)}); this command "
                                 "takes one store (`perfsite build` is the one that reads several)",
                                 param_hint="'--results'")
    return value[0]


def _default_results(start: Path) -> Path:
    from generator.paths import project_root

    return project_root(start) / "results"


@app.command()
def run(
    # Text, not Path: typer makes "" the Path ".", and `perfsite run "$SPEC"` with the variable unset would
    # measure every spec of the current folder (generator.spec.spec_files refuses an empty word).
    specs: Annotated[list[str], typer.Argument(help="Experiment spec files (YAML), or folders of them.",
                                                show_default=False)],
    results: Annotated[
        list[str] | None, typer.Option(metavar="DIR_OR_URL", callback=_store_option,
                                       help="Results root, a folder or a URL such as s3://bucket/results; each "
                                            "experiment goes to ROOT/<spec name>/ (default: <project>/results).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Measure again trials that are already stored.")] = False,
    only: Annotated[
        list[str] | None, typer.Option(help="Run only matching trials, e.g. version=fp32,batch=1 (same key twice: "
                                            "either); repeated, its items are joined. With several specs, the "
                                            "trials of every spec that match.")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="List the trials and an estimated duration; measure nothing.")] = False,
    quick: Annotated[
        bool, typer.Option(help="Shrink measurement for previews and tests (also PERFSITE_QUICK=1); pages mark it.")
    ] = False,
    allow_outside: Annotated[
        bool, typer.Option(help="Allow spec paths that leave the spec's project root.")
    ] = False,
    ray: Annotated[
        str | None, typer.Option(
            "--ray", metavar="[ADDRESS]",
            help="Measure on the nodes of a Ray cluster (the ray extra; docs/ray.md). ADDRESS is "
            "optional: alone, the cluster this machine is a node of ($RAY_ADDRESS); or HOST:PORT, ray://HOST:PORT.",
            show_default=False)
    ] = None,
    target: Annotated[
        str | None, typer.Option(
            help="With --ray: measure on the nodes offering resource target:NAME only (one of the spec's targets).",
            show_default=False)
    ] = None,
) -> None:
    """Measure the trials of each spec (versions × configurations) and store them as Parquet results."""
    from generator.results.location import join
    from generator.runner.ray_address import check_ray_address, check_target_name
    from generator.spec import load_spec, spec_files

    results = _one_store(results)
    check_ray_address(ray)  # the words first: before a spec is read or a model built
    check_target_name(target)
    # A folder stands for its specs, as for `perfsite validate`: every spec is read before anything is measured,
    # and before the runner's imports (pandas, onnxruntime: 0.6 s), so that a mistake is told at once.
    only_text = _only_option(only)
    loaded_specs = _distinct_specs([load_spec(spec_path, allow_outside=allow_outside)
                                    for spec_path in spec_files(specs)], results)
    from generator.cli.terminal import print_dry_run, print_run_summary
    from generator.runner.orchestrate import RunOptions, run_experiment

    if ray is not None:
        from generator.runner.cluster import run_on_ray

        measure = run_on_ray
    else:
        measure = run_experiment

    interrupted = False
    runs = [(loaded, RunOptions(results_dir=join(results or _default_results(loaded.path.parent), loaded.spec.name),
                                force=force, only=part, dry_run=dry_run, quick=quick, ray=ray, target=target))
            for loaded, part in _only_per_spec(loaded_specs, only_text)]
    # Every later spec is planned before the first one measures (models checked, versions built into their
    # cache, inputs made at every configuration): its mistakes are reported now, not after minutes of measuring.
    for loaded, options in runs[1:] if not dry_run else ():
        _measured(measure, loaded, dataclasses.replace(options, dry_run=True))
    summaries = []
    for loaded, options in runs:
        summary = _measured(measure, loaded, options)
        summaries.append(summary)
        (print_dry_run if dry_run else print_run_summary)(summary)
        interrupted = summary.interrupted
        if interrupted:
            break
    if interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    _refuse_nothing_measured([summary for summary in summaries if not dry_run])


def _measured(measure, loaded, options):
    """One spec's run (or plan) under its progress bar. A Ctrl-C while measuring ends the sweep, whose summary
    says so; one outside it (building the model versions, checking the inputs, the machine's limits after)
    left only the progress bar's empty line: it is said here."""
    from generator.cli.terminal import ProgressBar

    with ProgressBar(loaded.spec.name) as bar:
        try:
            return measure(loaded, options, bar)
        except KeyboardInterrupt:
            pass
    typer.echo(_paragraph(
        f"Interrupted outside measuring, in {loaded.spec.name} ({loaded.path}): while its model versions were built "
        "or its inputs checked, or the machine's limits checked after it. Every finished trial is kept and the "
        "versions already built stay in the model cache; run the same command again to finish."), err=True)
    raise typer.Exit(EXIT_INTERRUPTED)


def _refuse_nothing_measured(summaries: list) -> None:
    """Exit 1 when trials were to be measured and every one failed: a CI job whose model crashes at every
    configuration passed (exit 0, "0 measured, 1 failed"). Some failures among measured trials are results, as
    the sweep goes on past them; the failures are stored either way, and the site shows them."""
    tried = [s for s in summaries if s.failed or s.measured]
    if not tried or any(s.ok_count > 0 for s in tried):
        return
    label, reason = tried[0].failed[0]
    count = sum(len(s.failed) for s in tried)
    which = "the one trial to measure failed" if count == 1 else f"all {count} trials to measure failed"
    stored = ("The failures are stored and the site shows them" if any(len(s.failed) > s.unstored_failures
                                                                     for s in tried) else "Nothing was stored")
    raise RunError(f"No trial could be measured: {which} (the first, {label}: {' '.join(reason.split())[:300]}). "
                   f"{stored}; fix the model or the spec's inputs (a generative spec's `generate:` lengths) and "
                   "run again.")


def _only_option(only: list[str] | None) -> str | None:
    """--only given once or more (joined), refused when empty: `--only "$FILTER"` with the variable unset ran
    every trial, and a second --only replaced the first without a word."""
    if only is None:
        return None
    if any(not part.strip() for part in only):
        raise RunError("--only is empty (''): it selects nothing to narrow. Allowed: KEY=VALUE items separated by "
                       "commas, e.g. --only version=fp32,batch=1; leave --only out to run every trial.")
    return ",".join(part.strip() for part in only)


def _only_per_spec(loaded_specs: list, only: str | None) -> list[tuple[Any, str | None]]:
    """Each spec with the part of --only that applies to it; with several specs, those none of whose trials
    match are left out, said on stderr (generator.plan.only_for_each)."""
    if only is None or len(loaded_specs) < 2:
        return [(loaded, only) for loaded in loaded_specs]
    from generator.plan import only_for_each, plan_trials, spec_axes

    parts = only_for_each([(str(s.path), plan_trials(s.spec), list(spec_axes(s.spec)))
                           for s in loaded_specs], only)
    for loaded, part in zip(loaded_specs, parts, strict=True):
        if part is None:
            typer.echo(f"Skipped {loaded.path}: none of its trials matches --only {only!r}.", err=True)
    return [(loaded, part) for loaded, part in zip(loaded_specs, parts, strict=True) if part is not None]


def _distinct_specs(loaded_specs: list, results: str | None) -> list:
    """The specs of one `perfsite run`, each once. Two that share a name (and a results root) would write into
    one folder: refused unless they are one spec, given twice (`perfsite run s.yaml experiments/`, a link, a
    copy), which is measured once: with --force it was measured twice over, and without, planned twice."""
    from generator.results.location import is_url, join
    from generator.spec.loader import same_name_at_once

    seen: dict[tuple[str, object], object] = {}
    distinct = []
    for loaded in loaded_specs:
        root = results if results and is_url(results) else Path(results or _default_results(loaded.path.parent))
        root = root if isinstance(root, str) else root.absolute()
        first = seen.setdefault((loaded.spec.name, root), loaded)
        if first is loaded:
            distinct.append(loaded)
        elif not first.same_experiment(loaded):
            from generator.runner.orchestrate import same_name_message  # pandas: only on this error's path

            raise RunError(same_name_message(loaded.path, first.path, loaded.spec.name,
                                             join(root, loaded.spec.name)))
        elif not first.same_file(loaded):
            raise RunError(same_name_at_once(first, loaded))
        else:
            again = "" if loaded.path == first.path else f" (the same spec as {first.path})"
            typer.echo(safe(f"{loaded.path}{again} is given twice: its trials are measured once."), err=True)
    return distinct


@app.command()
def validate(
    specs: Annotated[list[str], typer.Argument(help="Spec files, or folders of them.", show_default=False)],
    allow_outside: Annotated[bool, typer.Option(help="Allow spec paths that leave the project root.")] = False,
) -> None:
    """Check specs: YAML, keys, types, values, version references and sweep placeholders."""
    from generator.plan import plan_trials
    from generator.spec import validate_specs

    for loaded in validate_specs(specs, allow_outside=allow_outside):
        trials, versions = counted(len(plan_trials(loaded.spec)), "trial"), counted(len(loaded.spec.models), "version")
        typer.echo(safe(f"ok  {loaded.path}: experiment {loaded.spec.name!r}, {versions}, {trials}"))


@app.command()
def schema() -> None:
    """Print the JSON Schema of experiment specs (for editors: yaml-language-server, VS Code)."""
    from generator.spec import spec_json_schema

    typer.echo(json.dumps(spec_json_schema(), indent=2, sort_keys=True))


@app.command()
def build(
    results: Annotated[list[str] | None, typer.Option(
        metavar="DIR_OR_URL", callback=_store_option,
        help="Results store to render: a folder or a URL such as s3://bucket/results (default: <project>/results). "
             "Repeat it to render several stores into one site; a trial stored in two counts once.")] = None,
    site: Annotated[Path | None, typer.Option(help="Where to write the site (default: <project>/site).")] = None,
    baseline: Annotated[
        str | None, typer.Option(help="Add a changes page against this baseline: a results folder or git:REF.")
    ] = None,
    trend: Annotated[
        int | None, typer.Option(min=1, max=MAX_TREND,
                                 help="Add a trend page over the last N commits that changed the results.")
    ] = None,
) -> None:
    """Render every experiment under the results directory into a static site (never runs a model)."""
    from generator.paths import project_root
    from generator.site import build_site

    if baseline is not None and not baseline.startswith("git:"):  # before anything is read or rendered
        from generator.results.location import refuse_url

        refuse_url(baseline, "`perfsite build --baseline`")
    root = project_root(Path.cwd())
    out = build_site(results or [root / "results"], site or root / "site", root, progress=_echo_err,
                     baseline=baseline, trend=trend)
    typer.echo(safe(f"Site built in {out}. Open {out / 'index.html'} or run "
                    f"`perfsite serve --site {shlex.quote(str(out))}`."))


@app.command()
def serve(
    site: Annotated[Path | None, typer.Option(help="Built site folder (default: <project>/site).")] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8000,
) -> None:
    """Preview a built site on http://127.0.0.1:PORT/ (Ctrl-C stops)."""
    from generator.paths import project_root
    from generator.site.serve import serve_forever

    folder = site or project_root(Path.cwd()) / "site"
    serve_forever(folder, port, lambda url: typer.echo(f"Serving {folder} on {url} (Ctrl-C stops)"))


@app.command("example-models")
def example_models(
    out: Annotated[Path | None, typer.Argument(help="Folder for the example models (default: "
                                                    "<project>/experiments/models).", show_default=False)] = None,
) -> None:
    """Build the example models (a ResNet-style CNN and a transformer encoder) from code, no downloads."""
    from generator.models import build_example_models
    from generator.paths import project_root, replaced_by_builds

    # Where the example specs look for them, from any folder of the project (as build's site and run's results):
    # a relative default made `cd experiments && perfsite example-models` write experiments/experiments/models.
    out = out if out is not None else project_root(Path.cwd()) / "experiments" / "models"

    if out.exists() and not out.is_dir():
        raise PerfsiteError(f"{out} is a file; the example models go into a folder. Allowed: a folder, new or "
                            "existing (default: experiments/models).")
    if (replaced := replaced_by_builds(out)) is not None:
        raise PerfsiteError(f"{out} is {replaced}: the models would be lost. Allowed: a folder outside every site "
                            "folder and outside .perfsite/build and .perfsite/cache (default: experiments/models).")
    for path in build_example_models(out):
        typer.echo(f"wrote {path}")


@app.command()
def compare(
    a: Annotated[str, typer.Option("--a", help="Version A (the reference), as named in the spec.", show_default=False)],
    b: Annotated[
        str | None, typer.Option("--b", help="Version B (default: the best throughput under the latency threshold).")
    ] = None,
    # Text, not Path: a Path folds `s3://` into `s3:/`, and the message quoted a URL's credentials as a folder.
    results: Annotated[str | None, typer.Option(help="Results root, a local folder (default: <project>/results).")
                       ] = None,
    config: Annotated[
        list[str] | None, typer.Option(metavar="KEY=VALUE,...", help="Layer sections at e.g. batch=1,threads=2 "
                                       "(default: A's sweet spot); repeated, its items are joined.")
    ] = None,
    experiment: Annotated[
        str | None, typer.Option(help="Experiment name under the results root (needed when it holds several).")
    ] = None,
    machine: Annotated[
        str | None, typer.Option(help="Results of several machines: compare on this one only (its name as printed, "
                                 "or its environment id's first digits); by default each machine's answer.")
    ] = None,
) -> None:
    """Compare two versions from stored results in the terminal: ratios with 95% intervals, layer types, kernels."""
    from generator.cli.compare import compare_command
    from generator.results.location import refuse_url

    if results is not None:
        refuse_url(results, "`perfsite compare --results`")
    root = Path(results) if results is not None else _default_results(Path.cwd())
    # A list, so that a repeat is seen: `--config batch=1 --config batch=2` compared at b2 without a word.
    config_text = ",".join(config) if config else None
    typer.echo(compare_command(root, a, b, config_text, experiment, machine), nl=False)


@app.command()
def profile(
    model: Annotated[Path, typer.Argument(help="The ONNX model file to profile.", show_default=False)],
    threads: Annotated[int, typer.Option(min=0, max=MAX_THREADS,
                                         help="Intra-op threads (0: one per physical core).")] = 0,
    iterations: Annotated[int, typer.Option(min=1, max=MAX_ITERATIONS,
                                            help="Timed requests (more for a stable p99).")] = 100,
    warmup: Annotated[int, typer.Option(min=0, max=MAX_WARMUP, help="Untimed requests before the timed ones.")] = 10,
    profile_iterations: Annotated[int, typer.Option(min=1, max=MAX_ITERATIONS,
                                                    help="Inferences under onnxruntime's profiler.")] = 10,
    dim: Annotated[
        list[str] | None, typer.Option(help="Value of a named input dim, e.g. --dim seq_len=128 (repeatable).")
    ] = None,
    shape: Annotated[
        list[str] | None, typer.Option(help="Whole shape of an input, e.g. --shape input=1,3,224,224 (repeatable).")
    ] = None,
    input_files: Annotated[
        list[str] | None, typer.Option("--input", help="Real data for an input: --input NAME=FILE.npy, or "
                                                       "FILE.npz[:KEY] (repeatable; its shape sets the input's).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for MODEL.perf.json and .html (default: here).")] = None,
    provider: Annotated[str, typer.Option(help="Execution provider: cpu, cuda, ... (as in specs).")] = "cpu",
    optimization_level: Annotated[str, typer.Option(help="Graph optimization: disable|basic|extended|all.")] = "all",
    max_seconds: Annotated[float, typer.Option(callback=_seconds_option,
                                               help="Stop the timed loop after this many seconds "
                                                    f"(0.01 to {MAX_PROCESS_SECONDS:,}).")] = 60.0,
    quick: Annotated[bool, typer.Option(help="Shorten the measurement (also PERFSITE_QUICK=1).")] = False,
) -> None:
    """Profile a model file (no spec): terminal summary, MODEL.perf.json and a self-contained MODEL.perf.html."""
    from generator.cli.profile import profile_command

    typer.echo(profile_command(model, threads=threads, iterations=iterations, warmup=warmup,
                               profile_iterations=profile_iterations, dims=dim or [], shapes=shape or [], out=out,
                               provider=provider, optimization_level=optimization_level, max_seconds=max_seconds,
                               quick=quick, progress=_echo_err, inputs=input_files or []), nl=False)


@app.command()
def diff(
    baseline: Annotated[str, typer.Argument(
        help="Results folder, or git:REF (the results committed at REF); with --measure a checkout folder.")],
    candidate: Annotated[str, typer.Argument(help="Results folder, or git:REF; with --measure a checkout folder.")],
    results: Annotated[
        str | None, typer.Option(help="The results folder git:REF reads (default: <project>/results).")
    ] = None,
    fail_on: Annotated[
        str | None, typer.Option(help="`regression`: exit 2 when a configuration got significantly slower or "
                                      "failed; `never` (the default): exit 0 then.")
    ] = None,
    latency_ratio: Annotated[
        float | None, typer.Option(help="Regression above this latency ratio (default: the spec's, 1.05).")
    ] = None,
    throughput_ratio: Annotated[
        float | None, typer.Option(help="Regression below this throughput ratio (default: the spec's, 0.95).")
    ] = None,
    allow_env_mismatch: Annotated[
        bool, typer.Option(help="Compare results measured on different environments anyway.")
    ] = False,
    markdown: Annotated[Path | None, typer.Option(help="Also write the Markdown summary to this file.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the JSON verdict to this file.")] = None,
    site_url: Annotated[str | None, typer.Option(help="Preview site URL to link from the summary.")] = None,
    benchmark_latency_json: Annotated[Path | None, typer.Option(
        help="Write the candidate's latencies for github-action-benchmark (tool: customSmallerIsBetter).")] = None,
    benchmark_throughput_json: Annotated[Path | None, typer.Option(
        help="Write the candidate's throughputs for github-action-benchmark (tool: customBiggerIsBetter).")] = None,
    bencher_json: Annotated[Path | None, typer.Option(
        help="Write the candidate's figures in Bencher Metric Format (bencher run --adapter json).")] = None,
    measure: Annotated[list[str] | None, typer.Option(
        help="Measure first, paired: BASELINE and CANDIDATE are two checkouts, this a spec glob inside each "
        "(e.g. 'experiments/*.yaml'; repeatable).")] = None,
    store: Annotated[Path | None, typer.Option(
        help="With --measure: where the two results folders go (default: CANDIDATE/.perfsite/paired).")] = None,
    quick: Annotated[bool, typer.Option(help="With --measure: shrink measurement (previews, tests).")] = False,
) -> None:
    """Compare a candidate's results with a baseline's: ratios with 95% intervals, a verdict, changed layers.

    Exit status: 0 no regression, 1 user error, 2 regression (with --fail-on regression), 3 not comparable.
    """
    from generator.cli.diff import check_side_options, diff_command, measure_sides, measured_files
    from generator.cli.terminal import check_output_files
    from generator.results.location import refuse_url

    check_side_options(baseline, candidate, measure, {"--store": store is not None, "--quick": quick,
                                                      "--results": results is not None})
    if results is not None:
        refuse_url(results, "`perfsite diff --results` (the folder a git:REF side reads)")
    outputs = {"--markdown": markdown, "--json": json_out, "--benchmark-latency-json": benchmark_latency_json,
               "--benchmark-throughput-json": benchmark_throughput_json, "--bencher-json": bencher_json}
    check_output_files(outputs, stores=_diff_stores(baseline, candidate, measure, store))
    if measure:
        # The specs and the files they name are read only by a measured diff; checked before anything is measured.
        if any(path is not None for path in outputs.values()):
            check_output_files(outputs, inputs=measured_files(baseline, candidate, measure))
        baseline, candidate = measure_sides(baseline, candidate, measure, store, quick, latency_ratio,
                                            site_url)
    exports = {"github-action-benchmark-latency": benchmark_latency_json, "bencher": bencher_json,
               "github-action-benchmark-throughput": benchmark_throughput_json}
    text, code = diff_command(baseline, candidate, Path(results) if results else None, fail_on, latency_ratio,
                              throughput_ratio,
                              allow_env_mismatch, markdown, json_out, site_url,
                              exports={fmt: path for fmt, path in exports.items() if path is not None})
    typer.echo(text, nl=False)
    if code:
        raise typer.Exit(code)


def _diff_stores(baseline: str, candidate: str, measure: list[str] | None, store: Path | None) -> dict[str, Path]:
    """The local results folders `perfsite diff` reads: the two sides (not git:REF, read from git's objects), or
    with --measure the store the two checkouts are measured into."""
    if measure:
        folder = store if store is not None else Path(candidate) / ".perfsite" / "paired"
        return {f"the store {folder} of the measured results": folder}
    sides = {"the baseline": baseline, "the candidate": candidate}
    return {f"{role} {side}": Path(side) for role, side in sides.items() if not side.startswith("git:")}


@app.command()
def count(
    baseline: Annotated[Path, typer.Argument(help="The baseline ONNX model file.", show_default=False)],
    candidate: Annotated[Path, typer.Argument(help="The candidate ONNX model file.", show_default=False)],
    iterations: Annotated[int, typer.Option(min=1, max=MAX_ITERATIONS, help="Counted inferences per version.")] = 10,
    warmup: Annotated[int, typer.Option(min=0, max=MAX_WARMUP,
                                        help="Uncounted inferences per version before counting.")] = 5,
    dim: Annotated[
        list[str] | None, typer.Option(help="Value of a named input dim, e.g. --dim seq_len=128 (repeatable).")
    ] = None,
    shape: Annotated[
        list[str] | None, typer.Option(help="Whole shape of an input, e.g. --shape input=1,3,64,64 (repeatable).")
    ] = None,
    input_: Annotated[
        list[str] | None, typer.Option("--input", help="Real data for an input of both models: --input "
                                                       "NAME=FILE.npy, or FILE.npz[:KEY] (repeatable).")
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="Slower above this instruction ratio, faster below its inverse.")
    ] = 1.01,
    fail_on: Annotated[
        str | None, typer.Option(help="`regression`: exit 2 when the candidate is slower.")
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the JSON verdict to this file.")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Also write the Markdown summary to this file.")] = None,
) -> None:
    """Count instructions per inference of two model files under valgrind: a noise-immune check for shared runners.

    Exit status: 0 no regression, 1 user error, 2 slower (with --fail-on regression), 3 not comparable.
    """
    from generator.cli.count import count_command

    text, code = count_command(baseline, candidate, iterations=iterations, warmup=warmup, dims=dim or [],
                               shapes=shape or [], threshold=threshold, fail_on=fail_on, json_out=json_out,
                               markdown_out=markdown, progress=_echo_err, inputs=input_ or [])
    typer.echo(safe(text, lines=True), nl=False)  # model file names are anyone's
    if code:
        raise typer.Exit(code)


@app.command()
def generate(
    model: Annotated[Path, typer.Argument(help="A decoder ONNX file with KV-cache inputs (docs/generative.md).",
                                          show_default=False)],
    candidate: Annotated[Path | None, typer.Argument(
        help="A second decoder: the two decoders' prefill and decode judged apart.", show_default=False)] = None,
    prompt_tokens: Annotated[int, typer.Option(min=1, max=1_000_000, help="Tokens in the prompt (prefill).")] = 128,
    new_tokens: Annotated[int, typer.Option(min=1, max=1_000_000, help="Tokens generated, greedily.")] = 32,
    batch: Annotated[int, typer.Option(min=1, max=4096, help="Prompts generated together.")] = 1,
    threads: Annotated[int, typer.Option(min=1, max=MAX_THREADS, help="Intra-op threads.")] = 1,
    requests: Annotated[int, typer.Option(min=1, max=MAX_ITERATIONS, help="Timed requests (of each model).")] = 10,
    warmup: Annotated[int, typer.Option(min=0, max=MAX_WARMUP, help="Untimed requests before them.")] = 1,
    processes: Annotated[int, typer.Option(min=2, max=100, help="With CANDIDATE: measuring processes, each "
                                                               "alternating the two models' requests.")] = 4,
    threshold: Annotated[float, typer.Option(min=1.0, max=10.0, help="With CANDIDATE: a phase is slower or "
                                                                     "faster past this ratio.")] = 1.05,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")] = None,
    layers: Annotated[bool, typer.Option("--layers", help="Then profile where the time goes: op types and the "
                                                          "slowest nodes of prefill and of one decode step.")] = False,
) -> None:
    """Time a decoder's generation: time to first token, time per output token, inter-token latency, tokens/s;
    with CANDIDATE, two decoders' prefill and decode judged apart."""
    from generator.cli.terminal import check_output_files, write_output
    from generator.generate.oneshot import GenerateOptions, json_text, summary_text
    from generator.generate.oneshot import generate as run_generation

    options = GenerateOptions(prompt_tokens=prompt_tokens, new_tokens=new_tokens, batch=batch, threads=threads,
                              requests=requests, warmup=warmup)
    models = {"the model": model, **({"the candidate model": candidate} if candidate is not None else {})}
    check_output_files({"--json": json_out}, models)  # before measuring: `--json model.onnx` replaced the model
    if candidate is not None:
        from generator.generate.compare import compare_generation, comparison_text

        comparison = compare_generation(model, candidate, options, processes, threshold, progress=_echo_err)
        if json_out is not None:
            write_output(json_out, json.dumps({"format": "perfsite-generate-compare/1", **comparison.as_dict()},
                                              indent=2) + "\n")
        typer.echo(safe(comparison_text(comparison), lines=True), nl=False)  # file names are anyone's
        return
    summary = run_generation(model, options, progress=_echo_err)
    phases = _phase_layers(model, options) if layers else ()
    if json_out is not None:
        write_output(json_out, json_text(model, options, summary, phases))
    typer.echo(safe(summary_text(model, summary, threads), lines=True), nl=False)  # the file name is anyone's
    if phases:
        from generator.generate.layers import layers_text

        typer.echo(safe(layers_text(phases, batch), lines=True), nl=False)  # node names are the model's


def _phase_layers(model: Path, options) -> tuple:
    from generator.decode.phases import decode_context, profile_phases
    from generator.generate.oneshot import checked_layout, quiet_onnxruntime, run_errors_named

    context = decode_context(options.prompt_tokens, options.new_tokens)
    _echo_err(f"Profiling the prefill and one decode step (context {context}), 10 passes each")
    with quiet_onnxruntime(), run_errors_named(model):
        return profile_phases(model, checked_layout(model, options), options.batch, options.prompt_tokens,
                              options.new_tokens, options.threads)


@app.command()
def query(
    sql: Annotated[str, typer.Argument(
        help="SQL (DuckDB) over the views trials, processes, latencies, nodes, layers, agreement, timeline, "
        "environments, runs and history (columns: docs/query.md).", show_default=False)],
    results: Annotated[list[str] | None, typer.Option(  # a list only so that a repeat is seen (_one_store)
        metavar="DIR_OR_URL", callback=_store_option,
        help="Results store: a folder, or an fsspec URL such as s3://bucket/results (default: <project>/results); "
             "one store."
    )] = None,
    format_: Annotated[str, typer.Option("--format", help="Answer as table, csv, json or markdown.")] = "table",
    output: Annotated[Path | None, typer.Option(help="Write the answer to this file instead of the terminal.")] = None,
) -> None:
    """Ask the results store a question in SQL: every experiment, commit and machine at once (DuckDB, read-only)."""
    from generator.cli.query import query_command

    given = _one_store(results)
    store = given if given is not None else str(_default_results(Path.cwd()))
    echo_long(safe(query_command(sql, store, format_, output), lines=True))  # values are anyone's


def _seconds_option(value: float) -> float:
    # A range on the option would let NaN through to a message about the upper bound (NaN fails every
    # comparison): check finiteness first.
    if not math.isfinite(value) or not 0.01 <= value <= MAX_PROCESS_SECONDS:
        raise typer.BadParameter(f"got {value}; allowed: a finite number of seconds from 0.01 to "
                                 f"{MAX_PROCESS_SECONDS:,}")
    return value


# What an interrupted command leaves behind, by command (the first word that is not an option).
INTERRUPTED = {
    "run": "Interrupted. Every finished trial is kept; run the same command again to finish.",
    "diff": "Interrupted. Every finished trial of a measured diff is kept in its store; run the same command again "
            "to finish.",
    "build": "Interrupted. The site folder is as it was: a build is assembled in a temporary folder and swapped "
             "in only when complete.",
    # The JSON is written as soon as the measurement ends, then the HTML, each whole or not at all: an
    # interrupt while the page is rendered leaves the JSON.
    "profile": "Interrupted. A report file is written only whole: MODEL.perf.json once the measurement ends, "
               "then MODEL.perf.html; an interrupt before the end of the measurement writes neither.",
    "count": "Interrupted. No verdict was written.",
    "serve": "Stopped serving the site.",
}
INTERRUPTED_OTHER = "Interrupted."


# The modules that come with an extra, and the error that names the extra to install.
MISSING_EXTRAS: dict[str, Callable[[str], PerfsiteError]] = {
    "onnxruntime": lambda _module: RuntimeMissingError(),
    "duckdb": QueryMissingError,
    "fsspec": QueryMissingError,
}


# Commands whose run summary already says what an interruption kept (generator.cli.terminal).
SUMMARY_SAYS_INTERRUPTED = ("run", "diff")


def _command(argv: list[str]) -> str:
    return next((a for a in argv if not a.startswith("-")), "")


def _interrupted_message(argv: list[str]) -> str:
    return INTERRUPTED.get(_command(argv), INTERRUPTED_OTHER)


def _say_interrupted() -> None:
    """What an interrupted command left, unless its run summary already said it."""
    if _command(sys.argv[1:]) not in SUMMARY_SAYS_INTERRUPTED:
        typer.echo(_interrupted_message(sys.argv[1:]), err=True)


def _echo_err(text: str) -> None:
    typer.echo(safe(text, lines=True), err=True)


def main() -> None:
    """Console-script entry: run the app, turning user errors into one paragraph and exit status 1."""
    # At exit nothing of the heap needs collecting, yet Python's exit collects it all (pandas, altair and the
    # command's objects: 0.3 s of every command that read results, a sixteenth of a one-experiment rebuild).
    # Frozen objects are skipped; modules are still torn down and files closed. (At exit, not now: a process
    # that calls main() and goes on, a test, keeps its collector.)
    atexit.register(gc.freeze)
    sys.unraisablehook = _interrupt_again_when_ignored(sys.unraisablehook)
    # A cancelled CI job sends SIGTERM: treated as Ctrl-C, so that what was measured is kept and said, and a
    # build leaves the old site, no staging folder and no new empty folders (the default ended the process
    # at once, exit -15, without a word).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    raise_output_closed_from_rich()
    try:
        _main()
    except OutputClosed:
        exit_output_closed()
    except BrokenPipeError:  # an error paragraph or a Ctrl-C note for a closed stderr; another pipe's is an error
        if not standard_output_closed():
            raise
        exit_output_closed()
    finally:
        _forget_caught_interrupt()


INTERRUPT_AGAIN_S = 0.05  # after the hook has returned to the code whose callback swallowed the Ctrl-C


def _interrupt_again_when_ignored(previous: Callable[..., None]) -> Callable[..., None]:
    """An unraisable-exception hook that sends a Ctrl-C Python had to ignore again.

    A KeyboardInterrupt raised where it cannot propagate (a weakref callback of the import system, a __del__)
    is printed as "Exception ignored in ..." and dropped: a Ctrl-C that landed while `perfsite build` imported
    its modules let the build run to its end and replace the site (2 in 35 tries in a hostile tour). Sent again
    a moment later, from a thread: sent here, Python raised it in this hook at once, where it is ignored too.
    The command's own code then gets it."""
    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            again = threading.Timer(INTERRUPT_AGAIN_S, os.kill, (os.getpid(), signal.SIGINT))
            again.daemon = True
            again.start()
            return
        previous(unraisable)

    return hook


def _forget_caught_interrupt() -> None:
    """Keep the exit status perfsite chose after a Ctrl-C (130) under `python -m generator.cli`.

    CPython (3.8 to 3.13 at least) marks a KeyboardInterrupt that ends a string `exec`/`eval` as unhandled even
    when a caller catches it, and under `-m` it then ends the process by SIGINT at exit, whatever `sys.exit` said:
    a Ctrl-C that landed while typing or pydantic evaluated an annotation string made an interrupted `perfsite
    run` end with -2 instead of 130, after printing what it kept (about one Ctrl-C in twenty under load). The
    mark is cleared when the next string is evaluated, so one empty evaluation on the way out clears it. An
    interrupt that escapes `_main` is marked again when it leaves the module, and still ends the process by SIGINT."""
    exec("", {})  # noqa: S102 - an empty string: evaluated only for the side effect above


def _main() -> None:
    try:
        rc = app(args=optional_ray_address(expand_home(sys.argv[1:])), prog_name="perfsite", standalone_mode=False)
        if rc == EXIT_INTERRUPTED:  # typer returns Ctrl-C inside a command as 130
            _say_interrupted()
        sys.exit(rc if isinstance(rc, int) else 0)
    except PerfsiteError as e:
        _user_error(e)
    except ModuleNotFoundError as e:
        # onnxruntime comes with an extra, perfsite[cpu] or perfsite[gpu] (both provide the module), duckdb and
        # fsspec with perfsite[query]; the commands import them on use, so one that needs neither (build,
        # validate, schema) runs without them.
        if e.name not in MISSING_EXTRAS:
            raise
        _user_error(MISSING_EXTRAS[e.name](e.name))
    except KeyboardInterrupt:
        typer.echo(_interrupted_message(sys.argv[1:]), err=True)
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:  # typer releases before it returned Ctrl-C as 130 raised Abort instead
        _say_interrupted()
        sys.exit(EXIT_INTERRUPTED)
    except Exception as e:  # click's usage errors arrive here in non-standalone mode
        if type(e).__name__ == "NoArgsIsHelpError":
            sys.exit(0)  # plain `perfsite` (or a group without its command) asks for the help just printed
        if isinstance(e, click_exceptions()):
            # Usage errors are user errors: one paragraph and exit 1, keeping 2 and 3 for `perfsite diff`.
            typer.echo(_paragraph(f"error: {_usage_message(e)}"), err=True)
            sys.exit(1)
        raise


def optional_ray_address(argv: list[str]) -> list[str]:
    """`--ray` takes an optional ADDRESS, which typer's parser cannot express: a `--ray` whose next word is not an
    address (nothing, an option, a spec file) becomes `--ray=auto`. An address is `auto`, a URL (`ray://...`) or
    a word with a colon that is neither an existing file nor a YAML file name (HOST:PORT; a malformed one such as
    `HOST:99999`, `HOST:abc` or `:6379` is then refused by name, not read as a missing spec)."""
    out = []
    for i, word in enumerate(argv):
        following = argv[i + 1] if i + 1 < len(argv) else None
        out.append("--ray=auto" if word == "--ray" and not _is_ray_address(following) else word)
    return out


def _is_ray_address(word: str | None) -> bool:
    if word is not None and not word.strip():
        return True  # `--ray "$ADDRESS"` with the variable unset: --ray's empty value, refused by its name
    if word is None or word.startswith("-"):
        return False
    host_port = (re.fullmatch(r"[^/\s]*:[^/\s]*", word) is not None and not Path(word).exists()
                 and not word.lower().endswith((".yaml", ".yml")))
    return word == "auto" or "://" in word or host_port


def _usage_message(e: Exception) -> str:
    """Click's message for a malformed command line, with the command whose help lists what is allowed."""
    message = e.format_message() if hasattr(e, "format_message") else str(e)
    ctx = getattr(e, "ctx", None)
    command = ctx.command_path if ctx is not None and ctx.command_path else "perfsite"
    return f"{message.rstrip('.')}. Run `{command} --help` for the arguments and options it takes."


def _user_error(e: PerfsiteError) -> None:
    typer.echo(_paragraph(f"error: {e}"), err=True)
    sys.exit(e.exit_code)


def _paragraph(text: str) -> str:
    # Never split a path or a YAML path: users copy them from the message. A message can quote a model's input
    # or node names and file names: their control characters are shown escaped, never sent to the terminal.
    return "\n".join(
        textwrap.fill(p, width=100, break_long_words=False, break_on_hyphens=False)
        for p in safe(text, lines=True).splitlines() if p.strip()
    )
