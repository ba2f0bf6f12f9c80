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
