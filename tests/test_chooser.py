"""The chooser's precomputed figures (generator.analysis.chooser, generator.site.chooser_page) on the recorded
results of tests/support/compare.py: the same numbers as the compare analysis for the same two trials, every
pair of trials covered, data files that are one loader call each and that do not grow with pairs × layers.
The kernel rows' intervals the page script computes are checked in tests/browser/test_chooser_browser.py."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pandas as pd
import pytest
from support.compare import write_compare_results

from generator.analysis.chooser import chooser_data, pair_figures
from generator.analysis.compare import compare_versions
from generator.analysis.layer_details import details_fingerprints, trial_details
from generator.analysis.stats import z_value
from generator.results.store import load_experiment
from generator.site import chooser_page
from generator.site.chooser_page import chooser_pages
from generator.site.pages import experiment_view, template_env


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return load_experiment(write_compare_results(tmp_path_factory.mktemp("chooser") / "results"))


def test_a_pair_at_one_configuration_has_the_compare_analysis_figures(recorded):
    data, ctx = chooser_data(recorded)
    c = compare_versions(recorded, "fp32", "int8-static")
    figures = dict(pair_figures(ctx, data))[c.a_trial_key]
    mine = next(f for f in figures if f.b_key == c.b_trial_key)
    assert mine.latency == c.latency_ratio and mine.throughput == c.throughput_ratio
    pair = data.pair("fp32", "int8-static")
    assert [r.layer for r in pair.rows] == [k.layer for k in c.kernels] and pair.advice == c.advice
    assert {t.op_type: t.ratio for t in mine.layer_types} == {t.op_type: t.ratio for t in c.layer_types}
    cards = [next(t for t in data.trials if t.trial_key == key) for key in (c.a_trial_key, c.b_trial_key)]
    assert cards[0].timing == c.timings[0]
    # What the page script needs for a layer's interval is in the cards and the pair's spread: the same
    # closed form on them gives the compare analysis's intervals (the browser test checks the page itself).
    matched = [(r, k) for r, k in zip(pair.rows, c.kernels, strict=True) if k.ratio is not None]
    assert matched and mine.spread > 0
    for row, k in matched:
        (ta, se_a), (tb, se_b) = _side(cards[0], row.executed_a), _side(cards[1], row.executed_b)
        half = z_value() * math.sqrt(mine.spread ** 2 + se_a ** 2 + se_b ** 2)
        assert (tb / ta, tb / ta * math.exp(-half), tb / ta * math.exp(half)) == pytest.approx(
            (k.ratio.point, k.ratio.low, k.ratio.high), rel=1e-12)


def _side(card, names) -> tuple[float, float]:
    """A kernel row's summed time and relative standard error in one trial, as the page script sums them."""
    present = [card.nodes[n] for n in names if n in card.nodes]
    total = sum(us for us, _, _ in present)
    return total, math.sqrt(sum(std ** 2 for _, _, std in present) / card.iterations) / total


def test_every_trial_is_paired_with_every_other_at_any_configuration(recorded):
    data, ctx = chooser_data(recorded)
    n = len(data.trials)
    pairs = {(a, f.b_key) for a, figures in pair_figures(ctx, data) for f in figures}
    assert len(pairs) == n * (n - 1) and len({t.config_label for t in data.trials}) > 1
    assert len(data.pairs) == len(data.versions) * (len(data.versions) - 1)


def test_data_files_are_single_loader_calls_in_ascii(recorded):
    view = experiment_view(recorded, "tiny-compare")
    (page,) = chooser_pages(template_env(), view)
    assert page.path == "reports/tiny-compare/choose.md" and "](choose/index.js)" in page.markdown
    call = re.compile(r"perfsiteChooser\.(index|trial|pair|figures|details)\((.*)\);\n", re.S)
    for path, text in page.files:
        assert path.startswith("reports/tiny-compare/choose/") and text.isascii(), path
        m = call.fullmatch(text)
        assert m, path
        json.loads(f"[{m.group(2)}]")  # every argument is JSON
    index = json.loads(call.fullmatch(dict(page.files)["reports/tiny-compare/choose/index.js"]).group(2))
    assert index["default"] is not None and len(index["trials"]) == len(chooser_data(recorded)[0].trials)


def test_figures_files_do_not_grow_with_the_layers(recorded):
    """Every node of the recording doubled under new names doubles the kernel rows and the trial files; the
    figures of each pair of trials stay the same size (a layer's interval is computed by the page script)."""
    one, two = (_sizes(experiment) for experiment in (recorded, _doubled(recorded)))
    assert two["v"] > 1.8 * one["v"] and two["t"] > 1.8 * one["t"]
    assert abs(two["f"] - one["f"]) < 0.02 * one["f"], (one, two)


def test_a_figures_file_is_sized_by_the_layer_types_so_it_stays_under_its_limit(recorded):
    """figures_per_file's estimate of a pair's bytes bounds every pair's actual figures, so no file outgrows
    FIGURES_FILE_BYTES."""
    data, _ = chooser_data(recorded)
    (page,) = chooser_pages(template_env(), experiment_view(recorded, "tiny-compare"))
    types = max(len(c.op_types) for c in data.trials)
    for path, text in page.files:
        if path.rsplit("/", 1)[1].startswith("f-"):
            pairs = len(json.loads(text[text.index("{"):text.rindex("}") + 1]))
            assert len(text) / pairs <= chooser_page.PAIR_BYTES + chooser_page.TYPE_BYTES * types, path
    assert chooser_page.figures_per_file(data) * (chooser_page.PAIR_BYTES + chooser_page.TYPE_BYTES * types) \
        <= chooser_page.FIGURES_FILE_BYTES


