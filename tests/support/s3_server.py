"""An S3 API server on 127.0.0.1 for the test session: moto's server mode, with its conditional writes made
atomic (:mod:`tests.support.atomic_moto`), started once, stopped at the end; it can be halted and started
again on the same port (the endpoint stays valid).

It keeps its buckets in memory, so a restart empties it. Credentials are not checked (moto accepts any key
pair), so tests of the credential plumbing check where the keys went, not whether S3 refused them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import stop_processes
from tests.support.spark_standalone import _free_port

ACCESS_KEY = "deltacc-test-key"
SECRET_KEY = "deltacc-test-secret-5f2b9c"
REGION = "us-east-1"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class S3Server:
    """A moto server process on ``127.0.0.1:port``."""

    port: int
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The server's command line."""
        return [sys.executable, "-m", "tests.support.atomic_moto", "127.0.0.1", str(self.port)]

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the server and wait until it answers."""
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command(),
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true", **self.env},
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the S3 server exited early:\n{self.log.read_text(errors='replace')[-3000:]}"
                )
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2).close()
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise TimeoutError(f"the S3 server on {self.endpoint} did not answer within {timeout_s} s")

    def halt(self) -> None:
        """Stop the server (its buckets are gone)."""
        if self.process is not None:
            stop_processes(self.process, timeout_s=15)
        self.process = None

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def new_bucket(self, prefix: str = "lake") -> str:
        """Create a bucket no test has used (so no JVM has an S3A filesystem cached for it)."""
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.client().create_bucket(Bucket=name)
        return name

    def log_commits(self, table: str) -> list[dict[str, Any]]:
        """Every commit file of an ``s3a://bucket/path`` table's log, read straight from the server, oldest
        first: ``version``, ``commitInfo`` and its ``txn`` actions."""
        bucket, _, prefix = table.split("://", 1)[1].partition("/")
        client = self.client()
        listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/_delta_log/")
        keys = sorted(o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith(".json"))
        commits = []
        for key in keys:
            body = client.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
            actions = [json.loads(line) for line in body.splitlines() if line.strip()]
            commits.append(
                {
                    "version": int(key.rsplit("/", 1)[1].split(".")[0]),
                    "commitInfo": next((a["commitInfo"] for a in actions if "commitInfo" in a), {}),
                    "txn": [a["txn"] for a in actions if "txn" in a],
                }
            )
        return commits

    def connection_uri(self, **extra: Any) -> str:
        """An Airflow ``aws`` connection, as the JSON ``AIRFLOW_CONN_*`` takes, for this server."""
        return json.dumps(
            {
                "conn_type": "aws",
                "login": ACCESS_KEY,
                "password": SECRET_KEY,
                "extra": {"region_name": REGION, "endpoint_url": self.endpoint, **extra},
            }
        )

    def storage_options(self) -> dict[str, str]:
        """delta-rs storage options for reading what the tests wrote, independently of the provider."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The session's S3 API server on 127.0.0.1 (a failure to start fails the tests that need it)."""
    server = S3Server(port=_free_port(), log=tmp_path_factory.mktemp("s3") / "moto.log")
    server.start()
    try:
        yield server
    finally:
        server.halt()


@pytest.fixture
def aws_conn_id(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """An Airflow ``aws`` connection to the session's S3 server, in the environment as Airflow reads it."""
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3", s3_server.connection_uri())
    return "deltacc_s3"
