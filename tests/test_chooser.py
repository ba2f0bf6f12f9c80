"""The chooser's precomputed figures (generator.analysis.chooser, generator.site.chooser_page) on the recorded
results of tests/support/compare.py: the same numbers as the compare analysis for the same two trials, every
pair of trials covered, and data files that are one loader call each."""

from __future__ import annotations

import json
import re

import pytest
from support.compare import write_compare_results

from generator.analysis.chooser import chooser_data, pair_figures
from generator.analysis.compare import compare_versions
from generator.results.store import load_experiment
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
    by_layer = {k.layer: k.ratio for k in c.kernels}
    assert [by_layer[r.layer] for r in pair.rows] == list(mine.rows)
    assert {t.op_type: t.ratio for t in mine.layer_types} == {t.op_type: t.ratio for t in c.layer_types}
    card = next(t for t in data.trials if t.trial_key == c.a_trial_key)
    assert card.timing == c.timings[0]


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


def test_figures_of_a_model_with_many_layers_are_split_across_files(recorded):
    from dataclasses import replace

    from generator.site.chooser_page import FIGURES_FILE_BYTES, ROW_BYTES, figures_per_file

    data, _ = chooser_data(recorded)
    assert figures_per_file(data) >= len(data.trials)  # a small model: one file per trial as A
    many = replace(data, pairs=(replace(data.pairs[0], rows=data.pairs[0].rows * 10_000),))
    per_file = figures_per_file(many)
    assert per_file * ROW_BYTES * len(many.pairs[0].rows) <= FIGURES_FILE_BYTES or per_file == 1


def test_one_version_offers_its_configurations(recorded):
    from dataclasses import replace

    only = replace(recorded, trials=recorded.trials[recorded.trials["version"] == "fp32"])
    data, ctx = chooser_data(only)
    assert data.versions == ("fp32",) and data.pairs == () and data.default is None
    figures = dict(pair_figures(ctx, data))
    assert len(figures) == len(data.trials) >= 2
    first = figures[data.trials[0].trial_key][0]
    assert first.latency is not None and first.rows == () and first.layer_types


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
