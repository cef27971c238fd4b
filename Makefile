# The two commands a newcomer needs: `make demo` and `make test`. Both set themselves up.
SHELL := /bin/bash
export DELTACC_JAR_CACHE ?= $(CURDIR)/.cache/jars
export SPARK_LOCAL_IP ?= 127.0.0.1
PY := .venv/bin/python

.PHONY: setup demo test test-fast lint unit clean
REPORTS := .test-reports

setup:
	@scripts/setup.sh

demo: setup
	$(PY) demo/run_demo.py

lint: setup
	.venv/bin/ruff check $(wildcard airflow_provider_deltacc tests demo dags bench)
	.venv/bin/mypy

# The edit-run loop: the JVM-free unit tests, two at a time (under 3 minutes).
test-fast: setup
	.venv/bin/pytest -m unit -n 2 -q

unit: test-fast

# The whole suite: lint, the unit tests two at a time, then everything with a JVM or a server one at a time
# (they share one Spark JVM and the servers). Ends with the wall time, the ten slowest tests of both
# sessions and one "N passed, N failed" line for the suite.
test: lint
	@started=$$(date +%s); rm -rf $(REPORTS); mkdir -p $(REPORTS); \
	.venv/bin/pytest -m unit -n 2 -q --junitxml=$(REPORTS)/unit.xml; unit=$$?; \
	.venv/bin/pytest -m "not unit" --junitxml=$(REPORTS)/integration.xml; rest=$$?; \
	$(PY) scripts/suite_summary.py --started $$started $(REPORTS)/unit.xml $(REPORTS)/integration.xml; \
	[ $$unit = 0 ] && [ $$rest = 0 ]

clean:
	rm -rf .venv .cache .test-airflow-home .test-reports .demo spark-warehouse metastore_db derby.log
