"""spark_submit in cluster deploy mode: what is refused at the task's start (a standalone or local master,
a catalog table with nowhere to leave the driver's report), where the driver's report goes, and how the spec
file reaches a driver that does not run on this machine."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.hooks.submit import default_report_dir

pytestmark = pytest.mark.unit

CONN_ID = "deltacc_cluster_mode_unit"


def _connection(monkeypatch: pytest.MonkeyPatch, host: str, **extra: Any) -> None:
    conn = {"conn_type": "spark", "host": host, "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))


@pytest.fixture(autouse=True)
def _no_report_dir_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW__DELTACC__REPORT_DIR", raising=False)


@pytest.mark.parametrize("master", ["spark://master:7077", "spark://m1:7077,m2:7077", "local[2]"])
@pytest.mark.parametrize("how", ["extra", "submit_options"])
def test_cluster_mode_on_a_standalone_or_local_master_is_refused_naming_deploy_mode(
    monkeypatch: pytest.MonkeyPatch, master: str, how: str
) -> None:
    if how == "extra":
        _connection(monkeypatch, master, **{"deploy-mode": "cluster"})
        hook = DeltaCCHook(conn_id=CONN_ID)
    else:
        _connection(monkeypatch, master)
        hook = DeltaCCHook(conn_id=CONN_ID, submit_options={"deploy_mode": "cluster"})
    with pytest.raises(DeltaCCInputError) as raised:
        hook.check_deployment(Table("s3a://lake/orders"))
    error = raised.value
    assert (error.field, error.value) == ("deploy_mode", "cluster")
    message = str(error)
    assert master in message and f"conn_id='{CONN_ID}'" in message
    assert "only on YARN and Kubernetes" in message  # the reason
    assert "Use deploy_mode='client'" in message and "yarn or k8s:// master" in message  # the fix


@pytest.mark.parametrize("master", ["yarn", "k8s://https://k8s.example:6443"])
def test_cluster_mode_on_yarn_or_kubernetes_with_a_path_table_is_accepted(
    monkeypatch: pytest.MonkeyPatch, master: str
) -> None:
    _connection(monkeypatch, master, **{"deploy-mode": "cluster"})
    DeltaCCHook(conn_id=CONN_ID).check_deployment(Table("s3a://lake/orders"))


def test_client_mode_on_a_standalone_master_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "spark://master:7077", **{"deploy-mode": "client"})
    DeltaCCHook(conn_id=CONN_ID).check_deployment(Table("sales.orders"))


def test_cluster_mode_with_a_catalog_table_needs_a_report_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "yarn", **{"deploy-mode": "cluster"})
    with pytest.raises(DeltaCCInputError) as raised:
        DeltaCCHook(conn_id=CONN_ID).check_deployment(Table("sales.orders"))
    assert raised.value.field == "report_dir"
    assert "Set [deltacc] report_dir" in str(raised.value) and "'sales.orders'" in str(raised.value)
    DeltaCCHook(conn_id=CONN_ID, report_dir="hdfs:///deltacc/reports").check_deployment(Table("sales.orders"))
    monkeypatch.setenv("AIRFLOW__DELTACC__REPORT_DIR", "s3a://lake/deltacc-reports")
    DeltaCCHook(conn_id=CONN_ID).check_deployment(Table("sales.orders"))


def test_other_execution_modes_have_no_deployment_to_check(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "spark://master:7077", **{"deploy-mode": "cluster"})
    DeltaCCHook(conn_id=CONN_ID, execution_mode="in_process").check_deployment(Table("sales.orders"))


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("s3a://lake/orders", "s3a://lake/_deltacc_reports"),
        ("s3a://lake/db/orders/", "s3a://lake/db/_deltacc_reports"),
        ("hdfs://nn:8020/warehouse/orders", "hdfs://nn:8020/warehouse/_deltacc_reports"),
        ("/data/lake/orders", "/data/lake/_deltacc_reports"),
        ("s3a://lake", None),
        ("/orders", None),
        ("sales.orders", None),
    ],
)
def test_default_report_dir(table: str, expected: str | None) -> None:
    assert default_report_dir(Table(table)) == expected


def test_where_the_report_goes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _connection(monkeypatch, "local[1]")
    table = Table("s3a://l/t")
    assert DeltaCCHook(conn_id=CONN_ID).submit_runner.report_dir_for(table, tmp_path) == str(tmp_path)
    _connection(monkeypatch, "yarn", **{"deploy-mode": "cluster"})
    runner = DeltaCCHook(conn_id=CONN_ID).submit_runner
    assert runner.report_dir_for(Table("s3a://l/t"), tmp_path) == "s3a://l/_deltacc_reports"
    monkeypatch.setenv("AIRFLOW__DELTACC__REPORT_DIR", "hdfs:///reports")
    assert runner.report_dir_for(Table("s3a://l/t"), tmp_path) == "hdfs:///reports"
    explicit = DeltaCCHook(conn_id=CONN_ID, report_dir="gs://b/r").submit_runner
    assert explicit.report_dir_for(Table("s3a://l/t"), tmp_path) == "gs://b/r"


def test_the_spec_file_travels_with_files_in_cluster_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec_file = tmp_path / "deltacc-spec-abc.json"
    _connection(monkeypatch, "local[1]")
    options = {"driver_memory": "1g"}
    assert DeltaCCHook(conn_id=CONN_ID, submit_options=options).submit_runner.ship_spec(spec_file) == (
        options,
        str(spec_file),
    )
    _connection(monkeypatch, "yarn", **{"deploy-mode": "cluster"})
    runner = DeltaCCHook(conn_id=CONN_ID, submit_options={"files": "hdfs:///conf/a.xml"}).submit_runner
    shipped, spec_arg = runner.ship_spec(spec_file)
    assert shipped == {"files": f"hdfs:///conf/a.xml,{spec_file}"} and spec_arg == "deltacc-spec-abc.json"


def test_an_operator_refuses_cluster_mode_on_standalone_before_anything_is_leased(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow_provider_deltacc.operators import DeltaAppendOperator

    _connection(monkeypatch, "spark://master:7077")
    operator = DeltaAppendOperator(
        task_id="append",
        table=str(tmp_path / "t"),
        source={"kind": "rows", "rows": [[1]], "schema": "id INT"},
        conn_id=CONN_ID,
        submit_options={"deploy_mode": "cluster"},
        exactly_once=False,
    )
    leases: list[str] = []
    monkeypatch.setattr(type(operator), "check_lease_store", lambda self: leases.append("checked"))
    context: Any = {"logical_date": datetime(2026, 1, 1), "ti": None}
    with pytest.raises(DeltaCCInputError, match="deploy_mode='cluster' cannot run this job"):
        operator.execute(context)
    assert leases == []
