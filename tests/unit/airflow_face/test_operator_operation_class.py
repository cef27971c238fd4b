"""An operator tells Airflow's retry policy the class the Spark job runs its operation as, from the
operation registry (the engine side is checked against real Spark in
``tests/integration/engine/test_schema_evolution.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.operations import SCHEMA_AUTO_MERGE_CONF, OperationClass
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaSqlOperator,
    DeltaVacuumOperator,
)

pytestmark = pytest.mark.unit

TABLE = "/lake/orders"
SOURCE = "/landing/a.parquet"


@pytest.fixture(autouse=True)
def no_spark_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    return tmp_path


def _merge(**kwargs: object) -> DeltaMergeOperator:
    return DeltaMergeOperator(task_id="m", table=TABLE, source=SOURCE, keys=["id"], **kwargs)


def test_merge_under_schema_auto_merge_is_schema_changing() -> None:
    assert _merge().operation_class is OperationClass.READ_MODIFY_WRITE
    evolving = _merge(spark_conf={SCHEMA_AUTO_MERGE_CONF: "true"})
    assert evolving.operation_class is OperationClass.SCHEMA_CHANGING


def test_schema_auto_merge_in_spark_defaults_counts_except_on_spark_connect(no_spark_defaults: Path) -> None:
    (no_spark_defaults / "spark-defaults.conf").write_text(f"{SCHEMA_AUTO_MERGE_CONF} true\n")
    assert _merge().operation_class is OperationClass.SCHEMA_CHANGING
    assert _merge(execution_mode="spark_connect").operation_class is OperationClass.READ_MODIFY_WRITE
    pinned_off = _merge(spark_conf={SCHEMA_AUTO_MERGE_CONF: "false"})
    assert pinned_off.operation_class is OperationClass.READ_MODIFY_WRITE


def test_append_sql_and_maintenance_classes() -> None:
    assert DeltaAppendOperator(task_id="a", table=TABLE, source=SOURCE).operation_class is (
        OperationClass.BLIND_APPEND
    )
    evolving = DeltaAppendOperator(task_id="b", table=TABLE, source=SOURCE, merge_schema=True)
    assert evolving.operation_class is OperationClass.SCHEMA_CHANGING
    sql = DeltaSqlOperator(
        task_id="s", table=TABLE, statement="INSERT INTO {table} VALUES (1)", op_class="blind_append"
    )
    assert sql.operation_class is OperationClass.BLIND_APPEND
    assert DeltaOptimizeOperator(task_id="o", table=TABLE).operation_class is OperationClass.MAINTENANCE
    assert DeltaVacuumOperator(task_id="v", table=TABLE).operation_class is OperationClass.MAINTENANCE
