"""A Spark standalone master and one worker on 127.0.0.1, started from pyspark's own ``spark-class``.

``spark_standalone`` is one cluster for the whole session; ``standalone_cluster`` is a cluster of the test's
own, not started, that the test starts and stops (a master that is down, then comes back on the same port).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_log(log: Path, needle: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise RuntimeError(f"{log.name} exited early:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.25)
    raise TimeoutError(f"{needle!r} not seen in {log} within {timeout_s} s")


class StandaloneCluster:
    """A master and a 1-core worker on loopback that can be started, stopped and started again on the same
    ports (the master URL stays valid).

    :param work: a directory for the worker's files and the logs.
    """

    def __init__(self, work: Path) -> None:
        self.work = work
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self._ui_ports = (_free_port(), _free_port())
        self._processes: list[subprocess.Popen[bytes]] = []
        self._starts = 0

    @property
    def running(self) -> bool:
        return bool(self._processes)

    def _spawn(self, name: str, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_WORKER_DIR": str(self.work / "worker"),
            "SPARK_LOG_DIR": str(self.work / "logs"),
            "PYSPARK_PYTHON": sys.executable,
        }
        log = self.work / f"{name}-{self._starts}.log"
        spark_class = Path(sys.executable).with_name("spark-class")
        process = subprocess.Popen(
            [str(spark_class), *args], stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env
        )
        self._processes.append(process)
        return process, log

    def start(self) -> None:
        """Start the master, then the worker; return once the worker has registered."""
        assert not self.running, "the cluster is already running"
        self._starts += 1
        try:
            master, master_log = self._spawn(
                "master",
                ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                 "--webui-port", str(self._ui_ports[0])],
            )  # fmt: skip
            _wait_for_log(master_log, "I have been elected leader", master, 120)
            worker, worker_log = self._spawn(
                "worker",
                ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                 "--cores", "1", "--memory", "1g", "--webui-port", str(self._ui_ports[1])],
            )  # fmt: skip
            _wait_for_log(worker_log, "Successfully registered with master", worker, 120)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the worker and the master (the master's port refuses connections afterwards)."""
        for process in reversed(self._processes):
            process.terminate()
        for process in self._processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        self._processes = []


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start a master and a 1-core worker on loopback; yield the master URL; stop both afterwards."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    cluster.start()
    try:
        yield cluster.master_url
    finally:
        cluster.stop()


@pytest.fixture
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A cluster of the test's own, not started yet (its master URL refuses connections until ``start()``);
    stopped after the test."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()
