# The two commands a newcomer needs: `make demo` and `make test`. Both install into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.perfsite-installed
MODELS := experiments/models/cnn.onnx experiments/models/transformer.onnx

.PHONY: demo test install models lint bench clean

demo: $(MODELS)
	$(BIN)/perfsite run experiments/quickstart.yaml
	$(BIN)/perfsite build --results results --site site
	@echo
	@echo "Site built: open site/index.html in a browser, or run  $(BIN)/perfsite serve  and visit http://127.0.0.1:8000/"

test: $(MODELS)
	$(BIN)/python -m pytest

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install when the project's dependencies change.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

models: $(MODELS)

$(MODELS) &: $(STAMP) $(wildcard generator/models/*.py)
	$(BIN)/perfsite example-models experiments/models

lint: $(STAMP)
	$(BIN)/ruff check generator tests bench

bench: $(MODELS)
	$(BIN)/python bench/harness_overhead.py
	$(BIN)/python bench/analysis_speed.py

clean:
	rm -rf site .perfsite results/quickstart experiments/models
