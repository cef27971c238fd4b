"""Delta tables as assets on real runs: a ``dag.test()`` producer's commit is an asset event in the metadata
DB with the committed version in its extra, the scheduler's own asset-triggered run creation queues the
consumer DAG, and a re-run Delta skips as a duplicate emits nothing."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.lineage.assets import table_asset_uri
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaOptimizeOperator
from tests.support.asset_events import asset_events

pytestmark = pytest.mark.integration

PRODUCER, CONSUMER = "deltacc_asset_producer", "deltacc_asset_consumer"


def _dags(orders: str) -> tuple[Any, Any]:
    from airflow.sdk import DAG, Asset, task

    with DAG(PRODUCER, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as producer:
        append = DeltaAppendOperator(
            task_id="append_orders",
            table=orders,
            source="SELECT /*+ REPARTITION(4) */ id, 'a' AS p FROM range(8)",  # 4 files OPTIMIZE compacts
            partition_by=["p"],
            execution_mode="in_process",
            # One fixed identity: the second run of this DAG is the same write, which Delta skips.
            txn_app_id="asset-test/orders",
            txn_version=1,
        )
        optimize = DeltaOptimizeOperator(
            task_id="optimize_orders", table=orders, execution_mode="in_process", deferrable=False
        )
        append >> optimize

    with DAG(
        CONSUMER, schedule=[Asset(table_asset_uri(orders))], start_date=datetime(2026, 1, 1)
    ) as consumer:

        @task
        def read_orders() -> None:
            return None

        read_orders()
    return producer, consumer


def _sync(folder: Path, *dags: Any) -> None:
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    DagBundlesManager().sync_bundles_to_db()
    folder.mkdir()
    bag = DagBag(dag_folder=str(folder))
    for dag in dags:
        bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)
    with create_session() as session:
        session.query(DagModel).filter(DagModel.dag_id.in_([d.dag_id for d in dags])).update(
            {DagModel.is_paused: False}, synchronize_session=False
        )


def _create_runs_as_the_scheduler_does(dag_id: str = CONSUMER) -> list[Any]:
    """The scheduler loop's dag-run creation step (the one that turns queued asset events into runs)."""
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.sqlalchemy import prohibit_commit

    runner = SchedulerJobRunner(job=Job())
    with create_session() as session:
        with prohibit_commit(session) as guard:
            runner._create_dagruns_for_dags(guard, session)
            guard.commit()
        runs = session.query(DagRun).filter(DagRun.dag_id == dag_id).all()
        for run in runs:
            session.expunge(run)
        return runs


def test_commits_emit_asset_events_that_trigger_the_consumer(
    airflow_db: Path, spark: Any, tmp_path: Path
) -> None:
    orders = str(tmp_path / "orders")
    uri = table_asset_uri(orders)
    producer, consumer = _dags(orders)
    _sync(tmp_path / "no-dags", producer, consumer)

    first = producer.test()
    assert {ti.task_id: str(ti.state) for ti in first.get_task_instances()} == {
        "append_orders": "success",
        "optimize_orders": "success",
    }
    events = [e for e in asset_events(uri) if e["run_id"] == first.run_id]
    append_event = next(e["extra"] for e in events if e["task_id"] == "append_orders")
    assert append_event["version"] == 0 and append_event["operation"] == "append"
    assert append_event["changes_data"] is True and append_event["skipped_duplicate"] is False
    assert append_event["rows_written"] == 8
    assert append_event["txn_app_id"] == "asset-test/orders"
    optimize_event = next(e["extra"] for e in events if e["task_id"] == "optimize_orders")
    assert (optimize_event["version"], optimize_event["operation"]) == (1, "optimize")
    assert optimize_event["changes_data"] is False

    runs = _create_runs_as_the_scheduler_does()
    assert [str(r.run_type) for r in runs] == ["asset_triggered"], runs

    second = producer.test()
    assert str(second.get_task_instance("append_orders").state) == "success"
    # The append is a skipped duplicate and OPTIMIZE finds nothing to compact: neither is new data.
    assert [e for e in asset_events(uri) if e["run_id"] == second.run_id] == []
    assert len(_create_runs_as_the_scheduler_does()) == 1, "no new consumer run without a new event"


ALIAS_PRODUCER, ALIAS_CONSUMER = "deltacc_alias_producer", "deltacc_alias_consumer"


def _alias_dags(tables: list[str]) -> tuple[Any, Any]:
    """A producer whose tables are known only at run time: a templated table and a mapped writer expanded
    over tables; a consumer scheduled on the last table's asset."""
    from airflow.sdk import DAG, Asset, task

    with DAG(
        ALIAS_PRODUCER,
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        params={"table": tables[0]},
    ) as producer:
        DeltaAppendOperator(
            task_id="append_templated",
            table="{{ params.table }}",
            source="SELECT id FROM range(3)",
            execution_mode="in_process",
            txn_app_id="alias-test/templated",  # the second run is the same write: a skipped duplicate
            txn_version=1,
        )
        DeltaAppendOperator.partial(
            task_id="append_mapped", source="SELECT id FROM range(2)", execution_mode="in_process"
        ).expand(table=tables[1:])

    with DAG(
        ALIAS_CONSUMER, schedule=[Asset(table_asset_uri(tables[-1]))], start_date=datetime(2026, 1, 1)
    ) as consumer:

        @task
        def read() -> None:
            return None

        read()
    return producer, consumer


def test_tables_known_only_at_run_time_emit_through_the_tasks_alias(
    airflow_db: Path, spark: Any, tmp_path: Path
) -> None:
    tables = [str(tmp_path / name) for name in ("templated", "mapped_a", "mapped_b")]
    producer, consumer = _alias_dags(tables)
    _sync(tmp_path / "no-dags", producer, consumer)

    first = producer.test()
    assert {str(ti.state) for ti in first.get_task_instances()} == {"success"}
    for table, rows, task_id in zip(
        tables, (3, 2, 2), ("append_templated", "append_mapped", "append_mapped"), strict=True
    ):
        events = [e for e in asset_events(table_asset_uri(table)) if e["run_id"] == first.run_id]
        assert [(e["task_id"], e["extra"]["version"], e["extra"]["rows_written"]) for e in events] == [
            (task_id, 0, rows)
        ], table

    runs = _create_runs_as_the_scheduler_does(ALIAS_CONSUMER)
    assert [str(r.run_type) for r in runs] == ["asset_triggered"], runs

    second = producer.test()
    assert str(second.get_task_instance("append_templated").state) == "success"
    assert [e for e in asset_events(table_asset_uri(tables[0])) if e["run_id"] == second.run_id] == [], (
        "a skipped duplicate emits nothing, also through the alias"
    )
    mapped_b = [e for e in asset_events(table_asset_uri(tables[2])) if e["run_id"] == second.run_id]
    assert [e["extra"]["version"] for e in mapped_b] == [1]
