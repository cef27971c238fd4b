"""Writer operators hold a write lease around their job: opened, heartbeated, closed (also on failure)."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.delta_log.table_facts import TableFacts
from airflow_provider_deltacc.exceptions import DeltaCCInputError, DeltaConflictRetryable
from airflow_provider_deltacc.leases import store_from_url
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaOverwritePartitionsOperator,
    DeltaSqlOperator,
    DeltaUpdateOperator,
)
from airflow_provider_deltacc.turns import writer_op_kind, writer_partitions
from tests.unit.maintenance.helpers import RecordingHook, context, grant, logged, with_hook

pytestmark = pytest.mark.unit

TABLE = "/data/orders"
SCHEMA = "id INT, date DATE, v STRING"
FACTS = TableFacts(("date",), {})
SOURCE = {"kind": "delta", "path": "/data/staged_orders"}


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'leases.db'}"


def _merge(store_url: str, **kwargs: Any) -> DeltaMergeOperator:
    defaults: dict[str, Any] = {
        "task_id": "merge_orders",
        "table": TABLE,
        "source": {"kind": "rows", "schema": SCHEMA, "rows": [[1, "2026-11-20", "a"]]},
        "keys": ["id", "date"],
        "lease_store_url": store_url,
    }
    return DeltaMergeOperator(**{**defaults, **kwargs})


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ({"operation": "append", "source": SOURCE, "options": {}}, OpKind.BLIND_APPEND),
        ({"operation": "append", "source": SOURCE, "options": {"merge_schema": True}}, OpKind.SCHEMA_CHANGE),
        ({"operation": "overwrite_partitions", "source": SOURCE}, OpKind.OVERWRITE),
        ({"operation": "merge", "source": SOURCE, "options": {"keys": ["id"]}}, OpKind.MERGE),
        ({"operation": "update", "options": {"set": {"v": "'x'"}, "condition": "id = 1"}}, OpKind.UPDATE),
        ({"operation": "delete", "options": {"condition": "id = 1"}}, OpKind.DELETE),
        (
            {"operation": "sql", "options": {"statement": "INSERT INTO {table} SELECT 1"}},
            OpKind.INSERT_SELECT,
        ),
        ({"operation": "sql", "options": {"statement": " merge into {table} t"}}, OpKind.MERGE),
        ({"operation": "sql", "options": {"statement": "UPDATE {table} SET x = 1"}}, OpKind.UPDATE),
        (
            {"operation": "sql", "options": {"statement": "INSERT OVERWRITE {table} SELECT 1"}},
            OpKind.OVERWRITE,
        ),
        ({"operation": "sql", "options": {"statement": "WITH x AS (SELECT 1) SELECT 1"}}, OpKind.MERGE),
        (
            {
                "operation": "sql",
                "options": {"statement": "INSERT INTO {table} VALUES (1)", "op_class": "blind_append"},
            },
            OpKind.BLIND_APPEND,
        ),
        (
            {
                "operation": "sql",
                "options": {"statement": "ALTER TABLE {table}", "op_class": "schema_changing"},
            },
            OpKind.SCHEMA_CHANGE,
        ),
        (
            {
                "operation": "sql",
                "options": {
                    "statement": "ALTER TABLE {table} CLUSTER BY (k, v)",
                    "op_class": "schema_changing",
                },
            },
            OpKind.CLUSTER_BY,
        ),
        (
            {"operation": "sql", "options": {"statement": "alter table {table}\n cluster by (k)"}},
            OpKind.CLUSTER_BY,
        ),
        (
            {
                "operation": "sql",
                "options": {
                    "statement": "alter table {table} set tblproperties "
                    "('delta.enableDeletionVectors' = 'true', delta.enableRowTracking = TRUE);",
                    "op_class": "schema_changing",
                },
            },
            OpKind.ENABLE_FEATURE,
        ),
        (
            {
                "operation": "sql",
                "options": {
                    "statement": "ALTER TABLE {table} SET TBLPROPERTIES "
                    "('delta.enableDeletionVectors'='true')"
                },
            },
            OpKind.ENABLE_FEATURE,
        ),
        (
            {
                "operation": "sql",
                "options": {
                    "statement": "ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableDeletionVectors' = "
                    "'false')",
                    "op_class": "schema_changing",
                },
            },
            OpKind.SCHEMA_CHANGE,
        ),
        (
            {
                "operation": "sql",
                "options": {
                    "statement": "ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableDeletionVectors' = "
                    "'true', 'delta.logRetentionDuration' = 'interval 60 days')",
                    "op_class": "schema_changing",
                },
            },
            OpKind.SCHEMA_CHANGE,
        ),
        (
            {
                "operation": "sql",
                "options": {"statement": "OPTIMIZE {table} ZORDER BY (v)", "op_class": "maintenance"},
            },
            OpKind.OPTIMIZE_ZORDER,
        ),
    ],
)
def test_op_kind_from_the_spec(spec: dict[str, Any], kind: OpKind) -> None:
    whole = {"table": TABLE, **spec}
    assert writer_op_kind(parse_spec(whole)) is kind


def test_op_kind_refuses_maintenance_operations() -> None:
    with pytest.raises(ValueError, match="operation='vacuum' is not a write"):
        writer_op_kind(parse_spec({"operation": "vacuum", "table": TABLE}))


def test_partitions_from_partition_values_use_deltas_spelling() -> None:
    spec = {
        "operation": "update",
        "table": TABLE,
        "options": {
            "set": {"v": "'x'"},
            "partition_values": [{"DATE": "2026-11-20"}, {"date": "2026-11-21"}],
        },
    }
    assert writer_partitions(parse_spec(spec), facts_loader=lambda _t: FACTS) == [
        {"date": "2026-11-20"},
        {"date": "2026-11-21"},
    ]


def test_merge_partitions_come_from_inline_source_rows_when_pinned() -> None:
    spec = {
        "operation": "merge",
        "table": TABLE,
        "source": {
            "kind": "rows",
            "schema": SCHEMA,
            "rows": [[1, "2026-11-20", "a"], {"id": 2, "date": "2026-11-21"}],
        },
        "options": {"keys": ["id", "date"], "partition_pin": "keyed"},
    }
    assert writer_partitions(parse_spec(spec), facts_loader=lambda _t: FACTS) == [
        {"date": "2026-11-20"},
        {"date": "2026-11-21"},
    ]
    unpinned = {**spec, "options": {"keys": ["id"], "partition_pin": "keyed"}}
    assert writer_partitions(parse_spec(unpinned), facts_loader=lambda _t: FACTS) is None
    auto = {**spec, "options": {"keys": ["id"], "partition_pin": "auto"}}
    assert writer_partitions(parse_spec(auto), facts_loader=lambda _t: FACTS) == [
        {"date": "2026-11-20"},
        {"date": "2026-11-21"},
    ]


@pytest.mark.parametrize(
    "spec",
    [
        {
            "operation": "merge",
            "table": TABLE,
            "source": {"kind": "sql", "query": "SELECT 1"},
            "options": {"keys": ["id", "date"]},
        },
        {
            "operation": "merge",
            "table": "sales.orders",
            "source": {"kind": "rows", "rows": [[1, "2026-11-20", "a"]], "schema": SCHEMA},
            "options": {"keys": ["id", "date"]},
        },
        {"operation": "delete", "table": TABLE, "options": {"partition_values": [{"date": None}]}},
        {"operation": "append", "table": TABLE, "source": {"kind": "sql", "query": "SELECT 1"}},
    ],
    ids=["sql-source", "catalog-name", "unpredictable-value", "append"],
)
def test_unknown_partitions_mean_the_whole_table(spec: dict[str, Any]) -> None:
    assert writer_partitions(parse_spec(spec), facts_loader=lambda _t: FACTS) is None


def test_merge_holds_a_lease_while_its_job_runs(store_url: str) -> None:
    hook = RecordingHook(store_url, TABLE)
    op = with_hook(_merge(store_url), hook)
    op.execute(context())
    [during] = hook.active_during
    assert [(lease.op_kind, lease.holder) for lease in during] == [
        (OpKind.MERGE, "ingest.merge_orders/manual__2026-11-20")
    ]
    with store_from_url(store_url) as store:
        assert store.active(TABLE) == []
        [record] = store.history(TABLE)
    assert record.released_at is not None and record.lease_id == during[0].lease_id


def test_lease_names_pinned_partitions(store_url: str) -> None:
    hook = RecordingHook(store_url, TABLE)
    op = DeltaDeleteOperator(
        task_id="drop_day",
        table=TABLE,
        partition_values=[{"date": "2026-11-19"}],
        lease_store_url=store_url,
    )
    with_hook(op, hook).execute(context(task_id="drop_day", map_index=3))
    [[lease]] = hook.active_during
    assert lease.op_kind is OpKind.DELETE
    assert lease.partitions == [{"date": "2026-11-19"}]
    assert lease.holder == "ingest.drop_day[3]/manual__2026-11-20"


def test_lease_is_closed_when_the_job_fails(store_url: str) -> None:
    def fail() -> None:
        raise DeltaConflictRetryable("conflict outlasted the in-job retries")

    hook = RecordingHook(store_url, TABLE, action=fail)
    op = with_hook(
        DeltaUpdateOperator(
            task_id="fix", table=TABLE, condition="id = 1", set_values={"v": "x"}, lease_store_url=store_url
        ),
        hook,
    )
    with pytest.raises(DeltaConflictRetryable):
        op.execute(context())
    with store_from_url(store_url) as store:
        assert store.active(TABLE) == []
        [record] = store.history(TABLE)
    assert record.op_kind is OpKind.UPDATE and record.released_at is not None


def test_lease_is_heartbeated_while_the_job_runs(store_url: str) -> None:
    # A 2 s TTL (a heartbeat every 0.67 s) tolerates a stalled heartbeat or two on a loaded machine.
    hook = RecordingHook(store_url, TABLE, action=lambda: time.sleep(2.6))
    op = with_hook(_merge(store_url, lease_ttl=2), hook)
    op.execute(context())
    with store_from_url(store_url) as store:
        [record] = store.history(TABLE)
    # Without heartbeats a 2 s lease would have expired during the 2.6 s job.
    assert record.heartbeat_at > record.acquired_at
    assert record.released_at is not None and record.released_at < record.expires_at


def test_opting_out_takes_no_lease(store_url: str) -> None:
    hook = RecordingHook(store_url, TABLE)
    with_hook(_merge(store_url, use_write_lease=False), hook).execute(context())
    assert hook.active_during == [[]]


def test_unreachable_store_does_not_fail_the_write(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hook = RecordingHook(f"sqlite:///{tmp_path / 'other.db'}", TABLE)
    op = with_hook(_merge("postgresql+psycopg2://u:secret@127.0.0.1:1/leases"), hook)
    with caplog.at_level(logging.WARNING):
        report = op.execute(context())
    assert report["status"] == "committed" and len(hook.specs) == 1
    text = logged(caplog, capsys)
    assert "write lease store unavailable" in text and "without a lease" in text
    assert "secret" not in text


def test_store_failing_mid_acquire_does_not_fail_the_write(
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from airflow_provider_deltacc.leases.sql_store import SqlLeaseStore

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError("disk I/O error")

    monkeypatch.setattr(SqlLeaseStore, "try_acquire", broken)
    hook = RecordingHook(store_url, TABLE)
    with caplog.at_level(logging.WARNING):
        with_hook(_merge(store_url), hook).execute(context())
    assert len(hook.specs) == 1
    assert "OSError: disk I/O error" in logged(caplog, capsys)


def test_writer_waits_for_a_conflicting_maintenance_lease_then_writes(store_url: str) -> None:
    with store_from_url(store_url) as store:
        optimize = grant(store, TABLE, OpKind.OPTIMIZE, holder="maint.optimize/manual__1")
        releaser = threading.Timer(0.3, store.release, args=(optimize.lease_id,))
        releaser.start()
        hook = RecordingHook(store_url, TABLE)
        started = time.monotonic()
        with_hook(_merge(store_url, maintenance_wait_timeout=30), hook).execute(context())
        waited = time.monotonic() - started
        releaser.join()
    assert waited >= 0.3
    [during] = hook.active_during
    assert [lease.op_kind for lease in during] == [OpKind.MERGE]


def test_writer_waits_only_briefly_then_writes_with_a_warning(
    store_url: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.VACUUM, holder="maint.vacuum/manual__1")
    hook = RecordingHook(store_url, TABLE)
    with caplog.at_level(logging.WARNING):
        with_hook(_merge(store_url, maintenance_wait_timeout=0.2), hook).execute(context())
    [during] = hook.active_during
    assert sorted(lease.op_kind.name for lease in during) == ["MERGE", "VACUUM"]
    text = logged(caplog, capsys)
    assert "anyway after waiting" in text
    assert "VACUUM lease on the whole table by maint.vacuum" in text


def test_blind_append_does_not_wait_for_optimize(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.OPTIMIZE, holder="maint.optimize/manual__1")
    hook = RecordingHook(store_url, TABLE)
    op = DeltaAppendOperator(
        task_id="append",
        table=TABLE,
        source="/data/raw",
        lease_store_url=store_url,
        maintenance_wait_timeout=60,
    )
    started = time.monotonic()
    with_hook(op, hook).execute(context())
    assert time.monotonic() - started < 5
    assert sorted(lease.op_kind.name for lease in hook.active_during[0]) == ["BLIND_APPEND", "OPTIMIZE"]


def test_overwrite_and_sql_writers_take_leases(store_url: str) -> None:
    hook = RecordingHook(store_url, TABLE)
    with_hook(
        DeltaOverwritePartitionsOperator(
            task_id="ow",
            table=TABLE,
            source="/data/raw",
            partition_values=[{"date": "2026-11-20"}],
            lease_store_url=store_url,
        ),
        hook,
    ).execute(context())
    with_hook(
        DeltaSqlOperator(
            task_id="sql",
            table=TABLE,
            statement="DELETE FROM {table} WHERE id = 1",
            lease_store_url=store_url,
        ),
        hook,
    ).execute(context())
    kinds = [(lease.op_kind, lease.partitions) for [lease] in hook.active_during]
    assert kinds == [(OpKind.OVERWRITE, [{"date": "2026-11-20"}]), (OpKind.DELETE, None)]


class SubmittingHook(RecordingHook):
    """A hook whose commit loop runs in the Spark driver (spark_submit): it cannot take turns itself."""

    loop_runs_here = False


def test_a_spark_submit_writer_takes_its_turn_behind_a_writer_it_will_conflict_with_before_submitting(
    store_url: str,
) -> None:
    """Two unpinned MERGEs will conflict: the one granted second waits for the first before its driver starts,
    and its report says how long."""
    with store_from_url(store_url) as store:
        ahead = grant(store, TABLE, OpKind.MERGE, holder="ingest.merge_other/manual__1")

        def release_once_the_writer_waits() -> None:
            # Timed from the writer's own grant, not from the test's start: a loaded box may take longer
            # than the wait itself to get the operator there.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(
                lease.holder.startswith("ingest.merge_orders/") for lease in store.active(TABLE)
            ):
                time.sleep(0.02)
            time.sleep(0.4)
            store.release(ahead.lease_id)

        releaser = threading.Thread(target=release_once_the_writer_waits)
        releaser.start()
        hook = SubmittingHook(store_url, TABLE)
        report = with_hook(_merge(store_url, partition_pin=None), hook).execute(context())
        releaser.join()
    [during] = hook.active_during
    assert [lease.holder.split("/")[0] for lease in during] == ["ingest.merge_orders"]  # after the other
    assert report["first_turn_wait_s"] >= 0.4


def test_writers_that_cannot_conflict_do_not_wait_for_their_turn(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.MERGE, [{"date": "2026-11-21"}], holder="ingest.merge_other/manual__1")
    hook = SubmittingHook(store_url, TABLE)
    started = time.monotonic()
    op = DeltaDeleteOperator(
        task_id="drop_day", table=TABLE, partition_values=[{"date": "2026-11-19"}], lease_store_url=store_url
    )
    report = with_hook(op, hook).execute(context(task_id="drop_day"))
    assert time.monotonic() - started < 5
    assert report["first_turn_wait_s"] == 0.0


class TurnTakingHook(RecordingHook):
    """A hook whose commit loop runs in this process (spark_connect, in_process): it gets the turns."""

    def __init__(self, store_url: str, table: str) -> None:
        super().__init__(store_url, table)
        self.turns: list[Any] = []

    def run(self, spec: dict[str, Any], *, consult_log: bool = True, turns: Any = None) -> dict[str, Any]:
        self.turns.append(turns)
        return super().run(spec, consult_log=consult_log, turns=turns)


def test_a_writer_whose_loop_runs_here_hands_its_turns_to_the_job(store_url: str) -> None:
    from airflow_provider_deltacc.turns import LeaseTurns

    hook = TurnTakingHook(store_url, TABLE)
    with_hook(_merge(store_url), hook).execute(context())
    [turns] = hook.turns
    assert isinstance(turns, LeaseTurns) and turns.lease.holder.startswith("ingest.merge_orders/")
    assert turns.timeout_s == 1800.0
    off = TurnTakingHook(store_url, TABLE)
    with_hook(_merge(store_url, turn_wait_timeout=0), off).execute(context())
    assert off.turns == [None]  # turn_wait_timeout=0: writers race, the commit loop retries


def test_turn_wait_timeout_is_capped_by_execution_timeout_and_validated(store_url: str) -> None:
    from datetime import timedelta

    from airflow_provider_deltacc.exceptions import DeltaCCInputError

    hook = TurnTakingHook(store_url, TABLE)
    op = _merge(store_url, execution_timeout=timedelta(minutes=5))
    with_hook(op, hook).execute(context())
    assert hook.turns[0].timeout_s == 300.0
    with pytest.raises(DeltaCCInputError) as raised:
        with_hook(_merge(store_url, turn_wait_timeout="soon"), TurnTakingHook(store_url, TABLE)).execute(
            context()
        )
    assert raised.value.field == "turn_wait_timeout"


def test_lease_ttl_takes_a_timedelta(store_url: str) -> None:
    hook = RecordingHook(store_url, TABLE)
    with_hook(_merge(store_url, lease_ttl=timedelta(minutes=3)), hook).execute(context())
    with store_from_url(store_url) as store:
        [record] = store.history(TABLE)
    assert record.expires_at - record.acquired_at == timedelta(minutes=3)


@pytest.mark.parametrize("ttl", [0, -5, "soon", timedelta(0)])
def test_a_lease_ttl_that_is_not_positive_is_refused_naming_it(store_url: str, ttl: Any) -> None:
    hook = RecordingHook(store_url, TABLE)
    with pytest.raises(
        DeltaCCInputError, match=r"lease_ttl=.* must be a positive number of seconds or a timedelta"
    ):
        with_hook(_merge(store_url, lease_ttl=ttl), hook).execute(context())
    assert hook.specs == []
