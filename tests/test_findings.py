"""Findings (generator.analysis.findings, docs/findings.md): the false-discovery rule, rankings and estimates
over profiling processes, and what a recorded experiment's pages state as settled."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.compare import write_compare_results

from generator.analysis.findings import Finding, settle, uncertain_trials
from generator.analysis.findings.profile import _ranks
from generator.analysis.profile_times import ProcessTimes, summed
from generator.analysis.summaries import TrialSummary
from generator.results.evidence import fdr_settled, one_side_test
from generator.results.store import load_experiment
from generator.site import pages as site_pages


def test_benjamini_hochberg_settles_the_smallest_p_values_up_to_the_largest_rank_that_passes():
    settled, needed = fdr_settled([0.001, 0.04, 0.03, 0.2, None, 0.012])
    # Sorted 0.001 0.012 0.03 0.04 0.2 against 0.01 0.02 0.03 0.04 0.05: rank 4 is the last that passes.
    assert settled == [True, True, True, False, False, True]
    assert needed == pytest.approx(0.04)
    assert fdr_settled([0.3, 0.5])[0] == [False, False] and fdr_settled([])[0] == []


def test_a_report_of_a_hundred_ties_rarely_settles_even_one():
    """Issue 34: "a page of 100 findings does not carry five flukes marked settled". A seeded simulation: reports
    of 100 rankings of two identical items (three profiling processes each, spread like this VM's), ranked by
    the data as the pages rank them: at 95 % each, five flukes a report; after the false-discovery rule, a
    report holds any settled fluke at most about 5 % of the time. The p-values are ProcessTimes.versus's,
    vectorized (checked against it on the first report)."""
    from scipy.special import stdtr

    rng = np.random.default_rng(34)
    reports, n = 400, 3
    a, b = rng.lognormal(math.log(100.0), 0.08, (2, reports, 100, n))
    upper = np.where(np.median(a, -1, keepdims=True) >= np.median(b, -1, keepdims=True), a, b)
    lower = np.where(upper == a, b, a)
    d = np.log(lower / upper)  # as versus: log(lower / upper), below 0 when the upper one is larger
    t = d.mean(-1) / (d.std(-1, ddof=1) / math.sqrt(n))
    p = np.minimum(1.0, 2 * stdtr(n - 1, t))  # LogTest.p_below(0): the two-sided tail
    for i in range(5):
        check = ProcessTimes(1.0, tuple(upper[0, i])).versus(ProcessTimes(1.0, tuple(lower[0, i]))).p_below(0.0)
        assert check == pytest.approx(p[0, i])
    raw = float((p <= 0.05).sum(-1).mean())
    settled_any = sum(any(fdr_settled(list(row))[0]) for row in p) / reports
    assert 3.5 <= raw <= 6.5  # about five flukes a report at 95 % alone
    assert settled_any <= 0.065


def _times(value: float, spread: float = 0.02) -> ProcessTimes:
    return ProcessTimes(value, (value * (1 - spread), value, value * (1 + spread)))


TRIAL = TrialSummary(**{**{f: None for f in TrialSummary.__dataclass_fields__}, "trial_key": "k", "version": "v",
                        "config_label": "b1 t2 c1", "profile_processes": 3, "noisy": False, "noise_reasons": ()})


def test_ranks_are_settled_where_neighbours_are_apart_and_near_ties_say_so():
    items = [("conv1", _times(800.0)), ("conv2", _times(400.0, 0.01)), ("conv3", _times(398.0, 0.03)),
             ("relu", _times(20.0)), ("flatten", _times(2.0))]
    found = settle(_ranks("p/layer", "layer_rank", "profile:v", items, 5, "layer", None, TRIAL))
    by_rank = {f.id.rsplit("/", 1)[-1]: f for f in found.findings}
    assert [f.answer for f in found.findings] == ["conv1", "conv2", "conv3", "relu", "flatten"]
    assert by_rank["1"].settled and by_rank["5"].settled
    assert not by_rank["2"].settled and not by_rank["3"].settled  # 400 µs and 398 µs: a tie
    assert by_rank["2"].reason == "conv2 and conv3 are within each other's intervals"
    one = settle(_ranks("p/layer", "layer_rank", "profile:v", items, 5, "layer", "one profiling process", TRIAL))
    assert not any(f.settled for f in one.findings) and one.findings[0].reason == "one profiling process"


def test_summed_times_add_process_by_process_and_an_estimate_is_settled_when_known_to_five_percent():
    total = summed([_times(100.0), _times(50.0)])
    assert total.value == 150.0 and total.per_process == pytest.approx((147.0, 150.0, 153.0))
    low, high = total.interval()
    assert low < 150.0 < high and high / low < 1.25  # three processes: Student's t at 2 degrees of freedom
    narrow = one_side_test([1.38, 1.40, 1.41])
    wide = one_side_test([1.1, 1.4, 1.9])
    centre, five = math.log(1.4), math.log1p(0.05)
    assert narrow.p_within(centre - five, centre + five) < 0.05 < wide.p_within(centre - five, centre + five)


def test_blocked_findings_are_never_settled_and_a_correction_miss_says_what_it_needed():
    items = [Finding(f"x/{i}", "k", "overview", "s", "a", p_value=0.0) for i in range(9)]
    items += [Finding(f"y/{i}", "k", "overview", "s", "a", p_value=0.3, weakest="within") for i in range(10)]
    items += [Finding("x/blocked", "k", "overview", "s", "a", p_value=0.0, blocked="too few processes"),
              Finding("x/near", "k", "overview", "s", "a", p_value=0.049, weakest="b and c overlap")]
    found = settle(items)
    assert found.settled == 9
    assert found.get("x/blocked").reason == "too few processes" and found.get("y/0").reason == "within"
    assert found.get("x/near").reason.startswith("b and c overlap: p = 0.049, clear at 95 % alone but not after "
                                                 "the correction for the 20 findings of this report")
    with pytest.raises(ValueError, match="finding ids repeat"):
        settle(items + items[:1])


def test_a_trial_is_uncertain_when_its_interval_is_the_widest_of_every_unsettled_comparison():
    a, b = Finding("1", "k", "o", "s", "x", trials=("wide", "narrow")), Finding("2", "k", "o", "s", "y",
                                                                                 trials=("wide",))
    flags = uncertain_trials(settle([a, b]), {"wide": 1.41, "narrow": 0.04})
    assert set(flags) == {"wide"} and "(± 141%)" in flags["wide"]
    assert uncertain_trials(settle([Finding("1", "k", "o", "s", "x", p_value=0.0, trials=("wide",))]),
                            {"wide": 1.41}) == {}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The real recorded run (tests/data, generator.analysis's compare fixture) rendered into pages."""
    folder = write_compare_results(tmp_path_factory.mktemp("findings"))
    view = site_pages.site_view(load_experiment(folder), "recorded")
    pages = site_pages.view_pages(site_pages.template_env(), view, ["overview", "profiles", "compare"])
    return {p.path: p for p in pages}, view


def test_findings_json_lists_every_finding_the_pages_state_with_its_page_and_evidence(recorded):
    pages, view = recorded
    (path, text), = [(f, t) for p in pages.values() for f, t in p.files if f.endswith("findings.json")]
    data = json.loads(text)
    assert data["findings_version"] == 2 and data["count"] == len(data["findings"]) == len(view.findings.findings)
    assert data["settled"] == sum(f["settled"] for f in data["findings"])
    kinds = {f["kind"] for f in data["findings"]}
    assert {"best_throughput", "best_latency", "sweet_spot", "fastest_version", "verdict"} <= kinds
    folder = path.rsplit("/", 1)[0]
    chosen = [f for f in data["findings"] if f["page"] == "choose.md"]  # the chooser's, one rule with the rest
    assert chosen and all(f["id"].startswith("choose/") for f in chosen)
    for f in data["findings"]:
        assert f"{folder}/{f['page']}" in pages or f in chosen  # the page stating it exists (this build's)
        assert (f["reason"] is None) == f["settled"]
        assert set(f["evidence"]) == {"interval", "fact", "p_value", "needed", "weakest", "blocked", "figures",
                                      "trials"}
    summary = pages[f"{folder}/index.md"].markdown
    overview = [f for f in data["findings"] if f["page"] == "index.md"]
    settled = sum(f["settled"] for f in overview)
    assert f'!!! abstract "{settled} of {len(overview)} findings on this page settled"' in summary


def test_a_trial_that_stopped_on_its_confidence_sequence_is_judged_on_it():
    """A trial measured until its confidence sequence looked narrow enough (ci_sequential) makes its own claims
    ("under the threshold") on that sequence, whose p-value matches its interval as Student's does."""
    from generator.results import sequential

    for n in (3, 5, 10, 30):
        m = sequential.multiplier(n, 0.95)
        assert sequential.p_value(m, n) == pytest.approx(0.05)  # at the edge of the 95 % sequence
        assert sequential.p_value(m * 1.2, n) < 0.05 < sequential.p_value(m * 0.8, n)
    figures = [10.0, 10.3, 9.8, 10.1, 10.2, 9.9]
    fixed, anytime = one_side_test(figures), one_side_test(figures, sequential=True)
    bound = math.log(10.4)  # "under 10.4 ms": clear on t, not on the wider sequence
    assert fixed.p_below(bound) < 0.05 < anytime.p_below(bound)
    low, high = anytime.interval()
    t_low, t_high = fixed.interval()
    assert low < t_low and high > t_high
    assert anytime.p_above(bound) == 1.0  # the data points the other way
    assert sequential.p_value(math.inf, 2) == pytest.approx(21 ** -0.5)  # two figures never reach 95 %


def test_facts_are_settled_outside_the_false_discovery_rule_and_speed_ups_need_their_saving_known():
    from generator.analysis.findings.profile import speedup_tolerance

    tested = [Finding(f"t/{i}", "k", "o", "s", "a", p_value=p) for i, p in enumerate((0.01, 0.02, 0.04, 0.3))]
    facts = [Finding(f"f/{i}", "roofline", "o", "s", "memory-bound", fact=True) for i in range(20)]
    found = settle(tested + facts + [Finding("f/blocked", "roofline", "o", "s", "x", fact=True, blocked="why")])
    assert all(found.get(f"f/{i}").settled for i in range(20)) and not found.get("f/blocked").settled
    # Counted as tests, twenty p = 0 facts would have settled t/2 (0.04 ≤ 0.05 × 23 / 24): they are not tests.
    assert [found.get(f"t/{i}").settled for i in range(4)] == [True, True, False, False]
    assert found.get("t/2").reason.endswith("for the 4 findings of this report (needed p ≤ 0.025)")
    assert speedup_tolerance(2.0) == pytest.approx(0.1)  # ± 5 % of the figure
    assert speedup_tolerance(1.1) == pytest.approx(0.02)  # ± 20 % of the 10 % it saves
    assert speedup_tolerance(1.01) == pytest.approx(0.005)  # at least ± 0.005×


def test_an_unbounded_interval_is_the_widest_when_flagging_uncertain_trials():
    found = settle([Finding("1", "k", "o", "s", "x", trials=("unbounded", "narrow"))])
    flags = uncertain_trials(found, {"unbounded": math.inf, "narrow": 0.04})
    assert flags == {"unbounded": "its interval (unbounded) is the widest of every comparison it takes part in, "
                                  "and none of those 1 finding is settled"}
    assert uncertain_trials(found, {"unbounded": None, "narrow": 0.04}) == {}  # no interval recorded: no flag


def test_profiling_processes_pair_only_in_the_same_rounds_of_one_run():
    from dataclasses import replace

    from generator.analysis.findings import profiles_paired

    a = replace(TRIAL, run_id="r1", profile_rounds=(0, 1, 2))
    assert profiles_paired(a, replace(a, version="w"))
    assert not profiles_paired(a, replace(a, profile_rounds=(0, 2, 3)))  # a process of round 1 dropped
    assert not profiles_paired(a, replace(a, run_id="r2"))  # measured minutes apart
    assert not profiles_paired(a, replace(a, profile_rounds=(-1, 1, 2)))  # a separate pass outside the rounds
    older = replace(a, profile_rounds=None)  # rounds not recorded: the same run and count of processes
    assert profiles_paired(older, replace(older, version="w"))
    assert not profiles_paired(older, replace(older, profile_processes=2))


def test_a_measurement_process_charges_the_budget_until_it_wrote_its_figures():
    import time

    from generator.runner.children import ChildResult, measured_s

    started = time.monotonic() - 10.0
    # Killed while profiling after 4 s of measuring: only those 4 s count.
    assert measured_s(started, ChildResult({"measured_until": started + 4.0}, None)) == pytest.approx(4.0)
    # No figures written (a crash before): the whole wall time, less any profiling it reported.
    assert measured_s(started, ChildResult({}, "crashed")) == pytest.approx(10.0, abs=0.5)
    assert measured_s(started, ChildResult({}, None, {"profile_s": 3.0})) == pytest.approx(7.0, abs=0.5)
