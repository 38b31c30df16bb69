# One-stop commands. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: demo test deps lint typecheck unit crd clean

demo: ## Run the four scenarios on the bundled simulator
	@$(PIP) install -q -e . >/dev/null
	$(PYTHON) -m inference_operator demo

deps: ## Install the package and its development tools
	$(PIP) install -q -e '.[dev]'

lint: deps
	$(PYTHON) -m ruff check inference_operator tests bench
	$(PYTHON) -m ruff format --check inference_operator tests bench

typecheck: deps
	$(PYTHON) -m mypy

unit: deps
	$(PYTHON) -m pytest -q tests/unit

test: deps lint typecheck ## Everything: lint, types, unit tests
	$(PYTHON) -m pytest -q tests

crd: ## Regenerate deploy/crds from the API models
	$(PYTHON) -m inference_operator crd -o deploy/crds/serving.inference-operator.dev_inferenceservices.yaml

bench: deps
	$(PYTHON) bench/sim.py

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
