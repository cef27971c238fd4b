"""A Spark standalone master and one worker on 127.0.0.1, started from pyspark's own ``spark-class``."""

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


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start a master and a 1-core worker on loopback; yield the master URL; stop both afterwards."""
    spark_class = Path(sys.executable).with_name("spark-class")
    work = tmp_path_factory.mktemp("spark-standalone")
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(work / "worker"),
        "SPARK_LOG_DIR": str(work / "logs"),
        "PYSPARK_PYTHON": sys.executable,
    }
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        master_log = work / "master.log"
        master = subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(_free_port())],
            stdout=master_log.open("wb"), stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        processes.append(master)
        _wait_for_log(master_log, "I have been elected leader", master, 120)
        worker_log = work / "worker.log"
        worker = subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
             "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port())],
            stdout=worker_log.open("wb"), stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        processes.append(worker)
        _wait_for_log(worker_log, "Successfully registered with master", worker, 120)
        yield master_url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
