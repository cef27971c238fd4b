"""The bad-input sweep (issue #7): operators, task groups, job specs and connections fed bad input.

Every case must fail *before anything is written*, with the provider's own error (``DeltaCCInputError``
or another ``DeltaCCError``; Airflow's ``TypeError`` for an unknown operator argument, which it raises at
parse time) whose message names the offending field. "Nothing written" is checked with delta-rs as an
independent reader: the table's version and data files are unchanged, and no new path appeared under the
test's root. Operators run ``execute`` with a task context and ``execution_mode="in_process"`` on the
shared Spark session (the connection cases use ``spark_submit``, which fails before spark-submit starts).
One connection case is not bad input: a ``spark://`` master that refuses connections is
``DeltaCCInfrastructureError`` (Airflow retries it), and it must fail just as fast, naming the connection.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.exceptions import DeltaCCError, DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaOverwritePartitionsOperator,
    DeltaSqlOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from airflow_provider_deltacc.spark_job.main import run_job
from airflow_provider_deltacc.task_groups import staging_append_then_merge, table_maintenance
from tests.support.airflow_runs import use_temp_lease_store
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, date DATE, value STRING"
ROWS = {"kind": "rows", "rows": [[1, "2026-11-20", "new"]], "schema": SCHEMA}
INJECTIONS = {
    "quote": "2026-11-20' OR '1'='1",
    "drop": "x'; DROP TABLE orders; --",
    "subst": "${spark.sql.warehouse.dir}",
    "env": "${env:DELTACC_SWEEP_SECRET}",
}


@dataclass(frozen=True)
class Paths:
    root: Path
    table: str  # a partitioned Delta table: id INT, date DATE (partition), value STRING
    plain: str  # a plain parquet directory
    missing: str  # nothing there
    empty_jars: str  # an empty jar cache


@dataclass(frozen=True)
class Case:
    """One bad input: ``run`` raises; ``field`` must be in the message (and ``.field`` when set)."""

    id: str
    category: str
    run: Callable[[Paths], object]
    field: str
    errors: tuple[type[BaseException], ...] = (DeltaCCInputError,)


def _execute(op: Any, **params: Any) -> Any:
    context = make_context(task_id=op.task_id, params=params)
    op.render_template_fields(context)
    return op.execute(context)


def _common(**extra: Any) -> dict[str, Any]:
    return {"execution_mode": "in_process", "retries": 0, **extra}


def _delete(p: Paths, **kwargs: Any) -> Any:
    kwargs.setdefault("table", p.table)
    return _execute(DeltaDeleteOperator(task_id="delete", **_common(**kwargs)), **INJECTIONS)


def _merge(p: Paths, **kwargs: Any) -> Any:
    kwargs.setdefault("source", ROWS)
    return _execute(DeltaMergeOperator(task_id="merge", table=p.table, **_common(**kwargs)), **INJECTIONS)


def _append(p: Paths, **kwargs: Any) -> Any:
    kwargs.setdefault("table", p.table)
    kwargs.setdefault("source", ROWS)
    return _execute(DeltaAppendOperator(task_id="append", **_common(**kwargs)), **INJECTIONS)


def _update(p: Paths, **kwargs: Any) -> Any:
    return _execute(DeltaUpdateOperator(task_id="update", table=p.table, **_common(**kwargs)), **INJECTIONS)


def _vacuum(p: Paths, **kwargs: Any) -> Any:
    op = DeltaVacuumOperator(task_id="vacuum", table=p.table, deferrable=False, **_common(**kwargs))
    return _execute(op)


def _job(spec: dict[str, Any]) -> Any:
    """Run a job spec in this process (the Spark job's own validation) and raise like the hook does."""
    from airflow_provider_deltacc.hooks.job_exit import report_or_raise

    code, report = run_job(spec)
    assert code == ExitCode.BAD_INPUT, report
    return report_or_raise(code, report)


def _submit(p: Paths, conn_id: str, *, jar_cache: str | None = None) -> Any:
    """An append through ``spark_submit``; ``jar_cache`` replaces ``$DELTACC_JAR_CACHE`` meanwhile."""
    op = DeltaAppendOperator(task_id="submit", table=p.table, source=ROWS, conn_id=conn_id, retries=0)
    with mock.patch.dict(os.environ, {"DELTACC_JAR_CACHE": jar_cache} if jar_cache else {}):
        return _execute(op)


CASES: list[Case] = [
    # -- tables --------------------------------------------------------------------------------------------
    Case("nonexistent table", "operator", lambda p: _delete(p, table=p.missing, condition="true"), "table"),
    Case("non-Delta path", "operator", lambda p: _delete(p, table=p.plain, condition="true"), "table"),
    Case(
        "table is not a name",
        "operator",
        lambda p: _delete(p, table="orders; DROP TABLE x", condition="true"),
        "table",
    ),
    Case(
        "table with substitution",
        "operator",
        lambda p: _delete(p, table="${env:HOME}/t", condition="true"),
        "table",
    ),
    # -- schemas -------------------------------------------------------------------------------------------
    Case(
        "source lacks the merge key",
        "operator",
        lambda p: _merge(p, keys=["id"], source={"kind": "rows", "rows": [["a"]], "schema": "value STRING"}),
        "options.keys[0]",
    ),
    Case(
        "source column of the wrong type",
        "operator",
        lambda p: _append(
            p, source={"kind": "rows", "rows": [[1, 5, "x"]], "schema": "id INT, date INT, value STRING"}
        ),
        "source",
    ),
    Case(
        "overwrite source column of the wrong type",
        "operator",
        lambda p: _execute(
            DeltaOverwritePartitionsOperator(
                task_id="overwrite",
                table=p.table,
                source={
                    "kind": "rows",
                    "rows": [[1, "2026-11-20", 7]],
                    "schema": "id INT, date DATE, value INT",
                },
                **_common(),
            )
        ),
        "source.value",
    ),
    Case(
        "source column the table lacks",
        "operator",
        lambda p: _append(p, source={"kind": "rows", "rows": [[1, "x"]], "schema": "id INT, extra STRING"}),
        "source",
    ),
    Case(
        "unreadable parquet source", "operator", lambda p: _append(p, source=p.missing + ".parquet"), "source"
    ),
    # -- SQL -------------------------------------------------------------------------------------------------
    Case("unparsable condition", "operator", lambda p: _delete(p, condition="id = = 1"), "options.condition"),
    Case(
        "unknown column in condition",
        "operator",
        lambda p: _delete(p, condition="nope = 1"),
        "options.condition",
    ),
    Case(
        "bad SQL statement",
        "operator",
        lambda p: _execute(
            DeltaSqlOperator(
                task_id="sql", table=p.table, statement="DELETE FROM {table} WHER id = 1", **_common()
            )
        ),
        "options.statement",
    ),
    Case(
        "bad merge clause condition",
        "operator",
        lambda p: _merge(p, keys=["id"], when_matched=[{"action": "update", "condition": "s.nope > 1"}]),
        "options.when_matched[0].condition",
    ),
    # -- injection in templated values and conditions -------------------------------------------------------
    Case(
        "quote injection in a templated date partition",
        "injection",
        lambda p: _delete(p, partition_values=[{"date": "{{ params.quote }}"}]),
        "options.partition_values[0].date",
    ),
    Case(
        "DROP TABLE injection in a templated int equals",
        "injection",
        lambda p: _update(p, set_values={"value": "x"}, equals={"id": "{{ params.drop }}"}),
        "options.equals.id",
    ),
    Case(
        "quote injection as a condition",
        "injection",
        lambda p: _delete(p, condition="value = '{{ params.quote }}"),
        "options.condition",
    ),
    Case(
        "statement chaining in a condition",
        "injection",
        lambda p: _delete(p, condition="id = 1; DROP TABLE orders"),
        "options.condition",
    ),
    Case(
        "variable substitution in a condition",
        "injection",
        lambda p: _delete(p, condition="value = '{{ params.env }}'"),
        "options.condition",
    ),
    Case(
        "variable substitution in a merge condition",
        "injection",
        lambda p: _merge(p, condition="t.id = s.id AND t.value = '{{ params.subst }}'"),
        "options.condition",
    ),
    Case(
        "variable substitution in a SQL statement",
        "injection",
        lambda p: _execute(
            DeltaSqlOperator(
                task_id="sql",
                table=p.table,
                statement="DELETE FROM {table} WHERE value = '${env:HOME}'",
                **_common(),
            )
        ),
        "options.statement",
    ),
    Case(
        "injection as a merge key name",
        "injection",
        lambda p: _merge(p, keys=["id = s.id OR 1=1 --"]),
        "options.keys[0]",
    ),
    # -- retention, options, retry, txn --------------------------------------------------------------------
    Case(
        "negative VACUUM retention", "operator", lambda p: _vacuum(p, retention_hours=-1), "retention_hours"
    ),
    Case("huge VACUUM retention", "operator", lambda p: _vacuum(p, retention_hours=1e12), "retention_hours"),
    Case(
        "VACUUM retention not a number",
        "operator",
        lambda p: _vacuum(p, retention_hours="a week"),
        "retention_hours",
    ),
    Case(
        "VACUUM below the table's retention",
        "operator",
        lambda p: _vacuum(p, retention_hours=1),
        "retention_hours",
    ),
    Case(
        "unknown merge clause action",
        "operator",
        lambda p: _merge(p, keys=["id"], when_matched=[{"action": "upsert"}]),
        "options.when_matched[0].action",
    ),
    Case(
        "unknown merge clause option",
        "operator",
        lambda p: _merge(p, keys=["id"], when_not_matched=[{"action": "insert", "when": "x"}]),
        "options.when_not_matched[0].when",
    ),
    Case(
        "unknown operator argument",
        "operator",
        lambda p: DeltaMergeOperator(
            task_id="m", table=p.table, source=ROWS, keys=["id"], partition_values=[]
        ),
        "partition_values",
        (TypeError,),
    ),
    Case(
        "commit_retry of zero attempts",
        "operator",
        lambda p: _delete(p, condition="true", commit_retry={"max_attempts": 0}),
        "commit_retry.max_attempts",
    ),
    Case(
        "unknown commit_retry field",
        "operator",
        lambda p: _delete(p, condition="true", commit_retry={"retries": 3}),
        "commit_retry.retries",
    ),
    Case(
        "negative commit_retry wait",
        "operator",
        lambda p: _delete(p, condition="true", commit_retry={"min_wait_s": -1}),
        "commit_retry.min_wait_s",
    ),
    Case("txn_version not an integer", "operator", lambda p: _append(p, txn_version="v2"), "txn_version"),
    Case("negative txn_version", "operator", lambda p: _append(p, txn_version=-3), "txn.version"),
    Case("bad execution_mode", "operator", lambda p: _append(p, execution_mode="yarn"), "execution_mode"),
    Case("non-positive lease_ttl", "operator", lambda p: _append(p, lease_ttl=0), "lease_ttl"),
    Case(
        "partition_values on a non-partition column",
        "operator",
        lambda p: _execute(
            DeltaOverwritePartitionsOperator(
                task_id="overwrite",
                table=p.table,
                source=ROWS,
                partition_values=[{"value": "x"}],
                **_common(),
            )
        ),
        "options.partition_values[0].value",
    ),
    Case(
        "Z-order by a partition column",
        "operator",
        lambda p: _execute(
            DeltaOptimizeOperator(
                task_id="optimize", table=p.table, zorder_by=["date"], deferrable=False, **_common()
            )
        ),
        "options.zorder_by",
    ),
    # -- task groups (factory arguments, at parse time) ---------------------------------------------------
    Case(
        "staging keys as a string",
        "task_group",
        lambda p: _in_dag(
            lambda: staging_append_then_merge(
                sources=[ROWS],
                staging_table=p.missing + "_staging",
                target_table=p.table,
                schema=SCHEMA,
                keys="id",
            )
        ),
        "keys",
    ),
    Case(
        "staging table equals the target",
        "task_group",
        lambda p: _in_dag(
            lambda: staging_append_then_merge(
                sources=[ROWS], staging_table=p.table, target_table=p.table, schema=SCHEMA, keys=["id"]
            )
        ),
        "staging_table",
    ),
    Case(
        "staging schema that is not DDL",
        "task_group",
        lambda p: _in_dag(
            lambda: staging_append_then_merge(
                sources=[ROWS],
                staging_table=p.missing,
                target_table=p.table,
                schema="id INT,, x",
                keys=["id"],
            )
        ),
        "schema",
    ),
    Case(
        "maintenance with negative retention",
        "task_group",
        lambda p: _in_dag(lambda: table_maintenance(table=p.table, retention_hours=-5)),
        "retention_hours",
    ),
    Case(
        "maintenance operator_kwargs overriding the table",
        "task_group",
        lambda p: _in_dag(lambda: table_maintenance(table=p.table, operator_kwargs={"table": "/elsewhere"})),
        "operator_kwargs",
    ),
    # -- job specs (what the Spark job itself refuses) ----------------------------------------------------
    Case(
        "unknown storage_guard",
        "job_spec",
        lambda p: _job(
            {
                "operation": "delete",
                "table": p.table,
                "options": {"condition": "true"},
                "storage_guard": "yolo",
            }
        ),
        "storage_guard",
    ),
    Case(
        "unguarded write to s3a with Delta's single-driver log store",
        "job_spec",
        lambda p: _job(
            {
                "operation": "append",
                "table": "s3a://deltacc-no-bucket/t",
                "source": ROWS,
                # The put-if-absent log store is every provider Spark's default: name Delta's own instead.
                "spark_conf": {"spark.delta.logStore.s3a.impl": "io.delta.storage.S3SingleDriverLogStore"},
            }
        ),
        "storage_guard",
    ),
    Case(
        "non-scalar spark_conf value",
        "job_spec",
        lambda p: _job(
            {
                "operation": "delete",
                "table": p.table,
                "options": {"condition": "true"},
                "spark_conf": {"spark.x": [1]},
            }
        ),
        "spark_conf.spark.x",
    ),
    Case(
        "variable substitution in a sql source",
        "job_spec",
        lambda p: _job(
            {
                "operation": "append",
                "table": p.table,
                "source": {"kind": "sql", "query": "SELECT '${env:HOME}' AS v"},
            }
        ),
        "source.query",
    ),
    # -- connections and the environment ---------------------------------------------------------------------
    Case(
        "connection id that does not exist",
        "connection",
        lambda p: _submit(p, "deltacc_no_such_conn"),
        "conn_id",
    ),
    Case(
        "malformed spark:// master URL",
        "connection",
        lambda p: _submit(p, "deltacc_malformed_master"),
        "conn_id",
    ),
    # Not bad input: a master that is down is infrastructure, which Airflow retries (issue 18). It is here
    # to show that it still fails fast, names the connection and writes nothing.
    Case(
        "spark:// master that refuses connections",
        "connection",
        lambda p: _submit(p, "deltacc_refused"),
        "conn_id",
        errors=(DeltaCCInfrastructureError,),
    ),
    Case(
        "connection with an invalid spark-binary",
        "connection",
        lambda p: _submit(p, "deltacc_bad_binary"),
        "conn_id",
    ),
    Case(
        "missing Delta jars",
        "connection",
        lambda p: _submit(p, "deltacc_local", jar_cache=p.empty_jars),
        "DELTACC_JAR_CACHE",
    ),
]


def _in_dag(build: Callable[[], object]) -> object:
    from datetime import datetime

    from airflow.sdk import DAG

    with DAG("deltacc_sweep_groups", schedule=None, start_date=datetime(2026, 1, 1)):
        return build()


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: connecting to it is refused


@pytest.fixture(scope="module")
def paths(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Paths:
    root = tmp_path_factory.mktemp("sweep")
    table = str(root / "orders")
    frame = spark.createDataFrame(
        [(1, "2026-11-20", "a"), (2, "2026-11-21", "b")], "id INT, date STRING, value STRING"
    ).selectExpr("id", "CAST(date AS DATE) AS date", "value")
    frame.coalesce(1).write.format("delta").partitionBy("date").save(table)
    plain = str(root / "plain")
    frame.coalesce(1).write.parquet(plain)
    empty = root / "empty-jars"
    empty.mkdir()
    return Paths(root, table, plain, str(root / "missing"), str(empty))


@pytest.fixture(autouse=True)
def _environment(
    paths: Paths, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    use_temp_lease_store(tmp_path_factory.mktemp("leases"), monkeypatch)
    monkeypatch.setenv("DELTACC_SWEEP_SECRET", "s3cr3t-sweep")
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_REFUSED", f"spark://127.0.0.1:{_refused_port()}")
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_MALFORMED_MASTER",
        '{"conn_type": "spark", "host": "spark://127.0.0.1:notaport"}',
    )
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_LOCAL", '{"conn_type": "spark", "host": "local[1]"}')
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_BAD_BINARY",
        '{"conn_type": "spark", "host": "local[1]", "extra": {"spark-binary": "rm"}}',
    )
    yield


def _state(p: Paths) -> tuple[int, list[str], list[str]]:
    """The table's version and data files (read with delta-rs), and every path under the root."""
    from deltalake import DeltaTable

    table = DeltaTable(p.table)
    files = sorted(table.file_uris())
    tree = sorted(str(path.relative_to(p.root)) for path in p.root.rglob("*") if "leases" not in path.name)
    return table.version(), files, tree


def test_the_sweep_is_broad() -> None:
    assert len(CASES) >= 30
    assert len({case.id for case in CASES}) == len(CASES)
    assert {case.category for case in CASES} == {
        "operator",
        "injection",
        "task_group",
        "job_spec",
        "connection",
    }


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_fails_before_writing_and_names_the_field(case: Case, paths: Paths) -> None:
    before = _state(paths)
    started = time.monotonic()
    with pytest.raises(case.errors) as raised:
        case.run(paths)
    elapsed = time.monotonic() - started
    error = raised.value
    message = str(error)
    assert case.field in message, f"{case.id}: the message does not name {case.field!r}: {message}"
    if isinstance(error, DeltaCCError):
        assert "Traceback" not in message and "py4j" not in message.lower(), message
    if isinstance(error, DeltaCCInfrastructureError):
        assert case.field in error.unreachable, (error.unreachable, message)
    if isinstance(error, DeltaCCInputError):
        assert error.field is not None, message
        assert case.field in error.field or error.field in case.field, (error.field, message)
    assert "s3cr3t-sweep" not in message
    if case.category == "connection":  # a bad connection must fail fast, not hang in spark-submit
        assert elapsed < 20, f"{case.id} took {elapsed:.1f} s"
    assert _state(paths) == before, f"{case.id} changed the table or created paths"
