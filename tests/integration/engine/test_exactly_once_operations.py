"""Every operation that carries a txn identity writes once: the re-run is a skipped duplicate.

MERGE, UPDATE, DELETE and DataFrame writes leave the duplicate check to Delta's own command (the engine
reads no txn state before them), so this checks, for each of them on path and catalog tables, that Delta
really skips the second run: delta-rs sees the same version, the same files and one commit of the kind.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import create_table, rows_source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(2)]

SEED = [(1, "2026-11-20", "a"), (2, "2026-11-20", "b"), (3, "2026-11-21", "c")]
NEW_ROWS = [[4, "2026-11-21", "d"], [5, "2026-11-22", "e"]]

#: operation -> (history operation name, spec options and source)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "append": ("WRITE", {"source": rows_source(NEW_ROWS), "options": {"create_if_missing": False}}),
    "merge": (
        "MERGE",
        {
            "source": rows_source([[1, "2026-11-20", "z"], [6, "2026-11-22", "f"]]),
            "options": {
                "keys": ["id", "date"],
                "partition_pin": "keyed",
                "when_matched": [{"action": "update", "set": {"value": "concat(t.value, s.value)"}}],
                "when_not_matched": [{"action": "insert"}],
            },
        },
    ),
    "update": (
        "UPDATE",
        {"options": {"set": {"value": "concat(value, '!')"}, "partition_values": [{"date": "2026-11-20"}]}},
    ),
    "delete": ("DELETE", {"options": {"equals": {"id": 3}}}),
    "overwrite_partitions": ("WRITE", {"source": rows_source([[7, "2026-11-21", "g"]]), "options": {}}),
    "sql": (
        "WRITE",
        {"options": {"statement": "INSERT INTO {table} VALUES (8, DATE '2026-11-23', 'h')"}},
    ),
}


def _delta_rs_view(location: str) -> tuple[int, list[str], list[str]]:
    from deltalake import DeltaTable

    table = DeltaTable(location)
    return table.version(), sorted(table.file_uris()), [h["operation"] for h in table.history()]


def _path_table(spark: SparkSession, tmp_path: Any) -> tuple[str, str]:
    path = str(tmp_path / "table")
    create_table(spark, path, SEED)
    return path, path


def _catalog_table(spark: SparkSession, tmp_path: Any) -> tuple[str, str]:
    path, _ = _path_table(spark, tmp_path)
    name = f"default.exactly_once_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} USING DELTA LOCATION '{path}'")
    return name, path


TABLES: dict[str, Callable[[SparkSession, Any], tuple[str, str]]] = {
    "path": _path_table,
    "catalog": _catalog_table,
}


def _pairwise() -> list[tuple[str, str, str]]:
    """Each operation twice: on a path and a catalog table, in a classic and a Connect session, and every
    table kind in every session kind across the operations (every pair of the three choices, 12 runs
    instead of all 24 combinations: how a table is named and how the session talks to Delta are
    independent of each other)."""
    crossed = (("path", "classic"), ("catalog", "connect"))
    swapped = (("path", "connect"), ("catalog", "classic"))
    return [
        (operation, where, session_kind)
        for index, operation in enumerate(sorted(CASES))
        for where, session_kind in (crossed if index % 2 == 0 else swapped)
    ]


@pytest.mark.parametrize(("operation", "where", "session_kind"), _pairwise())
def test_rerun_with_the_same_identity_is_skipped(
    spark: SparkSession, tmp_path: Any, operation: str, where: str, session_kind: str
) -> None:
    table, location = TABLES[where](spark, tmp_path)
    history_name, body = CASES[operation]
    spec = {
        "operation": operation,
        "table": table,
        "txn": {"app_id": f"eo/{operation}", "version": 4},
        **body,
    }

    before = _delta_rs_view(location)
    code, first = run_job(spec, spark)
    assert code == ExitCode.SUCCESS and first["status"] == "committed", first
    after_first = _delta_rs_view(location)
    assert after_first[0] == first["table_version"] == before[0] + 1
    assert after_first[2].count(history_name) == before[2].count(history_name) + 1

    code, second = run_job(spec, spark)
    assert code == ExitCode.SUCCESS, second
    assert second["status"] == "skipped_duplicate" and second["skipped_duplicate"] is True, second
    assert second["metrics"]["recorded_txn_version"] == 4
    assert second["metrics"]["committed_version"] == first["table_version"]
    assert "already committed" in second["metrics"]["skip_reason"]
    # Nothing was written the second time: same version, same files, same history.
    assert _delta_rs_view(location) == after_first

    # An older version of the identity is covered by the recorded one.
    code, older = run_job({**spec, "txn": {"app_id": f"eo/{operation}", "version": 3}}, spark)
    assert older["status"] == "skipped_duplicate" and _delta_rs_view(location) == after_first, older
