"""`perfsite profile MODEL.onnx`: check the options, run generator.oneshot.profile_model, return the summary."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from generator.errors import RunError


def profile_command(model: Path, *, threads: int, iterations: int, warmup: int, profile_iterations: int,
                    dims: Sequence[str], shapes: Sequence[str], out: Path | None, provider: str,
                    optimization_level: str, max_seconds: float, quick: bool,
                    progress: Callable[[str], None] | None = None, inputs: Sequence[str] = ()) -> str:
    """The terminal summary of a one-shot profile (MODEL.perf.json and MODEL.perf.html written)."""
    from generator.machine.session import OPTIMIZATION_LEVELS, check_providers
    from generator.oneshot import ProfileOptions, profile_model, summary_text
    from generator.runner.orchestrate import is_quick

    if optimization_level not in OPTIMIZATION_LEVELS:
        raise RunError(f"--optimization-level is {optimization_level!r}; allowed: {', '.join(OPTIMIZATION_LEVELS)}.")
    check_providers([provider], "--provider")
    options = ProfileOptions(threads=threads, iterations=iterations, warmup=warmup,
                             profile_iterations=profile_iterations, max_seconds=max_seconds, provider=provider,
                             optimization_level=optimization_level, quick=is_quick(quick))
    outcome = profile_model(model, options, dims=dims, shapes=shapes, out_dir=out, progress=progress, inputs=inputs)
    return summary_text(outcome.record)
