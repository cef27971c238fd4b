"""The provider's metrics through Airflow's OpenTelemetry backend (``[metrics] otel_on``) to an OTLP/HTTP
listener this test starts on 127.0.0.1: the tagged names arrive with their tags as attributes.

A task process of its own (a subprocess) sets Airflow's Stats up from ``[metrics]`` as a task would, and
emits what one try that lost a conflict, one gate wait and one lease change emit (the StatsD test drives the
same calls from a real run with a real conflict)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

TASK = textwrap.dedent(
    """
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics import stats_utils
    from airflow.sdk._shared.observability.metrics.otel_logger import flush_otel_metrics

    stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    from airflow_provider_deltacc.observability.metrics import (
        emit_try_metrics,
        record_gate,
        record_live_leases,
    )

    lost = {"outcome": "conflict", "conflict": {"kind": "APPEND"}, "wasted_s": 0.4, "queue_s": 0.0}
    won = {"outcome": "committed", "conflict": None, "wasted_s": 0.0, "queue_s": 0.0}
    emit_try_metrics("s3a://lake/orders/", "MERGE", {"status": "committed", "attempts": [lost, won]})
    record_gate("s3://lake/orders", "optimize", waited_s=1.5, outcome="go")
    record_live_leases("s3://lake/orders", 2)
    flush_otel_metrics()
    """
)


@pytest.fixture
def otlp_listener() -> Iterator[tuple[int, list[bytes]]]:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps every metrics export it receives."""
    received: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/metrics":
                received.append(body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


def _points(exports: list[bytes]) -> dict[str, list[dict[str, str]]]:
    """Metric name -> the attributes of each data point received."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    found: dict[str, list[dict[str, str]]] = {}
    for body in exports:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    for point in getattr(metric, kind).data_points:
                        attributes = {a.key: a.value.string_value for a in point.attributes}
                        found.setdefault(metric.name, []).append(attributes)
    return found


def test_metrics_reach_an_otlp_collector_with_their_tags(otlp_listener: tuple[int, list[bytes]]) -> None:
    port, exports = otlp_listener
    env = {
        **os.environ,
        "AIRFLOW__METRICS__OTEL_ON": "True",
        "AIRFLOW__METRICS__STATSD_ON": "False",
        "AIRFLOW__METRICS__OTEL_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__OTEL_PORT": str(port),
        "AIRFLOW__METRICS__OTEL_PREFIX": "airflow",
    }
    done = subprocess.run([sys.executable, "-c", TASK], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]

    points = _points(exports)
    orders = {"table": "s3://lake/orders", "operation": "merge"}
    assert orders in points["airflow.deltacc.commits"]
    assert {**orders, "kind": "append"} in points["airflow.deltacc.conflicts"]
    assert orders in points["airflow.deltacc.in_job_retries"]
    assert orders in points["airflow.deltacc.wasted"]
    assert {"table": "s3://lake/orders", "operation": "optimize", "outcome": "go"} in points[
        "airflow.deltacc.gate_wait"
    ]
    assert {"table": "s3://lake/orders"} in points["airflow.deltacc.leases.live"]
