"""Output agreement: how far a version's outputs moved from its reference version's on the same inputs.

Pure functions: arrays in, rows of the ``agreement`` table out (see ``generator.results.schema.AGREEMENT``).
The runner records the outputs (worker ``outputs`` mode) and calls these; nothing here runs a model.

Which versions are compared (``reference_versions``): a version made ``from`` another is compared with the root
of its ``from`` chain (the file the chain started from), and every version is compared with the ``a`` of each
``compare:`` pair whose ``b`` is that version (or whose ``b`` is left to be chosen later). A root version is never
compared with itself.

Figures per output, over every input batch compared (``samples``), computed in float64:

- ``max_abs`` = max |b - a|, ``mean_abs`` = mean |b - a|;
- ``max_rel`` = max |b - a| / max(|a|, eps), eps = 1e-6 × the largest finite |a| of that output (at least the
  smallest positive float64), so that elements that are exactly zero in A (after a ReLU) do not divide by zero
  and the figure does not depend on the output's unit;
- ``cosine`` of the flattened outputs;
- ``top1_agreement``: for classifier-like outputs (2-D ``[batch, classes]`` floats with at least 2 classes), the
  share of rows whose arg-max is the same in both; null for every other output.

Edge cases, decided so that nothing raises and no figure looks better than the truth:

- Integer and bool outputs compare exactly: equal elements differ by 0 and unequal ones by at least 1, even where
  float64 would round two large int64 values together.
- Non-finite values: an element that is the same non-finite value in both (NaN and NaN, inf and inf) differs by
  0; one that is finite in one version only, or NaN in one only, differs by inf, so ``max_abs``, ``max_rel`` and
  ``mean_abs`` are inf and ``cosine`` is NaN (undefined).
- Outputs that cannot be compared (shapes differ between the versions in any batch, the output exists in one
  version only, or a dtype that is not numeric) still get a row, with NaN figures and a null
  ``top1_agreement``: the page shows "not comparable" rather than dropping the output. A NaN figure is never
  within a tolerance.
- Empty outputs (a zero-sized dimension) agree trivially: differences 0, cosine 1. Two all-zero outputs have
  cosine 1; exactly one all-zero output has cosine 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

REL_EPS_SCALE = 1e-6  # eps of max_rel, relative to the largest |a| of the output
NAN = float("nan")
Outputs = Mapping[str, np.ndarray]


def reference_versions(spec: Any, version: str) -> tuple[str, ...]:
    """The versions `version`'s outputs are compared with: the root of its `from` chain when it is derived,
    then the `a` of every `compare:` pair whose `b` is `version` or unset; never `version` itself."""
    refs = [spec.version_chain(version)[0]]
    refs += [pair.a for pair in spec.compare if pair.b in (None, version)]
    return tuple(r for r in dict.fromkeys(refs) if r != version)


def agreement_pairs(spec: Any, versions: Iterable[str]) -> list[tuple[str, str]]:
    """(version, reference) pairs among `versions` (the versions measured together at one configuration);
    a reference that is not among them is skipped."""
    present = list(versions)
    return [(v, r) for v in present for r in reference_versions(spec, v) if r in present]


def output_agreement(ref: Outputs, other: Outputs) -> list[dict[str, Any]]:
    """Agreement of `other`'s outputs with `ref`'s on one input batch: one row per output name (in `ref`'s
    order, then names only `other` has). See the module docstring for the figures and edge cases."""
    return batches_agreement([ref], [other])


def batches_agreement(refs: Sequence[Outputs], others: Sequence[Outputs]) -> list[dict[str, Any]]:
    """Like `output_agreement`, pooled over several input batches (`refs[i]` and `others[i]` ran on the same
    inputs); `samples` is the number of batches compared (batches beyond the shorter list are ignored)."""
    batches = list(zip(refs, others, strict=False))
    names = dict.fromkeys(name for ref, other in batches for name in (*ref, *other))
    return [_output_row(name, [(ref.get(name), other.get(name)) for ref, other in batches]) for name in names]


def agreement_rows(trial_key: str, version: str, reference: str, ref_batches: Sequence[Outputs],
                   batches: Sequence[Outputs]) -> list[dict[str, Any]]:
    """Rows of the `agreement` table for one trial against one reference version."""
    head = {"trial_key": trial_key, "version": version, "reference_version": reference}
    return [{**head, **row} for row in batches_agreement(ref_batches, batches)]


def generation_rows(trial_key: str, version: str, reference: str, ref: Outputs, other: Outputs) -> list[dict]:
    """A generative trial against its reference: `prefill_logits` compared as any output (its top1_agreement is
    whether the first token agrees), and `greedy_tokens` as the share of generated tokens equal position by
    position (top1_agreement; its distances mean nothing for token ids, so they are null). A quantized version
    that picks another token once continues from another context: the share counts that too."""
    rows = agreement_rows(trial_key, version, reference, [ref], [other])
    mine, theirs = other.get("greedy_tokens"), ref.get("greedy_tokens")
    for row in rows:
        if row["output"] == "greedy_tokens":
            same = mine is not None and theirs is not None and mine.shape == theirs.shape
            row.update(max_abs=None, max_rel=None, mean_abs=None, cosine=None,
                       top1_agreement=float(np.mean(mine == theirs)) if same and mine.size else None)
    return rows


def same_arrays(a: Outputs, b: Outputs) -> bool:
    """The two feeds (or outputs) hold the same names and equal arrays."""
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).shape == np.asarray(b[k]).shape and np.array_equal(a[k], b[k]) for k in a
    )


def _output_row(name: str, pairs: list[tuple[np.ndarray | None, np.ndarray | None]]) -> dict[str, Any]:
    row = {"output": name, "max_abs": NAN, "max_rel": NAN, "mean_abs": NAN, "cosine": NAN,
           "top1_agreement": None, "samples": len(pairs)}
    if not pairs or not all(_comparable(a, b) for a, b in pairs):
        return row
    parts = [_differences(np.asarray(a), np.asarray(b)) for a, b in pairs]
    a, b, diff = (np.concatenate(p) for p in zip(*parts, strict=True))
    row.update(
        max_abs=float(diff.max(initial=0.0)),
        max_rel=_max_rel(a, diff),
        mean_abs=float(diff.mean()) if diff.size else 0.0,
        cosine=_cosine(a, b, diff),
        top1_agreement=_top1(pairs),
    )
    return row


def _comparable(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype.kind in "biuf" and b.dtype.kind in "biuf"


def _differences(a_raw: np.ndarray, b_raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flattened float64 a, b and |b - a| with the exact-integer and non-finite rules of the module docstring."""
    a, b = a_raw.astype(np.float64).ravel(), b_raw.astype(np.float64).ravel()
    exact = a_raw.dtype.kind in "biu" and b_raw.dtype.kind in "biu"
    # float16 and float32 widen to float64 exactly; int64 may not, so integers are compared in their own type.
    same = (a_raw.ravel() == b_raw.ravel()) if exact else (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(b - a)
    diff[np.isnan(diff)] = np.inf  # NaN in one version only, or inf - inf: as far apart as values can be
    if exact:
        diff = np.maximum(diff, 1.0)
    diff[same] = 0.0
    return a, b, diff


def _max_rel(a: np.ndarray, diff: np.ndarray) -> float:
    if not diff.size:
        return 0.0
    finite = np.abs(a[np.isfinite(a)])
    eps = max(REL_EPS_SCALE * float(finite.max(initial=0.0)), float(np.finfo(np.float64).tiny))
    with np.errstate(invalid="ignore", over="ignore"):
        rel = diff / np.maximum(np.abs(a), eps)
    rel[np.isnan(rel)] = np.inf  # inf / inf: a non-finite value on one side only
    return float(rel.max())


def _cosine(a: np.ndarray, b: np.ndarray, diff: np.ndarray) -> float:
    both_finite = np.isfinite(a) & np.isfinite(b)
    if np.any(~both_finite & (diff != 0)):
        return NAN  # a value finite in one version only: the angle is undefined
    x, y = a[both_finite], b[both_finite]
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 or ny == 0.0:
        return 1.0 if nx == ny else 0.0
    return float(np.clip(np.dot(x, y) / (nx * ny), -1.0, 1.0))


def _top1(pairs: list[tuple[np.ndarray, np.ndarray]]) -> float | None:
    """Share of rows with the same arg-max, for 2-D float [batch, classes >= 2] outputs; None otherwise."""
    if not all(_classifier_like(np.asarray(a)) and _classifier_like(np.asarray(b)) for a, b in pairs):
        return None
    agree = np.concatenate([np.argmax(a, axis=1) == np.argmax(b, axis=1) for a, b in pairs])
    return float(agree.mean()) if agree.size else None


def _classifier_like(x: np.ndarray) -> bool:
    return x.ndim == 2 and x.dtype.kind == "f" and x.shape[1] >= 2
