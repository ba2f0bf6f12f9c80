"""The experiment spec as frozen pydantic records: everything a file under `experiments/` may say.

Validation happens once, in these records (STYLE 4): types and ranges on each field (`fields`), rules joining
fields in each record's validator (`sources` for model versions and inputs, this module for the rest), and
rules across the whole spec (version references, placeholders, sweep values) in `Spec`. Rules report through
`errors_fmt.fail` with the YAML path below the record, so the loader can name the line. After loading, code
trusts these records.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Annotated, Any

from pydantic import ConfigDict, Field, Strict, ValidationInfo, model_validator

from generator.processes import MAX_PROCESS_SECONDS
from generator.spec.errors_fmt import Issue, fail, suggest
from generator.spec.fields import (
    BUILTIN_AXES,
    MAX_SIZE,
    PLACEHOLDER_PATTERN,
    SLUG_HELP,
    SLUG_MAX_LENGTH,
    SLUG_PATTERN,
    Flag,
    IterationCount,
    NonEmptyText,
    NonNegativeFloat,
    OptimizationLevel,
    Percentile,
    PositiveFloat,
    Provider,
    Record,
    RepeatCount,
    Selection,
    SizeValue,
    Slug,
    Text,
    ThreadCount,
    VersionName,
    WarmupCount,
    axis,
    unique_list,
)
from generator.spec.sources import InputSpec, ModelSpec

PlaceholderValues = axis(SizeValue)
Targets = unique_list(Slug, "`targets`")


def _no_misspelt_axes(data: Any) -> Any:
    """An unknown sweep key becomes a placeholder; catch misspelt built-in axes before that happens."""
    if isinstance(data, dict):
        issues = []
        for key in data:
            if key in BUILTIN_AXES:
                continue
            if not isinstance(key, str) or not re.fullmatch(PLACEHOLDER_PATTERN, key):
                issues.append(Issue((key,), "a placeholder name is made of letters, digits and `_`"))
            elif hint := suggest(key, BUILTIN_AXES):
                issues.append(Issue((key,), f"unknown sweep axis `{key}`{hint}"))
        if issues:
            fail(*issues)
    return data


class Sweep(Record):
    """The configuration axes; the plan is their cartesian product minus `exclude`."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={"additionalProperties": {
            "description": "A placeholder used in an input shape (e.g. `seq_len`): its values.",
            "type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MAX_SIZE}, "minItems": 1,
            "uniqueItems": True,
        }},
    )
    # Extra keys are placeholders bound into input shapes; pydantic validates them with this type.
    __pydantic_extra__: dict[str, PlaceholderValues] = Field(init=False)

    batch: axis(SizeValue) = Field((1,), description="Batch sizes, bound to the `batch` placeholder.")
    threads: axis(ThreadCount) = Field((1,), description="Intra-op thread counts of the session.")
    concurrency: axis(ThreadCount) = Field(
        (1,), description="Requests in flight at once on one shared session."
    )
    optimization_level: axis(OptimizationLevel) = Field(
        ("all",), description="Graph optimization levels: disable, basic, extended, all."
    )
    provider: axis(Provider) = Field(
        ("cpu",), description="Execution providers: cpu, cuda, tensorrt, openvino, dml, coreml, rocm."
    )
    spinning: axis(Flag) = Field((True,), description="Whether intra-op threads spin while waiting.")
    inter_op_threads: axis(ThreadCount) = Field(
        (1,), description="Inter-op thread counts (parallel execution mode when > 1)."
    )

    _check_keys = model_validator(mode="before")(_no_misspelt_axes)

    @property
    def placeholders(self) -> dict[str, tuple[int, ...]]:
        """The extra axes (placeholders used in input shapes), in spec order."""
        return dict(self.model_extra or {})

    def axes(self) -> dict[str, tuple[Any, ...]]:
        """Every axis and its values: built-in axes first, then placeholders."""
        return {**{a: getattr(self, a) for a in BUILTIN_AXES}, **self.placeholders}


