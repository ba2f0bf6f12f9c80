"""The shared test helpers of tests/support/ write what they promise: the synthesized site results are readable
through the results store, and their payload variant carries hostile text where results may carry it."""

from __future__ import annotations

import json
import re

from support.results import EXPERIMENT, NODES, PAYLOAD, write_results

from generator.results.store import find_experiments, load_experiment


def test_fixture_is_readable_through_the_store(tmp_path):
    folder = write_results(tmp_path)
    assert find_experiments(tmp_path) == [folder]
    results = load_experiment(folder)
    assert len(results.trials) == 8
    assert set(results.trials["status"]) == {"ok", "failed"}
    assert results.spec.latency_threshold_ms == 12.0
    assert len(results.nodes) == 7 * (len(NODES) + 1)
    assert json.loads((folder / "specs").glob("*.json").__next__().read_text())["name"] == EXPERIMENT


def test_payload_fixture_carries_hostile_text(tmp_path):
    results = load_experiment(write_results(tmp_path, payload=True))
    assert PAYLOAD in set(results.trials["version"])
    assert results.nodes["node_name"].str.contains("<script>", regex=False).any()


def test_make_tests_quiet_part_collects_every_quiet_test():
    """`pytest -m quiet` reads only the modules of QUIET_TESTS_IN (tests/conftest.py): a test marked quiet in
    any other module would silently never run."""
    from support.cli import ROOT
    from support.tiers import QUIET_TESTS_IN

    marker = re.compile(r"^\s*@pytest\.mark\.quiet\b", re.MULTILINE)
    marking = {p.name for p in (ROOT / "tests").rglob("test_*.py") if marker.search(p.read_text())}
    assert marking == QUIET_TESTS_IN, marking ^ QUIET_TESTS_IN
