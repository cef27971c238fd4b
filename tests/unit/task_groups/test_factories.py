"""The task-group factories: structure (task ids, dependencies, mapping), the pure planning helpers, and
parse-time validation errors that name the argument. No Spark."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.task_groups import (
    merge_source_query,
    staging_append_then_merge,
    table_maintenance,
    tag_source,
)
from airflow_provider_deltacc.task_groups.staging_batches import plan_batches_for

pytestmark = pytest.mark.unit

SCHEMA = "id BIGINT, date DATE, amount DECIMAL(10,2), tags ARRAY<STRING>, `odd, name` STRING, ts BIGINT"
BASE: dict[str, Any] = {
    "sources": [{"kind": "delta", "path": "/data/a"}, "SELECT 1"],
    "staging_table": "/data/staging",
    "target_table": "/data/target",
    "schema": SCHEMA,
    "keys": ["id", "date"],
    "partition_by": ["date"],
    "dedup_order_by": "ts",
}


def _dag() -> Any:
    from airflow.sdk import DAG

    return DAG("tg_unit", schedule=None, start_date=datetime(2026, 1, 1), catchup=False)


def _deps(dag: Any) -> dict[str, set[str]]:
    return {t.task_id: set(t.downstream_task_ids) for t in dag.tasks}


def test_staging_group_structure() -> None:
    with _dag() as dag:
        group = staging_append_then_merge(
            group_id="ingest", **BASE, operator_kwargs={"execution_mode": "in_process"}
        )
    assert group.group_id == "ingest"
    assert _deps(dag) == {
        "ingest.create_staging": {"ingest.append_batch"},
        "ingest.create_target": {"ingest.merge_batches"},
        "ingest.plan_batches": {"ingest.append_batch", "ingest.merge_batches", "ingest.cleanup_batches"},
        "ingest.append_batch": {"ingest.merge_batches"},
        "ingest.merge_batches": {"ingest.cleanup_batches"},
        "ingest.cleanup_batches": set(),
    }
    append = dag.get_task("ingest.append_batch")
    assert hasattr(append, "expand_input")  # dynamically mapped, over plan_batches' return value
    assert (
        append.partial_kwargs["create_if_missing"] is False and append.partial_kwargs["merge_schema"] is False
    )
    merge = dag.get_task("ingest.merge_batches")
    assert merge.keys == ["id", "date"] and merge.partition_pin == "keyed" and merge.dedup_order_by == "ts"
    assert merge.when_matched == [{"action": "update", "condition": "t.`ts` IS NULL OR s.`ts` >= t.`ts`"}]
    assert merge.execution_mode == "in_process" and merge.spark_conf is None
    staging = dag.get_task("ingest.create_staging")
    assert staging.partition_by == ["batch_id"] and staging.source["schema"].endswith("`batch_id` STRING")
    assert staging.txn_app_id == "deltacc/create-if-missing//data/staging" and staging.txn_version == 1
    assert dag.get_task("ingest.create_target").partition_by == ["date"]


def test_staging_group_without_table_creation_and_with_schema_evolution() -> None:
    with _dag() as dag:
        staging_append_then_merge(**{**BASE, "create_tables": False, "schema_evolution": True})
    ids = {t.task_id for t in dag.tasks}
    assert not {i for i in ids if "create_" in i}
    assert dag.get_task("staging_append_then_merge.append_batch").partial_kwargs["merge_schema"] is True
    merge = dag.get_task("staging_append_then_merge.merge_batches")
    assert merge.spark_conf == {"spark.databricks.delta.schema.autoMerge.enabled": "true"}


def test_plan_is_deterministic_and_quotes_batch_ids() -> None:
    sources: list[str | dict[str, Any]] = [
        {"kind": "rows", "rows": [[1], {"id": 2}], "schema": "id INT"},
        "/data/raw",
    ]
    plan = plan_batches_for(sources, staging_table="/st", batch_prefix="d/g/run'1")
    assert plan == plan_batches_for(sources, staging_table="/st", batch_prefix="d/g/run'1")
    assert plan["batch_ids"] == ["d/g/run'1/0", "d/g/run'1/1"]
    assert plan["appends"][0] == {
        "kind": "rows",
        "rows": [[1, "d/g/run'1/0"], {"id": 2, "batch_id": "d/g/run'1/0"}],
        "schema": "id INT, `batch_id` STRING",
    }
    hexed = "CAST(X'" + b"d/g/run'1/1".hex().upper() + "' AS STRING)"
    assert plan["appends"][1] == {
        "kind": "sql",
        "query": f"SELECT *, {hexed} AS `batch_id` FROM delta.`/data/raw`",
    }
    assert plan["cleanup_partitions"] == [{"batch_id": "d/g/run'1/0"}, {"batch_id": "d/g/run'1/1"}]
    query = plan["merge_source"]["query"]
    assert query.startswith("SELECT * EXCEPT (`batch_id`) FROM delta.`/st` WHERE `batch_id` IN (CAST(X'")
    assert (
        merge_source_query("db.staging", []) == "SELECT * EXCEPT (`batch_id`) FROM `db`.`staging` WHERE false"
    )
    assert (
        merge_source_query("/st", ["plain"])
        == "SELECT * EXCEPT (`batch_id`) FROM delta.`/st` WHERE `batch_id` IN ('plain')"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "SELECT a FROM t",
            "SELECT __deltacc_src.*, 'b' AS `batch_id` FROM (SELECT a FROM t) AS __deltacc_src",
        ),
        (
            {"kind": "delta", "path": "/x`y", "version": 3},
            "SELECT *, 'b' AS `batch_id` FROM delta.`/x``y` VERSION AS OF 3",
        ),
        ("sales.orders", "SELECT *, 'b' AS `batch_id` FROM `sales`.`orders`"),
        ("/in/f.parquet", "SELECT *, 'b' AS `batch_id` FROM parquet.`/in/f.parquet`"),
    ],
)
def test_tag_source_kinds(source: Any, expected: str) -> None:
    assert tag_source(source, "b") == {"kind": "sql", "query": expected}


def test_tag_source_refuses_what_sql_cannot_express() -> None:
    with pytest.raises(DeltaCCInputError, match=r"sources\[3\]: a csv source with reader options"):
        tag_source({"kind": "csv", "path": "/a.csv", "options": {"header": "true"}}, "b", field="sources[3]")


@pytest.mark.parametrize(
    ("change", "argument", "message"),
    [
        ({"keys": "id"}, "keys", "must be a list of column names"),
        ({"keys": []}, "keys", "give at least one column"),
        ({"keys": ["id", "nope"]}, "keys", r"\['nope'\] not in schema"),
        ({"partition_by": ["amount"]}, "partition_by", "are not merge keys"),
        ({"dedup_order_by": "missing"}, "dedup_order_by", "not in schema"),
        ({"schema": "id BIGINT, id INT"}, "schema", "more than once"),
        ({"schema": "id BIGINT,"}, "schema", "empty column definition"),
        ({"schema": "id"}, "schema", "is not 'name TYPE'"),
        ({"batch_column": "ts"}, "batch_column", "already a column of schema"),
        ({"target_table": "/data/staging/"}, "staging_table", "must not be the target_table"),
        ({"staging_table": ""}, "staging_table", "non-empty string"),
        ({"sources": "SELECT 1"}, "sources", "must be a list of sources"),
        ({"sources": [{"kind": "csv", "path": "/a.csv", "schema": "a INT"}]}, "sources", r"sources\[0\]"),
        ({"schema_evolution": "yes"}, "schema_evolution", "True or False"),
        ({"operator_kwargs": {"table": "/x"}}, "operator_kwargs", "which the group sets itself"),
        ({"partition_pin": ["ts"]}, "partition_pin", "not in partition_by"),
    ],
)
def test_staging_validation_names_the_argument(change: dict[str, Any], argument: str, message: str) -> None:
    with _dag(), pytest.raises(DeltaCCInputError, match=message) as caught:
        staging_append_then_merge(**{**BASE, **change})
    assert caught.value.field == argument
    assert str(caught.value).startswith(f"staging_append_then_merge({argument}=")


def test_staging_accepts_an_upstream_output_and_auto_pin() -> None:
    from airflow.sdk import task

    with _dag() as dag:

        @task
        def land() -> list[str]:
            return []

        staging_append_then_merge(
            **{**BASE, "sources": land(), "partition_by": ["tags"], "partition_pin": "auto"}
        )
    assert "land" in dag.get_task("staging_append_then_merge.plan_batches").upstream_task_ids


def test_maintenance_group_structure() -> None:
    with _dag() as dag:
        table_maintenance(
            table="/data/t",
            zorder_by=["id"],
            retention_hours=200,
            operator_kwargs={"lease_store_url": "sqlite:///x.db", "retries": 3},
        )
    assert _deps(dag) == {
        "table_maintenance.gate": {"table_maintenance.optimize"},
        "table_maintenance.optimize": {"table_maintenance.vacuum"},
        "table_maintenance.vacuum": set(),
    }
    gate, optimize, vacuum = (dag.get_task(f"table_maintenance.{t}") for t in ("gate", "optimize", "vacuum"))
    assert gate.maintenance_op == "optimize_zorder" and gate.lease_store_url == "sqlite:///x.db"
    assert (
        gate.poke_interval == optimize.poll_interval == vacuum.poll_interval == 30
    )  # one setting, poll_interval
    assert optimize.only_closed_partitions is True and optimize.zorder_by == ["id"] and optimize.retries == 3
    assert vacuum.retention_hours == 200 and vacuum.force is False


def test_maintenance_without_vacuum() -> None:
    with _dag() as dag:
        table_maintenance(table="/data/t", vacuum=False, group_id="m")
    assert {t.task_id for t in dag.tasks} == {"m.gate", "m.optimize"}
    assert dag.get_task("m.gate").maintenance_op == "optimize"


@pytest.mark.parametrize(
    ("change", "argument"),
    [
        ({"table": " "}, "table"),
        ({"zorder_by": "id"}, "zorder_by"),
        ({"retention_hours": -1}, "retention_hours"),
        ({"vacuum": False, "force": True}, "vacuum"),
        ({"partition_values": [{}]}, "partition_values"),
        ({"poll_interval": 0}, "poll_interval"),
        ({"operator_kwargs": {"zorder_by": ["x"]}}, "operator_kwargs"),
        ({"operator_kwargs": {"poke_interval": 5}}, "operator_kwargs"),
        ({"only_closed_partitions": 1}, "only_closed_partitions"),
    ],
)
def test_maintenance_validation_names_the_argument(change: dict[str, Any], argument: str) -> None:
    with _dag(), pytest.raises(DeltaCCInputError) as caught:
        table_maintenance(**{"table": "/data/t", **change})
    assert caught.value.field == argument and str(caught.value).startswith(f"table_maintenance({argument}=")


def test_example_dags_parse(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from pathlib import Path

    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("DELTACC_EXAMPLE_ROOT", str(tmp_path))
    folder = Path(__file__).resolve().parents[3] / "dags"
    for name in (
        "example_ingestion_staging.py",
        "example_maintenance.py",
        "example_contention_demo.py",
        "example_clustered_table.py",
    ):
        bag = DagBag(dag_folder=str(folder / name))
        assert not bag.import_errors, bag.import_errors
        assert len(bag.dags) == 1


def _argument(task: Any, name: str) -> Any:
    """An operator argument, also of a mapped task (its ``partial()`` arguments)."""
    partial = getattr(task, "partial_kwargs", None)
    return partial.get(name) if partial is not None else getattr(task, name)


def test_lease_store_conn_id_reaches_every_task_of_both_groups() -> None:
    with _dag() as dag:
        table_maintenance(table="/data/t", group_id="m", lease_store_conn_id="deltacc_leases")
        staging_append_then_merge(group_id="ingest", **BASE, lease_store_conn_id="deltacc_leases")
    delta_tasks = [t for t in dag.tasks if t.task_id != "ingest.plan_batches"]
    assert len(delta_tasks) == 8
    assert {t.task_id: _argument(t, "lease_store_conn_id") for t in delta_tasks} == {
        t.task_id: "deltacc_leases" for t in delta_tasks
    }


def test_without_lease_store_conn_id_the_dags_default_args_apply() -> None:
    from airflow.sdk import DAG

    default_args = {"lease_store_conn_id": "from_default_args"}
    with DAG("tg_defaults", schedule=None, start_date=datetime(2026, 1, 1), default_args=default_args) as dag:
        table_maintenance(table="/data/t", group_id="m")
        staging_append_then_merge(group_id="ingest", **BASE)
    tasks = [t for t in dag.tasks if t.task_id != "ingest.plan_batches"]
    assert {t.lease_store_conn_id for t in tasks if not hasattr(t, "partial_kwargs")} == {"from_default_args"}
    # A mapped task gets the DAG's default_args when it is unmapped, unless partial() was given the argument.
    mapped = [t for t in tasks if hasattr(t, "partial_kwargs")]
    assert mapped and all("lease_store_conn_id" not in t.partial_kwargs for t in mapped)


@pytest.mark.parametrize(
    "change",
    [
        {"lease_store_conn_id": ""},
        {"lease_store_conn_id": 42},
        {"operator_kwargs": {"lease_store_conn_id": "x"}},
    ],
)
def test_lease_store_conn_id_is_checked_by_both_groups(change: dict[str, Any]) -> None:
    argument = next(iter(change))
    for factory, arguments in (
        (table_maintenance, {"table": "/data/t"}),
        (staging_append_then_merge, BASE),
    ):
        with _dag(), pytest.raises(DeltaCCInputError) as caught:
            factory(**{**arguments, **change})
        assert caught.value.field == argument
        assert str(caught.value).startswith(f"{factory.__name__}({argument}=")


def test_only_the_staging_groups_merge_declares_an_asset_the_targets() -> None:
    with _dag() as dag:
        staging_append_then_merge(group_id="ingest", **BASE, operator_kwargs={"emit_asset": True})
    outlets = {
        t.task_id: [o.uri for o in _argument(t, "outlets") or []]
        for t in dag.tasks
        if t.task_id != "ingest.plan_batches"
    }
    assert outlets == {
        "ingest.create_staging": [],
        "ingest.create_target": [],
        "ingest.append_batch": [],
        "ingest.merge_batches": ["file:///data/target"],
        "ingest.cleanup_batches": [],
    }
    assert _argument(dag.get_task("ingest.append_batch"), "emit_asset") is False
