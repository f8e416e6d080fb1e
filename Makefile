# The two commands of the README:
#   make run    replay a bundled incident in one process (no broker needed)
#   make test   install everything the tests need, start a real Kafka broker, run the tests
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
INCIDENT ?= replay/incidents/h100-128-all-faults.jsonl.gz
TOPOLOGY ?= topologies/h100-128.topo
# Two worker processes (pytest-xdist): each test file is one unit of work, the heaviest left
# (tests/durations.json) to the worker free first (tests/conftest.py). Serially:
#   make test PYTEST_ARGS=
PYTEST_ARGS ?= -n 2 --dist loadgroup

.PHONY: run test venv kafka-jars servers bench clean broker

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,report]'
	touch $@

venv: $(VENV)/.installed

run: venv
	$(BIN)/faultline replay $(INCIDENT) --topology $(TOPOLOGY)

kafka-jars:
	$(PYTHON) deploy/kafka/broker.py fetch

# A local broker for trying `faultline serve` (the README's "Try the service in two
# minutes"); prints its address last. Stop: python3 deploy/kafka/broker.py stop
broker: kafka-jars
	$(PYTHON) deploy/kafka/broker.py start

# Prometheus 2.42, Alertmanager 0.25, node_exporter 1.5 and kcat from Debian, for the server tests (they start
# them on loopback ports of their own; nothing here starts a service). Idempotent: a
# no-op when the binaries are there. Needs root or sudo, as apt-get does.
SERVER_BINS = prometheus promtool prometheus-alertmanager amtool prometheus-node-exporter kcat \
              chromium
# chromium: headless, for the incident report's browser test.
SERVER_PKGS = prometheus prometheus-alertmanager prometheus-node-exporter kcat \
              chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

servers:
	@missing=""; for b in $(SERVER_BINS); do command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make servers: installing $(SERVER_PKGS) (missing:$$missing)"; \
	  log=$$(mktemp); \
	  { $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends $(SERVER_PKGS); } >"$$log" 2>&1 \
	    || { cat "$$log"; rm -f "$$log"; exit 1; }; \
	  rm -f "$$log"; \
	fi

test: venv kafka-jars servers
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: venv kafka-jars
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
