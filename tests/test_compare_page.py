"""Compare pages and `perfsite compare`: words for ratios, the page's sections, escaping, snapshots of the
pages built from a real recorded results directory (tests/support/compare.py), and the terminal output.

Regenerate the snapshots after an intended change with
`PERFSITE_UPDATE_SNAPSHOTS=1 pytest tests/test_compare_page.py` and review the diff.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
from pathlib import Path

import pytest
from support.cli import check_snapshots, perfsite
from support.compare import PAYLOAD, sample_comparison, write_compare_results

from generator.analysis import records_compare as R
from generator.cli.compare import compare_command, format_comparison, parse_config, safe, table
from generator.errors import PerfsiteError
from generator.results.store import load_experiment
from generator.site import compare_page as CP
from generator.site.pages import experiment_pages, experiment_view, template_env
from generator.spec import Spec, spec_from_json, spec_to_json

SNAPSHOTS = Path(__file__).parent / "snapshots" / "compare"
UPDATE = os.environ.get("PERFSITE_UPDATE_SNAPSHOTS") == "1"
CHART_RE = re.compile(r'<script type="application/json" id="([a-z0-9-]+)">(.*?)</script>')


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The recorded experiment (tiny-compare), loaded."""
    return load_experiment(write_compare_results(tmp_path_factory.mktemp("results")))


@pytest.fixture(scope="module")
def view(recorded):
    return experiment_view(recorded, "tiny-compare")


def _pages(view) -> dict:
    """The experiment's overview and compare pages, by path."""
    env = template_env()
    return {p.path: p for p in experiment_pages(env, view) + CP.compare_pages(env, view)}


@pytest.fixture(scope="module")
def rendered(view):
    return _pages(view)


def _prose(markdown: str) -> str:
    """A page without its inline chart specs."""
    return CHART_RE.sub("", markdown)


def _sample_page(view, **changes) -> str:
    link = CP.compare_links(view)[0]
    return CP.compare_page(template_env(), view, sample_comparison(**changes), link).markdown


# Words for ratios ------------------------------------------------------------------------------------------

def test_latency_words_invert_the_ratio_and_its_interval():
    faster = R.RatioCI(0.55, 0.52, 0.58, True)
    assert CP.latency_words(faster) == "B is 1.8× faster (95 % CI 1.7–1.9)"
    slower = R.RatioCI(1.31, 1.22, 1.4, True)
    assert CP.latency_words(slower) == "B is 1.31× slower (95 % CI 1.22–1.40)"
    same = R.RatioCI(0.99, 0.95, 1.03, False)
    assert CP.latency_words(same).startswith("no significant difference in latency")
    assert "%" not in CP.latency_words(same).replace("95 %", "")  # never a percentage when not significant


def test_throughput_words_and_notes():
    more = R.RatioCI(2.4, 2.2, 2.6, True, note="1 measurement process per version")
    assert CP.throughput_words(more) == ("B has 2.4× A's throughput (95 % CI 2.2–2.6; 1 measurement process "
                                         "per version)")
    assert CP.throughput_words(None).startswith("no throughput comparison")
    assert CP.ratio_cell(R.RatioCI(0.98, 0.9, 1.05, False)) == ("0.98", "no significant difference")
    assert CP.ratio_cell(R.RatioCI(0.5, 0.45, 0.55, True)) == ("0.50", "0.45–0.55")
    assert CP.ratio_cell(None) == ("—", "—")


