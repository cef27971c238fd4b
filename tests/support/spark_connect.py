"""A Delta-enabled Spark Connect server on 127.0.0.1, started once per test run with the provider's own
``deltacc-connect-server`` command (pyspark's jars, the cached Delta jars, Delta's SQL extension)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import pytest

from tests.support.jvm_options import ONE_PARTITION
from tests.support.processes import stop_processes
from tests.support.spark_standalone import _free_port, _wait_for_log

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession


#: The line a server's log shows once it serves.
READY_LINE = "Spark Connect server started"
#: Set by ``scripts/run_suite.py`` for the JVM lane: the ``sc://`` URL of the run's one shared server, which
#: both of the lane's workers use (one JVM warmed up once, instead of one per worker), and its log.
SHARED_URL_ENV = "DELTACC_TEST_CONNECT_URL"
SHARED_LOG_ENV = "DELTACC_TEST_CONNECT_LOG"
#: The shared server's settings: task slots for two workers' tests at once (each may hold a job at a gate
#: while its rival runs), one partition as in every long-lived test session (tests/support/jvm_options.py),
#: and the heap for both workers' tables.
SHARED_MASTER = "local[4]"
SHARED_CONF = {"spark.driver.memory": "2g", **ONE_PARTITION}


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


class ConnectServerProcess:
    """A ``deltacc-connect-server`` process on 127.0.0.1 that a test can SIGKILL and start again on its port,
    as a supervisor (systemd ``Restart=always``, a compose ``restart:`` policy) would.

    :param work: the server's directory (warehouse, logs).
    :param master: its driver's Spark master.
    :param conf: more Spark settings.
    """

    def __init__(
        self, work: Path, *, master: str = "local[2]", conf: Mapping[str, str] | None = None
    ) -> None:
        self.work, self.master, self.conf = work, master, dict(conf or {})
        self.server = ConnectServer("127.0.0.1", _free_port())
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout_s: float = 180) -> ConnectServer:
        """Start the server on its port and wait until it serves."""
        log = self.launch()
        assert self.process is not None
        _wait_for_log(log, READY_LINE, self.process, timeout_s)
        return self.server

    def launch(self) -> Path:
        """Start the server on its port without waiting; return its log (it serves once :data:`READY_LINE`
        is in it)."""
        self.starts += 1
        log = self.work / f"server-{self.starts}.log"
        env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOG_DIR": str(self.work / "logs"),
        }
        command = [
            sys.executable, "-m", "airflow_provider_deltacc.deployment.connect_server",
            "--port", str(self.server.port), "--master", self.master,
            "--conf", f"spark.sql.warehouse.dir={self.work / 'warehouse'}",
            "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={self.work}",
        ]  # fmt: skip
        for key, value in self.conf.items():
            command += ["--conf", f"{key}={value}"]
        self.process = subprocess.Popen(
            command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, cwd=self.work
        )
        return log

    def kill(self) -> float:
        """SIGKILL the server (the JVM and its Python workers), wait until it is dead, and return the time of
        the kill (``time.time()``). Fails if the server was not running."""
        process = self.process
        assert process is not None and process.poll() is None, "the Connect server was not running"
        workers = psutil.Process(process.pid).children(recursive=True)  # its Python workers
        killed_at = time.time()
        process.send_signal(signal.SIGKILL)
        for worker in workers:
            with contextlib.suppress(psutil.Error):
                worker.kill()
        process.wait(timeout=30)
        psutil.wait_procs(workers, timeout=30)
        assert process.returncode == -signal.SIGKILL, process.returncode
        self.process = None
        return killed_at

    def stop(self) -> None:
        """Stop the server if it runs."""
        if self.process is not None:
            stop_processes(self.process)
            self.process = None


@contextlib.contextmanager
def running_connect_server(
    work: Path, *, master: str = "local[2]", conf: Mapping[str, str] | None = None
) -> Iterator[ConnectServer]:
    """Start a server (a warehouse and logs in ``work``) for the block; stop it afterwards.

    :param work: the server's directory.
    :param master: its driver's Spark master: 2 local cores, or a standalone cluster's URL.
    :param conf: more Spark settings (``spark.cores.max`` ...).
    """
    server = ConnectServerProcess(work, master=master, conf=conf)
    try:
        yield server.start()
    finally:
        server.stop()


def shared_server() -> ConnectServer | None:
    """The run's shared server (see :data:`SHARED_URL_ENV`) once it serves, or None outside the JVM lane."""
    url = os.environ.get(SHARED_URL_ENV)
    if not url:
        return None
    host, _, port = url.removeprefix("sc://").partition(":")
    _wait_for_log(Path(os.environ[SHARED_LOG_ENV]), READY_LINE, None, 180)  # run_suite.py started it
    return ConnectServer(host, int(port))


@pytest.fixture(scope="session")
def spark_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """The test run's server: the JVM lane's shared one, or one of this process's own, started on first use
    and stopped when the run ends."""
    shared = shared_server()
    if shared is not None:
        yield shared
        return
    with running_connect_server(tmp_path_factory.mktemp("spark-connect"), conf=ONE_PARTITION) as server:
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
