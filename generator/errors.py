"""The one family of user errors.

Raise a :class:`PerfsiteError` (or a child) anywhere for a problem the user can fix: bad spec, missing
file, unloadable model, unreadable results. The CLI catches it and prints its message as one paragraph
with exit status 1. Any other exception is a bug in perfsite and keeps its traceback.
"""

from __future__ import annotations


class PerfsiteError(Exception):
    """A problem with the user's input; the message is one paragraph that says what to do."""

    exit_code = 1


class SpecError(PerfsiteError):
    """The experiment spec is invalid (file, YAML path, bad value, what is allowed)."""


class ModelError(PerfsiteError):
    """A model file cannot be found, read, loaded or transformed."""


class ResultsError(PerfsiteError):
    """A results directory cannot be read or written."""


class RunError(PerfsiteError):
    """A sweep cannot be run as asked (provider unavailable, input rejected, ...)."""


class SiteError(PerfsiteError):
    """The site cannot be generated or built."""


class RuntimeMissingError(PerfsiteError):
    """onnxruntime cannot be imported: perfsite was installed without a runtime extra."""

    def __init__(self) -> None:
        super().__init__(
            "onnxruntime is not installed, and this command needs it to load and run models. Install perfsite "
            "with the runtime for your machine: `pip install 'perfsite[cpu]'` (onnxruntime, for CPUs) or `pip "
            "install 'perfsite[gpu]'` (onnxruntime-gpu, for NVIDIA GPUs, which also runs on the CPU). Install "
            "only one of the two: both provide the `onnxruntime` module, and the one installed last replaces "
            "the other's."
        )


class QueryMissingError(PerfsiteError):
    """duckdb or fsspec cannot be imported: perfsite was installed without the query extra."""

    def __init__(self, module: str) -> None:
        super().__init__(
            f"{module} is not installed, and `perfsite query` needs it: DuckDB runs the SQL over the results "
            "store and fsspec lists the store's files (and reads them from s3:// and other URLs). Install perfsite "
            "with the query extra: `pip install 'perfsite[query]'` (for a store on S3: "
            "`pip install 'perfsite[query,s3]'`). Every other command works without it."
        )


class RayMissingError(PerfsiteError):
    """ray cannot be imported: perfsite was installed without the ray extra."""

    def __init__(self) -> None:
        super().__init__(
            "Ray is not installed, and `perfsite run --ray` needs it to send trials to the nodes of a Ray cluster. "
            "Install perfsite with the ray extra, on the machine you run from and on every node: `pip install "
            "'perfsite[ray,cpu]'` (docs/ray.md). Every other command, and `perfsite run` without --ray, works "
            "without it."
        )


def given_twice(option: str, key: str, first: object, second: object) -> str:
    """The words for a repeated option that binds one key to two values (`--dim seq_len=8 --dim seq_len=16`):
    the last one used to win without a word. Repeating one value is allowed, so only a conflict is refused."""
    return (f"{option} gives {key} two values, {first} and {second} (in `{option} {key}=…` given twice); give "
            "one value.")
