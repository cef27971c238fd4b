"""The Spark services of docker/docker-compose.yml, run outside Docker on 127.0.0.1.

There is no Docker engine here, so each service's own command line (its entrypoint bypassed, as the compose
file does) is run as a process, with the container hostnames and published ports swapped for 127.0.0.1 and
free ports, and without SPARK_LOCAL_IP (the image sets none). A job submitted to the master then runs on the
worker's executor, which has to connect back to the driver; the Connect server creates and reads a Delta
table.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.spark_standalone import _free_port, _wait_for_log

pytestmark = pytest.mark.integration

COMPOSE = Path(__file__).resolve().parents[3] / "docker" / "docker-compose.yml"
HOSTNAMES = ("spark-master", "spark-worker", "spark-connect", "0.0.0.0")

SUM_JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
print("SUM", spark.range(1000).selectExpr("sum(id)").first()[0])
spark.stop()
"""


def _service_command(service: dict[str, Any], ports: dict[str, str]) -> list[str]:
    """The service's command with hostnames on loopback and its ports swapped for free ones."""
    command: list[str] = []
    for arg in service["command"]:
        for hostname in HOSTNAMES:
            arg = arg.replace(hostname, "127.0.0.1")
        for old, new in ports.items():
            arg = arg.replace(f":{old}", f":{new}")
        command.append(ports.get(arg, arg))
    executable = Path(sys.executable).with_name(command[0])
    assert executable.exists(), f"{command[0]} is not installed beside {sys.executable}"
    return [str(executable), *command[1:]]


@pytest.fixture
def compose_services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]  # type: ignore[no-any-return]


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Any]:
    """Start processes with their output in a log file; stop them all afterwards."""
    processes: list[subprocess.Popen[bytes]] = []
    env = {key: value for key, value in os.environ.items() if key != "SPARK_LOCAL_IP"}
    env.update(
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOG_DIR=str(tmp_path / "logs"),
        SPARK_WORKER_DIR=str(tmp_path / "work"),
    )

    def start(name: str, command: list[str], extra_env: dict[str, str] | None = None) -> tuple[Any, Path]:
        log = tmp_path / f"{name}.log"
        process = subprocess.Popen(
            command,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            env={**env, **(extra_env or {})},
            cwd=tmp_path,
            start_new_session=True,
        )
        processes.append(process)
        return process, log

    yield start
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def test_master_and_worker_commands_run_a_job_whose_executor_reaches_the_driver(
    compose_services: dict[str, Any], started: Any, tmp_path: Path
) -> None:
    master_port, master_ui = str(_free_port()), str(_free_port())
    ports = {"7077": master_port, "8081": master_ui}
    master, master_log = started("master", _service_command(compose_services["spark-master"], ports))
    _wait_for_log(master_log, "I have been elected leader", master, 120)

    worker_command = _service_command(compose_services["spark-worker"], ports)
    worker, worker_log = started(
        "worker", [*worker_command[:-1], "--webui-port", str(_free_port()), worker_command[-1]]
    )
    _wait_for_log(worker_log, "Successfully registered with master", worker, 120)

    job = tmp_path / "sum_job.py"
    job.write_text(SUM_JOB)
    submit = Path(sys.executable).with_name("spark-submit")
    done = subprocess.run(
        [str(submit), "--master", f"spark://127.0.0.1:{master_port}", "--conf", "spark.ui.enabled=false",
         str(job)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SUM 499500" in done.stdout
    assert "Asked to launch executor" in worker_log.read_text(errors="replace")  # it ran on the worker


def test_connect_server_command_serves_delta(
    compose_services: dict[str, Any], started: Any, tmp_path: Path
) -> None:
    from deltalake import DeltaTable

    from airflow_provider_deltacc.hooks.connect import new_connect_session

    service = compose_services["spark-connect"]
    port = str(_free_port())
    command = _service_command(service, {"15002": port})
    server, log = started("connect", command, service.get("environment"))
    _wait_for_log(log, "Spark Connect server started", server, 180)

    table = tmp_path / "orders"
    session = new_connect_session(f"sc://127.0.0.1:{port}")
    try:
        session.sql(f"CREATE TABLE delta.`{table}` (id BIGINT) USING DELTA")
        session.sql(f"INSERT INTO delta.`{table}` VALUES (1), (2)")
    finally:
        session.stop()
    assert sorted(DeltaTable(str(table)).to_pyarrow_table().column("id").to_pylist()) == [1, 2]
