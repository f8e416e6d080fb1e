# The two commands of the README:
#   make run    replay a bundled incident in one process (no broker needed)
#   make test   install everything the tests need, start a real Kafka broker, run the tests
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
INCIDENT ?= replay/incidents/h100-128-all-faults.jsonl.gz
TOPOLOGY ?= topologies/h100-128.topo
PYTEST_ARGS ?=

.PHONY: run test venv kafka-jars servers bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

run: venv
	$(BIN)/faultline replay $(INCIDENT) --topology $(TOPOLOGY)

kafka-jars:
	$(PYTHON) deploy/kafka/broker.py fetch

test: venv kafka-jars
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: venv
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