class Measure(Record):
    """How each trial is timed."""

    warmup: WarmupCount = Field(10, description="Untimed requests before timing, per measurement process.")
    min_iterations: IterationCount = Field(50, description="Timed requests at least, per measurement process.")
    min_seconds: NonNegativeFloat = Field(1.0, description="Keep timing at least this long, per process.")
    max_seconds: PositiveFloat = Field(
        60.0, le=MAX_PROCESS_SECONDS,
        description="Stop timing after this long even if `min_iterations` is not reached, per process.",
    )
    percentile: Percentile = Field("p90", description="Tail latency reported next to the median: p50, p90, "
                                   "p95 or p99; also used by `latency_threshold_ms`.")
    repeats: RepeatCount = Field(3, description="Measurement processes per trial at least (the unit of "
                                 "repetition); more are added until `target` is met or `budget_s` is spent.")
    target: PositiveFloat = Field(0.02, le=0.5, description="Keep measuring until the headline latency's 95 % "
                                  "interval is within ± this share (0.02: ± 2 %), or the budget is spent.")
    budget_s: PositiveFloat = Field(45.0, le=MAX_PROCESS_SECONDS, description="Measuring time allowed per trial "
                                    "(its measurement processes' wall time, start-up included) before it stops "
                                    "unconverged.")
    profile_iterations: IterationCount = Field(
        20, description="Inferences each profiling process profiles, after its warm-up (the measurement processes "
                        "of the first three rounds, `repeats` when fewer, profile after their timed loop).")
    timeout_s: PositiveFloat = Field(600.0, le=MAX_PROCESS_SECONDS,
                                     description="Kill a measurement process running longer.")

    @model_validator(mode="after")
    def _ordered_limits(self) -> Measure:
        # Blame the key the spec wrote: `min_seconds: 100` alone was reported as `measure.max_seconds` (got 60), a
        # key the user never wrote, whose default was in the way.
        issues = []
        written = self.model_fields_set
        if self.max_seconds < self.min_seconds:
            if "max_seconds" in written:
                issues.append(Issue(("max_seconds",), f"must be >= min_seconds ({self.min_seconds})", self.max_seconds))
            else:
                issues.append(Issue(("min_seconds",), f"must be <= max_seconds ({self.max_seconds}, its default; "
                                    "set max_seconds too to time longer)", self.min_seconds))
        if self.timeout_s <= self.max_seconds:
            if "timeout_s" in written or "max_seconds" not in written:
                limit = f"must be > max_seconds ({self.max_seconds}) so a process can finish before it is killed"
                issues.append(Issue(("timeout_s",), limit, self.timeout_s))
            else:
                issues.append(Issue(("max_seconds",), f"must be < timeout_s ({self.timeout_s}, its default) so a "
                                    "process can finish before it is killed; set timeout_s too to time longer",
                                    self.max_seconds))
        if issues:
            fail(*issues)
        return self


# The sweep axes a `generate:` section adds (generator.plan.spec_axes): placeholders of no input shape.
GENERATE_AXES = ("prompt_tokens", "new_tokens")


# The longest prompt or generation a spec may ask for (as `perfsite generate`'s options): a decode loop
# preallocates its masks for the whole context.
MAX_TOKENS = 1_000_000
TokenCount = Annotated[int, Strict(), Field(ge=1, le=MAX_TOKENS)]


class Generate(Record):
    """A generative experiment: the model is a decoder (docs/generative.md's convention) and each request is a
    greedy generation of exactly `new_tokens` tokens after a `prompt_tokens` prompt."""

    prompt_tokens: axis(TokenCount) = Field(description="Prompt lengths in tokens, swept like `batch`: each is "
                                           "one prefill pass over a deterministic prompt.")
    new_tokens: axis(TokenCount) = Field(description="Tokens generated per request (end-of-sequence ignored), swept "
                                        "like `batch`: the first comes from the prefill, each later one from one "
                                        "decode step.")


class Limits(Record):
    """A generative experiment's budget for the sweet spot: the most output tokens/s whose time to first token
    and time per output token, at `measure.percentile`, are within these."""

    ttft_ms: PositiveFloat | None = Field(None, description="Time to first token allowed, ms (at the percentile).")
    tpot_ms: PositiveFloat | None = Field(None, description="Time per output token allowed, ms (at the percentile).")


class ComparePair(Record):
    """Two versions to compare on the report's comparison page."""

    a: Text = Field(description="The baseline version.")
    b: Text | None = Field(None, description="The candidate version; omitted: the version with the best "
                           "throughput within `latency_threshold_ms`.")
    config: Selection | None = Field(None, description="Compare at this (partial) configuration only; "
                                     "omitted: at every configuration both versions ran.")


