"""The Delta-log fast path agrees with Delta on real delta-spark tables.

For every operation that carries a txn identity, and for a recorded version below, equal to and above the
job's own, the fast path's verdict (answered as a duplicate, or left to Spark) is what the engine, run with
the fast path bypassed, does: skipped, or written. delta-rs checks the table afterwards. Tables the log
cannot answer for exactly (a catalog name, a txn retention, a path that is no Delta table) fall through, and
the staging group's empty create tasks are answered without Spark on an existing table, unless the engine
would refuse them.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.delta_log.fast_path import consult_log
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import create_table, rows_source
from tests.integration.engine.test_exactly_once_operations import CASES, SEED
from tests.support.airflow_runs import use_temp_lease_store
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

OURS = 4
#: The report fields a duplicate answered from the log shares with the engine's own report.
SHARED_FIELDS = (
    "operation",
    "table",
    "status",
    "table_version",
    "skipped_duplicate",
    "txn_app_id",
    "txn_version",
)


def _delta_rs_view(location: str) -> tuple[int, list[str], list[dict[str, Any]]]:
    from deltalake import DeltaTable

    table = DeltaTable(location)
    history = [{k: h.get(k) for k in ("version", "operation")} for h in table.history()]
    return table.version(), sorted(table.file_uris()), history


def _record(spark: SparkSession, table: str, app_id: str, version: int) -> int:
    """Commit one row with the identity ``(app_id, version)`` through the engine; its table version."""
    spec = {
        "operation": "append",
        "table": table,
        "source": rows_source([[90 + version, "2026-11-25", "recorded"]]),
        "options": {"create_if_missing": False},
        "txn": {"app_id": app_id, "version": version},
    }
    code, report = run_job(spec, spark)
    assert code == ExitCode.SUCCESS and report["status"] == "committed", report
    return int(report["table_version"])


@pytest.mark.parametrize("recorded", [OURS - 1, OURS, OURS + 1], ids=["below", "equal", "above"])
@pytest.mark.parametrize("operation", sorted(CASES))
def test_the_fast_path_agrees_with_the_engine(
    spark: SparkSession, tmp_path: Path, operation: str, recorded: int
) -> None:
    path = str(tmp_path / "table")
    create_table(spark, path, SEED)
    app_id = f"fast-path/{operation}"
    recorded_at = _record(spark, path, app_id, recorded)
    spec = {
        "operation": operation,
        "table": path,
        "txn": {"app_id": app_id, "version": OURS},
        **CASES[operation][1],
    }
    before = _delta_rs_view(path)

    answer = consult_log(parse_spec(spec)).report
    code, report = run_job(spec, spark)  # the engine alone: the fast path lives in the hook

    assert code == ExitCode.SUCCESS, report
    skipped = report["status"] == "skipped_duplicate"
    assert skipped is (recorded >= OURS)
    assert (answer is not None) is skipped, (answer, report)
    after = _delta_rs_view(path)
    if not skipped:
        assert after[0] == before[0] + 1 == report["table_version"]
        return
    assert answer is not None and after == before
    assert {k: answer[k] for k in SHARED_FIELDS} == {k: report[k] for k in SHARED_FIELDS}
    assert answer["summary"] == report["summary"]
    for key in ("recorded_txn_version", "committed_version"):
        assert answer["metrics"][key] == report["metrics"][key], key
    assert answer["metrics"]["recorded_txn_version"] == recorded
    assert answer["metrics"]["committed_version"] == (recorded_at if recorded == OURS else None)
    assert answer["metrics"]["answered_by"] == "delta-log"


def test_a_catalog_table_falls_through_while_its_path_is_answered(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "table")
    create_table(spark, path, SEED)
    name = f"default.fast_path_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} USING DELTA LOCATION '{path}'")
    _record(spark, name, "fast-path/catalog", OURS)
    spec = {"operation": "delete", "table": name, "txn": {"app_id": "fast-path/catalog", "version": OURS}}
    spec["options"] = {"equals": {"id": 1}}

    assert consult_log(parse_spec(spec)).report is None
    code, report = run_job(spec, spark)
    assert code == ExitCode.SUCCESS and report["status"] == "skipped_duplicate", report
    by_path = consult_log(parse_spec({**spec, "table": path})).report
    assert by_path is not None and by_path["status"] == "skipped_duplicate"


def test_a_table_with_a_txn_retention_falls_through(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "table")
    create_table(spark, path, SEED)
    spark.sql(
        f"ALTER TABLE delta.`{path}` "
        "SET TBLPROPERTIES ('delta.setTransactionRetentionDuration' = 'interval 30 days')"
    )
    _record(spark, path, "fast-path/retention", OURS)
    spec = {
        "operation": "update",
        "table": path,
        "options": {"set": {"value": "'x'"}, "equals": {"id": 1}},
        "txn": {"app_id": "fast-path/retention", "version": OURS},
    }

    assert consult_log(parse_spec(spec)).report is None
    code, report = run_job(spec, spark)
    assert code == ExitCode.SUCCESS and report["status"] == "skipped_duplicate", report


def test_a_path_that_is_not_a_delta_table_falls_through_to_sparks_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "plain_parquet")
    spark.createDataFrame([(1, "a")], "id INT, value STRING").write.parquet(path)
    spec = {
        "operation": "merge",
        "table": path,
        "source": rows_source([[1, "2026-11-20", "a"]]),
        "options": {"keys": ["id"]},
        "txn": {"app_id": "fast-path/parquet", "version": OURS},
    }

    assert consult_log(parse_spec(spec)).report is None
    with pytest.raises(DeltaCCInputError, match="not a Delta table") as raised:
        DeltaCCHook(execution_mode="in_process").run(spec)
    assert raised.value.field == "table"


# -- the staging group's create tasks ----------------------------------------------------------------------
TARGET_SCHEMA = "order_id BIGINT, day DATE, amount DOUBLE, updated_at TIMESTAMP"


class SparkMustNotStart:
    def run(self, spec: dict[str, Any], *, turns: Any = None) -> tuple[int, dict[str, Any]]:
        raise AssertionError("the job was started for a create the Delta log answers")

    def on_kill(self) -> None:
        return None


def _staging_group_tasks(tmp_path: Path) -> tuple[Any, Any]:
    """The group's ``create_staging`` and ``create_target`` tasks, in ``in_process`` mode."""
    from airflow.sdk import DAG

    from airflow_provider_deltacc.task_groups import staging_append_then_merge

    with DAG(dag_id="fast_path_staging", schedule=None) as dag:
        staging_append_then_merge(
            sources=[],
            staging_table=str(tmp_path / "staging"),
            target_table=str(tmp_path / "target"),
            schema=TARGET_SCHEMA,
            keys=["order_id", "day"],
            partition_by=["day"],
            dedup_order_by="updated_at",
            operator_kwargs={"execution_mode": "in_process"},
        )
    group = "staging_append_then_merge"
    return dag.get_task(f"{group}.create_staging"), dag.get_task(f"{group}.create_target")


