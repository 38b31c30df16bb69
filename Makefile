# One-stop commands. `make test` is what CI runs (.ci/run).
#
# Python packages go into a project-local virtual environment, .venv/ (made on first use from
# $(BASE_PYTHON), re-installed when pyproject.toml changes), never into the machine's Python:
#   . .venv/bin/activate && kopf run -m inference_operator.operator --all-namespaces
BASE_PYTHON ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
PIP := $(PYTHON) -m pip --disable-pip-version-check
IMAGE ?= inference-operator:dev
KIND_CLUSTER ?= inference-operator
# checkov (make checkov, part of make lint) has its own virtual environment: its pinned
# dependencies clash with ours, so it never shares .venv's.
CHECKOV_VERSION ?= 3.3.30
CHECKOV_VENV ?= $(VENV)/checkov

.PHONY: demo test deps venv images-test lint checkov checkov-venv typecheck unit static integration e2e fuzz crd bench bench-cluster bench-viewer controlplane images chromium explore conformance conformance-record \
        cluster-up cluster-down cluster-status kind-up kind-down clean

demo: $(VENV)/.installed-run ## Run the four scenarios on the bundled simulator
	$(PYTHON) -m inference_operator demo

deps: $(VENV)/.installed-dev ## Install the package and its development tools into .venv

venv: $(VENV)/.installed-dev ## The project's virtual environment (.venv), with the development tools

$(VENV)/bin/python:
	@$(BASE_PYTHON) -m venv $(VENV) || { echo "Could not create the virtual environment $(VENV) with '$(BASE_PYTHON) -m venv'. On Debian or Ubuntu: apt-get install python3-venv; or pass BASE_PYTHON=/path/to/python3.11." >&2; exit 1; }

# One stamp per set of extras: the package alone for the demo, with the development tools for
# the rest. Both are redone when pyproject.toml changes.
$(VENV)/.installed-run: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e '.[dev]'
	@touch $@ $(VENV)/.installed-run

controlplane: ## Build (once, cached in ~/.cache/inference-operator) etcd, kube-*, kwok, helm, kubectl, and the real node's parts
	bash hack/build-controlplane.sh >/dev/null

chromium: ## Headless Chromium for the trace viewer's browser tests (the Debian package, installed if missing)
	bash hack/install-chromium.sh >/dev/null

images: ## Without Docker: the base, operator and images/* images as OCI archives (buildah; cached)
	bash hack/build-images.sh

lint: deps controlplane checkov-venv ## ruff, the import contracts (lint-imports, pyproject.toml), helm lint, checkov
	$(PYTHON) -m ruff check inference_operator tests bench hack
	$(PYTHON) -m ruff format --check inference_operator tests bench hack
	$(VENV)/bin/lint-imports --no-logo --no-cache
	PATH="$$(bash hack/build-controlplane.sh 2>/dev/null | tail -1):$$PATH" helm lint --strict charts/inference-operator
	$(CHECKOV_RUN)

# checkov over the Dockerfile, deploy/ and the rendered chart, in a network namespace of its own
# with every network feature off (hack/checkov.sh); what it does not check, and why: .checkov.yaml.
CHECKOV_RUN = CHECKOV=$(CHECKOV_VENV)/bin/checkov bash hack/checkov.sh "$$(bash hack/build-controlplane.sh 2>/dev/null | tail -1)/helm"

checkov: checkov-venv controlplane ## checkov alone (IaC checks of the Dockerfile, deploy/ and the chart; no network)
	$(CHECKOV_RUN)

checkov-venv: $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION) ## checkov in its own virtual environment, .venv/checkov

$(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION): hack/checkov-constraints.txt
	@echo "Installing checkov $(CHECKOV_VERSION) into $(CHECKOV_VENV), its own virtual environment (about 200 MB; a few minutes the first time)..." >&2
	@$(BASE_PYTHON) -m venv $(CHECKOV_VENV) || { echo "Could not create $(CHECKOV_VENV) with '$(BASE_PYTHON) -m venv'." >&2; exit 1; }
	$(CHECKOV_VENV)/bin/python -m pip --disable-pip-version-check install --progress-bar on -c hack/checkov-constraints.txt checkov==$(CHECKOV_VERSION)
	@rm -f $(CHECKOV_VENV)/.installed-*
	@touch $@

typecheck: deps
	$(PYTHON) -m mypy

