"""Pull-request performance checks: a candidate's results against a baseline's (folders or `git:REF`).

`generator.diff.sources` materializes the two sides, `generator.diff.verdict` compares them (ratios with
95 % intervals over measurement processes, verdicts, environment checks), `generator.diff.layers` finds the
layers that changed, `generator.diff.report` writes the Markdown summary and the JSON verdict, and
`generator.site.trend_page` follows key figures over the commits that changed the results.
"""

from generator.diff.layers import LayerChange, LayerDiff
from generator.diff.sources import ResultsSource, SourceError, load_side, open_source
from generator.diff.verdict import (
    FAILED,
    FASTER,
    NO_CHANGE,
    NOT_COMPARABLE,
    SLOWER,
    DiffResult,
    EnvDifference,
    FailedConfig,
    Thresholds,
    TrialDiff,
    diff_experiments,
)

__all__ = [
    "FAILED", "FASTER", "NO_CHANGE", "NOT_COMPARABLE", "SLOWER", "DiffResult", "EnvDifference", "FailedConfig",
    "LayerChange",
    "LayerDiff", "ResultsSource", "SourceError", "Thresholds", "TrialDiff", "diff_experiments", "load_side",
    "open_source",
]
