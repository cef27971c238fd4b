# The two commands a newcomer needs: `make demo` and `make test`. Both set themselves up.
SHELL := /bin/bash
export DELTACC_JAR_CACHE ?= $(CURDIR)/.cache/jars
export SPARK_LOCAL_IP ?= 127.0.0.1
PY := .venv/bin/python

.PHONY: setup demo test test-fast lint unit clean

setup:
	@scripts/setup.sh

demo: setup
	$(PY) demo/run_demo.py

lint: setup
	.venv/bin/ruff check $(wildcard airflow_provider_deltacc tests demo dags bench scripts)
	.venv/bin/mypy

# The edit-run loop: the JVM-free unit tests, two at a time (under 3 minutes).
test-fast: setup
	.venv/bin/pytest -m unit -n 2 -q

unit: test-fast

# The whole suite in two lanes side by side (scripts/run_suite.py): every test that starts a JVM, one at a
# time (they share one Spark JVM and the servers), and beside it lint, the unit tests and the JVM-free
# integration tests. Ends with where the minutes went (set-up, lanes, steps, modules, a calibration of the
# box), the whole run against the budget and one "suite: N passed, N failed" line.
test: setup
	$(PY) scripts/run_suite.py

clean:
	rm -rf .venv .cache .test-airflow-home .test-reports .demo spark-warehouse metastore_db derby.log
