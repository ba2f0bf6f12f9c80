"""The suite's tiers: which modules `make check` leaves out and which `make test` runs alone (tests/conftest.py
marks them)."""

# Modules that run real sweeps, mkdocs builds or many CLI processes (10 s or more each in
# `pytest --durations=0` on 2 cores, 2026-11-25): `make check`, the inner loop's tier, leaves them out with
# the browser tests; `make test` and CI run everything.
SLOW_MODULES = frozenset({
    "test_run.py", "test_bad_input.py", "test_faults.py", "test_diff_git.py", "test_ci_recipe.py",
    "test_count.py", "test_build_safety.py", "test_oneshot_cli.py", "test_site.py", "test_diff.py",
    "test_timeline_page.py", "test_agreement.py", "test_cli.py", "test_large_model.py", "test_ray.py",
    "test_s3_store.py", "test_incremental_build.py", "test_generative_run.py",
})


# Tests whose verdicts depend on measured time in a way a neighbour can upset: `make test` runs them alone after
# the parallel part, so that the suite's other worker is never their neighbour. That is the unpaired A/A diff
# (separately measured runs: a neighbour that comes and goes between them is drift the interval bounds but cannot
# cancel) and the loop-beside-a-spinner test. A change that stands out beside any neighbour runs in the parallel
# part: the slower-model diff, and the CI recipe, whose pull request makes its model about 1.5 times slower (it
# measured an unchanged model until 2026-11-27, when a 4 s paired A/A run beside the other worker once called it
# slower; a slower model also shows that the job's last step passes the diff's exit status on). The paired run's
# own test (test_run.py) measures in quick mode and runs alone too, but no longer asserts its A/A verdict: three
# quick rounds gave "slower" beside the other worker and "faster" alone (2026-11-27), as a 95 % interval does a
# few times in a hundred.
# The modules that hold them (tests/test_support.py checks that no other module marks a test quiet).
# `perfsite generate A B` of a decoder against its copy joined them on 2026-12-07: beside the other workers (a fresh
# clone's make test) six processes alternating the two models' requests called the copy faster in both phases
# (B/A 0.952, past the 1.05 threshold's 0.9524).
QUIET_TESTS_IN = frozenset({"test_measure.py", "test_diff_git.py", "test_run.py", "test_generate.py"})


# make test's workers take a module at a time (pytest-xdist's loadgroup: a module is a group), longest
# first: a long module handed out last would leave the other workers idle at the end. The order of
# `pytest --durations=0` in make test's parallel part on 2 cores (2026-12-07 04:30: 630 worker-seconds; a
# module of SAME_WORKER_AS ranks by its group's sum; test_generate.py and test_two_machines.py placed by their
# durations of 2026-12-07 13:00); modules not listed follow in collection order.
LONGEST_FIRST = (
    "test_run.py", "test_incremental_build.py", "test_site.py", "test_quickstart_site.py", "test_ray.py",
    "test_query.py", "test_oneshot_cli.py", "test_s3_store.py", "test_diff.py", "test_site_browser.py",
    "test_compare_browser.py", "test_chooser_browser.py", "test_count.py", "test_faults.py", "test_large_model.py",
    "test_long_table_browser.py", "test_spec.py", "test_bad_input.py", "test_calibration.py", "test_profile_page.py",
    "test_cli.py", "test_generate.py", "test_generative_run.py", "test_timeline_page.py", "test_timeline_browser.py",
    "test_timeline_run.py",
    "test_machines.py", "test_two_machines.py", "test_ci_recipe.py", "test_build_safety.py", "test_compare_page.py",
    "test_compare_analysis.py",
    "test_chooser.py", "test_profile_browser.py", "test_worker.py", "test_payload_model.py", "test_packaging.py",
    "test_layer_match.py", "test_hostile_names_browser.py", "test_store.py", "test_imports.py",
    "test_oneshot_browser.py", "test_diff_git.py", "test_agreement.py", "test_changes_browser.py",
)

# Modules that share a session fixture costly to make go to the same worker, so that it is made once: the
# large model's site, the recorded compare site, the example CNN's timeline run.
SAME_WORKER_AS = {
    "test_long_table_browser.py": "test_large_model.py",
    "test_chooser_browser.py": "test_compare_browser.py",
    "test_timeline_run.py": "test_timeline_browser.py",
    "test_generative_browser.py": "test_generative_run.py",
}
