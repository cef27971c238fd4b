"""The tests' S3 server runs the uploads of one key one at a time (see :mod:`tests.support.atomic_moto`):
checked on the middleware with a recording application in place of moto."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tests.support.atomic_moto import UploadsOfOneKeyOneAtATime

pytestmark = pytest.mark.unit


class _Recording:
    """A WSGI application that takes a while per request and records how many requests of each path it
    served at the same time, at most."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.inside: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.overlapped = threading.Event()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        with self._lock:
            self.inside[path] += 1
            self.most[path] = max(self.most[path], self.inside[path])
            if sum(self.inside.values()) > 1:
                self.overlapped.set()
        time.sleep(0.05)
        with self._lock:
            self.inside[path] -= 1
        start_response("200 OK", [])
        return [b"ok"]


def _together(app: UploadsOfOneKeyOneAtATime, requests: list[tuple[str, str]]) -> list[list[bytes]]:
    start = threading.Barrier(len(requests))
    answers: list[list[bytes]] = [[] for _ in requests]

    def call(index: int, method: str, path: str) -> None:
        start.wait()
        answers[index] = list(app({"REQUEST_METHOD": method, "PATH_INFO": path}, lambda *_: None))

    threads = [threading.Thread(target=call, args=(i, *request)) for i, request in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return answers


@pytest.mark.parametrize("method", ["PUT", "POST"])
def test_uploads_of_one_key_run_one_at_a_time_and_each_is_answered(method: str) -> None:
    recording = _Recording()
    answers = _together(UploadsOfOneKeyOneAtATime(recording), [(method, "/b/t/_delta_log/1.json")] * 4)
    assert answers == [[b"ok"]] * 4
    assert recording.most["/b/t/_delta_log/1.json"] == 1


def test_uploads_of_other_keys_and_reads_run_side_by_side() -> None:
    recording = _Recording()
    requests = [("PUT", "/b/t/a.parquet"), ("PUT", "/b/t/b.parquet"), ("GET", "/b/t/a.parquet")] * 2
    answers = _together(UploadsOfOneKeyOneAtATime(recording), requests)
    assert answers == [[b"ok"]] * len(requests)
    assert recording.overlapped.is_set()
    assert recording.most["/b/t/a.parquet"] >= 2  # a read of a key does not wait for its upload
