"""Results of older schema versions read by today's perfsite: tests/data/v1/v1-sample is a real quick-mode
`perfsite run` written by results schema 1 (perfsite 0.1.0, commit 44be8e9), read through the migration of
generator.results.migrate, decoded as every experiment is (generator.results.cells) and turned into pages
beside an experiment of today's version."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from generator.errors import ResultsError
from generator.results.migrate import profile_iterations_before_v4
from generator.results.schema import METADATA_KEY, SCHEMA_VERSION, column_names
from generator.results.store import TRIAL_TABLES, ResultsDir, TrialFiles, find_experiments, load_experiment
from generator.site.pages import compare_pages, experiment_pages, experiment_view, template_env
from generator.spec import Spec

V1 = Path(__file__).parent / "data" / "v1" / "v1-sample"


@pytest.fixture(scope="module")
def v1():
    return load_experiment(V1)


def test_the_recording_is_schema_1_and_whole():
    versions = {pq.ParquetFile(f).schema_arrow.metadata[METADATA_KEY] for f in V1.glob("*/*.parquet")}
    assert versions == {b"1"}
    assert {p.name for p in V1.iterdir()} == {"trials", "processes", "latencies", "nodes", "layers", "agreement",
                                              "timeline", "environments", "runs", "specs"}


def test_v1_tables_are_read_in_todays_schema_with_profile_iterations_from_the_stored_spec(v1):
    assert list(v1.trials.columns) == column_names("trials") and v1.problems == ()
    assert isinstance(v1.spec, Spec) and v1.spec.measure.profile_iterations == 2
    # Both trials were profiled in quick mode with the spec's 2 inferences (under the quick cap of 3).
    assert dict(zip(v1.trials["version"], v1.trials["profile_iterations"], strict=True)) == {"fp32": 2, "int8": 2}
    assert v1.trials["preemption_known"].isna().all()  # v1 read no run-delay: not recorded
    # The rule for other rows: the quick cap, and no count without a profiled pass.
    spec = {"measure": {"profile_iterations": 20}}
    row = {"spec_sha256": "s", "profiled": True, "quick": True}
    assert profile_iterations_before_v4(row, lambda sha: spec) == 3
    assert profile_iterations_before_v4({**row, "quick": False}, lambda sha: spec) == 20
    assert profile_iterations_before_v4({**row, "profiled": False}, lambda sha: spec) is None
    assert profile_iterations_before_v4(row, lambda sha: None) is None  # its spec lost: unknown


def test_a_one_process_profile_keeps_the_spread_of_its_inferences(v1):
    """Before schema 5 a profile came from one process: a node's spread is that of its inferences (dur_std_us),
    over its profiled inferences, not a spread of 0 over one process that would make layer ratios certain."""
    from generator.results.profiled import spread_count

    nodes = v1.nodes[v1.nodes["dur_std_us"] > 0]
    assert len(nodes) and (nodes["dur_process_std_us"] == nodes["dur_std_us"]).all()
    assert set(v1.trials["profile_processes"]) == {1}
    assert [spread_count(p, i) for p, i in zip(v1.trials["profile_processes"], v1.trials["profile_iterations"],
                                                 strict=True)] == [2, 2]
    assert spread_count(3, 20) == 3 and spread_count(None, None) == 1


def test_v1_list_and_shape_cells_are_decoded_once_at_load(v1):
    first = v1.nodes[v1.nodes["node_name"] == "input_QuantizeLinear"].iloc[0]
    assert first["input_shapes"] == ((1, 3, 64, 64),) and first["output_shapes"] == ((1, 3, 64, 64), (), ())
    assert first["output_types"] == ("uint8", "float", "uint8")
    assert first["original_nodes"] == ("input_QuantizeLinear",) and first["weights"] == ()
    layer = v1.layers.iloc[0]
    assert isinstance(layer["input_shapes"], tuple)
    # Schema 1 recorded no attributes, element types or weight details: not recorded, not empty.
    assert layer["attributes"] is None and layer["input_types"] is None and layer["weight_details"] is None


def _rewritten_by_todays_writer(source: Path, target: Path) -> None:
    """The v1 experiment's rows written again through today's ResultsDir (schema {SCHEMA_VERSION} files), as
    the runner writes them: profile_iterations given, the columns v1 lacked null."""
    rows = {t: {f.stem: pq.read_table(f).to_pylist() for f in (source / t).glob("*.parquet")}
            for t in ("trials", *TRIAL_TABLES, "environments", "runs")}
    rd = ResultsDir(target)
    shutil.copytree(source / "specs", target / "specs")
    for table in ("environments", "runs"):
        for key, (row,) in rows[table].items():
            rd.write_row(table, key, row)
    for key, (trial,) in rows["trials"].items():
        side = {t: rows[t].get(key, []) for t in TRIAL_TABLES}
        rd.write_trial(TrialFiles(trial={**trial, "experiment": target.name, "profile_iterations": 2}, **side))


def test_a_store_of_v1_and_todays_experiments_gives_the_same_pages_for_the_same_measurements(tmp_path):
    shutil.copytree(V1, tmp_path / "results" / V1.name)
    _rewritten_by_todays_writer(V1, tmp_path / "results" / "today")
    experiments = [load_experiment(p) for p in find_experiments(tmp_path / "results")]
    assert [e.name for e in experiments] == ["today", "v1-sample"]
    versions = {pq.ParquetFile(f).schema_arrow.metadata[METADATA_KEY] for f in (tmp_path / "results" / "today")
                .glob("*/*.parquet")}
    assert versions == {str(SCHEMA_VERSION).encode()}
    old, today = experiments[1], experiments[0]
    assert old.trials["profile_iterations"].tolist() == today.trials["profile_iterations"].tolist()
    assert old.nodes["input_shapes"].tolist() == today.nodes["input_shapes"].tolist()
    # The overview and the compare page (layer intervals over profile_iterations, decoded shapes, the typed
    # spec's pairs): the same measurements give the same pages, whatever version stored them. (The profile
    # pages' charts cost seconds; test_profile_page covers them.)
    env = template_env()
    pages = {e.name: [*experiment_pages(env, experiment_view(e, e.name)), *compare_pages(env, experiment_view(
        e, e.name))] for e in experiments}
    compare = {p.path: p.markdown for p in pages["v1-sample"]}["reports/v1-sample/compare-fp32-vs-int8.md"]
    assert "# fp32 vs int8" in compare and "Layer type" in compare
    assert [(p.path, p.markdown) for p in pages["today"]] == [
        (p.path.replace("v1-sample", "today"), p.markdown.replace("v1-sample", "today")) for p in pages["v1-sample"]]


def test_a_file_of_a_newer_version_says_a_newer_perfsite_wrote_it(tmp_path):
    shutil.copytree(V1, tmp_path / V1.name)
    target = next((tmp_path / V1.name / "nodes").glob("*.parquet"))
    table = pq.read_table(target)
    newer = str(SCHEMA_VERSION + 1).encode()
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, METADATA_KEY: newer}), target)
    with pytest.raises(ResultsError) as err:
        load_experiment(tmp_path / V1.name)
    assert str(err.value).startswith(f"{target} was written by a newer perfsite (results schema version "
                                     f"{SCHEMA_VERSION + 1}); this perfsite reads versions 1 to {SCHEMA_VERSION}")
