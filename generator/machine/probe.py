"""The machine's limits, measured: peak FP32 and INT8 rates through onnxruntime, and memory bandwidth.

The profile pages place every layer on a roofline (attainable = min(peak, intensity × bandwidth)); its two
ceilings come from here. They are measured, never computed from nominal clocks: `/proc/cpuinfo` understates
the clock of these VMs, and what matters is what onnxruntime's own kernels reach on this machine. One attempt
is generator.machine.probe_runs; which attempts give believable limits is generator.machine.probe_settle.

Limits you can believe, or none: the probe repeats attempts until two undisturbed ones agree (the best figure
of each limit confirmed by a second within probe_settle.TOLERANCE), up to MAX_ATTEMPTS. Then the limits are
*settled*, each the best undisturbed figure. Otherwise they are *unsettled*, stored with the reason in words,
and no page draws a roofline or a share of a limit from them (generator.analysis.limits.unsettled_reason).

The result is cached per environment fingerprint (``ensure_limits``) in one per-user folder
(``probe_cache_dir``) that `perfsite run` and `perfsite profile` share: settled limits cost a probe once;
unsettled ones are probed again by the next run, which may find the machine quieter. ``reprobe`` measures
again when a layer ran faster than settled limits allow (generator.runner.limits_check).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from generator.machine.environment import Environment
from generator.machine.probe_runs import ProbeAttempt, probe_once
from generator.machine.probe_settle import TOLERANCE, can_still_settle, settle
from generator.paths import CACHE_ENV, cache_root, cache_warning, unusable_reason

# 2: quality, attempts and reprobed added to the cached limits. 3: the FP32 peak includes the convolution.
# 4: settled by two agreeing attempts (older caches were never checked for agreement: probed again).
CACHE_VERSION = 4
# Attempts at most, full and quick: a full attempt takes about 2.5 s on the development VM, a quick one 0.4 s.
MAX_ATTEMPTS = {False: 5, True: 3}


@dataclass(frozen=True)
class MachineLimits:
    """Measured limits of one machine, with how each figure was obtained and whether they are settled."""

    peak_gflops_fp32: float
    peak_gops_int8: float | None  # None when onnxruntime could not run MatMulInteger here
    bandwidth_gbs: float
    threads: int
    quick: bool
    notes: tuple[str, ...]
    measured_at: str
    settled: bool = False  # two undisturbed attempts agreed (module docstring)
    reason: str = ""  # why not settled, in words
    attempts: int = 1  # attempts made
    undisturbed: int = 0  # of which undisturbed
    disturbances: tuple[str, ...] = ()  # what disturbed the others, in words
    reprobed: bool = False  # measured again because a layer ran above the previous limits
    tolerance: float = TOLERANCE

    @property
    def quality(self) -> str:
        return "settled" if self.settled else "unsettled"

    @property
    def quality_text(self) -> str:
        """The quality as pages show it: ``settled: two undisturbed probes agreed within 10 % (2 probes)``,
        ``unsettled: the undisturbed probes disagreed …``."""
        probes = f"{self.attempts} probe{'s' if self.attempts != 1 else ''}"
        if self.settled:
            disturbed = self.attempts - self.undisturbed
            text = (f"settled: two undisturbed probes agreed within {100 * self.tolerance:.0f} % ({probes}"
                    + (f", {disturbed} disturbed" if disturbed else "") + ")")
        else:
            text = f"unsettled: {self.reason}"
        return text + (", re-probed after a layer exceeded the earlier limits" if self.reprobed else "")


def probe_machine(quick: bool, threads: int | None = None, isa: tuple[str, ...] = ()) -> MachineLimits:
    """Measure the FP32 and INT8 peaks and the memory bandwidth (generator.machine.probe_runs), attempt after
    attempt until two undisturbed ones agree (generator.machine.probe_settle), at most MAX_ATTEMPTS[quick],
    and fewer when the attempts left could no longer give two undisturbed ones.

    `threads` is the intra-op pool size (default: every logical core); `isa` (the environment's instruction
    sets) only annotates the INT8 figure with the dot-product path the CPU has.
    """
    threads = threads or os.cpu_count() or 1
    most = MAX_ATTEMPTS[quick]
    attempts: list[ProbeAttempt] = []
    while len(attempts) < most:
        attempts.append(probe_once(quick, threads, isa))
        if settle(attempts).settled or not can_still_settle(attempts, most - len(attempts)):
            break
    s = settle(attempts)
    return MachineLimits(
        peak_gflops_fp32=s.peak_gflops_fp32, peak_gops_int8=s.peak_gops_int8, bandwidth_gbs=s.bandwidth_gbs,
        threads=threads, quick=quick, notes=attempts[-1].notes,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"), settled=s.settled, reason=s.reason,
        attempts=s.attempts, undisturbed=s.undisturbed,
        disturbances=tuple(dict.fromkeys(d for a in attempts for d in a.disturbances)),
    )


def best_of(a: MachineLimits, b: MachineLimits) -> MachineLimits:
    """Each figure the higher of two settled probes (each a confirmed floor under the true limit); the rest from
    `b`, but for `quick`: the figures are at least a full probe's when either was one, so a quick run's re-probe
    of a full probe leaves it good enough for a full run (which otherwise probed the machine all over again)."""
    int8 = max((x for x in (a.peak_gops_int8, b.peak_gops_int8) if x is not None), default=None)
    return dataclasses.replace(b, peak_gflops_fp32=max(a.peak_gflops_fp32, b.peak_gflops_fp32),
                               peak_gops_int8=int8, bandwidth_gbs=max(a.bandwidth_gbs, b.bandwidth_gbs),
                               quick=a.quick and b.quick)


def probe_cache_dir() -> Path:
    """The one cache of machine probes, shared by `perfsite run` and `perfsite profile`: $PERFSITE_CACHE_DIR/probe
    when set (tests point it at a temporary folder), else $XDG_CACHE_HOME/perfsite/probe, else
    ~/.cache/perfsite/probe. Per user, not per project: the limits belong to the machine."""
    if os.environ.get(CACHE_ENV):
        return cache_root() / "probe"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfsite" / "probe"


PROBING_MESSAGE = "Measuring the machine's peak and bandwidth (cached once per machine)..."
REPROBING_MESSAGE = "Measuring the machine's peak and bandwidth again: its last probe did not settle them..."


def ensure_limits(env: Environment, quick: bool, cache_dir: Path | None = None,
                  warn: Callable[[str], None] | None = None,
                  announce: Callable[[str], None] | None = None) -> Environment:
    """`env` with its limits filled (see with_limits): from the cache file ``probe-<fingerprint>.json`` in
    `cache_dir` (default probe_cache_dir()) when it holds settled limits good enough (a full probe always is; a
    quick one only for a quick run), otherwise probed now and cached. Unsettled cached limits are probed again:
    the machine may be quieter now. A damaged cache file is probed again; an unwritable cache folder is named to
    `warn` and the probe is used uncached. `announce` hears PROBING_MESSAGE (REPROBING_MESSAGE) as the probe
    starts: it takes seconds, and is said only when it really runs."""
    folder = Path(cache_dir) if cache_dir is not None else probe_cache_dir()
    limits = cached_limits(folder, env.fingerprint, quick)
    if limits is None or not limits.settled:
        if announce is not None:
            announce(PROBING_MESSAGE if limits is None else REPROBING_MESSAGE)
        limits = probe_machine(quick, threads=env.logical_cores, isa=tuple(env.isa or ()))
        store(folder, env.fingerprint, limits, warn)
    return with_limits(env, limits)


def reprobe(env: Environment, quick: bool, cache_dir: Path | None = None,
            warn: Callable[[str], None] | None = None) -> Environment:
    """Probe again now (settled limits that a layer ran above) and cache the result marked `reprobed` (see
    ensure_limits: `warn`): when the new probe settles, each limit is the higher of the cached and the new
    figure (both confirmed floors under the true limit); when it does not, the cached settled limits stay, as
    a probe that cannot be believed overturns nothing."""
    folder = Path(cache_dir) if cache_dir is not None else probe_cache_dir()
    fresh = probe_machine(quick, threads=env.logical_cores, isa=tuple(env.isa or ()))
    old = cached_limits(folder, env.fingerprint, quick=True)
    if old is not None and old.settled:
        limits = best_of(old, fresh) if fresh.settled else old
    else:
        limits = fresh
    limits = dataclasses.replace(limits, reprobed=True)
    store(folder, env.fingerprint, limits, warn)
    return with_limits(env, limits)


def with_limits(env: Environment, limits: MachineLimits) -> Environment:
    """`env` with peak_gflops_fp32, peak_gops_int8, bandwidth_gbs, limits_probed_at, limits_quality and
    limits_settled set."""
    return dataclasses.replace(env, peak_gflops_fp32=limits.peak_gflops_fp32, peak_gops_int8=limits.peak_gops_int8,
                               bandwidth_gbs=limits.bandwidth_gbs, limits_probed_at=limits.measured_at,
                               limits_quality=limits.quality_text, limits_settled=limits.settled)


def cache_path(cache_dir: Path, fingerprint: str) -> Path:
    return Path(cache_dir) / f"probe-{fingerprint}.json"


def cached_limits(cache_dir: Path, fingerprint: str, quick: bool) -> MachineLimits | None:
    """The cached probe of this environment, or None when there is none good enough (see ensure_limits)."""
    try:
        data = json.loads(cache_path(cache_dir, fingerprint).read_text())
        if data.get("version") != CACHE_VERSION or data.get("fingerprint") != fingerprint:
            return None
        raw = data["limits"]
        limits = MachineLimits(**{**raw, "notes": tuple(raw["notes"]), "disturbances": tuple(raw["disturbances"])})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing or damaged: measure again (the cache is only a shortcut)
    return limits if quick or not limits.quick else None


def store(cache_dir: Path, fingerprint: str, limits: MachineLimits,
           warn: Callable[[str], None] | None = None) -> None:
    """Cache the probe; an unwritable folder only costs a probe next time, so it is a warning, not an error."""
    from generator.paths import atomic_write_bytes

    data = {"version": CACHE_VERSION, "fingerprint": fingerprint, "limits": dataclasses.asdict(limits)}
    try:
        atomic_write_bytes(cache_path(cache_dir, fingerprint),
                           (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode())
    except OSError as e:
        if warn is not None:
            warn(cache_warning(cache_dir, unusable_reason(cache_dir, e), "the machine's limits are measured"))
