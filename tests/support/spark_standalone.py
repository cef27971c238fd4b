"""A Spark standalone master and its workers on loopback, started from pyspark's own ``spark-class``: one
worker on 127.0.0.1, or one on each of several hosts (127.0.0.2, 127.0.0.3, ...: :mod:`tests.support.hosts`).

``spark_standalone`` is one cluster for the whole session; ``standalone_cluster`` is a cluster of the test's
own, not started, that the test starts and stops (a master that is down, then comes back on the same port).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import stop_processes


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_log(log: Path, needle: str, process: subprocess.Popen[bytes] | None, timeout_s: float) -> None:
    """Wait until ``needle`` is in ``log``; fail early when ``process`` (if this process started it) exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{log.name} exited early:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.25)
    raise TimeoutError(f"{needle!r} not seen in {log} within {timeout_s} s")


def _process_name(process: Any) -> str:
    """A JVM's main class (its last dotted word), else the program's name."""
    import psutil

    try:
        command = process.cmdline()
    except psutil.Error:
        return "?"
    classes = [arg.rsplit(".", 1)[-1] for arg in command if arg.startswith("org.apache.spark.")]
    return classes[0] if classes else Path(command[0]).name if command else "?"


def _worker_name(host: str) -> str:
    """The name of a worker's directory and log: ``worker`` on 127.0.0.1, ``worker-<host>`` elsewhere."""
    return "worker" if host == "127.0.0.1" else f"worker-{host}"


class StandaloneCluster:
    """A master on 127.0.0.1 and a worker on each of ``worker_hosts`` that can be started, stopped and started
    again on the same ports (the master URL stays valid).

    :param work: a directory for the workers' files (one directory per host) and the logs.
    :param worker_hosts: the loopback address of each worker; its executors bind there too.
    :param cores: the cores each worker offers.
    :param memory: the memory each worker offers (``1g``).
    """

    def __init__(
        self,
        work: Path,
        *,
        worker_hosts: tuple[str, ...] = ("127.0.0.1",),
        cores: int = 1,
        memory: str = "1g",
    ) -> None:
        self.work = work
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.worker_hosts = worker_hosts
        self.cores, self.memory = cores, memory
        self._ui_ports = [_free_port() for _ in range(1 + len(worker_hosts))]
        self._processes: list[subprocess.Popen[bytes]] = []
        self._workers: dict[str, subprocess.Popen[bytes]] = {}
        self._starts = 0

    @property
    def running(self) -> bool:
        return bool(self._processes)

    def _spawn(
        self, name: str, args: list[str], host: str = "127.0.0.1"
    ) -> tuple[subprocess.Popen[bytes], Path]:
        env = {
            **os.environ,
            "SPARK_LOCAL_IP": host,
            "SPARK_WORKER_DIR": str(self.work / _worker_name(host)),
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

    def _worker_args(self, host: str, ui_port: int) -> list[str]:
        return [
            "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", host,
            "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(ui_port),
        ]  # fmt: skip

    def start(self) -> None:
        """Start the master, then the workers; return once every worker has registered."""
        assert not self.running, "the cluster is already running"
        self._starts += 1
        try:
            master, master_log = self._spawn(
                "master",
                ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                 "--webui-port", str(self._ui_ports[0])],
            )  # fmt: skip
            _wait_for_log(master_log, "I have been elected leader", master, 120)
            workers = [
                self._spawn(_worker_name(host), self._worker_args(host, ui), host)
                for host, ui in zip(self.worker_hosts, self._ui_ports[1:], strict=True)
            ]
            for worker, worker_log in workers:
                _wait_for_log(worker_log, "Successfully registered with master", worker, 120)
            self._workers = {
                host: worker for host, (worker, _) in zip(self.worker_hosts, workers, strict=True)
            }
        except BaseException:
            self.stop()
            raise

    def kill_worker(self, host: str) -> list[str]:
        """SIGKILL the worker on ``host`` and every process below it at once (its executors, mid-stage if they
        run one, and their Python workers), as a machine that is lost; return each killed process's name, the
        main class for a JVM (``Worker``, ``CoarseGrainedExecutorBackend``).

        :param host: a worker's loopback address.
        """
        import psutil

        worker = psutil.Process(self._workers.pop(host).pid)
        processes = [worker, *worker.children(recursive=True)]
        names = [_process_name(process) for process in processes]
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(processes, timeout=30)
        return names

    def stop(self) -> None:
        """Stop the worker and the master (the master's port refuses connections afterwards)."""
        stop_processes(*reversed(self._processes))
        self._processes = []
        self._workers = {}


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
