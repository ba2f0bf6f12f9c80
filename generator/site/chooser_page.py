"""The "choose A and B" page of an experiment: any two versions at any configuration each ran, in the browser.

The page holds the controls and empty sections; site_templates/assets/perfsite-choose.js fills them from data
files beside the page (folder `choose/`), loaded with script tags so that the page also works opened from disk:

- `index.js`: versions, every ok trial with its timing and intervals, the default choice, the normal quantile
  of the layers' 95 % intervals;
- `t-<n>.js`: trial n's executed nodes, each with its time and standard deviation over the profiled
  iterations (µs per inference, full precision) and precision, and its number of profiled iterations;
- `v-<i>-<j>.js`: version i against version j: the kernel table's rows (which nodes each row sums), the
  advice and the output agreement (generator.analysis.chooser.VersionPair);
- `f-<n>-<k>.js`: trial n as A against the trials k × figures_per_file … as B: the ratios with their 95 %
  intervals and the verdict words of the compare pages, the layer-type rows and the spread a layer's interval
  borrows from the latency ratio; a few kB per pair, whatever the model's size;
- `d-<id>.js`: layer details, for the panel a click on a kernel row opens (executed kernels with shapes and
  element types, the model-file nodes they compute with attributes and weights), in chunks of about
  DETAIL_FILE_BYTES in execution order; the trial file gives each executed node its chunk, so a panel loads
  only what it shows. Details hold no time, so the trials of one version at the same shapes (other threads,
  concurrency) have the same chunks: a chunk's id is a hash of its content and it is written once.

Every sentence about a ratio, and every interval but one kind, is written here by the analysis. The exception is
a kernel row's ratio interval: the script computes it from the row's summed node times and standard errors and
the pair's spread with stats.scaled_ratio_ci's closed form (see generator.analysis.chooser for why), which
tests/browser/test_chooser_browser.py checks row by row against the compare page's. Strings from models reach
the page through the script's textContent, never as markup.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2

from generator.analysis.accounting import TimeAccounting
from generator.analysis.chooser import (
    ChooserData,
    PairFigures,
    TrialCard,
    VersionPair,
    chooser_data,
    pair_figures,
)
from generator.analysis.findings import FindingSet
from generator.analysis.layer_details import (
    KernelDetail,
    LayerDetail,
    TrialDetails,
    details_fingerprints,
    trial_details,
)
from generator.analysis.records_compare import Advice, AgreementRow, RatioCI, VersionTiming
from generator.analysis.stats import z_value
from generator.flops.details import attribute_defaults
from generator.numbers import rounded
from generator.site.compare_page import latency_words, precision_counts, throughput_words
from generator.site.escape import shown_changes, shown_json
from generator.site.formatting import op_name
from generator.site.page_base import REPORTS_DIR, ExperimentView, Page, render

CHOOSER_PAGE = "choose.md"
DATA_FOLDER = "choose"  # beside the page; site_templates/choose.md.j2 links its index.js
DIGITS = 6  # significant digits of figures in the data files: far below any interval's width
ROW_DIGITS = 4  # a layer type's ratio and interval: two decimals are shown
FIGURES_FILE_BYTES = 1_000_000
# A pair's figures without its layer-type rows (two ratios with their words, notes, the spread), and one
# layer-type row, at most: measured 0.8-1.1 kB a pair with about 20 layer types.
PAIR_BYTES, TYPE_BYTES = 1_000, 80
DETAIL_FILE_BYTES = 500_000  # a chunk of layer details: a panel of a 20,000-node model loads one or two


# A trial's executed node -> the id of the detail chunk that holds it, per trial key (detail_files).
ChunksOf = dict[str, dict[str, str]]


def chooser_pages(env: jinja2.Environment, view: ExperimentView,
                  details: Callable[[], ChunksOf] | None = None) -> list[Page]:
    """The experiment's chooser page with its data files; none with fewer than two ok trials. `details`: where
    another process wrote the layer details (detail_files) and gives their chunks, else they are made here."""
    made = chooser_data(view.results, view.context, view.findings)
    if made is None:
        return []
    data, ctx = made
    folder = f"{REPORTS_DIR}/{view.slug}/{DATA_FOLDER}"
    files = [(f"{folder}/index.js", _call("index", _index(view, data)))]
    if details is None:
        detail, chunks_of = detail_files(view, [c.trial_key for c in data.trials])
    else:
        detail, chunks_of = [], details()
    files += [(f"{folder}/t-{n}.js", _call("trial", n, _trial_nodes(card, chunks_of[card.trial_key])))
              for n, card in enumerate(data.trials)] + detail
    index = {v: i for i, v in enumerate(data.versions)}
    files += [(f"{folder}/v-{index[p.a]}-{index[p.b]}.js", _call("pair", index[p.a], index[p.b], _pair(p)))
              for p in data.pairs]
    position = {c.trial_key: n for n, c in enumerate(data.trials)}
    per_file = figures_per_file(data)
    for key, figures in pair_figures(ctx, data):
        n = position[key]
        by_b = {position[f.b_key]: _figures(f) for f in figures}
        for k in range(0, len(data.trials), per_file):
            chunk = {b: v for b, v in by_b.items() if k <= b < k + per_file}
            files.append((f"{folder}/f-{n}-{k // per_file}.js", _call("figures", n, k // per_file, chunk)))
    page = render(env, "choose.md.j2", f"{REPORTS_DIR}/{view.slug}/{CHOOSER_PAGE}", "Choose A and B",
                  True, e=view, trials=len(data.trials),
                  versions=data.versions)
    return [Page(page.path, page.title, page.markdown, tuple(files) + page.files)]


def detail_files(view: ExperimentView, trial_keys: Sequence[str]) -> tuple[list[tuple[str, str]], ChunksOf]:
    """The `d-<id>.js` detail chunks of these trials (the chooser's, generator.analysis.chooser.choosable) and,
    per trial, the chunk of each of its executed nodes (the trial files point at them). Details are cut into
    chunks once per group of trials with the same details (layer_details.details_fingerprints), each chunk
    written once. They need the results only, not the chooser's statistics: a rebuild makes them in another
    process meanwhile (generator.site.incremental)."""
    nodes, layers = view.results.nodes, view.results.layers
    fingerprints = details_fingerprints(nodes, layers)
    details: dict[str, str] = {}
    by_fingerprint: dict[tuple, dict[str, str]] = {}  # fingerprint -> executed node -> its chunk's id
    chunks_of: ChunksOf = {}
    for key in trial_keys:
        fingerprint = fingerprints.get(key, (None, None))
        if fingerprint not in by_fingerprint:
            by_fingerprint[fingerprint] = _write_chunks(trial_details(key, nodes, layers), details)
        chunks_of[key] = by_fingerprint[fingerprint]
    folder = f"{REPORTS_DIR}/{view.slug}/{DATA_FOLDER}"
    return [(f"{folder}/d-{chunk_id}.js", text) for chunk_id, text in sorted(details.items())], chunks_of


def figures_per_file(data: ChooserData) -> int:
    """Trials as B per figures file, so that a file stays under FIGURES_FILE_BYTES however many trials an
    experiment has: a pair's figures grow with the layer types a trial ran (tens), not with its layers."""
    types = max((len(c.op_types) for c in data.trials), default=0)
    return max(1, FIGURES_FILE_BYTES // (PAIR_BYTES + TYPE_BYTES * types))


def _write_chunks(trial: TrialDetails, details: dict[str, str]) -> dict[str, str]:
    """Add the trial's detail chunks to `details` (id -> file text; the id a hash of the content, so trials of
    different groups that share a chunk write it once); executed node -> its chunk's id."""
    chunk_of: dict[str, str] = {}
    for chunk in _detail_chunks(trial):
        text = _chunk_json(chunk)
        chunk_id = hashlib.sha256(text.encode()).hexdigest()[:16]
        if chunk_id not in details:
            details[chunk_id] = f"perfsiteChooser.details({_json(chunk_id)}, {text});\n"  # _call's form
        chunk_of.update(dict.fromkeys(chunk.kernels, chunk_id))
    return chunk_of


def _call(function: str, *args: Any) -> str:
    """A data file: one call of the page script's loader (ASCII JSON, so no character can end the script)."""
    return f"perfsiteChooser.{function}({', '.join(_json(a) for a in args)});\n"


def _json(value: Any) -> str:
    # Names as the page's tables show them (escape.shown): the script puts them on screen with textContent.
    return shown_json(value, _dump)


def _dump(value: Any) -> str:
    return "".join(_ENCODE(value, 0))


# One encoder for every data file: the chooser's layer details are tens of thousands of small values, and both
# json.dumps (a JSONEncoder per call when given options) and JSONEncoder.encode (a C encoder per call, made in
# Python) cost more per value than the encoding. So the C encoder JSONEncoder.encode makes, made once: the same
# text (json's pure-Python encoder where the C one is missing). Without the circular-reference check (a dict of
# every list's id, a fifth of the encoding): the values are built here from records, never self-referencing.
_string = json.encoder.encode_basestring_ascii  # _dump of a string, without the encoder's call
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), sort_keys=True, check_circular=False)
_ENCODE: Callable[[Any, int], Iterable[str]] = (
    json.encoder.c_make_encoder(None, _ENCODER.default, json.encoder.encode_basestring_ascii, None,
                                _ENCODER.key_separator, _ENCODER.item_separator, _ENCODER.sort_keys, _ENCODER.skipkeys,
                                _ENCODER.allow_nan)
    if json.encoder.c_make_encoder is not None else lambda value, _: _ENCODER.iterencode(value))