class Regression(Record):
    """When a re-run counts as a regression against the stored results."""

    latency_ratio: Annotated[float, Strict(), Field(ge=1.0)] = Field(
        1.05, description="Regression when the new median latency exceeds the old one times this."
    )
    throughput_ratio: Annotated[float, Strict(), Field(gt=0.0, le=1.0)] = Field(
        0.95, description="Regression when the new throughput falls below the old one times this."
    )
    # Generative experiments (`perfsite diff`); left out of the stored spec at their default, so that specs
    # written before them keep their sha256.
    ttft_ratio: Annotated[float, Strict(), Field(ge=1.0)] = Field(
        1.05, exclude_if=lambda value: value == 1.05,
        description="Generative: regression when the new median time to first token exceeds the old one times this."
    )
    tpot_ratio: Annotated[float, Strict(), Field(ge=1.0)] = Field(
        1.05, exclude_if=lambda value: value == 1.05,
        description="Generative: regression when the new median time per output token exceeds the old one times "
                    "this."
    )


class Tolerance(Record):
    """How closely a version's outputs must agree with the version it was made from."""

    max_abs: NonNegativeFloat | None = Field(None, description="Largest allowed absolute difference.")
    cosine_min: Annotated[float, Strict(), Field(ge=-1.0, le=1.0)] | None = Field(
        None, description="Smallest allowed cosine similarity of flattened outputs."
    )

    @model_validator(mode="after")
    def _something(self) -> Tolerance:
        if self.max_abs is None and self.cosine_min is None:
            fail(Issue((), "give `max_abs`, `cosine_min` or both"))
        return self


