# The two commands a newcomer needs: `make demo` and `make test`. Both install into .venv first.
PYTHON ?= python3
# Python may write bytecode caches, whatever the calling environment says (some CI images and sandboxes set
# PYTHONDONTWRITEBYTECODE=1): `make test` and `make demo` start hundreds of Python processes, and without the
# caches every one compiled perfsite's modules again, and every pytest process rewrote and compiled the test
# modules again (collection 8.5 s instead of 4.3 s). The caches go to __pycache__/, which git ignores.
export PYTHONDONTWRITEBYTECODE :=
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.perfsite-installed
MODELS := experiments/models/cnn.onnx experiments/models/transformer.onnx experiments/models/decoder.onnx

.PHONY: demo test check install models lint bench clean test-latest drift

demo: $(MODELS)
	$(BIN)/perfsite run experiments/quickstart.yaml experiments/decoder.yaml
	$(BIN)/perfsite build --results results --site site
	@echo
	@echo "Site built: open site/index.html in a browser, or run  $(BIN)/perfsite serve  and visit http://127.0.0.1:8000/"

# Four workers on two cores for everything but the few tests a neighbour can upset (marked quiet;
# tests/support/tiers.py); those run alone afterwards. Both parts always run; the target fails if either failed.
# More workers than cores: a fifth of a worker's time is spent waiting (Ray and Chromium starting, child
# processes, mkdocs), and three workers kept the cores 82 % busy (parallel part 325 s at -n 2, 269-282 s at
# -n 3, 258 s at -n 4, 2026-12-07).
WORKERS := 4
# One cache folder (machine probe, model versions) for both parts, probed once before they start
# (tests/conftest.py, PERFSITE_TEST_CACHE), removed afterwards. The quiet part leaves hypothesis' pytest plugin
# out: no quiet test uses hypothesis (which runs without it), and the plugin imports it: 0.3 s of a serial part
# (2026-11-27).
# OPENBLAS_NUM_THREADS=1: numpy's BLAS starts a spinning thread per core in every process that imports it
# (generator.processes.BLAS_THREADS), the pytest workers, Ray's workers and the suite's scripts among them.
test: $(MODELS)
	@rc=0; export OPENBLAS_NUM_THREADS=1 PERFSITE_TEST_CACHE=$$(mktemp -d); trap 'rm -rf "$$PERFSITE_TEST_CACHE"' EXIT; \
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder -m "not quiet" || rc=$$?; \
	$(BIN)/python -m pytest -p no:hypothesispytest -m quiet || rc=$$?; \
	exit $$rc

# The fast tier for the inner loop: no browser, no real sweeps or site builds (tests/support/tiers.py SLOW_MODULES),
# and none of the quiet tests, which need the machine to themselves.
check: $(MODELS)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not slow and not browser and not quiet"

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install when the project's dependencies or their pinned versions change. constraints.txt pins the set the
# suite passed with, so that a fresh clone installs what CI tested, not whatever the registry serves today.
# uv installs the same pinned set as pip in a third of the time (23 s against 75 s with empty caches, 2026-12-07):
# a minute of every fresh `make test` and `make demo`. pip does it where uv cannot be installed.
UV := uv==0.13.9
# uv, unlike pip, leaves bytecode to the first import, and a fresh `make test` starts four workers and their
# child processes at once, each compiling the same modules (its parallel part took 317 s, then 294 s with the
# caches written, 2026-12-07). One process importing what perfsite and its tests use writes them first (5 s).
WARM_IMPORTS := import generator.site.build, generator.runner.orchestrate, generator.runner.worker, \
  generator.cli.app, generator.diff, mkdocs.commands.build, material, duckdb, onnxruntime.quantization, \
  pytest, xdist, playwright.sync_api, hypothesis
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	@if $(BIN)/python -m pip install --quiet '$(UV)'; then \
	  $(BIN)/python -m uv pip install --quiet --python $(BIN)/python -c constraints.txt -e '.[cpu,test]' && \
	  $(BIN)/python -c '$(WARM_IMPORTS)'; \
	else \
	  $(BIN)/python -m pip install --quiet --upgrade pip && \
	  $(BIN)/python -m pip install --quiet -c constraints.txt -e '.[cpu,test]'; \
	fi
	touch $@

# The whole suite against the newest releases that pyproject.toml's ranges allow, in a separate venv: how drift
# is found before users find it. When it passes, refresh the pins:
#   .latest-venv/bin/pip freeze --exclude-editable > constraints.txt   (then restore the header comment)
# and when a dependency's next major release is out, raise its upper bound in pyproject.toml and run this again.
test-latest: $(MODELS)
	$(PYTHON) -m venv .latest-venv
	.latest-venv/bin/python -m pip install --quiet --upgrade pip
	.latest-venv/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[cpu,test]'
	@rc=0; export PERFSITE_TEST_CACHE=$$(mktemp -d); trap 'rm -rf "$$PERFSITE_TEST_CACHE"' EXIT; \
	.latest-venv/bin/python -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder -m "not quiet" || rc=$$?; \
	.latest-venv/bin/python -m pytest -p no:hypothesispytest -m quiet || rc=$$?; \
	exit $$rc

# The old name of test-latest.
drift: test-latest

models: $(MODELS)

$(MODELS) &: $(STAMP) $(wildcard generator/models/*.py)
	$(BIN)/perfsite example-models experiments/models

lint: $(STAMP)
	$(BIN)/ruff check generator tests bench

bench: $(MODELS)
	$(BIN)/python bench/harness_overhead.py
	$(BIN)/python bench/analysis_speed.py
	$(BIN)/python bench/large_model_page.py

clean:
	rm -rf site .perfsite results/quickstart experiments/models .latest-venv