def test_a_side_that_fell_back_to_every_request_is_not_judged_on_the_page_or_in_the_terminal(view):
    """A compared trial whose processes kept no clean requests: the page and `perfsite compare` said "B is 10x
    faster (95 % CI 6–19)". Both show the figures and say "not compared", with the note on why."""
    why = "only 0 of 3 measurement processes of A kept enough clean (not preempted) requests"
    note = ("Only 0 of 3 measurement processes of A (fp32 at b1 t1 c1) kept enough clean (not preempted) requests: "
            "its figures fall back to every request, preempted ones included, and are shown without a verdict "
            "(not compared). Measure again with a larger measure.budget_s, or on a quieter machine.")
    changes = {"latency_ratio": R.RatioCI(0.1, 0.05, 0.16, False, unjudged=why),
               "throughput_ratio": R.RatioCI(7.2, 4.5, 11.5, False, unjudged=why), "notes": (note,)}
    page = html.unescape(_prose(_sample_page(view, **changes)))
    assert (f"**Latency (p90):** not compared: {why} (B / A 0.10 from every request, preempted ones included)."
            in page)
    assert f"**Throughput:** not compared: {why} (B / A 7.2 from every request, preempted ones included)." in page
    assert note in page and "faster" not in page.split("## Inference results")[0]
    text = format_comparison(sample_comparison(**changes), "cnn")
    assert f"not compared: {why} (B / A 0.10 from every request" in text and f"note: {note}" in text
    assert "95 % CI 0.05" not in text


def test_precision_counts_in_a_fixed_order():
    assert CP.precision_counts({"INT8": 3, "FP32": 1, "weird": 2, "mixed": 0}) == "FP32 1, INT8 3, weird 2"
    assert CP.precision_counts({}) == "—"


# Page sections from a hand-made Comparison ----------------------------------------------------------------

def test_page_says_plainly_when_no_configuration_meets_the_threshold(view):
    none = R.SweetSpot(None, None, 0.5, "every configuration is slower than 0.5 ms")
    text = _prose(_sample_page(view, threshold_ms=0.5, overall_sweet_spot=none))
    assert '!!! warning "No configuration meets the latency threshold"' in text
    assert "within 0.500 ms" in text and "every configuration is slower than 0.5 ms" in text
    assert "**Sweet spot**" not in text


def test_page_warns_when_outputs_differ_beyond_the_tolerance(view):
    bad = R.AgreementRow("int8", "fp32", "logits", 0.4, 0.9, 0.93, 0.5, within_tolerance=False)
    text = _prose(_sample_page(view, agreement=(bad,)))
    assert "**B's outputs differ from A's beyond the tolerance** (max abs ≤ 0.05 and cosine ≥ 0.999)" in text
    assert '!!! warning "Speed is not everything: B\'s outputs changed"' in text
    assert "| **no** |" in text


def test_page_names_a_chosen_b_and_the_compared_configuration(view):
    text = _prose(_sample_page(view, b_was_default=True, b_reason="B is int8: the best throughput."))
    assert "B was not named in the spec. B is int8&#58; the best throughput." in text
    assert "**b1 t1 c1** (batch 1 · threads 1 · concurrency 1). It is A&#39;s sweet spot" in text
    assert text.startswith('---\ntitle: "fp32 vs the best, int8"')
    reason = _prose(_sample_page(view, config_reason="No configuration was profiled in both versions."))
    assert "concurrency 1). No configuration was profiled in both versions." in reason
    assert "Other configurations both versions ran: b4 t1 c1." in text


def test_low_matched_time_is_a_warning(view):
    text = _prose(_sample_page(view, coverage=R.MatchCoverage(0.91, 0.97)))
    assert '!!! warning "Matched time: A 91.0%, B 97.0%"' in text


def test_untrusted_names_stay_text(view):
    hostile = sample_comparison()
    kernels = tuple(dataclasses.replace(k, layer=k.layer + PAYLOAD, op_type=k.op_type + PAYLOAD,
                                        executed_a=k.executed_a + (PAYLOAD,)) for k in hostile.kernels)
    layer_types = tuple(dataclasses.replace(r, op_type=r.op_type + PAYLOAD) for r in hostile.layer_types)
    advice = (R.Advice("x", "warning", PAYLOAD),)
    text = _prose(_sample_page(view, kernels=kernels, layer_types=layer_types, advice=advice,
                               notes=(PAYLOAD,)))
    for raw in ("<script", "<img", "](javascript", "{{ 7*7 }}", "*b*"):
        assert raw not in text
    assert "&#60;script&#62;" in text
    charts = "".join(spec for _, spec in CHART_RE.findall(_sample_page(view, layer_types=layer_types)))
    assert "<" not in charts and "\\u003cscript\\u003e" in charts