def _num(value: float | None) -> float | None:
    return rounded(value, DIGITS)


def _exact(value: float) -> float | None:
    """A figure at full precision (JSON's shortest form of the float), None when not finite."""
    return value if math.isfinite(value) else None


def _index(view: ExperimentView, data: ChooserData) -> dict[str, Any]:
    position = {c.trial_key: n for n, c in enumerate(data.trials)}
    return {
        "experiment": view.name,
        "percentile": data.percentile,
        "versions": list(data.versions),
        "default": [position[k] for k in data.default] if data.default else None,
        "trials": [{"version": c.version, "config": c.config_label, "key": c.trial_key,
                    "timing": _timing(c.timing), "budget": c.budget_note} for c in data.trials],
        "pairs": [[data.versions.index(p.a), data.versions.index(p.b)] for p in data.pairs],
        "figuresPerFile": figures_per_file(data),
        "z": z_value(),  # full precision: the script's layer intervals are stats.scaled_ratio_ci's
    }


def _timing(t: VersionTiming | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"latency": _num(t.latency_ms), "latencyLow": _num(t.latency_ci_low), "latencyHigh": _num(t.latency_ci_high),
            "throughput": _num(t.throughput_ips), "throughputLow": _num(t.throughput_ci_low),
            "throughputHigh": _num(t.throughput_ci_high), "processes": t.processes, "percentile": t.percentile,
            "note": t.note}