unit: deps ## Offline tests on the simulator (never needs the control plane)
	$(PYTHON) -m pytest -q tests/unit

static: deps controlplane ## Static checks of what ships: the chart (helm template), packaging, Makefile, admission policy, node config, the test layout, the import contracts
	$(PYTHON) -m pytest -q tests/static

integration: deps chromium ## Loopback-only tests (HTTP load balancer and registry, the trace viewer in Chromium)
	$(PYTHON) -m pytest -q tests/integration

e2e: deps controlplane chromium ## The e2e suite on the local control plane (or E2E_KUBECONFIG)
	$(PYTHON) -m pytest -q tests/e2e

images-test: ## Go checks and tests of the images/ module (the vLLM stand-in, the sandbox image)
	cd images && test -z "$$(gofmt -l .)" || { echo "gofmt would change: $$(cd images && gofmt -l .)" >&2; exit 1; }
	cd images && go vet ./... && go test ./...

test: deps lint typecheck images-test controlplane chromium ## Everything: lint, types, Go, unit, integration and e2e tests
	$(PYTHON) -m pytest -q tests --durations=10

FUZZ_EXAMPLES ?= 200
fuzz: deps ## Longer fuzz of every command with bad input (subprocesses with memory and time limits): make fuzz FUZZ_EXAMPLES=500
	INFERENCE_OPERATOR_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PYTHON) -m pytest -q tests/unit/test_fuzz_cli.py

SEED ?= 0
EXAMPLES ?= 150
STEPS ?= 50
INVARIANT ?=
CLUSTER ?=
explore: deps ## Long fault-injecting exploration on the simulator: make explore SEED=1 EXAMPLES=500 STEPS=80 [INVARIANT=name] [CLUSTER=1]
	$(PYTHON) -m inference_operator.sim.explore --seed $(SEED) --examples $(EXAMPLES) --steps $(STEPS) \
	  $(foreach name,$(INVARIANT),--invariant $(name)) $(if $(CLUSTER),--cluster)

conformance: deps controlplane ## The differential suite alone: every check on the FakeApiServer and a real kube-apiserver
	$(PYTHON) -m pytest -q tests/e2e/test_conformance.py

conformance-record: deps controlplane ## Re-record the real server's answers for the offline replay (needs KUBECONFIG, e.g. from make cluster-up)
	$(PYTHON) -m tests.shared.conformance.record --kubeconfig "$${KUBECONFIG:?set KUBECONFIG to a running cluster, e.g. from make cluster-up}"

crd: ## Regenerate deploy/crds (and the chart's copy) from the API models
	$(PYTHON) -m inference_operator crd -o deploy/crds/serving.inference-operator.dev_inferenceservices.yaml
	cp deploy/crds/serving.inference-operator.dev_inferenceservices.yaml charts/inference-operator/crds/

bench: deps ## Simulator benchmark
	$(PYTHON) bench/sim.py

bench-viewer: deps chromium ## Trace viewer: page sizes, and responsiveness at 1,000 objects in headless Chromium
	$(PYTHON) bench/viewer.py

cluster-up: deps controlplane ## Start the local control plane with one real node (INFERENCE_OPERATOR_REAL_NODE=0: none); prints `export KUBECONFIG=…`
	$(PYTHON) hack/cluster.py up

cluster-down:
	$(PYTHON) hack/cluster.py down

cluster-status:
	$(PYTHON) hack/cluster.py status

kind-up: ## With Docker: kind cluster, operator image, CRDs and operator
	@command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 || \
	  { echo "kind-up needs a running Docker engine, and none is reachable here; use 'make cluster-up' instead." >&2; exit 1; }
	@command -v kind >/dev/null 2>&1 || { echo "kind-up needs kind on PATH (go install sigs.k8s.io/kind@v0.31.0)." >&2; exit 1; }
	kind create cluster --name $(KIND_CLUSTER) --config hack/kind.yaml
	docker build -t $(IMAGE) .
	kind load docker-image $(IMAGE) --name $(KIND_CLUSTER)
	kubectl apply -f deploy/crds
	kubectl apply -k deploy/
	kubectl -n inference-operator set image deployment/inference-operator operator=$(IMAGE)
	kubectl -n inference-operator rollout status deployment/inference-operator --timeout=120s

kind-down:
	kind delete cluster --name $(KIND_CLUSTER)

clean: ## Remove what builds and tests leave behind, and the virtual environment
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .import_linter_cache $(VENV)