class Spec(Record):
    """An experiment: model versions, their inputs, the configuration sweep and what to report."""

    name: Slug = Field(description=f"Experiment name ({SLUG_HELP}); the results folder is named after it.")
    description: Text = Field("", description="The question the experiment answers; shown on its page.")
    models: dict[VersionName, ModelSpec] = Field(
        min_length=1,
        description="Model versions by name (names: " + SLUG_HELP + "), in report order.",
        json_schema_extra={"propertyNames": {"pattern": SLUG_PATTERN, "maxLength": SLUG_MAX_LENGTH}},
    )
    inputs: dict[NonEmptyText, InputSpec] = Field(
        description="Model inputs by name: how to feed each one (required, except in a generative experiment, "
        "whose decode loop feeds the decoder)."
    )
    # Left out of the stored spec and its sha256 when absent (as `targets`): specs written before generative
    # experiments existed keep their sha256.
    generate: Generate | None = Field(None, exclude_if=lambda value: value is None,
                                      description="Makes the experiment generative: the versions are decoders, "
                                      "and the prompt and output lengths join the sweep.")
    limits: Limits | None = Field(None, exclude_if=lambda value: value is None,
                                  description="A generative experiment's TTFT and TPOT budget for the sweet spot "
                                  "(instead of `latency_threshold_ms`).")
    sweep: Sweep = Field(default_factory=Sweep, description="Configuration axes and their values.")
    exclude: tuple[Selection, ...] = Field(
        (), description="Partial configurations to leave out; each removes every combination matching all "
        "of its items."
    )
    measure: Measure = Field(default_factory=Measure, description="Timing settings of every trial.")
    latency_threshold_ms: PositiveFloat | None = Field(
        None, description="Latency budget (at `measure.percentile`) for the sweet spot and best-throughput "
        "choices; omitted: no budget."
    )
    compare: tuple[ComparePair, ...] = Field((), description="Version pairs to compare.")
    profile: tuple[Selection, ...] = Field(
        (), description="Partial configurations to profile per node (each matched against the plan; `{}` "
        "profiles every configuration)."
    )
    regression: Regression = Field(default_factory=Regression, description="Regression thresholds.")
    whatif: dict[NonEmptyText, PositiveFloat] = Field(
        default_factory=dict, description="Operator type -> speed-up factor for the what-if estimate."
    )
    tolerance: Tolerance | None = Field(None, description="Output agreement required between versions.")
    # Left out of the stored spec and its sha256 when empty, so that specs written before targets existed keep
    # their sha256 (and their specs/<sha>.json).
    targets: Targets = Field(
        (), exclude_if=lambda value: not value,
        description="Kinds of machine to measure every trial on, with `perfsite run --ray` (names: " + SLUG_HELP
        + "): each is a Ray custom resource `target:NAME` its nodes offer (docs/ray.md). A trial's target is "
        "part of its key.",
        json_schema_extra={"uniqueItems": True},
    )

    @model_validator(mode="before")
    @classmethod
    def _generative_inputs(cls, data: Any) -> Any:
        """A generative experiment's decode loop feeds the model: its spec has no `inputs` to give. A `generate:`
        left empty (YAML null) is a generative spec that forgot its lengths, not one that forgot its inputs."""
        if isinstance(data, dict) and "generate" in data and "inputs" not in data:
            if data["generate"] is None:
                fail(Issue(("generate",), "empty: give `prompt_tokens: [...]` and `new_tokens: [...]`, the prompt and "
                           "output lengths to sweep"))
            return {**data, "inputs": {}}
        if isinstance(data, dict) and isinstance(data.get("sweep"), dict) and "generate" in data["sweep"]:
            fail(Issue(("sweep", "generate"), "`generate:` is a top-level section, not a sweep axis: move it out of "
                       "`sweep:` (to the left margin)"))
        return data

    @model_validator(mode="after")
    def _cross_field_rules(self, info: ValidationInfo) -> Spec:
        axes = self.axes()
        issues = [*_version_issues(self.models), *_generate_issues(self)]
        if self.generate is None and self.inputs:
            issues += _placeholder_issues(self.inputs, self.sweep)
        issues += _size_issues(self.sweep, len(self.models), {a: v for a, v in axes.items() if a in GENERATE_AXES})
        issues += _selection_issues("exclude", self.exclude, axes, allow_empty=False)
        issues += _selection_issues("profile", self.profile, axes, allow_empty=True)
        # A stored spec (spec_from_json) skips the rules added after results were stored under it: results
        # measured then must stay readable; the pages say what those rules would refuse.
        issues += _compare_issues(self.compare, self.models, axes, stored=bool((info.context or {}).get("stored")))
        if not issues:  # the sweep is within MAX_TRIALS and every exclude entry names axes and values it has
            issues = _nothing_left_issues(self.exclude, axes)
        if not issues and self.exclude and not (info.context or {}).get("stored"):
            issues = _excluded_selection_issues(self, axes)
        if issues:
            fail(*issues)
        return self

    def axes(self) -> dict[str, tuple[Any, ...]]:
        """Every axis of the plan and its values: the sweep's, then a generative experiment's prompt and output
        lengths."""
        generate = {a: getattr(self.generate, a) for a in GENERATE_AXES} if self.generate else {}
        return {**self.sweep.axes(), **generate}

    def version_chain(self, name: str) -> tuple[str, ...]:
        """Version names from the root source file to `name`, e.g. ("fp32", "int8-static")."""
        chain = [name]
        while (parent := self.models[chain[0]].from_) is not None:
            chain.insert(0, parent)
        return tuple(chain)

    def version_order(self) -> tuple[str, ...]:
        """All version names, each after the one it is made from, otherwise in spec order."""
        ordered: dict[str, None] = {}
        for name in self.models:
            ordered.update(dict.fromkeys(self.version_chain(name)))
        return tuple(ordered)



# Trials one spec may plan. The plan is built whole (validate lists it, run keys every trial): four axes of 300
# values made 8.1e9 configurations and ran out of memory. 100,000 trials at a few seconds each are already days.
MAX_TRIALS = 100_000


def _size_issues(sweep: Sweep, versions: int, generate_axes: dict | None = None) -> list[Issue]:
    """The sweep's size, counted before anything is expanded."""
    lengths = {name: len(values) for name, values in sweep.axes().items()}
    lengths.update({name: len(values) for name, values in (generate_axes or {}).items()})
    total = math.prod(lengths.values()) * max(versions, 1)
    if total <= MAX_TRIALS:
        return []
    listed = " × ".join(f"{name} {n}" for name, n in lengths.items() if n > 1)
    message = (f"the sweep plans {total:,} trials ({listed} values × {versions} version(s)), more than the "
               f"{MAX_TRIALS:,} one spec may plan; split it into several specs or sweep fewer values "
               "(`exclude:` applies after this count)")
    return [Issue(("sweep",), message)]