# Pages built from the recorded results --------------------------------------------------------------------

def _generated(rendered) -> dict[str, str]:
    out = {}
    for path, page in rendered.items():
        if "/compare-" not in path:
            continue
        name = path.rsplit("/", 1)[1]
        out[name] = page.markdown
        for chart_id, spec in CHART_RE.findall(page.markdown):
            (chart,) = json.loads(spec)
            out[f"{name.removesuffix('.md')}.{chart_id}.json"] = json.dumps(chart, indent=1, sort_keys=True,
                                                                             ensure_ascii=False) + "\n"
    return out


def test_compare_pages_and_charts_match_snapshots(rendered):
    generated = _generated(rendered)
    assert {"compare-fp32-vs-int8-static.md", "compare-fp32-vs-best.md"} <= set(generated)
    check_snapshots(generated, SNAPSHOTS)


def test_generation_is_byte_identical_across_runs(tmp_path, rendered):
    again = _pages(experiment_view(load_experiment(write_compare_results(tmp_path)), "tiny-compare"))
    assert _generated(again) == _generated(rendered)


def test_the_experiment_page_links_every_compare_page(rendered):
    overview = rendered["reports/tiny-compare/index.md"].markdown
    assert ("**Compare versions:** [fp32 vs int8-static](compare-fp32-vs-int8-static.md) · "
            "[fp32 vs the best version under the latency threshold](compare-fp32-vs-best.md)") in overview


def test_recorded_pages_show_every_section(rendered):
    text = _prose(rendered["reports/tiny-compare/compare-fp32-vs-int8-static.md"].markdown)
    for heading in ("## Verdict", "## Inference results", "## Inference time", "## Performance summary by layer "
                    "type", "## Kernel-level performance", "### Quantization overhead", "### Pareto frontier",
                    "### Runtime precision", "### Advice"):
        assert heading in text
    assert re.search(r"Matched time: A \d+\.\d%, B \d+\.\d%", text)
    assert re.search(r"B is [\d.]+× (faster|slower) \(95 % CI|no significant difference in latency", text
                     .replace("&#40;", "(").replace("&#41;", ")"))
    best = _prose(rendered["reports/tiny-compare/compare-fp32-vs-best.md"].markdown)
    assert "B was not named in the spec. B is int8-static&#58; the highest throughput" in best


def test_payload_in_recorded_results_stays_text(tmp_path):
    hostile = experiment_view(load_experiment(write_compare_results(tmp_path, payload=True)), "tiny-compare")
    compare = CP.compare_pages(template_env(), hostile)
    assert compare
    for page in compare:
        text = _prose(page.markdown)
        assert "<script" not in text and "<img" not in text and "](javascript" not in text
        assert "&#60;script&#62;" in text  # the hostile names are shown, as text


# `perfsite compare` -----------------------------------------------------------------------------------------

def test_parse_config_types_values():
    assert parse_config("batch=1, threads=2,spinning=off,opt=all,x=0.5") == {
        "batch": 1, "threads": 2, "spinning": False, "opt": "all", "x": 0.5}
    assert parse_config(None) is None and parse_config(" ") is None
    with pytest.raises(PerfsiteError, match="is not KEY=VALUE"):
        parse_config("batch")
    # `--config batch=1,batch=2` (and `--config batch=1 --config batch=2`, joined) compared at b2 without a word.
    with pytest.raises(PerfsiteError, match=re.escape("--config gives batch two values, 1 and 2 (in `--config "
                                                      "batch=…` given twice); give one value.")):
        parse_config("batch=1,threads=1,batch=2")
    assert parse_config("batch=1,batch=1") == {"batch": 1}


def test_safe_removes_terminal_control_sequences():
    assert safe("conv\x1b[2J\x07\nnext") == "conv\\x1b[2J\\x07 next"


def test_table_aligns_columns():
    lines = table(["name", "µs"], [["conv", "1,234"], ["relu", "5.00"]], [False, True])
    assert lines == ["name     µs", "----  -----", "conv  1,234", "relu   5.00"]


