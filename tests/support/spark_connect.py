"""A Delta-enabled Spark Connect server on 127.0.0.1, started once per test run with the provider's own
``deltacc-connect-server`` command (pyspark's jars, the cached Delta jars, Delta's SQL extension)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.jvm_options import LONG_LIVED_DRIVER_CONF
from tests.support.processes import stop_processes
from tests.support.spark_standalone import _free_port, _wait_for_log

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession


@dataclass(frozen=True)
class ConnectServer:
    """A running server: its ``sc://`` URL, and an Airflow connection URI for it."""

    host: str
    port: int

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    @property
    def conn_uri(self) -> str:
        return f"spark-connect://{self.host}:{self.port}"

    def session(self) -> SparkSession:
        """A new session of its own on the server (its own session id)."""
        from airflow_provider_deltacc.hooks.connect import new_connect_session

        return new_connect_session(self.url)


@contextlib.contextmanager
def running_connect_server(
    work: Path, *, master: str = "local[2]", conf: Mapping[str, str] | None = None
) -> Iterator[ConnectServer]:
    """Start a server (a warehouse and logs in ``work``) for the block; stop it afterwards.

    :param work: the server's directory.
    :param master: its driver's Spark master: 2 local cores, or a standalone cluster's URL.
    :param conf: more Spark settings (``spark.cores.max`` ...).
    """
    port = _free_port()
    log = work / "server.log"
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(work / "logs"),
    }
    command = [
        sys.executable, "-m", "airflow_provider_deltacc.deployment.connect_server",
        "--port", str(port), "--master", master,
        "--conf", f"spark.sql.warehouse.dir={work / 'warehouse'}",
        "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={work}",
    ]  # fmt: skip
    for key, value in {**LONG_LIVED_DRIVER_CONF, **(conf or {})}.items():
        command += ["--conf", f"{key}={value}"]
    server = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, cwd=work)
    try:
        _wait_for_log(log, "Spark Connect server started", server, 180)
        yield ConnectServer("127.0.0.1", port)
    finally:
        stop_processes(server)


@pytest.fixture(scope="session")
def spark_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """The test run's server, started on first use and stopped when the run ends."""
    with running_connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server


@pytest.fixture
def connect_session(spark_connect_server: ConnectServer) -> Iterator[SparkSession]:
    """A session of its own for one test, released afterwards."""
    session = spark_connect_server.session()
    yield session
    session.stop()


@pytest.fixture
def spark_connect_default(spark_connect_server: ConnectServer, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Point the ``spark_connect_default`` connection at the run's server. The list it returns records the
    job name (``deltacc-<dag>-<task>``) of every job that then runs over Spark Connect."""
    from airflow_provider_deltacc.hooks.connect import SparkConnectRunner

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CONNECT_DEFAULT", spark_connect_server.conn_uri)
    runs: list[str] = []
    real_run = SparkConnectRunner.run

    def run(
        self: SparkConnectRunner, spec: dict[str, Any], *, turns: Any = None
    ) -> tuple[int, dict[str, Any]]:
        runs.append(self.job_name)
        return real_run(self, spec, turns=turns)

    monkeypatch.setattr(SparkConnectRunner, "run", run)
    return runs
