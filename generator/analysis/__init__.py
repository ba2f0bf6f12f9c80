"""Analysis: pure functions from results DataFrames to frozen summary records (no I/O, deterministic)."""

from generator.analysis.profile import (
    LayerTime,
    OpTypeTime,
    ProcessSpread,
    TimeAccounting,
    TrialProfile,
    op_type_times,
    process_spread,
    time_accounting,
    top_layers,
    trial_profile,
)
from generator.analysis.run_summaries import EnvironmentSummary, environment_summaries
from generator.analysis.summaries import (
    ProfileTarget,
    TrialSummary,
    VersionBest,
    VersionInfo,
    profile_targets,
    sweet_spot,
    trial_summaries,
    version_bests,
    version_infos,
)

__all__ = [
    "EnvironmentSummary", "LayerTime", "OpTypeTime", "ProcessSpread", "ProfileTarget", "TimeAccounting",
    "TrialSummary", "VersionBest", "VersionInfo", "environment_summaries", "op_type_times", "process_spread",
    "profile_targets", "sweet_spot", "time_accounting", "top_layers", "trial_summaries", "version_bests",
    "version_infos", "TrialProfile", "trial_profile",
]
