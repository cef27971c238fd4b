"""A lease store that cannot be reached: maintenance (OPTIMIZE, VACUUM, the write-window sensor) fails as
infrastructure, which the retry policy retries naming the store without its password; writers still write,
with one warning that says so."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest
from airflow.sdk import RetryAction

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError
from airflow_provider_deltacc.gate import GateRequest
from airflow_provider_deltacc.operators import DeltaMergeOperator, DeltaOptimizeOperator, DeltaVacuumOperator
from airflow_provider_deltacc.operators.base import DEFAULT_RETRY_POLICY
from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor
from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger
from tests.unit.maintenance.helpers import RecordingHook, context, first_event, logged, with_hook

pytestmark = pytest.mark.unit

TABLE = "sales.orders"
PASSWORD = "s3cret-pw"


@pytest.fixture
def down_url() -> str:
    """A PostgreSQL lease store URL whose server refuses connections."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])  # closed again: connecting to it is refused
    return f"postgresql://deltacc:{PASSWORD}@127.0.0.1:{port}/leases"


def _masked(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg2://").replace(PASSWORD, "***")


def _assert_infrastructure(error: DeltaCCInfrastructureError, url: str, task_id: str) -> None:
    assert error.unreachable == f"lease store {_masked(url)}"
    assert str(error).startswith(f"{task_id}: the lease store {_masked(url)} cannot be reached")
    assert "Maintenance does not run without the lease store" in str(error)
    decision = DEFAULT_RETRY_POLICY.evaluate(error, try_number=1, max_tries=2)
    assert decision.action is RetryAction.RETRY and decision.retry_delay is None
    assert (decision.reason or "").startswith(
        f"lease store {_masked(url)} unreachable: Airflow try 2 of 3 starts after the task's retry delay"
    )
    assert PASSWORD not in str(error) and PASSWORD not in (decision.reason or "")


@pytest.mark.parametrize("operator", [DeltaOptimizeOperator, DeltaVacuumOperator])
def test_gated_maintenance_does_not_run_without_its_store(operator: type[Any], down_url: str) -> None:
    hook = RecordingHook("sqlite:///unused", TABLE)
    op = with_hook(operator(task_id="maint", table=TABLE, lease_store_url=down_url), hook)
    assert op.retries == 2
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        op.execute(context(dag_id="maint", task_id="maint"))
    _assert_infrastructure(raised.value, down_url, "maint")
    assert hook.specs == []  # nothing ran unguarded


def test_the_trigger_names_the_store_it_could_not_reach_and_the_task_fails_as_infrastructure(
    down_url: str,
) -> None:
    trigger = DeltaGateTrigger(
        request=GateRequest(TABLE, OpKind.OPTIMIZE).to_dict(),
        lease_store_url=down_url,
        poll_interval=0.05,
        max_store_errors=2,
    )
    event = asyncio.run(first_event(trigger, 20))
    assert event["status"] == "error" and event["lease_store"] == _masked(down_url)
    assert PASSWORD not in str(event)

    op = DeltaOptimizeOperator(task_id="optimize", table=TABLE, lease_store_url=down_url)
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        op.execute_complete(context(dag_id="maint", task_id="optimize"), event=event)
    _assert_infrastructure(raised.value, down_url, "optimize")

    sensor = DeltaWriteWindowSensor(task_id="quiet", table=TABLE, lease_store_url=down_url)
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        sensor.execute_complete(context(dag_id="maint", task_id="quiet"), event=event)
    _assert_infrastructure(raised.value, down_url, "quiet")


@pytest.mark.parametrize("deferrable", [True, False])
def test_the_write_window_sensor_fails_as_infrastructure(down_url: str, deferrable: bool) -> None:
    sensor = DeltaWriteWindowSensor(
        task_id="quiet", table=TABLE, lease_store_url=down_url, deferrable=deferrable
    )
    assert sensor.retries == 2 and sensor.retry_policy is DEFAULT_RETRY_POLICY
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        if deferrable:
            sensor.execute(context(dag_id="maint", task_id="quiet"))
        else:  # reschedule mode: each poke asks the gate
            sensor.poke(context(dag_id="maint", task_id="quiet"))
    _assert_infrastructure(raised.value, down_url, "quiet")


def test_a_writer_writes_without_a_lease_and_says_so_once(
    down_url: str, tmp_path: Any, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = RecordingHook(f"sqlite:///{tmp_path / 'other.db'}", TABLE)
    op = DeltaMergeOperator(
        task_id="merge_orders",
        table=TABLE,
        source={"kind": "rows", "schema": "id INT", "rows": [[1]]},
        keys=["id"],
        lease_store_url=down_url,
    )
    with caplog.at_level(logging.WARNING):
        report = with_hook(op, hook).execute(context())
    assert report["status"] == "committed" and len(hook.specs) == 1
    text = logged(caplog, capsys)
    # Where the store came from is logged at info; the outage is warned about once.
    mentions = [line for line in text.splitlines() if "lease store" in line and "warning" in line.lower()]
    assert len(mentions) == 1, mentions
    assert f"the lease store {_masked(down_url)} cannot be reached" in mentions[0]
    assert "without a lease, so maintenance cannot see this writer" in mentions[0]
    assert PASSWORD not in text