def test_format_comparison_says_what_the_page_says():
    text = format_comparison(sample_comparison(), "cnn")
    assert text.startswith("cnn: A = fp32, B = int8 (ratios are B / A)\n")
    assert "B is 1.8× faster (95 % CI 1.7–1.9)" in text
    assert "Sweet spot under 5.00 ms: None" not in text and "Matched time: A 99.5%, B 99.0%" in text
    assert "Quantization overhead in B: 40.0 µs, 3.6% of B's kernel time" in text
    assert "Outputs: within the spec's tolerance" in text



def test_the_figures_beside_a_verdict_say_what_they_are():
    """The table showed 1,398 vs 4,126 items/s (2.95x) beside a verdict of 2.7x with no word on why: the
    verdict is a ratio of geometric means of per-process figures, the columns pool requests or take the median
    over processes. The terminal and the page both say so."""
    text = format_comparison(sample_comparison(), "cnn")
    assert ("Verdicts are measured process by process (the ratio of the geometric means of each process's figure); "
            "the latency columns pool every request, the throughput columns are the median over processes, so their "
            "ratio can differ where the processes disagree.") in text


def test_the_inference_time_table_says_what_its_figures_are(view):
    page = " ".join(html.unescape(_prose(_sample_page(view))).split())
    assert ("The verdict's ratios are not the ratio of this table's figures: they are measured process by process, "
            "the ratio of the geometric means of each measurement process's figure (its p90 latency, its "
            "throughput), while the table's latency pools every request of a trial (its clean ones where preemption "
            "is known) and its throughput is the median over the processes.") in page


def test_compare_command_on_recorded_results(tmp_path):
    write_compare_results(tmp_path)
    text = compare_command(tmp_path, "fp32", "int8-static", "batch=1,threads=1")
    assert "tiny-compare: A = fp32, B = int8-static" in text and "Compared at b1 t1 c1" in text
    default_b = compare_command(tmp_path, "fp32", experiment="tiny-compare")
    assert "B was chosen" in default_b
    with pytest.raises(PerfsiteError, match="Version A `int4` has no successful trial"):
        compare_command(tmp_path, "int4")
    with pytest.raises(PerfsiteError, match="No experiment 'nope'"):
        compare_command(tmp_path, "fp32", experiment="nope")
    # The advice speaks of where the configuration came from: --config here, a pair's `config:` in a spec.
    with pytest.raises(PerfsiteError, match=r"Configurations of both: .*\. Name one of them with --config "
                                            r"KEY=VALUE,\.\.\. \(any subset of its axes\)"):
        compare_command(tmp_path, "fp32", "int8-static", "batch=7")
    from generator.analysis.compare import compare_versions

    with pytest.raises(PerfsiteError, match=r"Name one of them in the pair's `config:` \(any subset"):
        compare_versions(load_experiment(tmp_path / "tiny-compare"), "fp32", "int8-static", {"batch": 7})
    # --config given twice: joined, so the conflict is seen (the last one won without a word).
    twice = perfsite("compare", "--a", "fp32", "--results", str(tmp_path), "--config", "batch=1", "--config",
                     "batch=2")
    assert twice.returncode == 1 and " ".join(twice.stderr.split()) == (
        "error: --config gives batch two values, 1 and 2 (in `--config batch=…` given twice); give one value.")
    same = perfsite("compare", "--a", "fp32", "--b", "int8-static", "--results", str(tmp_path), "--config",
                    "batch=1", "--config", "threads=1")
    assert same.returncode == 0 and "Compared at b1 t1 c1" in same.stdout, same.stderr


def _spec_with(spec: Spec, **fields) -> Spec:
    """`spec` with some top-level fields replaced, validated again as a stored spec is."""
    return spec_from_json({**json.loads(spec_to_json(spec)), **fields})