def _version_issues(models: dict[str, ModelSpec]) -> list[Issue]:
    issues = []
    for name, m in models.items():
        if m.from_ is not None and m.from_ not in models:
            issues.append(Issue(("models", name, "from"), _not_a_version(m.from_, models)))
    if issues:
        return issues
    in_reported_cycle: set[str] = set()
    for name in models:
        seen = [name]
        while (parent := models[seen[-1]].from_) is not None and parent not in seen:
            seen.append(parent)
        if parent == name and name not in in_reported_cycle:
            in_reported_cycle.update(seen)
            cycle = " -> ".join([*seen, name])
            issues.append(Issue(("models", name, "from"), f"versions made `from` each other: cycle {cycle}"))
    return issues


def _generate_issues(spec: Spec) -> list[Issue]:
    """What a generative experiment cannot have (its decode loop feeds the model, one request at a time), and
    `limits` or an `engine` without one."""
    if spec.generate is None:
        issues = [] if spec.inputs else [Issue(("inputs",), "no input given: name each model input and how to feed "
                                              "it (a decoder measured with `generate:` needs none)")]
        issues += [Issue(("models", name, "engine"), "an engine generates tokens: it applies to a generative "
                         "experiment (a `generate:` section); remove `engine`")
                   for name, m in spec.models.items() if m.engine is not None]
        if spec.limits is not None:
            issues.append(Issue(("limits",), "TTFT and TPOT limits apply to a generative experiment (a `generate:` "
                                "section); for a latency budget use `latency_threshold_ms`"))
        return issues
    why = "a generative experiment"
    refused = {
        "inputs": "its decode loop feeds the decoder's inputs (input_ids, attention_mask, position_ids and the "
                  "KV cache) itself; remove `inputs`",
        "latency_threshold_ms": "its budget is `limits: {ttft_ms: …, tpot_ms: …}`; remove `latency_threshold_ms`",
        "profile": "per-layer profiles of prefill and decode are not measured by `perfsite run` yet; remove "
                   "`profile`",
        "whatif": "the what-if estimate needs per-layer profiles, which generative runs do not record yet; remove "
                  "`whatif`",
    }
    issues = [Issue((key,), f"not allowed in {why}: {text}") for key, text in refused.items()
              if getattr(spec, key)]
    issues += [Issue(("models", name, "quantize", "mode"), f"`{m.quantize.mode}` calibrates on the spec's `inputs`, "
                     f"which {why} does not have (its decode loop makes them); allowed: `dynamic` or `int4`")
               for name, m in spec.models.items() if m.quantize is not None and m.quantize.mode.startswith("static")]
    if spec.sweep.concurrency != (1,):
        issues.append(Issue(("sweep", "concurrency"), f"{why} measures one request in flight at a time (a "
                            "request is a whole generation); leave concurrency at [1] and sweep `batch`"))
    issues += [Issue(("sweep", key), f"`{key}` is a `generate:` axis in {why}; give its values there")
               if key in GENERATE_AXES else
               Issue(("sweep", key), f"`{key}` is not an axis of {why}: no input shape takes placeholders (the "
                     "prompt and output lengths are `generate:`'s); remove it")
               for key in spec.sweep.placeholders]
    return issues


def _not_a_version(name: str, models: dict[str, ModelSpec]) -> str:
    return f"`{name}` is not a version of this spec (versions: {', '.join(models)}){suggest(name, models)}"


def _placeholder_issues(inputs: dict[str, InputSpec], sweep: Sweep) -> list[Issue]:
    issues, used = [], set()
    for name, spec in inputs.items():
        for i, dim in enumerate(spec.shape or ()):
            if not isinstance(dim, str) or dim == "batch" or dim in sweep.placeholders:
                used.add(dim)
            elif dim in BUILTIN_AXES:
                message = f"`{dim}` is a session setting, not a size; use `batch` or your own placeholders"
                issues.append(Issue(("inputs", name, "shape", i), message))
            else:
                hint = suggest(dim, sweep.placeholders)
                message = f"placeholder `{dim}` is not bound: add `sweep.{dim}: [...]` with its values{hint}"
                issues.append(Issue(("inputs", name, "shape", i), message))
    for key in sweep.placeholders:
        if key not in used:
            hint = suggest(key, [*BUILTIN_AXES, *(u for u in used if isinstance(u, str))])
            message = f"`{key}` is not a sweep axis and no input shape uses it as a placeholder{hint}"
            issues.append(Issue(("sweep", key), message))
    # A file's rows are repeated or cut to the batch size (generator.inputs.fit_first_dim): it follows the axis.
    if "batch" not in used and sweep.batch != (1,) and not any(s.file is not None for s in inputs.values()):
        message = ("no input shape uses the `batch` placeholder, so every batch size would feed the same "
                   "tensors; put `batch` in a shape or leave sweep.batch at [1]")
        issues.append(Issue(("sweep", "batch"), message))
    return issues


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _nothing_left_issues(exclude: tuple[dict, ...], axes: dict[str, tuple]) -> list[Issue]:
    """`exclude` entries that together remove every configuration: validate said "ok, 0 trials", and run refused
    with "--only None leaves no trial"."""
    if not exclude:
        return []
    names = list(axes)
    for combo in itertools.product(*axes.values()):
        config = dict(zip(names, combo, strict=True))
        if not any(all(_same(value, config[key]) for key, value in entry.items()) for entry in exclude):
            return []
    return [Issue(("exclude",), "these entries remove every configuration of the sweep, so there is nothing to "
                  "measure; remove an entry, or add values to the sweep that no entry matches")]