def _trial_nodes(card: TrialCard, chunk_of: dict[str, str]) -> dict[str, Any]:
    """The trial's executed nodes as [µs, precision, chunk of its details, µs of standard deviation] and its
    time per standard op: [µs, share, nodes per precision, nodes]. Node times keep full precision: the script
    computes the layers' intervals from them, and so agrees with Python's figures to within a rounding of the
    last bits (Python 3.12's sum() compensates, and no browser promises a correctly rounded exp()), far below
    the two decimals shown."""
    return {"nodes": {name: [_exact(us), precision, chunk_of.get(name), _exact(std)]
                      for name, (us, precision, std) in card.nodes.items()},
            "iterations": card.iterations,
            "total": _num(card.total_us),
            "accounting": _accounting(card.accounting),
            "ops": {t.op_type: [_num(t.time_a_us), _num(t.share_a), _counts(t.precision_counts_a.items()), t.nodes_a]
                    for t in card.op_types}}


def _pair(p: VersionPair) -> dict[str, Any]:
    return {
        "config": p.config_label, "reason": p.reason,
        "rows": [[r.layer, op_name(r.op_type, r.ops_a, r.ops_b) if r.kind == "layer" else r.op_type, r.kind,
                  r.only_in, r.note, list(r.executed_a), list(r.executed_b), list(r.weights)] for r in p.rows],
        "agreement": _agreement(p.agreement),
        # Per configuration both versions ran: what the page shows when A and B are chosen there.
        "at": {f.config_label: {"advice": _advice(f.advice, f.findings), "agreement": _agreement(f.agreement),
                                "verdict": _verdicts(f.findings)} for f in p.at},
    }


