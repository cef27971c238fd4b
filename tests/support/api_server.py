"""A real ``airflow api-server`` on 127.0.0.1 for UI tests: its own AIRFLOW_HOME, the simple auth manager
with one known admin, and the metadata DB the test process uses (so what ``dag.test()`` wrote is served)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import stop_processes

ADMIN_USER = "admin"
ADMIN_PASSWORD = "deltacc-ui-test"


@dataclass(frozen=True)
class ApiServer:
    """A running api-server: where it listens and where it logs."""

    url: str
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"airflow api-server exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"airflow api-server not healthy after {timeout_s} s:\n{log.read_text()[-3000:]}")


@contextmanager
def api_server(home: Path, *, dags_folder: Path) -> Iterator[ApiServer]:
    """Start ``airflow api-server`` with AIRFLOW_HOME ``home`` on a free port; stop it afterwards.

    :param home: the server's own AIRFLOW_HOME (config, password file, log).
    :param dags_folder: its DAG folder (the conflicts page reads the serialized DAGs, never these files).
    """
    home.mkdir(parents=True, exist_ok=True)
    passwords = home / "simple_auth_manager_passwords.json"
    passwords.write_text(json.dumps({ADMIN_USER: ADMIN_PASSWORD}))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API_AUTH__JWT_SECRET": "deltacc-ui-test-jwt-secret-0123456789abcdef",
        "AIRFLOW__API__SECRET_KEY": "deltacc-ui-test-secret-key",
    }
    log = home / "api-server.log"
    airflow = Path(sys.executable).with_name("airflow")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(airflow), "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_healthy(url, process, log)
        yield ApiServer(url=url, log=log)
    finally:
        stop_processes(process)
