"""Operators: templated fields render, each builds the spec its job validates, source shorthand, and the
exactly-once txn identity derivation (stable across tries, distinct per run and map index)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import MagicMock

import pytest

from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.spec import JobSpec, SourceSpec
from airflow_provider_deltacc.contract.spec_json import spec_to_json
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.contract.spec_sources import source_of
from airflow_provider_deltacc.contract.txn import TxnIdentity
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaOverwritePartitionsOperator,
    DeltaSqlOperator,
    DeltaUpdateOperator,
)
from airflow_provider_deltacc.operators.identity import derive_txn_identity
from airflow_provider_deltacc.operators.sources import source_form, source_spec
from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy
from tests.unit.airflow_face.conftest import make_context

pytestmark = pytest.mark.unit

TABLE = "/data/{{ params.day }}/orders"


def test_templated_fields_render(context: Any) -> None:
    merge = DeltaMergeOperator(
        task_id="m",
        table=TABLE,
        source="/landing/{{ ds }}/orders.parquet",
        condition="t.id = s.id AND t.date = DATE'{{ ds }}'",
        when_matched=[{"action": "update", "condition": "s.ts > '{{ ds }}'"}],
        spark_conf={"spark.app.day": "{{ ds }}"},
        txn_app_id="orders/{{ params.day }}",
    )
    merge.render_template_fields(context)
    assert merge.table == "/data/2026-11-20/orders"
    assert merge.source == "/landing/2026-11-20/orders.parquet"
    assert merge.condition == "t.id = s.id AND t.date = DATE'2026-11-20'"
    assert merge.when_matched == [{"action": "update", "condition": "s.ts > '2026-11-20'"}]
    assert merge.spark_conf == {"spark.app.day": "2026-11-20"}
    assert merge.txn_app_id == "orders/2026-11-20"

    update = DeltaUpdateOperator(
        task_id="u",
        table=TABLE,
        set_values={"status": "{{ params.day }}"},
        partition_values=[{"date": "{{ ds }}"}],
        equals={"id": "{{ ds }}"},
    )
    update.render_template_fields(context)
    assert update.partition_values == [{"date": "2026-11-20"}]
    assert update.set_values == {"status": "2026-11-20"}
    assert {"table", "condition", "partition_values", "equals"} <= set(update.template_fields)
    for cls in (DeltaAppendOperator, DeltaOverwritePartitionsOperator, DeltaMergeOperator, DeltaSqlOperator):
        assert {"table", "source"} <= set(cls.template_fields)


def _spec(op: Any, context: Any) -> JobSpec:
    spec = op.build_spec(context)
    assert parse_spec(spec_to_json(spec)) == spec  # what the Spark job will accept
    return spec


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (
            DeltaAppendOperator(task_id="a", table="/t", source="/in/x.parquet", partition_by=["date"]),
            {
                "operation": "append",
                "source": {"kind": "parquet", "path": "/in/x.parquet"},
                "options": {"partition_by": ["date"], "create_if_missing": True, "merge_schema": False},
            },
        ),
        (
            DeltaOverwritePartitionsOperator(
                task_id="o",
                table="/t",
                source="SELECT * FROM staged",
                partition_values=[{"date": "2026-11-20"}],
            ),
            {
                "operation": "overwrite_partitions",
                "source": {"kind": "sql", "query": "SELECT * FROM staged"},
                "options": {"partition_values": [{"date": "2026-11-20"}]},
            },
        ),
        (
            DeltaMergeOperator(task_id="m", table="/t", source="/raw/orders", keys=["id", "date"]),
            {
                "operation": "merge",
                "source": {"kind": "delta", "path": "/raw/orders"},
                "options": {"keys": ["id", "date"], "partition_pin": "keyed"},
            },
        ),
        (
            DeltaUpdateOperator(task_id="u", table="/t", set_values={"status": "done"}, equals={"id": 7}),
            {
                "operation": "update",
                "source": None,
                "options": {"equals": {"id": 7}, "set_values": {"status": "done"}},
            },
        ),
        (
            DeltaDeleteOperator(task_id="d", table="/t", partition_values=[{"date": "2026-11-20"}]),
            {
                "operation": "delete",
                "source": None,
                "options": {"partition_values": [{"date": "2026-11-20"}]},
            },
        ),
        (
            DeltaSqlOperator(
                task_id="s", table="/t", statement="DELETE FROM {table} WHERE id = :id", args={"id": 1}
            ),
            {
                "operation": "sql",
                "source": None,
                "options": {
                    "statement": "DELETE FROM {table} WHERE id = :id",
                    "args": {"id": 1},
                    "op_class": "read_modify_write",
                },
            },
        ),
    ],
    ids=["append", "overwrite_partitions", "merge", "update", "delete", "sql"],
)
def test_each_operator_builds_a_valid_spec(op: Any, expected: dict[str, Any], context: Any) -> None:
    spec = _spec(op, context)
    txn = {"app_id": f"airflow/orders_dag/merge_orders/-1/{context['run_id']}", "version": 1}
    assert spec == parse_spec({**expected, "table": "/t", "txn": txn})  # the spec its dict form says
    assert spec.commit_retry == CommitRetryPolicy()


def test_commit_retry_and_explicit_identity_reach_the_spec(context: Any) -> None:
    op = DeltaMergeOperator(
        task_id="m",
        table="/t",
        source={"kind": "csv", "path": "/in/a.csv", "options": {"header": "true"}},
        keys=["id"],
        commit_retry={"max_attempts": 1},
        txn_app_id="orders-loader",
        txn_version="42",
    )
    spec = _spec(op, context)
    assert spec.commit_retry == CommitRetryPolicy(max_attempts=1)  # the spec names it as the operator does
    assert spec.txn == TxnIdentity("orders-loader", 42)
    assert spec.source == SourceSpec("csv", path="/in/a.csv", options={"header": "true"})


def test_bad_operator_input_fails_before_submission(context: Any) -> None:
    with pytest.raises(DeltaCCInputError) as raised:
        _spec(DeltaMergeOperator(task_id="m", table="/t", source="/in/x.parquet"), context)  # no keys
    assert raised.value.field == "options.keys"
    with pytest.raises(DeltaCCInputError, match="txn_version"):
        _spec(DeltaDeleteOperator(task_id="d", table="/t", condition="true", txn_version="soon"), context)


def test_operators_default_to_the_delta_retry_policy() -> None:
    op = DeltaDeleteOperator(task_id="d", table="/t", condition="true")
    assert op.retries == 2 and isinstance(op.retry_policy, DeltaConflictRetryPolicy)
    custom = DeltaDeleteOperator(task_id="e", table="/t", condition="true", retries=0, retry_policy=None)
    assert custom.retries == 0 and custom.retry_policy is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("SELECT * FROM raw", {"kind": "sql", "query": "SELECT * FROM raw"}),
        (
            "  with x as (select 1) select * from x",
            {"kind": "sql", "query": "with x as (select 1) select * from x"},
        ),
        ("s3a://bucket/in/part.PARQUET", {"kind": "parquet", "path": "s3a://bucket/in/part.PARQUET"}),
        ("/in/orders.csv", {"kind": "csv", "path": "/in/orders.csv"}),
        ("/lake/raw/orders", {"kind": "delta", "path": "/lake/raw/orders"}),
        ("sales.orders", {"kind": "table", "name": "sales.orders"}),
        ({"kind": "delta", "path": "/x", "version": 3}, {"kind": "delta", "path": "/x", "version": 3}),
        (None, None),
    ],
)
def test_source_shorthand(given: Any, expected: Any) -> None:
    assert source_form(given) == expected
    assert source_spec(given) == (None if expected is None else source_of(expected))


@pytest.mark.parametrize("bad", ["", "   ", 42])
def test_source_shorthand_rejects_non_sources(bad: Any) -> None:
    with pytest.raises(DeltaCCInputError) as raised:
        source_spec(bad)
    assert raised.value.field == "source"


def test_run_identity_is_stable_across_tries_and_distinct_per_run_and_map_index() -> None:
    first = derive_txn_identity(make_context(try_number=1))
    assert derive_txn_identity(make_context(try_number=2)) == first
    assert first == ("airflow/orders_dag/merge_orders/-1/scheduled__2026-11-20T00:00:00+00:00", 1)
    assert derive_txn_identity(make_context(run_id="manual__2")) != first
    mapped = {derive_txn_identity(make_context(map_index=i))[0] for i in range(3)}
    assert len(mapped) == 3 and first[0] not in mapped


def test_interval_identity_versions_grow_with_the_schedule() -> None:
    day1 = make_context(interval_end=datetime(2026, 11, 21, tzinfo=UTC))
    day2 = make_context(interval_end=datetime(2026, 11, 22, tzinfo=UTC), run_id="other")
    app1, v1 = derive_txn_identity(day1, "interval")
    app2, v2 = derive_txn_identity(day2, "interval")
    assert app1 == app2 == "airflow/orders_dag/merge_orders/-1"
    assert v1 == int(datetime(2026, 11, 21, tzinfo=UTC).timestamp()) and v2 > v1
    assert derive_txn_identity(make_context(try_number=3), "interval") == (app1, v1)


def test_interval_identity_needs_a_date_and_unknown_strategies_fail() -> None:
    with pytest.raises(DeltaCCInputError, match="txn_identity='interval'"):
        derive_txn_identity(make_context(interval_end=None), "interval")
    with pytest.raises(DeltaCCInputError) as raised:
        derive_txn_identity(make_context(), "daily")
    assert raised.value.field == "txn_identity"


def test_publish_pushes_the_report_and_logs_a_summary(context: Any) -> None:
    op = DeltaMergeOperator(task_id="m", table="/t", source="/in/x.parquet", keys=["id"])
    op._cached_logger = log = MagicMock()
    conflict = {"kind": "append", "partition": "[d=1]"}
    report = {
        "table": "/t",
        "status": "committed",
        "table_version": 7,
        "attempts": [
            {"number": 1, "wait_s": 0.25, "wasted_s": 1.5, "conflict": conflict},
            {"number": 2, "wasted_s": 0.0},
        ],
    }
    pushed = op._publish(context, report, None)
    # One report, this try's plus the list of tries (outside a task runner: this try only, and it says so).
    assert context["ti"].pushed == {"deltacc_report": pushed}
    assert {k: pushed[k] for k in report} == report
    assert [t["try_number"] for t in pushed["tries"]] == [1] and pushed["tries_source"] == "this_try_only"
    assert op.do_xcom_push is False, "not pushed a second time as return_value"
    (warning,) = [c.args[1] for c in log.warning.call_args_list if c.args[0] == "%s"]
    assert warning.startswith(
        "Delta conflict APPEND on /t partition [d=1], attempt 1 of 2: retried after 0.25 s"
    )
    assert log.info.call_args.args[1:] == ("MERGE", "/t", "committed", 7, 2, 1, 1.5, "", "")


def test_the_conflict_line_and_the_summary_report_the_time_in_the_tables_queue() -> None:
    from airflow_provider_deltacc.contract.try_times import TryTimes
    from airflow_provider_deltacc.operators.report_lines import conflict_log_line, turn_wait_note

    conflict = {"kind": "concurrent_append", "exception": "ConcurrentAppendException", "message": "m"}
    report: dict[str, Any] = {
        "table": "/data/orders",
        "status": "committed",
        "max_attempts": 5,
        "first_turn_wait_s": 3.25,
        "attempts": [
            {"number": 1, "conflict": conflict, "turn_wait_s": 1.5, "wait_s": 0.0},
            {"number": 2, "conflict": None, "turn_wait_s": 0.0, "wait_s": 0.0},
        ],
    }
    line = conflict_log_line(report, report["attempts"][0], "/data/orders")
    assert line.startswith("Delta conflict CONCURRENT_APPEND on /data/orders, attempt 1 of 5: ")
    assert "once the writers ahead had finished (1.50 s waiting for its turn)" in line
    assert "(it had waited 3.25 s for its turn before attempt 1)" in line
    assert turn_wait_note(TryTimes.of(report)) == " turn_wait=4.75s (first turn 3.25s, after conflicts 1.50s)"

    raced = {**report, "first_turn_wait_s": 0.0, "attempts": [{**report["attempts"][0], "turn_wait_s": 0.0}]}
    assert turn_wait_note(TryTimes.of(raced)) == ""
    assert "for its turn" not in conflict_log_line(raced, raced["attempts"][0], "/data/orders")


def test_a_source_function_is_kept_as_code_and_one_without_a_session_parameter_is_refused() -> None:
    from airflow_provider_deltacc.exceptions import DeltaCCInputError
    from airflow_provider_deltacc.operators.sources import SourceFunctionArgument, source_spec

    def build_orders(spark: object, ds: str | None = None) -> object:
        return spark

    op = DeltaMergeOperator(task_id="m", table="/data/orders", source=build_orders, keys=["id"])
    # Not callable itself: Airflow renders a callable template field by calling it.
    assert isinstance(op.source, SourceFunctionArgument) and not callable(op.source)
    assert "build_orders" in repr(op.source)
    spec = source_spec(op.source, context={"ds": "2026-11-26", "ti": object()})
    assert spec is not None and spec.kind == "callable" and spec.function is not None
    assert dict(spec.function.context) == {"ds": "2026-11-26"}  # only what the function names

    def nothing() -> object:
        return None

    with pytest.raises(DeltaCCInputError) as raised:
        DeltaMergeOperator(task_id="m2", table="/data/orders", source=nothing, keys=["id"])
    assert raised.value.field == "source" and "add a `spark` parameter" in str(raised.value)