def _sizes(experiment) -> dict[str, int]:
    """Bytes of the chooser's data files by kind (v, t, f, d)."""
    (page,) = chooser_pages(template_env(), experiment_view(experiment, "tiny-compare"))
    sizes = dict.fromkeys("vtfdi", 0)
    for path, text in page.files:
        sizes[path.rsplit("/", 1)[1][0]] += len(text)
    return sizes


def _doubled(experiment):
    """The experiment with a renamed twin of every executed node, model node and weight (twice the layers)."""
    twin = experiment.nodes.copy()
    for column in ("node_name", "parent"):
        twin[column] = twin[column] + "/twin"  # a missing parent stays missing
    for column in ("original_nodes", "weights"):
        twin[column] = twin[column].map(lambda names: tuple(f"{n}/twin" for n in names))
    twin["exec_order"] += int(experiment.nodes["exec_order"].max()) + 1
    return replace(experiment, nodes=pd.concat([experiment.nodes, twin], ignore_index=True))


def test_one_version_offers_its_configurations(recorded):
    from dataclasses import replace

    only = replace(recorded, trials=recorded.trials[recorded.trials["version"] == "fp32"])
    data, ctx = chooser_data(only)
    assert data.versions == ("fp32",) and data.pairs == () and data.default is None
    figures = dict(pair_figures(ctx, data))
    assert len(figures) == len(data.trials) >= 2
    first = figures[data.trials[0].trial_key][0]
    assert first.latency is not None and first.spread is not None and first.layer_types


def test_layer_details_are_loaded_per_chunk_and_shared_by_trials_of_the_same_shapes(recorded):
    view = experiment_view(recorded, "tiny-compare")
    (page,) = chooser_pages(template_env(), view)
    files = dict(page.files)
    args = {path: json.loads("[" + text[text.index("(") + 1:-3] + "]") for path, text in files.items()}
    details = {a[0]: a[1] for path, a in args.items() if "/choose/d-" in path}
    trials = [a[1] for path, a in args.items() if "/choose/t-" in path]
    used = {node[2] for t in trials for node in t["nodes"].values()}
    assert used == set(details)  # every executed node points at a written chunk, and no chunk is unused
    # The recording has 2 configurations of threads per batch size: their trials share the details.
    assert len(details) < len(trials)
    for chunk in details.values():
        assert chunk["recorded"] is False  # recorded before layers held attributes and weights (schema 2)
        # A chunk carries the model nodes of its own kernels, no other (the recording has no layers rows; the
        # quickstart browser test opens panels of a real run that has them).
        assert set(chunk["layers"]) <= {node for kernel in chunk["kernels"].values() for node in kernel[7]}
        assert all(len(kernel) == 9 for kernel in chunk["kernels"].values())


def test_trials_with_one_details_fingerprint_have_the_same_details(recorded):
    """The chooser cuts details into chunks once per fingerprint: equal fingerprints must mean equal details,
    and the recording's trials of one version and batch size (two thread counts) share one."""
    fingerprints = details_fingerprints(recorded.nodes, recorded.layers)
    contents: dict[tuple, set[str]] = {}
    for key, fingerprint in fingerprints.items():
        d = trial_details(key, recorded.nodes, recorded.layers)
        contents.setdefault(fingerprint, set()).add(repr((d.recorded, d.kernels, sorted(d.layers.items()))))
    assert all(len(c) == 1 for c in contents.values()) and len(contents) < len(fingerprints)
    assert len(set().union(*contents.values())) == len(contents)  # and different fingerprints, different details


def test_a_trial_whose_figures_fell_back_to_every_request_gets_no_verdict_in_the_chooser(tmp_path):
    """A trial with no process that kept enough clean requests (a busy machine): the chooser said "B is 10x
    faster (95 % CI 6–19)" where `perfsite diff` calls it not comparable. Its pairs say "not compared" and why."""
    folder = write_compare_results(tmp_path / "results")
    c = compare_versions(load_experiment(folder), "fp32", "int8-static")
    exp = load_experiment(folder)  # before any per-trial lookup: those index the tables once
    # Every request of A's trial preempted by a neighbour, the others clean (results schema 2).
    exp.trials["preemption_known"] = True
    exp.latencies["run_delay_ms"] = exp.latencies["latency_ms"].where(
        exp.latencies["trial_key"] == c.a_trial_key, 0.0)
    data, ctx = chooser_data(exp)
    figures = dict(pair_figures(ctx, data))[c.a_trial_key]
    mine = next(f for f in figures if f.b_key == c.b_trial_key)
    shown = chooser_page._figures(mine)
    processes = int(exp.processes["trial_key"].eq(c.a_trial_key).sum())
    why = f"only 0 of {processes} measurement processes of A kept enough clean (not preempted) requests"
    assert shown["latencyText"].startswith(f"not compared: {why} (B / A ")
    assert shown["throughputText"].startswith(f"not compared: {why} (B / A ")
    assert shown["latency"][3] is False and any("shown without a verdict (not compared)" in n for n in shown["notes"])
    # No layer verdicts either: layer types give their ratio alone (the page script shows "not compared"), and
    # the pair is marked so that its kernel rows do the same; a judged pair carries no such mark.
    assert shown["unjudged"] is True and shown["spread"] is None
    assert shown["types"] and all(ratio == 0 or len(ratio) == 1 for _, ratio in shown["types"])
    judged = chooser_page._figures(next(f for f in dict(pair_figures(ctx, data))[c.b_trial_key]
                                        if f.b_key != c.a_trial_key))
    assert "unjudged" not in judged and any(ratio != 0 and len(ratio) == 3 for _, ratio in judged["types"])
    card = next(t for t in data.trials if t.trial_key == c.a_trial_key)
    assert card.timing.note.startswith("from every request, preempted ones included")
