"""moto's S3 server with uploads of one key made atomic, as S3's are:
``python -m tests.support.atomic_moto HOST PORT``.

moto's threaded server has no lock around an upload, and two uploads of one key released at the same instant
(what :class:`tests.support.s3_proxy.CommitBarrier` does to two writers of one Delta version) break two of
S3's promises:

- **conditional writes**: moto checks ``If-None-Match: *`` (and ``If-Match``) and then stores the object, so
  both uploads can pass the check and get 200, the second overwriting the first: a commit a writer saw succeed
  is gone from the log. Seen once in a loaded suite run; with Python's thread switch interval at 1 µs it
  happens in 8 of 200 four-way races of one key;
- **plain uploads** (both must get 200, the last one stored): the second upload's store disposes of the
  first one's object while the first request still reads its ETag for its answer, and the first gets 500
  (``ValueError: I/O operation on closed file``). The client retries it, so a third upload of the commit
  reaches the barrier. Seen in a loaded suite run (`test_s3_commit_race`, Delta's own S3 log store).

Here the uploads of one key (PUT or POST, conditional or not) run one at a time, each with its answer;
uploads of different keys and every other request run side by side as before.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple


class UploadsOfOneKeyOneAtATime:
    """WSGI middleware: the uploads of one key are stored and answered one at a time.

    :param app: moto's WSGI application.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("PUT", "POST"):
            return self.app(environ, start_response)
        with self._locks_guard:
            lock = self._locks.setdefault(environ.get("PATH_INFO", ""), threading.Lock())
        with lock:
            return list(self.app(environ, start_response))


def main(host: str, port: str) -> None:
    app = UploadsOfOneKeyOneAtATime(DomainDispatcherApplication(create_backend_app))
    run_simple(host, int(port), app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main(*sys.argv[1:])
