"""`perfsite diff BASE_DIR HEAD_DIR --measure GLOB`: measure a baseline and a candidate checkout in one run.

The same spec files (GLOB, resolved inside each checkout) are loaded from both folders; specs with the same
`name:` on both sides are measured together by ``orchestrate.run_paired``: every (version, configuration)
the two share is measured in the same rounds, baseline and candidate processes alternating, so that a
neighbour's drift hits both members of a round and cancels in the paired statistics of the diff. Results go to
STORE/baseline/<name> and STORE/candidate/<name>, ordinary results folders that `perfsite diff` and
`perfsite build` read (the pairing is stored in each trial's `pair_id`). A pair stops measuring as soon as its
paired interval settles the verdict at the diff's latency threshold, or reaches `measure.target`, or spends
`measure.budget_s`: identical models stop once the interval is inside the threshold, a large change once the
interval excludes 1. A spec that only one checkout holds (an experiment the pull request adds or removes) is
measured on its side alone, after the pairs, so that the diff names it as measured on one side only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from generator.errors import PerfsiteError
from generator.results.store import ResultsDir
from generator.runner.orchestrate import (
    Progress,
    RunOptions,
    RunSummary,
    other_spec_named_alike,
    run_experiment,
    run_paired,
)
from generator.spec import LoadedSpec, load_spec
from generator.versions.checks import model_files

SIDES = ("baseline", "candidate")


@dataclass(frozen=True)
class PairedRun:
    """Where a paired run stored its two sides, and what it measured."""

    baseline_results: Path
    candidate_results: Path
    summaries: tuple[tuple[RunSummary, RunSummary], ...]
    one_sided: tuple[RunSummary, ...] = ()  # specs only one checkout holds, each measured on its side

    @property
    def interrupted(self) -> bool:
        return any(s.interrupted for pair in self.summaries for s in pair) or any(
            s.interrupted for s in self.one_sided)


def spec_files(folder: Path, patterns: Sequence[str]) -> list[Path]:
    """The spec files the patterns name inside `folder` (globs relative to it), sorted, each once."""
    if not folder.is_dir():
        raise PerfsiteError(f"{folder} is not a folder: with --measure, BASELINE and CANDIDATE are two checkouts "
                            "of the project (e.g. a `git worktree` of the merge-base and `.`).")
    for pattern in patterns:  # Path.glob raises on these: a usage error, not a traceback
        if not pattern.strip() or Path(pattern).is_absolute():
            raise PerfsiteError(f"--measure {pattern!r} is not a glob relative to the checkout: give one such as "
                                "--measure 'experiments/*.yaml', which is looked up in BASELINE and CANDIDATE.")
        if Path(os.path.normpath(pattern)).parts[:1] == ("..",):
            # `../x/*.yaml` from both checkouts names the same files: both sides would measure one spec and one
            # model, and the diff would pass whatever the candidate changed.
            raise PerfsiteError(f"--measure {pattern!r} leaves the checkout (`..`): BASELINE and CANDIDATE would "
                                "measure the same spec files, and the diff could never find a change. Allowed: a "
                                "glob inside the checkout, such as --measure 'experiments/*.yaml', which is looked "
                                "up in BASELINE and CANDIDATE.")
    found = sorted({p for pattern in patterns for p in folder.glob(pattern)
                    if p.is_file() and _globbed_as_a_shell_does(p.relative_to(folder), pattern)})
    if not found:
        raise PerfsiteError(f"--measure {' '.join(patterns)} names no spec file in {folder}; give globs "
                            "relative to the checkout, e.g. --measure 'experiments/*.yaml'.")
    return found


def _globbed_as_a_shell_does(found: Path, pattern: str) -> bool:
    """Path.glob's `*` and `**` match a leading dot, a shell's do not: `experiments/*.yaml` took macOS's
    `._quickstart.yaml` (binary metadata a copy from a Mac leaves) for a spec, and `**/*.yaml` the workflows under
    `.github/`. A hidden file or folder counts when the pattern names a dot itself (`.ci/*.yaml`)."""
    names_a_dot = any(part.startswith(".") for part in Path(os.path.normpath(pattern)).parts if part != ".")
    return names_a_dot or not any(part.startswith(".") for part in found.parts)


def files_read(baseline: Path, candidate: Path, patterns: Sequence[str]) -> dict[str, Path]:
    """What a paired run reads, by role (for messages): each checkout's spec files the globs match and the files
    they name (models, calibration data, input files). An output option naming one of them must be refused
    before anything is measured: the run would replace the spec or the model it had just measured."""
    read: dict[str, Path] = {}
    for side, folder in zip(SIDES, (baseline, candidate), strict=True):
        for path in spec_files(Path(folder), patterns):
            read[f"the {side}'s spec {path}"] = path
            for field, named in load_spec(path).named_files().items():
                read[f"the file at `{field}` in the {side}'s spec {path}"] = named
                for extra in model_files(named)[1:] if named.suffix.lower() == ".onnx" else ():
                    read[f"external data of the model at `{field}` in the {side}'s spec {path}"] = extra
    return read


def measure_paired(baseline: Path, candidate: Path, patterns: Sequence[str], store: Path, quick: bool = False,
                   progress: Callable[[str], Progress] | None = None,
                   latency_ratio: float | None = None) -> PairedRun:
    """Measure every spec both checkouts hold, paired (module docstring), then each spec one checkout holds on
    its side; `progress(label)` gives the progress reporter of one experiment ("NAME (paired)", "NAME
    (candidate only)"). Each pair measures until its interval is within `measure.target` or settles the diff's
    verdict at `latency_ratio` (default: the candidate spec's `regression.latency_ratio`)."""
    specs = [_by_name(spec_files(Path(folder), patterns)) for folder in (baseline, candidate)]
    common = [name for name in specs[1] if name in specs[0]]
    if not common:
        raise PerfsiteError(f"No experiment is in both checkouts: {baseline} has {_names(specs[0])}, "
                            f"{candidate} has {_names(specs[1])}. --measure compares specs with the same `name:`.")
    for name in common:
        _refuse_one_file(specs[0][name], specs[1][name], patterns)
    roots = tuple(Path(store) / side for side in SIDES)
    one_side = [(side, name) for side, (mine, theirs) in enumerate(((specs[0], specs[1]), (specs[1], specs[0])))
                for name in mine if name not in theirs]
    # Before anything is measured: every store folder, and the plan of each spec one checkout holds (the pairs
    # are planned by run_paired itself), so that none of them fails the diff after minutes of measuring.
    for name in common:
        for side, root in enumerate(roots):
            _check_store(root / name, specs[side][name], store)
    for side, name in one_side:
        _check_store(roots[side] / name, specs[side][name], store)
        run_experiment(specs[side][name], _one_side_options(roots[side] / name, quick, dry_run=True),
                       check_targets=False)
    summaries = []
    for name in common:
        threshold = latency_ratio or specs[1][name].spec.regression.latency_ratio
        options = tuple(RunOptions(results_dir=root / name, quick=quick, force=True,
                                   decide_latency_ratio=threshold) for root in roots)
        pair = run_paired(specs[0][name], specs[1][name], options, progress(f"{name} (paired)") if progress else None)
        summaries.append(pair)
        if any(s.interrupted for s in pair):
            return PairedRun(roots[0], roots[1], tuple(summaries))
    one_sided = []
    for side, name in one_side:
        label = f"{name} ({SIDES[side]} only)"
        one_sided.append(run_experiment(specs[side][name], _one_side_options(roots[side] / name, quick),
                                        progress(label) if progress else None, check_targets=False))
        if one_sided[-1].interrupted:
            break
    return PairedRun(roots[0], roots[1], tuple(summaries), tuple(one_sided))


def _refuse_one_file(base: LoadedSpec, cand: LoadedSpec, patterns: Sequence[str]) -> None:
    """Both checkouts' spec of one name is one file (their `experiments/` a link to one folder outside both):
    both sides would measure it, and the diff would pass whatever the candidate changed."""
    real = os.path.realpath(base.path)
    if real == os.path.realpath(cand.path):
        raise PerfsiteError(
            f"--measure {' '.join(patterns)}: the baseline's spec {base.path} and the candidate's {cand.path} are one "
            f"file, {real} (a link out of both checkouts): both sides would measure the same spec, and the diff "
            "could never find a change. Allowed: spec files inside each checkout, as git checks them out (a link "
            "to a folder outside is shared by every checkout).")


def _one_side_options(folder: Path, quick: bool, dry_run: bool = False) -> RunOptions:
    return RunOptions(results_dir=folder, quick=quick, force=True, dry_run=dry_run)


def _check_store(folder: Path, loaded: LoadedSpec, store: Path) -> None:
    """The paired store keeps what earlier paired runs measured: one of other checkouts, whose spec of this
    name measures other models, would mix two experiments in one folder (the runner refuses it). Said here in
    the paired run's terms, with its own option (`--store`), rather than as a results folder given with
    --results, which `diff` does not take."""
    other = other_spec_named_alike(ResultsDir(folder), loaded)
    if other is not None:
        raise PerfsiteError(
            f"The paired store {store} holds, in {folder}, trials an earlier paired run measured with the spec "
            f"{other}, also named `{loaded.spec.name}` but measuring other models than {loaded.path}. Allowed: "
            f"one experiment per name in a store: give this comparison its own --store DIR, or delete {folder} "
            "(a paired store holds nothing but those runs' results).")


def _by_name(paths: list[Path]) -> dict[str, LoadedSpec]:
    out: dict[str, LoadedSpec] = {}
    for path in paths:
        loaded = load_spec(path)
        if loaded.spec.name in out:
            raise PerfsiteError(f"{out[loaded.spec.name].path} and {path} both have `name: {loaded.spec.name}`; "
                                "each experiment name must be unique (its results folder is named after it).")
        out[loaded.spec.name] = loaded
    return out


def _names(specs: dict[str, LoadedSpec]) -> str:
    return ", ".join(sorted(specs)) or "none"
