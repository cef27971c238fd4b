"""The provider's metrics reach real backends through Airflow's own ``Stats``: a ``dag.test()`` run with a
real Delta conflict (a rival writer, see ``rival.py``), then an OPTIMIZE through the gate, sends what
docs/metrics.md lists

- over StatsD, tagged names and per-table names, to a UDP socket the test listens on;
- over OpenTelemetry (``[metrics] otel_on``), the tagged names with their tags as attributes, to an OTLP/HTTP
  endpoint the test starts (:mod:`tests.support.otlp`), each counter, histogram and gauge with its exact
  value."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.observability.metrics import table_metric_name
from airflow_provider_deltacc.operators import DeltaMergeOperator, DeltaOptimizeOperator
from tests.integration.airflow_face.rival import Rival
from tests.support.airflow_runs import serialize_dag
from tests.support.otlp import OtlpListener, otlp_listener

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, p STRING, v STRING"
DAG_ID = "deltacc_test_metrics"


@pytest.fixture
def statsd_listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A UDP socket on 127.0.0.1, and Airflow's Stats sending StatsD to it (as a task process sets it up from
    ``[metrics]``); Stats is set back to sending nothing afterwards."""
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics import stats_utils

    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(0.2)
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_ON", "True")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_HOST", "127.0.0.1")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PORT", str(listener.getsockname()[1]))
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PREFIX", "airflow")
    stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    try:
        yield listener
    finally:
        monkeypatch.setenv("AIRFLOW__METRICS__STATSD_ON", "False")
        stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
        listener.close()


def _received(listener: socket.socket, until: set[str], timeout_s: float = 30.0) -> dict[str, list[str]]:
    """Metric name -> the values received (``1|c``, ``12.5|ms``): everything sent until every name in
    ``until`` arrived and nothing more came for a moment."""
    seen: dict[str, list[str]] = {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            data = listener.recv(65536).decode()
        except TimeoutError:
            if until <= set(seen):
                break
            continue
        for line in data.splitlines():
            name, _, value = line.partition(":")
            seen.setdefault(name, []).append(value)
    return seen


@pytest.fixture
def otlp_stats(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpListener]:
    """An OTLP/HTTP endpoint on 127.0.0.1, and Airflow's Stats sending OpenTelemetry to it (as a task process
    sets it up from ``[metrics]``); the meter provider is shut down and Stats set back to sending nothing
    afterwards."""
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics import stats_utils
    from opentelemetry import metrics

    with otlp_listener() as listener:
        for key, value in {
            "OTEL_ON": "True",
            "STATSD_ON": "False",
            "OTEL_HOST": "127.0.0.1",
            "OTEL_PORT": str(listener.port),
            "OTEL_PREFIX": "airflow",
        }.items():
            monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", value)
        stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
        try:
            yield listener
        finally:
            provider = metrics.get_meter_provider()
            if hasattr(provider, "shutdown"):
                provider.shutdown()
            monkeypatch.setenv("AIRFLOW__METRICS__OTEL_ON", "False")
            stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)


def _run_with_a_conflict(spark: SparkSession, rival: Rival, tmp_path: Path) -> str:
    """Run the DAG: a MERGE that loses one conflict to a rival's append and commits on its next attempt, then
    an OPTIMIZE through the gate (the table spelled with a trailing slash); return the table."""
    from airflow.sdk import DAG

    orders = str(tmp_path / "orders")
    spark.createDataFrame([(1, "a", "old"), (2, "b", "old")], SCHEMA).write.format("delta").partitionBy(
        "p"
    ).save(orders)

    def blind_append_into_a(spec: dict[str, Any]) -> None:
        spark.createDataFrame([(9, "a", "rival")], SCHEMA).write.format("delta").mode("append").save(orders)

    rival.plan("merge", orders, blind_append_into_a, gate_column="id", task_id="merge")
    with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        merge = DeltaMergeOperator(
            task_id="merge",
            table=orders,
            source={"kind": "rows", "rows": [[1, "a", "merged"]], "schema": SCHEMA},
            keys=["id", "p"],
            commit_retry={"max_attempts": 3, "min_wait_s": 0.05, "max_wait_s": 0.1},
            execution_mode="in_process",
        )
        optimize = DeltaOptimizeOperator(task_id="optimize", table=orders + "/", execution_mode="in_process")
        merge >> optimize
    serialize_dag(dag, tmp_path / "no-dags")
    dr = dag.test()
    rival.check()
    assert {ti.task_id: str(ti.state) for ti in dr.get_task_instances()} == {
        "merge": "success",
        "optimize": "success",
    }
    return orders


