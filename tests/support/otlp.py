"""An OTLP/HTTP metrics endpoint on 127.0.0.1 for a test: it keeps every export it receives, and reads back
the latest value of each data point (OpenTelemetry's exports are cumulative: the latest holds the totals).
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A data point's attributes, as a hashable key.
Attributes = frozenset[tuple[str, str]]
#: A counter's or a gauge's value, or a histogram's ``(count, sum)``.
Value = float | tuple[int, float]


@dataclass
class LatestPoints:
    """Metric name -> attributes -> the data point's latest value."""

    by_name: dict[str, dict[Attributes, Value]] = field(default_factory=dict)

    @staticmethod
    def key(attributes: Mapping[str, str]) -> Attributes:
        """The key of a data point with these attributes."""
        return frozenset(attributes.items())

    def names(self) -> set[str]:
        """Every metric received."""
        return set(self.by_name)

    def value(self, name: str) -> dict[Attributes, Value]:
        """Each data point of ``name`` and its latest value; empty when ``name`` never arrived."""
        return self.by_name.get(name, {})


@dataclass
class OtlpListener:
    """The endpoint's port and the export requests it received (protobuf bodies, oldest first)."""

    port: int
    exports: list[bytes] = field(default_factory=list)

    def latest_points(self) -> LatestPoints:
        """Every metric's data points, each with the value of the latest export that carried it."""
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

        latest = LatestPoints()
        for body in list(self.exports):
            request = ExportMetricsServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        kind = metric.WhichOneof("data")
                        points = latest.by_name.setdefault(metric.name, {})
                        for point in getattr(metric, kind).data_points:
                            key = frozenset((a.key, a.value.string_value) for a in point.attributes)
                            points[key] = _value(kind, point)
        return latest


def _value(kind: str, point: Any) -> Value:
    if kind in ("histogram", "exponential_histogram"):
        return (int(point.count), float(point.sum))
    return float(point.as_int if point.WhichOneof("value") == "as_int" else point.as_double)


@contextmanager
def otlp_listener() -> Iterator[OtlpListener]:
    """Run the endpoint for the block (``/v1/metrics``; gzip bodies are unpacked)."""
    listener = OtlpListener(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/metrics":
                listener.exports.append(body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    listener.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="otlp", daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        server.shutdown()
        server.server_close()
