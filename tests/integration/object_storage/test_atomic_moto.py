"""The tests' S3 server keeps S3's promise on conditional writes: of uploads of one key with
``If-None-Match: *`` released at the same instant, exactly one gets 200 and the others 412.

The server runs with Python's thread switch interval at 1 µs, so its request threads interleave between
moto's check and its store as they would on a loaded box: plain moto then lets two of four racers in about
one race in 25. JVM-free.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.s3_server import S3Server
from tests.support.spark_standalone import _free_port

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

RACES = 200
RACERS = 4


class _EagerSwitching(S3Server):
    """The server, with its threads switching every microsecond."""

    def command(self) -> list[str]:
        code = (
            "import sys; sys.setswitchinterval(1e-6); "
            "from tests.support.atomic_moto import main; main('127.0.0.1', sys.argv[1])"
        )
        return [sys.executable, "-c", code, str(self.port)]


@pytest.fixture
def eager_server(tmp_path: Path) -> Iterator[S3Server]:
    server = _EagerSwitching(port=_free_port(), log=tmp_path / "moto.log")
    server.start()
    try:
        yield server
    finally:
        server.halt()


def _race(clients: list[Any], bucket: str, key: str) -> list[int]:
    """Upload ``key`` with ``If-None-Match: *`` from every client at once; the statuses, sorted."""
    import botocore.exceptions

    start = threading.Barrier(len(clients))
    statuses: list[int] = []

    def upload(racer: int) -> None:
        start.wait()
        try:
            clients[racer].put_object(Bucket=bucket, Key=key, Body=b"%d" % racer * 700, IfNoneMatch="*")
            statuses.append(200)
        except botocore.exceptions.ClientError as exc:
            statuses.append(exc.response["ResponseMetadata"]["HTTPStatusCode"])

    threads = [threading.Thread(target=upload, args=(racer,)) for racer in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return sorted(statuses)


def test_of_uploads_of_one_key_released_together_exactly_one_is_stored(eager_server: S3Server) -> None:
    bucket = eager_server.new_bucket("race")
    clients = [eager_server.client() for _ in range(RACERS)]
    outcomes = [_race(clients, bucket, f"t/_delta_log/{race:020d}.json") for race in range(RACES)]
    lost = [statuses for statuses in outcomes if statuses != [200] + [412] * (RACERS - 1)]
    assert not lost, f"{len(lost)} of {RACES} races did not store exactly one upload: {lost[:5]}"