def test_a_run_with_a_conflict_sends_its_metrics_to_statsd(
    airflow_db: Path, spark: SparkSession, rival: Rival, tmp_path: Path, statsd_listener: socket.socket
) -> None:
    orders = _run_with_a_conflict(spark, rival, tmp_path)

    per_table = f"airflow.deltacc.table.{table_metric_name(orders)}"
    expected = {
        "airflow.deltacc.commits",
        "airflow.deltacc.conflicts",
        "airflow.deltacc.conflicts.append",
        "airflow.deltacc.in_job_retries",
        "airflow.deltacc.wasted",
        "airflow.deltacc.gate_wait",
        "airflow.deltacc.gate.go",
        f"{per_table}.commits",
        f"{per_table}.conflicts.append",
        f"{per_table}.wasted",
        f"{per_table}.gate.go",
        "airflow.deltacc.leases.live",
        f"{per_table}.leases.live",
    }
    seen = _received(statsd_listener, expected)
    assert expected <= set(seen), sorted(seen)
    # The MERGE and the OPTIMIZE each committed once, on one table however the OPTIMIZE spelled it.
    assert seen["airflow.deltacc.commits"] == ["1|c", "1|c"] and seen[f"{per_table}.commits"] == [
        "1|c",
        "1|c",
    ]
    assert seen["airflow.deltacc.conflicts.append"] == ["1|c"] and seen["airflow.deltacc.in_job_retries"] == [
        "1|c"
    ]
    (wasted,) = seen["airflow.deltacc.wasted"]
    assert wasted.endswith("|ms") and float(wasted.split("|")[0]) > 0
    assert not any(name.startswith("airflow.deltacc.duplicate") for name in seen)
    # The live leases on the table as each task took its lease and gave it back: one at a time.
    assert seen["airflow.deltacc.leases.live"] == ["1|g", "0|g", "1|g", "0|g"]


def test_a_run_with_a_conflict_sends_its_metrics_to_an_otlp_collector(
    airflow_db: Path, spark: SparkSession, rival: Rival, tmp_path: Path, otlp_stats: OtlpListener
) -> None:
    from airflow.sdk._shared.observability.metrics.otel_logger import flush_otel_metrics

    orders = _run_with_a_conflict(spark, rival, tmp_path)
    flush_otel_metrics()

    points = otlp_stats.latest_points()
    table = table_key(Table(orders))
    merge = {"table": table, "operation": "merge"}
    optimize = {"table": table, "operation": "optimize"}
    # Counters (cumulative): the MERGE and the OPTIMIZE each committed once; one conflict, one retry.
    assert points.value("airflow.deltacc.commits") == {points.key(merge): 1, points.key(optimize): 1}
    assert points.value("airflow.deltacc.conflicts") == {points.key({**merge, "kind": "append"}): 1}
    assert points.value("airflow.deltacc.in_job_retries") == {points.key(merge): 1}
    # Histograms: one lost attempt's wasted time, one gate decision; their count and a positive sum.
    (wasted,) = points.value("airflow.deltacc.wasted").items()
    assert wasted[0] == points.key(merge) and wasted[1][0] == 1 and wasted[1][1] > 0, wasted
    (gate,) = points.value("airflow.deltacc.gate_wait").items()
    assert gate[0] == points.key({**optimize, "outcome": "go"}) and gate[1][0] == 1, gate
    # The gauge: the table's live leases, none once both tasks gave theirs back.
    assert points.value("airflow.deltacc.leases.live") == {points.key({"table": table}): 0}
    assert not any(name.startswith("airflow.deltacc.duplicate") for name in points.names())