def _excluded_selection_issues(spec: Spec, axes: dict[str, tuple]) -> list[Issue]:
    """`profile` entries and compare `config`s that match only configurations `exclude` leaves out: they passed,
    and the profile page said "No trial with this configuration", the compare page "cannot be compared"."""
    names = list(axes)
    planned = [config for combo in itertools.product(*axes.values())
               if not any(_matches(e, config := dict(zip(names, combo, strict=True))) for e in spec.exclude)]
    selections = [(("profile", i), entry) for i, entry in enumerate(spec.profile)]
    selections += [(("compare", i, "config"), pair.config) for i, pair in enumerate(spec.compare) if pair.config]
    issues = []
    for loc, entry in selections:
        if not any(_matches(entry, config) for config in planned):
            hits = ", ".join(f"exclude[{j}]" for j, e in enumerate(spec.exclude)
                             if all(_same(v, entry[k]) for k, v in e.items() if k in entry))
            issues.append(Issue(loc, "matches only configurations that `exclude` leaves out of the plan "
                                f"({hits}), so it would select no trial; name a configuration the plan keeps, or "
                                "change `exclude`", entry))
    return issues


def _matches(entry: dict[str, Any], config: dict[str, Any]) -> bool:
    """Whether a whole configuration has every item of a partial one."""
    return all(_same(value, config[key]) for key, value in entry.items())


def _selection_issues(field: str, items: tuple[dict, ...], axes: dict[str, tuple], allow_empty: bool) -> list:
    issues = []
    for i, item in enumerate(items):
        if not item and not allow_empty:
            issues.append(Issue((field, i), "an empty entry would match every configuration; name some axes"))
        issues += _selection_item_issues((field, i), item, axes)
    return issues


def _selection_item_issues(loc: tuple, item: dict[str, Any], axes: dict[str, tuple]) -> list[Issue]:
    issues = []
    for key, value in item.items():
        if key not in axes:
            issues.append(Issue((*loc, key), f"`{key}` is not a sweep axis{suggest(key, axes)} (axes: "
                                f"{', '.join(axes)})"))
        elif not any(_same(value, v) for v in axes[key]):
            allowed = ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in axes[key])
            section = "generate" if key in GENERATE_AXES else "sweep"
            issues.append(Issue((*loc, key), f"not among the values of {section}.{key} ({allowed})", value))
    return issues


def _compare_issues(pairs: tuple[ComparePair, ...], models: dict[str, ModelSpec], axes: dict,
                    stored: bool = False) -> list[Issue]:
    issues = []
    for i, pair in enumerate(pairs):
        for side in ("a", "b"):
            version = getattr(pair, side)
            if version is not None and version not in models:
                issues.append(Issue(("compare", i, side), _not_a_version(version, models)))
        if pair.a == pair.b:
            issues.append(Issue(("compare", i, "b"), "a version compared with itself; name another version"))
        elif pair.b is None and len(models) < 2 and not stored:
            issues.append(Issue(("compare", i, "a"), "no other version to compare with: `b` left out picks the best "
                                "other version, and the spec has one version; add a version to `models`"))
        issues += _selection_item_issues(("compare", i, "config"), pair.config or {}, axes)
        if pair in pairs[:i] and not stored:
            issues.append(Issue(("compare", i), f"the same pair as compare[{pairs.index(pair)}]: it would give the "
                                "same page twice; remove one"))
    return issues
