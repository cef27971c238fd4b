# The two commands a newcomer needs: `make demo` and `make test`. Both set themselves up.
SHELL := /bin/bash
export DELTACC_JAR_CACHE ?= $(CURDIR)/.cache/jars
export SPARK_LOCAL_IP ?= 127.0.0.1
PY := .venv/bin/python

.PHONY: setup demo test lint unit clean

setup:
	@scripts/setup.sh

demo: setup
	$(PY) demo/run_demo.py

lint: setup
	.venv/bin/ruff check $(wildcard airflow_provider_deltacc tests demo dags bench)
	.venv/bin/mypy

unit: setup
	.venv/bin/pytest -m unit -q

test: lint
	.venv/bin/pytest --durations=15

clean:
	rm -rf .venv .cache .test-airflow-home .demo spark-warehouse metastore_db derby.log