def test_a_pair_that_cannot_be_compared_gets_a_page_saying_why(recorded):
    spec = _spec_with(recorded.spec, compare=[{"a": "int8-dyn", "b": "fp32"}])
    without_dyn = recorded.trials[recorded.trials["version"] != "int8-dyn"]
    results = dataclasses.replace(recorded, spec=spec, trials=without_dyn)
    (page,) = CP.compare_pages(template_env(), experiment_view(results, "tiny-compare"))
    assert page.path == "reports/tiny-compare/compare-int8-dyn-vs-fp32.md"
    assert '!!! failure "These versions cannot be compared"' in page.markdown
    assert "int8-dyn" in page.markdown and "no successful trial" in page.markdown
    # The builder's folder is not published (the page and the search index): the experiment is named instead.
    from generator.site.escape import md_text

    assert md_text(str(recorded.path)) not in page.markdown and "the results of tiny-compare" in page.markdown


def test_compare_file_names_depend_on_the_spec_only(view):
    pairs = [{"a": "fp32", "b": "int8_x", "config": {"threads": 2, "batch": 1}}, {"a": "fp32", "b": "int8_x",
                                                                               "config": {"batch": 1, "threads": 2}}]
    stored = json.loads(spec_to_json(view.results.spec))
    spec = _spec_with(view.results.spec, compare=pairs, models={
        **stored["models"], "int8_x": {"from": "fp32", "quantize": {"mode": "dynamic"}}})
    other = dataclasses.replace(view, results=dataclasses.replace(view.results, spec=spec))
    assert [link.path for link in CP.compare_links(other)] == [
        "compare-fp32-vs-int8-x-batch-1-threads-2.md", "compare-fp32-vs-int8-x-batch-1-threads-2-2.md"]
    assert CP.compare_links(other)[0].title == "fp32 vs int8_x at batch 1 · threads 2"


def test_provider_fallback_is_a_note_at_the_top(view):
    fallback = R.Advice("provider_fallback", "warning", "Provider fallback: 3 nodes ran on CPUExecutionProvider.")
    text = _prose(_sample_page(view, advice=(fallback, *sample_comparison().advice)))
    note = text.index('!!! warning "Provider fallback"')
    assert note < text.index("## Inference results")
    assert text.count("3 nodes ran on CPUExecutionProvider") == 1 and "Q/DQ overhead is 3.6" in text


def test_run_summary_prints_a_failed_trials_reason_without_control_characters(capsys):
    """A failure reason can quote a node name (onnxruntime's error names the node): untrusted text."""
    from pathlib import Path

    from generator.cli.terminal import print_run_summary
    from generator.runner.sides import RunSummary

    summary = RunSummary("tiny", Path("results/tiny"), [], 0.0)
    summary.failed.append(("fp32 b1 t1 c1", "Non-zero status code running node /evil\x1b]0;pwned\x07"))
    print_run_summary(summary)
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\x07" not in printed
    assert "failed: fp32 b1 t1 c1: Non-zero status code running node /evil\\x1b]0;pwned\\x07" in printed


def test_op_types_name_the_standard_op_and_the_kernel_that_ran_on_every_page():
    """QLinearConv on profile pages and Conv on compare pages named one thing two ways: both pages now give the
    model's op and, where onnxruntime ran another kernel, its name."""
    from generator.site.formatting import op_name

    assert op_name("QLinearConv") == "Conv (QLinearConv)" and op_name("Conv") == "Conv"
    assert op_name("Conv", ("FusedConv",), ("QLinearConv",)) == "Conv (A: FusedConv · B: QLinearConv)"
    assert op_name("Conv", ("Conv",), ("Conv",)) == "Conv"
    assert op_name("Add", (), ("QLinearAdd",)) == "Add (B: QLinearAdd)"
    # A standard op whose name only looks prefixed is itself (it read "Linear (DynamicQuantizeLinear)").
    assert op_name("DynamicQuantizeLinear") == "DynamicQuantizeLinear"
    assert op_name("MatMulInteger") == "MatMul (MatMulInteger)"
    snapshots = Path(__file__).parent / "snapshots"
    compare = (snapshots / "compare" / "compare-fp32-vs-int8-static.md").read_text()
    assert "| Conv &#40;B&#58; QLinearConv&#41; |" in compare
    assert "| Conv &#40;QLinearConv&#41; |" in (snapshots / "profile" / "cnn-profile" / "profile-int8.md").read_text()
