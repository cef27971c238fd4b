"""Which lease store a task uses (its connection, ``[deltacc]``, the older URL, the embedded file), and the
rule that keeps a SQLite store to deployments whose tasks all run on one machine. Connections and config
come from the environment, as Airflow reads them."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.deployment.placement import executor_names
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.gate import GateRequest
from airflow_provider_deltacc.hooks.lease_store import (
    lease_store_for_task,
    resolve_lease_store,
)
from airflow_provider_deltacc.leases import SqliteLeaseStore, store_from_url
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaOptimizeOperator
from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor
from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger
from tests.unit.maintenance.helpers import RecordingHook, context, first_event, grant, with_hook

pytestmark = pytest.mark.unit

TABLE = "sales.orders"  # a catalog name: nothing is read with delta-rs
PG_PASSWORD = "pg-s3cret-pw"
CELERY = "CeleryExecutor"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No lease store configured, the default file under tmp_path, the LocalExecutor."""
    for name in (
        "AIRFLOW__DELTACC__LEASE_STORE_CONN_ID",
        "AIRFLOW__DELTACC__ALLOW_UNSHARED_LEASE_STORE",
        "DELTACC_LEASE_STORE_URL",
        "AIRFLOW_IS_K8S_EXECUTOR_POD",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DELTACC_LEASE_DB", str(tmp_path / "default.db"))
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    return monkeypatch


def _connection(env: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> None:
    env.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def _postgres(env: pytest.MonkeyPatch, conn_id: str = "deltacc_pg") -> None:
    _connection(
        env,
        conn_id,
        conn_type="postgres",
        host="db.internal",
        port=5432,
        login="airflow",
        password=PG_PASSWORD,
        schema="airflow",
        extra={"sslmode": "prefer"},
    )


def _sqlite(env: pytest.MonkeyPatch, path: Path, conn_id: str = "deltacc_sqlite") -> str:
    _connection(env, conn_id, conn_type="sqlite", host=str(path))
    return conn_id


# -- resolution ------------------------------------------------------------------------------------------


def test_resolution_order(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _postgres(env, "from_config")
    task_conn = _sqlite(env, tmp_path / "task.db")

    default = resolve_lease_store(conn_id=None, url=None)
    assert (default.source, default.url, default.is_default) == (
        "the embedded default",
        f"sqlite:///{tmp_path / 'default.db'}",
        True,
    )
    env.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    from_env = resolve_lease_store(conn_id=None, url=None)
    assert (from_env.source, from_env.url) == ("$DELTACC_LEASE_STORE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    argument = resolve_lease_store(conn_id=None, url=f"sqlite:///{tmp_path / 'arg.db'}")
    assert (argument.source, argument.url) == ("lease_store_url", f"sqlite:///{tmp_path / 'arg.db'}")

    env.setenv("AIRFLOW__DELTACC__LEASE_STORE_CONN_ID", "from_config")
    configured = resolve_lease_store(conn_id=None, url=f"sqlite:///{tmp_path / 'arg.db'}")
    assert (configured.source, configured.conn_id, configured.is_sqlite) == (
        "[deltacc] lease_store_conn_id",
        "from_config",
        False,
    )
    own = resolve_lease_store(conn_id=task_conn, url=f"sqlite:///{tmp_path / 'arg.db'}")
    assert (own.source, own.conn_id, own.is_sqlite) == ("lease_store_conn_id", task_conn, True)
    with own.open() as store:
        assert isinstance(store, SqliteLeaseStore) and store.path == tmp_path / "task.db"


def test_a_postgres_connection_never_shows_its_password(env: pytest.MonkeyPatch) -> None:
    from airflow.sdk._shared.secrets_masker import redact

    _postgres(env)
    target = resolve_lease_store(conn_id="deltacc_pg", url=None)
    assert target.describe() == (
        "lease_store_conn_id='deltacc_pg' "
        "(postgresql+psycopg2://airflow:***@db.internal:5432/airflow?sslmode=prefer)"
    )
    assert PG_PASSWORD not in repr(target)
    # The trigger gets the connection id, never the URL: no password is stored with the trigger.
    assert target.trigger_kwargs() == {"lease_store_conn_id": "deltacc_pg"}
    # Airflow's secrets masker knows the password (Airflow registers it when the connection is read, and
    # the provider registers the connection's secrets as observability/secrets.py does): a log line is
    # redacted.
    assert PG_PASSWORD not in str(redact(f"could not connect with {PG_PASSWORD}"))


def test_a_url_travels_to_the_trigger_resolved(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("DELTACC_LEASE_STORE_URL", "postgresql://u:p@h/db")
    assert resolve_lease_store(conn_id=None, url=None).trigger_kwargs() == {
        "lease_store_url": "postgresql://u:p@h/db"
    }


@pytest.mark.parametrize("where", ["argument", "config"])
def test_a_missing_connection_is_bad_input_naming_the_setting(env: pytest.MonkeyPatch, where: str) -> None:
    if where == "config":
        env.setenv("AIRFLOW__DELTACC__LEASE_STORE_CONN_ID", "no_such_leases")
    with pytest.raises(DeltaCCInputError) as raised:
        resolve_lease_store(conn_id="no_such_leases" if where == "argument" else None, url=None)
    setting = "lease_store_conn_id" if where == "argument" else "[deltacc] lease_store_conn_id"
    message = str(raised.value)
    assert message.startswith(f"{setting}='no_such_leases': no such Airflow connection"), message
    assert "a 'postgres' connection every worker reaches" in message
    assert (raised.value.field, raised.value.value) == ("lease_store_conn_id", "no_such_leases")


def test_a_connection_of_another_type_is_bad_input(env: pytest.MonkeyPatch) -> None:
    _connection(env, "spark_default", conn_type="spark", host="local[2]")
    with pytest.raises(DeltaCCInputError) as raised:
        resolve_lease_store(conn_id="spark_default", url=None)
    assert str(raised.value).startswith(
        "lease_store_conn_id='spark_default': a 'spark' connection cannot hold leases; use a 'postgres'"
    )
    assert raised.value.field == "lease_store_conn_id"


# -- where the embedded store is allowed ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("LocalExecutor", ["LocalExecutor"]),
        (" LocalExecutor , CeleryExecutor ", ["LocalExecutor", "CeleryExecutor"]),
        ("fast:LocalExecutor", ["LocalExecutor"]),
        ("airflow.providers.edge3.executors.EdgeExecutor", ["EdgeExecutor"]),
        ("ecs:airflow.providers.amazon.aws.executors.ecs.ecs_executor.AwsEcsExecutor", ["AwsEcsExecutor"]),
        (
            "LocalExecutor;team_a=CeleryExecutor,KubernetesExecutor",
            ["LocalExecutor", "CeleryExecutor", "KubernetesExecutor"],
        ),
    ],
)
def test_executor_names(value: str, names: list[str]) -> None:
    assert executor_names(value) == names


@pytest.mark.parametrize("executor", ["LocalExecutor", "SequentialExecutor", "fast:LocalExecutor"])
def test_the_embedded_store_is_the_default_under_local_executors(
    env: pytest.MonkeyPatch, executor: str
) -> None:
    env.setenv("AIRFLOW__CORE__EXECUTOR", executor)
    assert lease_store_for_task(conn_id=None, url=None, task_id="t").is_default


@pytest.mark.parametrize(
    "executor",
    [
        CELERY,
        "KubernetesExecutor",
        "LocalExecutor,CeleryExecutor",
        "airflow.providers.edge3.executors.EdgeExecutor",
        "LocalExecutor;team_a=CeleryExecutor",
    ],
)
def test_any_other_executor_needs_a_shared_store(env: pytest.MonkeyPatch, executor: str) -> None:
    env.setenv("AIRFLOW__CORE__EXECUTOR", executor)
    with pytest.raises(DeltaCCInputError) as raised:
        lease_store_for_task(conn_id=None, url=None, task_id="merge_orders")
    message = str(raised.value)
    assert message.startswith(
        "merge_orders: no shared lease store is configured, so this task would use the embedded SQLite "
        f"lease file, but [core] executor = {executor}"
    ), message
    assert (
        "Set [deltacc] lease_store_conn_id (AIRFLOW__DELTACC__LEASE_STORE_CONN_ID) or the task's " in message
    )
    assert "lease_store_conn_id to a 'postgres' connection every worker reaches" in message
    assert message.endswith(
        "opt out with [deltacc] allow_unshared_lease_store = True "
        "(AIRFLOW__DELTACC__ALLOW_UNSHARED_LEASE_STORE=True)."
    )
    assert (raised.value.field, raised.value.value) == ("lease_store_conn_id", None)


def test_a_kubernetes_executor_pod_is_not_local(env: pytest.MonkeyPatch) -> None:
    # The Kubernetes executor's pod template sets LocalExecutor in every task pod.
    env.setenv("AIRFLOW_IS_K8S_EXECUTOR_POD", "True")
    with pytest.raises(DeltaCCInputError, match=r"this task runs in a KubernetesExecutor pod"):
        lease_store_for_task(conn_id=None, url=None, task_id="t")


def test_a_configured_sqlite_store_is_refused_too(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("AIRFLOW__CORE__EXECUTOR", CELERY)
    conn_id = _sqlite(env, tmp_path / "leases.db")
    with pytest.raises(DeltaCCInputError) as raised:
        lease_store_for_task(conn_id=conn_id, url=None, task_id="t")
    assert str(raised.value).startswith(
        f"t: the lease store lease_store_conn_id='deltacc_sqlite' (sqlite:///{tmp_path / 'leases.db'}) is a "
        "SQLite file, but [core] executor = CeleryExecutor"
    )
    env.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    with pytest.raises(DeltaCCInputError, match=r"the lease store \$DELTACC_LEASE_STORE_URL \(sqlite:///"):
        lease_store_for_task(conn_id=None, url=None, task_id="t")


def test_a_postgres_store_and_the_opt_out_pass_anywhere(env: pytest.MonkeyPatch) -> None:
    env.setenv("AIRFLOW__CORE__EXECUTOR", CELERY)
    _postgres(env)
    assert lease_store_for_task(conn_id="deltacc_pg", url=None, task_id="t").conn_id == "deltacc_pg"
    env.setenv("DELTACC_LEASE_STORE_URL", "postgresql://u:p@h/db")
    assert lease_store_for_task(conn_id=None, url=None, task_id="t").source == "$DELTACC_LEASE_STORE_URL"
    env.delenv("DELTACC_LEASE_STORE_URL")
    env.setenv("AIRFLOW__DELTACC__ALLOW_UNSHARED_LEASE_STORE", "True")
    assert lease_store_for_task(conn_id=None, url=None, task_id="t").is_default


# -- the operators, sensor and trigger ------------------------------------------------------------------


def _append(**kwargs: Any) -> DeltaAppendOperator:
    return DeltaAppendOperator(
        task_id="append", table=TABLE, source={"kind": "rows", "rows": [[1]], "schema": "id INT"}, **kwargs
    )


def test_under_celery_writers_and_maintenance_fail_at_their_start(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env.setenv("AIRFLOW__CORE__EXECUTOR", CELERY)
    hook = RecordingHook(f"sqlite:///{tmp_path / 'recorder.db'}", TABLE)
    tasks = [
        with_hook(_append(), hook),
        with_hook(DeltaOptimizeOperator(task_id="optimize", table=TABLE, deferrable=True), hook),
        DeltaWriteWindowSensor(task_id="gate", table=TABLE, deferrable=True),
    ]
    for task in tasks:
        with pytest.raises(DeltaCCInputError, match=r"no shared lease store is configured"):
            task.execute(context(task_id=task.task_id))
    assert hook.specs == []  # nothing was submitted
    assert not (tmp_path / "default.db").exists()  # nothing was leased


def test_a_writer_without_a_lease_needs_no_store(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("AIRFLOW__CORE__EXECUTOR", CELERY)
    hook = RecordingHook(f"sqlite:///{tmp_path / 'recorder.db'}", TABLE)
    with_hook(_append(use_write_lease=False), hook).execute(context(task_id="append"))
    assert len(hook.specs) == 1 and hook.active_during == [[]]
    assert not (tmp_path / "default.db").exists()


def test_a_writer_leases_in_its_connections_store(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("AIRFLOW__CORE__EXECUTOR", CELERY)
    env.setenv("AIRFLOW__DELTACC__ALLOW_UNSHARED_LEASE_STORE", "True")  # a sqlite connection, knowingly
    leases = tmp_path / "conn.db"
    hook = RecordingHook(f"sqlite:///{leases}", TABLE)
    with_hook(_append(lease_store_conn_id=_sqlite(env, leases)), hook).execute(context(task_id="append"))
    assert [[lease.op_kind for lease in active] for active in hook.active_during] == [[OpKind.BLIND_APPEND]]


def test_maintenance_defers_with_the_connection_id_and_the_triggerer_resolves_it(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    conn_id = _sqlite(env, tmp_path / "conn.db")
    hook = RecordingHook(f"sqlite:///{tmp_path / 'conn.db'}", TABLE)
    op = with_hook(
        DeltaOptimizeOperator(
            task_id="optimize", table=TABLE, deferrable=True, poll_interval=0.1, lease_store_conn_id=conn_id
        ),
        hook,
    )
    with store_from_url(f"sqlite:///{tmp_path / 'conn.db'}") as store:
        lease = grant(store, TABLE, OpKind.MERGE)
        with pytest.raises(TaskDeferred) as deferred:
            op.execute(context(dag_id="maint", task_id="optimize"))
        trigger = deferred.value.trigger
        assert isinstance(trigger, DeltaGateTrigger)
        _classpath, kwargs = trigger.serialize()
        assert (kwargs["lease_store_conn_id"], kwargs["lease_store_url"]) == (conn_id, None)
        rebuilt = DeltaGateTrigger(**kwargs)
        threading.Timer(0.3, store.release, args=(lease.lease_id,)).start()
        event = asyncio.run(first_event(rebuilt, 10))
    assert event["status"] == "go"
    report = op.execute_complete(context(dag_id="maint", task_id="optimize"), event=event)
    assert report["status"] == "committed" and len(hook.specs) == 1


def test_a_connection_the_triggerer_cannot_read_fails_at_once_as_bad_input(env: pytest.MonkeyPatch) -> None:
    request = GateRequest(TABLE, OpKind.OPTIMIZE).to_dict()
    trigger = DeltaGateTrigger(request=request, lease_store_conn_id="missing_in_triggerer", poll_interval=30)
    event = asyncio.run(first_event(trigger, 10))  # no retries with 30 s pauses: the first answer is final
    assert event["status"] == "error" and event["field"] == "lease_store_conn_id"
    assert event["message"].startswith(
        "lease_store_conn_id='missing_in_triggerer': no such Airflow connection"
    )
    for task in (
        DeltaOptimizeOperator(task_id="optimize", table=TABLE, deferrable=True),
        DeltaWriteWindowSensor(task_id="gate", table=TABLE, deferrable=True),
    ):
        with pytest.raises(DeltaCCInputError, match=r"missing_in_triggerer") as raised:
            task.execute_complete(context(task_id=task.task_id), event=event)
        assert raised.value.field == "lease_store_conn_id"


def test_the_trigger_needs_exactly_one_store() -> None:
    request = GateRequest(TABLE, OpKind.OPTIMIZE).to_dict()
    for kwargs in ({}, {"lease_store_url": "sqlite:////x.db", "lease_store_conn_id": "c"}):
        with pytest.raises(ValueError, match="exactly one of lease_store_url and lease_store_conn_id"):
            DeltaGateTrigger(request=request, **kwargs)


# -- deferrable follows the config, as an operator constructor default -----------------------------------


_DEFAULTS = """
import json
from datetime import datetime
from airflow.sdk import DAG
from airflow_provider_deltacc.operators import DeltaOptimizeOperator, DeltaVacuumOperator
from airflow_provider_deltacc.sensors.table_version import DeltaTableVersionSensor
from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor
from airflow_provider_deltacc.task_groups import table_maintenance
with DAG("d", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
    tasks = [
        DeltaOptimizeOperator(task_id="o", table="/t"),
        DeltaVacuumOperator(task_id="v", table="/t"),
        DeltaWriteWindowSensor(task_id="s", table="/t"),
        DeltaTableVersionSensor(task_id="t", table="/t", operation="MERGE"),
    ]
    table_maintenance(table="/t", group_id="g")
print(json.dumps({t.task_id: t.deferrable for t in dag.tasks}))
"""


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True"}, True),
        (
            {
                "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
                "AIRFLOW__DELTACC__DEFAULT_DEFERRABLE": "False",
            },
            False,
        ),
        ({"AIRFLOW__DELTACC__DEFAULT_DEFERRABLE": "True"}, True),
        ({}, False),
    ],
)
def test_maintenance_and_both_sensors_default_to_the_configured_deferrable(
    environment: dict[str, str], expected: bool
) -> None:
    import os

    base = {k: v for k, v in os.environ.items() if not k.endswith("__DEFAULT_DEFERRABLE")}
    result = subprocess.run(
        [sys.executable, "-c", _DEFAULTS],
        env={**base, **environment},
        capture_output=True,
        text=True,
        check=True,
    )
    deferrable = json.loads(result.stdout.strip().splitlines()[-1])
    assert deferrable == {
        "o": expected,
        "v": expected,
        "s": expected,
        "t": expected,  # the table-version sensor too (it defaulted to True before)
        "g.gate": expected,
        "g.optimize": expected,
        "g.vacuum": expected,
    }
