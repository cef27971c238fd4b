"""A writer's turns, served to its Spark driver: the worker holds the lease, the driver's commit loop asks.

In ``spark_submit`` mode the commit loop runs in the Spark driver, which cannot reach the lease store. The
worker that submitted it takes the first turn itself, then serves the writer's turns over HTTP for the
length of the job, on an address the driver can reach (loopback for a driver on this machine, the client
deploy mode), guarded by a random token that only the job's spec file carries. The driver asks through
:class:`~airflow_provider_deltacc.occ.remote_turns.RemoteTurns`; after a lost conflict it waits for the
writers ahead of it, as a loop in the worker does, instead of backing off blindly.

Served a :class:`~airflow_provider_deltacc.leases.fence.LeaseFence` (the worker's lease keeps the write
safe), the service is ``fenced``: ``/check`` answers whether that lease still holds, and a lapsed lease
answers any request with 409 and the lease, which the driver raises as
:class:`~airflow_provider_deltacc.contract.exceptions.LeaseLapsedError` before its write commits.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from airflow_provider_deltacc.contract.exceptions import LeaseLapsedError
from airflow_provider_deltacc.contract.spec import TurnServiceSpec
from airflow_provider_deltacc.occ.commit_loop import Turns
from airflow_provider_deltacc.occ.remote_turns import TOKEN_HEADER

log = logging.getLogger(__name__)

#: The largest request body read (a conflict kind and an attempt number).
_MAX_BODY = 4096


@contextmanager
def serve_turns(
    turns: Turns, *, timeout_s: float, host: str = "127.0.0.1", fenced: bool = False
) -> Iterator[TurnServiceSpec]:
    """Serve ``turns`` on ``host`` (a free port) until the block ends; yield where and how to ask.

    :param turns: the writer's turns (its :class:`~airflow_provider_deltacc.turns.lease_turns.LeaseTurns`).
    :param timeout_s: the longest wait for one turn (the queue's own bound), for the driver's requests.
    :param host: the address to listen on; the driver must reach it.
    :param fenced: ``turns`` is a lease fence: the driver checks the lease before each commit.
    """
    token = secrets.token_urlsafe(32)
    server = ThreadingHTTPServer((host, 0), _handler(turns, token))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="deltacc-turn-service", daemon=True)
    thread.start()
    address, port = server.server_address[:2]
    url = f"http://{address!s}:{port}"
    log.debug("serving the writer's turns on %s", url)
    try:
        yield TurnServiceSpec(url=url, token=token, timeout_s=timeout_s, fenced=fenced)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _handler(turns: Turns, token: str) -> type[BaseHTTPRequestHandler]:
    class TurnHandler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if not hmac.compare_digest(self.headers.get(TOKEN_HEADER, ""), token):
                self._answer(403, {"error": "wrong token"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY:
                self._answer(413, {"error": "body too large"})
                return
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._answer(400, {"error": "not JSON"})
                return
            try:
                if self.path == "/first":
                    self._answer(200, {"waited": turns.first()})
                elif self.path == "/retry" and isinstance(body, dict):
                    kind, attempt = str(body.get("conflict_kind", "")), body.get("attempt")
                    waited = turns.retry(kind, attempt if isinstance(attempt, int) else 0)
                    self._answer(200, {"waited": waited})
                elif self.path == "/check":
                    check = getattr(turns, "before_commit", None)
                    if check is not None:
                        check()
                    self._answer(200, {"holds": True})
                else:
                    self._answer(404, {"error": f"no {self.path}"})
            except LeaseLapsedError as exc:
                lapsed = {"table": exc.table, "lease": exc.lease, "ttl_s": exc.ttl_s, "why": exc.why}
                self._answer(409, {"lapsed": lapsed})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("turn service: %s", format % args)

    return TurnHandler
