"""Every version side by side at each configuration: latency with its interval, throughput, the figures against
the first version measured there, model size and output agreement (the experiment page's N-way table and
chart; pairs have their compare pages). The figures are each trial's own; which version is faster is a finding
of the page's "fastest version" section, settled or not, never of this table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from generator.analysis.records_compare import AgreementRow
from generator.analysis.summaries import TrialSummary, VersionInfo


@dataclass(frozen=True)
class VersionCell:
    version: str
    trial: TrialSummary
    low_ms: float | None  # the headline latency's 95 % interval over processes
    high_ms: float | None
    latency_ratio: float | None  # this version's latency / the configuration's reference version's
    throughput_ratio: float | None  # this version's throughput / the reference's
    model_bytes: int | None
    agreement: tuple[AgreementRow, ...]  # its outputs against its reference version's

    @property
    def worst_cosine(self) -> float | None:
        return _least(a.cosine for a in self.agreement)

    @property
    def worst_top1(self) -> float | None:
        return _least(a.top1_agreement for a in self.agreement)

    @property
    def within_tolerance(self) -> bool | None:
        judged = [a.within_tolerance for a in self.agreement if a.within_tolerance is not None]
        return all(judged) if judged else None

    @property
    def against(self) -> str | None:
        return self.agreement[0].reference_version if self.agreement else None


@dataclass(frozen=True)
class ConfigRow:
    config_label: str
    reference: str  # the version the ratios are against: the first in spec order measured here
    cells: tuple[VersionCell, ...]  # spec order


def _least(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def side_by_side(trials: Sequence[TrialSummary], versions: Sequence[str], infos: Sequence[VersionInfo],
                 agreement: dict[str, tuple[AgreementRow, ...]]) -> tuple[ConfigRow, ...]:
    """Each configuration where two or more versions have an ok trial (the newest each), in the order of the
    trials, its versions in spec order."""
    sizes = {i.version: i.model_bytes for i in infos}
    rank = {v: i for i, v in enumerate(versions)}
    newest: dict[str, dict[str, TrialSummary]] = {}
    for t in trials:  # oldest first: a later trial of a version and configuration replaces an earlier one
        if t.ok and t.latency_headline_ms and t.throughput_ips:
            newest.setdefault(t.config_label, {})[t.version] = t
    rows = []
    for label, by_version in newest.items():
        if len(by_version) < 2:
            continue
        ordered = sorted(by_version.values(), key=lambda t: (rank.get(t.version, len(rank)), t.version))
        ref = ordered[0]
        rows.append(ConfigRow(label, ref.version, tuple(_cell(t, ref, sizes, agreement) for t in ordered)))
    return tuple(rows)


def _cell(t: TrialSummary, ref: TrialSummary, sizes: dict[str, int | None],
          agreement: dict[str, tuple[AgreementRow, ...]]) -> VersionCell:
    half = t.ci_halfwidth
    low, high = ((t.latency_headline_ms * (1 - half), t.latency_headline_ms * (1 + half))
                 if half is not None and half < 1 else (None, None))
    return VersionCell(t.version, t, low, high, t.latency_headline_ms / ref.latency_headline_ms,
                       t.throughput_ips / ref.throughput_ips, sizes.get(t.version), agreement.get(t.trial_key, ()))
