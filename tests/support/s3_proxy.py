"""A proxy in front of the S3 API server that brings on what a test needs around one commit upload.

It forwards every request unchanged, except around the upload of one commit file
(``<bucket>/<table>/_delta_log/<version>.json``), where a rule acts:

- :class:`CommitBarrier` holds the first upload until a second writer uploads the same file (or a timeout
  passes), then both go on together: both writers have checked that the version is free before either file
  lands, the window in which Delta's single-driver S3 log store cannot keep two drivers apart.
- :class:`OutageAfterCommit` lets the upload land, then answers nothing more (the commit's own answer
  included) until the test ends the outage: a store that went down mid-write, after the commit.

:class:`NoConditionalWrites` acts on every upload: a store without conditional writes, which either drops the
``If-None-Match`` header (an old MinIO, a gateway: the create overwrites) or refuses it with 501.

:class:`Throttling` acts on every request: a busy store that answers ``503 SlowDown`` to a share of them
(listings of ``_delta_log``, commit uploads, other requests, each kind counted on its own) without passing
them on, and answers listings slowly.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.spark_standalone import _free_port


@dataclass(frozen=True)
class Refusal:
    """An answer the proxy gives instead of passing a request on: S3's status and error code."""

    status: int
    code: str
    message: str


class ProxyRule:
    """What the proxy asks around every request; each hook passes the request on unchanged unless a rule
    says otherwise."""

    def hold(self, path: str, headers: Any) -> None:
        """Called before an upload is forwarded."""

    def record(self, path: str, status: int) -> None:
        """Called with the S3 server's answer to an upload."""

    def is_down(self) -> bool:
        """Whether the store is down now (the request gets no answer)."""
        return False

    def answer(self, method: str, path: str, headers: Any) -> Refusal | None:
        """The answer instead of forwarding the request, or None to forward it."""
        return None

    def forwarded(self, headers: dict[str, str]) -> dict[str, str]:
        """The headers the store gets."""
        return headers


class CommitBarrier(ProxyRule):
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


class NoConditionalWrites(ProxyRule):
    """A store that does not do conditional writes.

    :param refuse: answer 501 NotImplemented to an upload with ``If-None-Match`` (else drop the header and
        forward the upload).
    """

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.conditional_uploads = 0

    def answer(self, method: str, path: str, headers: Any) -> Refusal | None:
        """The answer instead of forwarding, or None to forward."""
        if method == "PUT" and headers.get("If-None-Match") is not None:
            self.conditional_uploads += 1
            return Refusal(501, "NotImplemented", "501") if self.refuse else None
        return None

    def forwarded(self, headers: dict[str, str]) -> dict[str, str]:
        """The headers the store gets: without ``If-None-Match``."""
        return {k: v for k, v in headers.items() if k.lower() != "if-none-match"}


#: A commit file's key: ``<table>/_delta_log/<20-digit version>.json``.
_COMMIT_KEY = re.compile(r"/_delta_log/\d{20}\.json$")


def request_kind(method: str, path: str) -> str:
    """``listing`` (a list of ``_delta_log``), ``commit`` (a commit file's upload) or ``other``."""
    url = urlsplit(path)
    query = parse_qs(url.query)
    if method == "GET" and "list-type" in query and "_delta_log" in query.get("prefix", [""])[0]:
        return "listing"
    if method == "PUT" and _COMMIT_KEY.search(url.path):
        return "commit"
    return "other"


class Throttling(ProxyRule):
    """A busy store: ``503 SlowDown`` for every ``every``-th request of each kind (the first one included),
    not passed on, and every listing of ``_delta_log`` answered ``listing_delay_s`` late.

    :param every: one request in this many of each kind is refused.
    :param listing_delay_s: how late a listing's answer comes.
    """

    def __init__(self, every: int = 2, listing_delay_s: float = 1.0) -> None:
        self.every = every
        self.listing_delay_s = listing_delay_s
        self.seen: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self._lock = threading.Lock()

    def answer(self, method: str, path: str, headers: Any) -> Refusal | None:
        kind = request_kind(method, path)
        with self._lock:
            refuse = self.seen[kind] % self.every == 0
            self.seen[kind] += 1
            if refuse:
                self.refused[kind] += 1
        if refuse:
            return Refusal(503, "SlowDown", "Please reduce your request rate.")
        if kind == "listing":
            time.sleep(self.listing_delay_s)
        return None


class OutageAfterCommit(ProxyRule):
    """The store goes down right after the commit file lands, before its answer reaches the writer.

    :param commit_key: the object key suffix of the commit file.
    """

    def __init__(self, commit_key: str) -> None:
        self.commit_key = commit_key
        self.down = threading.Event()
        self.landed: list[int] = []

    def record(self, path: str, status: int) -> None:
        if path.split("?", 1)[0].endswith(self.commit_key) and not self.down.is_set():
            self.landed.append(status)
            self.down.set()

    def is_down(self) -> bool:
        return self.down.is_set()

    def end(self) -> None:
        """The store is back."""
        self.down.clear()


@contextmanager
def s3_proxy(upstream_port: int, rule: ProxyRule) -> Iterator[str]:
    """Run the proxy on 127.0.0.1 for the block; yields its endpoint URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if rule.is_down():
                self.close_connection = True  # no answer at all, as from a store that went away
                return
            if self.command == "PUT":
                rule.hold(self.path, self.headers)
            refusal = rule.answer(self.command, self.path, self.headers)
            if refusal is not None:
                error = f"<Error><Code>{refusal.code}</Code><Message>{refusal.message}</Message></Error>"
                self.send_response_only(refusal.status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(error.encode())))
                self.end_headers()
                if self.command != "HEAD":  # an answer to HEAD has no body
                    self.wfile.write(error.encode())
                return
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            headers = rule.forwarded(headers)
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            if self.command == "PUT":
                rule.record(self.path, response.status)
            if rule.is_down():
                self.close_connection = True
                upstream.close()
                return
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
    thread = threading.Thread(target=server.serve_forever, name="s3-proxy", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
