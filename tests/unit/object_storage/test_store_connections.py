"""The three object-store connections, wired: a task's ``aws_conn_id``, ``azure_conn_id`` and
``gcp_conn_id`` reach the job's Hadoop settings and every delta-rs read (on configuration: no ADLS or GCS
service runs here; S3 runs for real in tests/integration/object_storage)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.object_storage.connections import StoreConnections, storage_options_for
from airflow_provider_deltacc.operators import DeltaMergeOperator
from airflow_provider_deltacc.sensors import DeltaWriteWindowSensor
from airflow_provider_deltacc.triggers.table_version import DeltaTableTrigger

pytestmark = pytest.mark.unit

ACCOUNT_KEY = "c2VjcmV0LWtleS1mb3ItbGFrZQ=="
TABLE = "abfss://lake@lakeacct.dfs.core.windows.net/orders"


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def conn(name: str, **fields: Any) -> None:
        monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", json.dumps(fields))

    conn("unit_adls", conn_type="adls", login="lakeacct", password=ACCOUNT_KEY)
    conn(
        "unit_gcs",
        conn_type="google_cloud_platform",
        extra={"key_path": "/etc/keys/lake.json", "project": "p1"},
    )
    conn("unit_s3", conn_type="aws", login="AKIAX", password="s3cr3t", extra={"region_name": "eu-west-1"})
    conn("unit_adls_no_account", conn_type="adls", password=ACCOUNT_KEY)


def test_an_azure_connection_reaches_the_jobs_session_and_delta_rs(connections: None) -> None:
    hook = DeltaCCHook(execution_mode="in_process", azure_conn_id="unit_adls")
    conf = hook.job_spec({"operation": "optimize", "table": TABLE}).spark_conf
    assert conf["fs.azure.account.key.lakeacct.dfs.core.windows.net"] == ACCOUNT_KEY
    assert not any(key.startswith("spark.") for key in conf)  # runtime settings, in the spec only
    assert hook.storage_options == {
        "AZURE_STORAGE_ACCOUNT_NAME": "lakeacct",
        "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
    }


def test_a_gcp_key_file_and_every_cloud_at_once(connections: None) -> None:
    hook = DeltaCCHook(execution_mode="in_process", aws_conn_id="unit_s3", gcp_conn_id="unit_gcs")
    conf = hook.job_spec({"operation": "optimize", "table": "gs://lake/orders"}).spark_conf
    assert conf["fs.gs.auth.service.account.json.keyfile"] == "/etc/keys/lake.json"
    assert conf["fs.gs.project.id"] == "p1" and conf["fs.s3a.access.key"] == "AKIAX"
    assert hook.storage_options == {
        "AWS_ACCESS_KEY_ID": "AKIAX",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t",
        "AWS_REGION": "eu-west-1",
        "GOOGLE_SERVICE_ACCOUNT": "/etc/keys/lake.json",
    }


@pytest.mark.parametrize(
    ("field", "conn_id", "says"),
    [
        ("azure_conn_id", "unit_no_such_adls", "no such Airflow connection"),
        ("gcp_conn_id", "unit_no_such_gcs", "google_cloud_platform"),
        ("azure_conn_id", "unit_adls_no_account", "account"),
    ],
)
def test_a_missing_or_malformed_connection_is_bad_input_naming_its_field(
    connections: None, field: str, conn_id: str, says: str
) -> None:
    with pytest.raises(DeltaCCInputError) as raised:
        DeltaCCHook(execution_mode="in_process", **{field: conn_id}).storage_options  # noqa: B018
    assert (raised.value.field, raised.value.value) == (field, conn_id) and says in str(raised.value)
    assert ACCOUNT_KEY not in str(raised.value)


def test_operators_sensors_and_the_trigger_carry_every_connection_by_name(connections: None) -> None:
    names = {"aws_conn_id": "unit_s3", "azure_conn_id": "unit_adls", "gcp_conn_id": "unit_gcs"}
    merge = DeltaMergeOperator(
        task_id="m", table=TABLE, source={"kind": "table", "name": "s"}, keys=["id"], **names
    )
    assert StoreConnections.of(merge.hook) == StoreConnections(**names)
    assert set(names) <= set(merge.template_fields)

    sensor = DeltaWriteWindowSensor(task_id="gate", table=TABLE, azure_conn_id="unit_adls")
    assert sensor.delta_rs_options == {
        "AZURE_STORAGE_ACCOUNT_NAME": "lakeacct",
        "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
    }

    trigger = DeltaTableTrigger(table=TABLE, condition={}, **names)
    serialized = json.dumps(trigger.serialize())
    assert all(conn_id in serialized for conn_id in names.values()) and ACCOUNT_KEY not in serialized
    assert "s3cr3t" not in serialized
    assert storage_options_for(
        StoreConnections(gcp_conn_id="unit_gcs"), {"GOOGLE_SERVICE_ACCOUNT": "/x.json"}
    ) == {"GOOGLE_SERVICE_ACCOUNT": "/x.json"}