def _advice(advice: Sequence[Advice], findings: FindingSet) -> list[list[Any]]:
    """[severity, text, settled, why not] per advice item; settled and why come from its finding."""
    out = []
    for a in advice:
        f = next((x for x in findings.findings if x.kind == "advice" and x.answer == a.rule_id), None)
        out.append([a.severity, a.text, f.settled if f else None, f.reason if f else None])
    return out


def _agreement(rows: Sequence[AgreementRow]) -> list[list[Any]]:
    return [[g.version, g.reference_version, g.output, _num(g.cosine), _num(g.max_abs), g.within_tolerance]
            for g in rows]


def _verdicts(findings: FindingSet) -> dict[str, list[Any]]:
    """latency / throughput -> [answer, settled, why not] of the comparison's verdicts."""
    return {f.id.rsplit("/", 1)[-1]: [f.answer, f.settled, f.reason] for f in findings.findings
            if f.kind == "verdict"}


def _ratio(r: RatioCI | None) -> list[Any] | None:
    """[point, low, high, significant, note] of a ratio."""
    if r is None:
        return None
    return [_num(r.point), _num(r.low), _num(r.high), r.significant, r.note]


def _row(r: RatioCI | None) -> list[float] | int:
    """A layer type's ratio as [point, low, high] (significant when the interval excludes 1), [point] alone
    when its pair is not judged (RatioCI.unjudged: the page says "not compared"), 0 for none."""
    if r is None:
        return 0
    return [float(f"{x:.{ROW_DIGITS}g}") for x in ((r.point,) if r.unjudged else (r.point, r.low, r.high))]


def _figures(f: PairFigures) -> dict[str, Any]:
    return {
        "latency": _ratio(f.latency), "throughput": _ratio(f.throughput),
        "latencyText": latency_words(f.latency), "throughputText": throughput_words(f.throughput),
        "paired": f.paired, "notes": list(f.notes), "spread": None if f.spread is None else _exact(f.spread),
        "types": [[t.op_type, _row(t.ratio)] for t in f.layer_types],  # times and shares: in each trial's file
        # Only on a pair shown without a verdict: its kernel rows give their ratio, "not compared" (a key on
        # every pair would add 15 bytes to each of a 40-trial experiment's 1,560 pairs).
        **({"unjudged": True} if f.latency is not None and f.latency.unjudged else {}),
    }


def _counts(items: Iterable[tuple[str, int]]) -> str:
    return precision_counts(dict(items))


def _accounting(a: TimeAccounting | None) -> list[Any] | None:
    """[kernels, outside the kernels, measured latency, why the parts do not add up (null when they do)] in µs
    per inference (the compare page's "how the times add up"), or None when the trial lacks a figure."""
    if a is None or a.measured_latency_us is None:
        return None
    return [_num(a.kernel_sum_us), _num(a.outside_us), _num(a.measured_latency_us), a.why_not]


