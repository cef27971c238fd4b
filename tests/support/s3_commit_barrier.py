"""A proxy in front of the S3 API server that makes two Delta commits race, every time.

It forwards every request unchanged, except the upload of one commit file (``_delta_log/<version>.json``
of a chosen table): the first upload is held until a second writer uploads the same file (or a timeout
passes), then both go on together. So both writers have checked that the version is free before either
file lands: the window in which Delta's single-driver S3 log store cannot keep two drivers apart.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.spark_standalone import _free_port


class CommitBarrier:
    """Which upload to hold, and what became of the uploads.

    :param commit_key: the object key suffix to hold, e.g. ``"orders/_delta_log/00000000000000000001.json"``.
    :param timeout_s: how long the first upload waits for the second.
    """

    def __init__(self, commit_key: str, timeout_s: float = 90.0) -> None:
        self.commit_key = commit_key
        self.timeout_s = timeout_s
        self.arrived = threading.Barrier(2)
        self.statuses: list[int] = []
        self.conditional: list[bool] = []
        self._lock = threading.Lock()

    def hold(self, path: str, headers: Any) -> None:
        if not path.split("?", 1)[0].endswith(self.commit_key):
            return
        with self._lock:
            self.conditional.append(headers.get("If-None-Match") == "*")
        with contextlib.suppress(threading.BrokenBarrierError):  # only one writer came: let it through
            self.arrived.wait(self.timeout_s)

    def record(self, path: str, status: int) -> None:
        if path.split("?", 1)[0].endswith(self.commit_key):
            with self._lock:
                self.statuses.append(status)


@contextmanager
def commit_barrier_proxy(upstream_port: int, barrier: CommitBarrier) -> Iterator[str]:
    """Run the proxy on 127.0.0.1 for the block; yields its endpoint URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if self.command == "PUT":
                barrier.hold(self.path, self.headers)
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            if self.command == "PUT":
                barrier.record(self.path, response.status)
            self.send_response_only(response.status, response.reason)
            passed_on = ("connection", "transfer-encoding") + (
                () if self.command == "HEAD" else ("content-length",)
            )
            for key, value in response.getheaders():
                if key.lower() not in passed_on:
                    self.send_header(key, value)
            if self.command != "HEAD":  # a HEAD answer keeps the object's own length
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            upstream.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", _free_port()), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="s3-commit-barrier", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