def test_the_create_task_of_an_existing_table_is_answered_without_spark(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_temp_lease_store(tmp_path, monkeypatch)
    target = str(tmp_path / "target")
    rows = spark.createDataFrame(
        [(1, "2026-11-20", 9.5, "2026-11-20 10:00:00")], "order_id BIGINT, d STRING, amount DOUBLE, t STRING"
    )
    rows.selectExpr(
        "order_id", "CAST(d AS DATE) AS day", "amount", "CAST(t AS TIMESTAMP) AS updated_at"
    ).write.format("delta").partitionBy("day").save(target)
    before = _delta_rs_view(target)
    _, create_target = _staging_group_tasks(tmp_path)
    create_target.hook.__dict__["runner"] = SparkMustNotStart()
    context = make_context(dag_id="fast_path_staging", task_id=create_target.task_id)

    report = create_target.execute(context)

    assert report["status"] == "committed" and report["metrics"]["noop"] is True, report
    assert report["metrics"]["answered_by"] == "delta-log" and report["table_version"] == before[0]
    assert _delta_rs_view(target) == before

    # The engine, asked the same, writes no data either (it records the identity in an empty commit), and
    # from then on the create is a duplicate the log answers.
    spec = create_target.build_spec(context)
    code, engine = run_job(spec, spark)
    assert code == ExitCode.SUCCESS and engine["status"] == "committed", engine
    assert _delta_rs_view(target)[1] == before[1]
    again = create_target.execute(context)
    assert again["status"] == "skipped_duplicate" and again["metrics"]["answered_by"] == "delta-log"


def test_a_create_task_the_engine_would_refuse_falls_through_to_sparks_error(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_temp_lease_store(tmp_path, monkeypatch)
    staging = str(tmp_path / "staging")
    # The staging table exists, but partitioned by day rather than by the group's batch column.
    spark.createDataFrame([], f"{TARGET_SCHEMA}, batch_id STRING").write.format("delta").partitionBy(
        "day"
    ).save(staging)
    create_staging, _ = _staging_group_tasks(tmp_path)
    context = make_context(dag_id="fast_path_staging", task_id=create_staging.task_id)

    assert create_staging.hook.consult_log(create_staging.build_spec(context)).report is None
    with pytest.raises(DeltaCCInputError, match="partitioned by") as raised:
        create_staging.execute(context)
    assert raised.value.field == "options.partition_by"
