"""Delta tables as assets: the URI of path and catalog tables, the automatic outlet, opting out, user outlets,
bad input at parse time, and the event extra."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.sdk import DAG, Asset, AssetAlias

from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.lineage.assets import (
    emits_event,
    event_extra,
    table_alias,
    table_asset,
    table_asset_uri,
    unannounced_commit,
)
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaVacuumOperator,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("table", "uri"),
    [
        ("/data/orders", "file:///data/orders"),
        ("/data//orders/", "file:///data/orders"),
        ("/data/x/../orders", "file:///data/orders"),
        ("file:///data/orders/", "file:///data/orders"),
        ("s3a://bucket/warehouse/orders/", "s3://bucket/warehouse/orders"),
        ("s3n://bucket/orders", "s3://bucket/orders"),
        ("S3://bucket/orders", "s3://bucket/orders"),
        ("abfss://c@acct.dfs.core.windows.net/orders", "abfss://c@acct.dfs.core.windows.net/orders"),
        ("orders", "x-deltacc-table://spark_catalog/default/orders"),
        ("Sales.Orders", "x-deltacc-table://spark_catalog/sales/orders"),
        ("unity.sales.orders", "x-deltacc-table://unity/sales/orders"),
    ],
)
def test_table_uri_is_stable_and_normalized(table: str, uri: str) -> None:
    assert table_asset_uri(table) == uri
    assert Asset(uri=uri).uri == uri, "Airflow keeps the URI as derived"


@pytest.mark.parametrize("table", ["relative/orders", "a.b.c.d", "bad-name", " "])
def test_underivable_uri_fails_at_parse_time_naming_table(table: str) -> None:
    with pytest.raises(DeltaCCInputError) as caught:
        DeltaAppendOperator(task_id="w", table=table, source="SELECT 1")
    assert caught.value.field == "table"
    assert "w: table=" in str(caught.value) and "emit_asset=False" in str(caught.value)


@pytest.mark.parametrize("table", ["{{ params.table }}", "/data/{% if x %}a{% endif %}"])
def test_a_templated_table_declares_the_tasks_alias_and_parses(table: str) -> None:
    """Its URI is unknown at parse time, when outlets are declared: the task emits through an alias."""
    with DAG("producer", schedule=None):
        op = DeltaAppendOperator(task_id="w", table=table, source="SELECT 1")
    assert op.outlets == [table_alias("producer", "w")] and op.table_outlet is None
    with pytest.raises(DeltaCCInputError) as caught:  # asked for directly, the URI is still refused
        table_asset_uri(table)
    assert caught.value.field == "table"


def test_templated_table_works_without_the_asset() -> None:
    op = DeltaAppendOperator(
        task_id="w",
        table="{{ params.table }}",
        source="SELECT 1",
        emit_asset=False,
        outlets=[Asset("s3://b/k")],
    )
    assert op.outlets == [Asset("s3://b/k")]


def test_every_writer_and_maintenance_operator_declares_its_table() -> None:
    ops = [
        DeltaAppendOperator(task_id="a", table="/t/orders", source="SELECT 1"),
        DeltaMergeOperator(task_id="m", table="/t/orders", source="SELECT 1", keys=["id"]),
        DeltaOptimizeOperator(task_id="o", table="/t/orders"),
        DeltaVacuumOperator(task_id="v", table="/t/orders"),
    ]
    for op in ops:
        assert [outlet.uri for outlet in op.outlets] == ["file:///t/orders"], op.task_id
        assert op.outlets[0].name == "file:///t/orders"


def test_user_outlets_are_kept_next_to_the_table() -> None:
    alias = AssetAlias("orders-alias")
    op = DeltaAppendOperator(
        task_id="a", table="/t/orders", source="SELECT 1", outlets=[Asset("s3://b/k"), alias]
    )
    assert [getattr(o, "uri", o.name) for o in op.outlets] == ["s3://b/k", "orders-alias", "file:///t/orders"]


def test_emit_asset_false_declares_nothing() -> None:
    op = DeltaAppendOperator(task_id="a", table="/t/orders", source="SELECT 1", emit_asset=False)
    assert op.outlets == [] and op.table_outlet is None


@pytest.mark.parametrize("outlet", ["s3://bucket/key", {"uri": "s3://b/k"}, 42])
def test_an_outlet_that_is_not_an_asset_is_refused(outlet: Any) -> None:
    with pytest.raises(DeltaCCInputError) as caught:
        DeltaAppendOperator(task_id="a", table="/t/orders", source="SELECT 1", outlets=[outlet])
    assert caught.value.field == "outlets"
    assert "not an airflow.sdk.Asset" in str(caught.value) and repr(outlet) in str(caught.value)


def test_event_extra_of_a_commit() -> None:
    spec = parse_spec(
        {
            "operation": "overwrite_partitions",
            "table": "/t/orders",
            "source": {"kind": "sql", "query": "SELECT 1"},
            "options": {"partition_values": [{"date": "2026-11-20"}]},
        }
    )
    report = {
        "table_version": 7,
        "skipped_duplicate": False,
        "txn_app_id": "airflow/d/t/-1/r",
        "metrics": {"numOutputRows": "12", "numFiles": 2, "commit_versions": [7]},
    }
    assert event_extra(spec, report) == {
        "version": 7,
        "operation": "overwrite_partitions",
        "changes_data": True,
        "rows_written": 12,
        "metrics": {"numOutputRows": "12", "numFiles": 2},
        "partitions": [{"date": "2026-11-20"}],
        "skipped_duplicate": False,
        "txn_app_id": "airflow/d/t/-1/r",
    }


@pytest.mark.parametrize("operation", ["optimize", "vacuum"])
def test_maintenance_events_do_not_change_data(operation: str) -> None:
    spec = parse_spec({"operation": operation, "table": "/t/orders"})
    extra = event_extra(spec, {"table_version": 3, "metrics": {}})
    assert extra["changes_data"] is False and extra["rows_written"] is None and extra["partitions"] is None


def test_duplicates_and_noops_emit_no_event() -> None:
    assert emits_event({"table_version": 3})
    assert not emits_event({"table_version": 3, "skipped_duplicate": True})
    assert not emits_event({"table_version": 3, "metrics": {"noop": True}})


def _try(number: int, status: str, version: int | None, app: str = "airflow/d/t/-1/r") -> dict[str, Any]:
    return {"try_number": number, "status": status, "table_version": version, "txn_app_id": app}


def test_a_retry_announces_the_commit_of_an_earlier_try_that_failed_after_it() -> None:
    committed = _try(1, "committed", 4)
    retry = {**_try(2, "skipped_duplicate", None), "skipped_duplicate": True}
    assert unannounced_commit({**retry, "tries": [committed, retry]}) == committed


@pytest.mark.parametrize(
    "earlier",
    [
        [],  # another run's commit of a fixed identity: not this task instance's
        [_try(1, "error", None)],  # the earlier try did not commit
        [_try(1, "committed", 4, app="airflow/other")],  # another identity
    ],
)
def test_a_skipped_duplicate_announces_nothing_else(earlier: list[dict[str, Any]]) -> None:
    retry = {**_try(2, "skipped_duplicate", None), "skipped_duplicate": True}
    assert unannounced_commit({**retry, "tries": [*earlier, retry]}) is None
    assert unannounced_commit({**_try(1, "committed", 5), "tries": [_try(1, "committed", 5)]}) is None


def test_a_mapped_writer_declares_its_partial_table_when_the_dag_is_parsed() -> None:
    with DAG("producer", schedule=None):
        mapped = DeltaAppendOperator.partial(task_id="w", table="/t/orders").expand(
            source=["SELECT 1", "SELECT 2"]
        )
    assert mapped.outlets == [table_asset("/t/orders")]


def test_a_mapped_writer_of_expanded_tables_declares_its_alias_in_its_group() -> None:
    from airflow.sdk import TaskGroup

    with DAG("producer", schedule=None), TaskGroup("load"):
        mapped = DeltaAppendOperator.partial(task_id="w", source="SELECT 1").expand(table=["/t/a", "/t/b"])
    assert mapped.outlets == [table_alias("producer", "load.w")]


def test_a_mapped_writer_keeps_user_outlets_and_refuses_non_assets() -> None:
    with DAG("producer", schedule=None):
        kept = DeltaAppendOperator.partial(
            task_id="w", table="/t/orders", outlets=[Asset("s3://b/k")]
        ).expand(source=["SELECT 1"])
        off = DeltaAppendOperator.partial(task_id="off", table="/t/orders", emit_asset=False).expand(
            source=["SELECT 1"]
        )
        with pytest.raises(DeltaCCInputError) as caught:
            DeltaAppendOperator.partial(task_id="bad", table="/t/orders", outlets=["s3://b/k"])
    assert kept.outlets == [Asset("s3://b/k"), table_asset("/t/orders")]
    assert off.outlets == []
    assert caught.value.field == "outlets"


def test_a_mapped_instance_emits_through_the_alias_its_partial_declared() -> None:
    """At run time each instance is built with its own table; it keeps the alias, adds no asset."""
    with DAG("producer", schedule=None):
        op = DeltaAppendOperator(
            task_id="w", table="/t/a", source="SELECT 1", outlets=[table_alias("producer", "w")]
        )
    assert op.outlets == [table_alias("producer", "w")] and op.table_outlet is None


def test_a_table_from_an_upstream_xcom_declares_the_tasks_alias() -> None:
    from airflow.sdk import task

    with DAG("producer", schedule=None):

        @task
        def pick_table() -> str:
            return "/t/orders"

        op = DeltaAppendOperator(task_id="w", table=pick_table(), source="SELECT 1")
    assert op.outlets == [table_alias("producer", "w")] and op.table_outlet is None
