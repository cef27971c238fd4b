"""Bad input through ``run_job``: BAD_INPUT, a message naming the field, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import create_table, rows_source, version

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(2.5)]

TABLE = "<table>"
GOOD_SOURCE = rows_source([[1, "2026-11-20", "a"]])

CASES: list[tuple[str, Any, str]] = [
    ("unknown operation", {"operation": "upsert", "table": TABLE}, "operation"),
    ("missing table", {"operation": "delete", "options": {"condition": "true"}}, "table"),
    ("malformed JSON", '{"operation": "append", "table": ', "<spec>"),
    ("wrong type", {"operation": "vacuum", "table": TABLE, "options": {"dry_run": "yes"}}, "options.dry_run"),
    (
        "negative retention",
        {"operation": "vacuum", "table": TABLE, "options": {"retention_hours": -1}},
        "options.retention_hours",
    ),
    (
        "bad retry policy",
        {
            "operation": "delete",
            "table": TABLE,
            "options": {"condition": "true"},
            "commit_retry": {"max_attempts": 0},
        },
        "commit_retry.max_attempts",
    ),
    (
        "unknown retry field",
        {
            "operation": "delete",
            "table": TABLE,
            "options": {"condition": "true"},
            "commit_retry": {"retries": 3},
        },
        "commit_retry.retries",
    ),
    (
        "bad txn version",
        {"operation": "append", "table": TABLE, "source": GOOD_SOURCE, "txn": {"app_id": "a", "version": -1}},
        "txn.version",
    ),
    (
        "empty txn app id",
        {"operation": "append", "table": TABLE, "source": GOOD_SOURCE, "txn": {"app_id": "", "version": 1}},
        "txn.app_id",
    ),
    (
        "unknown option",
        {
            "operation": "merge",
            "table": TABLE,
            "source": GOOD_SOURCE,
            "options": {"keys": ["id"], "upsert": True},
        },
        "options.upsert",
    ),
    (
        "non-Delta path",
        {"operation": "delete", "table": "<plain>", "options": {"condition": "true"}},
        "table",
    ),
    (
        "table does not exist",
        {"operation": "delete", "table": "<missing>", "options": {"condition": "true"}},
        "table",
    ),
    (
        "bad condition",
        {"operation": "delete", "table": TABLE, "options": {"condition": "no_such_col = 1"}},
        "options.condition",
    ),
    (
        "unparsable merge condition",
        {
            "operation": "merge",
            "table": TABLE,
            "source": GOOD_SOURCE,
            "options": {"condition": "t.id = = s.id"},
        },
        "options.condition",
    ),
    (
        "unknown partition column",
        {
            "operation": "merge",
            "table": TABLE,
            "source": GOOD_SOURCE,
            "options": {"keys": ["id"], "partition_pin": ["value"]},
        },
        "options.partition_pin[0]",
    ),
    (
        "unknown partition value column",
        {"operation": "optimize", "table": TABLE, "options": {"partition_values": [{"day": "2026-11-20"}]}},
        "options.partition_values[0].day",
    ),
    (
        "bad partition value",
        {"operation": "delete", "table": TABLE, "options": {"partition_values": [{"date": "20/11/2026"}]}},
        "options.partition_values[0].date",
    ),
    (
        "retention below table's",
        {"operation": "vacuum", "table": TABLE, "options": {"retention_hours": 2}},
        "options.retention_hours",
    ),
    (
        "source column missing from table",
        {"operation": "append", "table": TABLE, "source": rows_source([[1, "x"]], "id INT, extra STRING")},
        "source",
    ),
    (
        "unreadable source",
        {"operation": "append", "table": TABLE, "source": {"kind": "parquet", "path": "<missing>"}},
        "source",
    ),
    (
        "unknown set column",
        {"operation": "update", "table": TABLE, "options": {"set_values": {"nope": 1}, "condition": "true"}},
        "options.set_values.nope",
    ),
    ("txn on vacuum", {"operation": "vacuum", "table": TABLE, "txn": {"app_id": "a", "version": 1}}, "txn"),
]


@pytest.fixture(scope="module")
def tables(local_spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bad-input")
    table = str(root / "table")
    create_table(local_spark, table, [(1, "2026-11-20", "a")])
    plain = root / "plain"
    plain.mkdir()
    (plain / "data.txt").write_text("not delta")
    return {"<table>": table, "<plain>": str(plain), "<missing>": str(root / "missing")}


def _fill(spec: Any, tables: dict[str, str]) -> Any:
    text = spec if isinstance(spec, str) else json.dumps(spec)
    for key, value in tables.items():
        text = text.replace(key, value)
    return text if isinstance(spec, str) else json.loads(text)


@pytest.mark.parametrize(("case", "spec", "field"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_reported_and_writes_nothing(
    spark: SparkSession, tables: dict[str, str], case: str, spec: Any, field: str
) -> None:
    before = version(spark, tables[TABLE])
    code, report = run_job(_fill(spec, tables), spark)
    assert code == ExitCode.BAD_INPUT, report
    assert report["status"] == "bad_input"
    assert report["error"]["field"] == field, report["error"]
    assert report["error"]["message"].startswith(field), report["error"]
    assert version(spark, tables[TABLE]) == before
    assert not Path(tables["<missing>"]).exists()