@dataclass
class _Chunk:
    """One `d-<id>.js` file's content: kernels and model-file nodes, each as its JSON text (`_dump` of its
    entry: every entry is serialized once, for its size and for the file)."""

    recorded: bool
    kernels: dict[str, str] = field(default_factory=dict)  # executed node -> _dump of _kernel_detail
    layers: dict[str, str] = field(default_factory=dict)  # model node -> _dump of _layer_detail
    # The same entries as values, for the rare text `shown` changes.
    kernel_values: dict[str, Any] = field(default_factory=dict)
    layer_values: dict[str, Any] = field(default_factory=dict)

    def value(self) -> dict[str, Any]:
        return {"kernels": self.kernel_values, "layers": self.layer_values, "recorded": self.recorded}


def _detail_chunks(details: TrialDetails) -> list[_Chunk]:
    """The trial's kernels, each with the model-file nodes it computes, cut into chunks of about
    DETAIL_FILE_BYTES of JSON in execution order (a node two chunks need is in both)."""
    chunks: list[_Chunk] = []
    size = DETAIL_FILE_BYTES
    texts: dict[str, tuple[str, Any]] = {}  # model node -> its text and value, serialized once per trial
    for kernel in details.kernels:
        entry = _kernel_detail(kernel)
        entry_text = _dump(entry)
        layers = {}
        for key in kernel.original_nodes:
            if key in details.layers:
                if key not in texts:
                    value = _layer_detail(details.layers[key])
                    texts[key] = (_dump(value), value)
                layers[key] = texts[key]
        # The entry's size in the file: its name and text, its nodes' names and texts, and the punctuation.
        grown = len(kernel.name) + len(entry_text) + sum(len(k) + len(t) + 4 for k, (t, _) in layers.items()) + 4
        if size + grown > DETAIL_FILE_BYTES:
            chunks.append(_Chunk(details.recorded))
            size = 0
        chunk = chunks[-1]
        chunk.kernels[kernel.name] = entry_text
        chunk.kernel_values[kernel.name] = entry
        for key, (text, value) in layers.items():
            chunk.layers[key] = text
            chunk.layer_values[key] = value
        size += grown
    return chunks


def _chunk_json(chunk: _Chunk) -> str:
    """`_json` of the chunk as {"kernels": …, "layers": …, "recorded": …}, from its entries' texts (keys sorted,
    as _dump sorts them)."""
    def members(texts: dict[str, str]) -> str:  # the keys are names: strings, as _dump writes them
        return ",".join(f"{_string(k)}:{texts[k]}" for k in sorted(texts))

    text = (f'{{"kernels":{{{members(chunk.kernels)}}},"layers":{{{members(chunk.layers)}}},'
            f'"recorded":{_dump(chunk.recorded)}}}')
    return _json(chunk.value()) if shown_changes(text) else text  # a string `shown` changes: the exact route


def _kernel_detail(k: KernelDetail) -> list[Any]:
    """[op, provider, precision, input shapes, input types, output shapes, output types, model nodes, how the
    kernel was tied to them]; its time is the trial's (the trial file's nodes)."""
    return [k.op_type, k.provider, k.precision, list(k.input_shapes), list(k.input_types),
            list(k.output_shapes), list(k.output_types), list(k.original_nodes), k.mapping_method]


def _layer_detail(d: LayerDetail) -> list[Any]:
    """[op, domain, position, attributes, input shapes, input types, output shapes, output types, weights,
    FLOPs, integer ops]; attributes, types and weights null when not recorded."""
    # An attribute left at its default reads as its default (auto_pad NOTSET against none was marked a
    # difference).
    attributes = None if d.attributes is None else {**attribute_defaults(d.op_type, d.domain or ""), **d.attributes}
    return [d.op_type, d.domain, d.position, attributes, list(d.input_shapes),
            None if d.input_types is None else list(d.input_types), list(d.output_shapes),
            None if d.output_types is None else list(d.output_types),
            None if d.weights is None else list(d.weights), _num(d.flops), _num(d.int_ops)]
