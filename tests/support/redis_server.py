"""A Redis server on 127.0.0.1 from Debian's ``redis-server`` (installed by scripts/setup.sh): the Celery
broker of the multi-host Airflow deployment. In memory only (no RDB snapshots, no append-only file), in a
directory of its own, stopped when the block ends."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import stop_processes
from tests.support.spark_standalone import _free_port

REDIS_SERVER = "redis-server"


def _answers_ping(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")
    return False


@contextlib.contextmanager
def running_redis(work: Path, timeout_s: float = 30.0) -> Iterator[str]:
    """Start ``redis-server`` on a free port of 127.0.0.1; yield its ``redis://`` URL (database 0).

    :param work: a directory for its working files and its log (``redis.log``).
    :param timeout_s: how long it may take to answer ``PING``.
    :raises RuntimeError: when ``redis-server`` is not installed or exits while starting.
    """
    binary = shutil.which(REDIS_SERVER)
    if binary is None:
        raise RuntimeError(
            f"{REDIS_SERVER} is not installed: run `make setup` (it installs Debian's redis-server)"
        )
    work.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log = work / "redis.log"
    command = [
        binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(work),
        "--save", "", "--appendonly", "no", "--protected-mode", "yes", "--logfile", str(log),
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=work)
    try:
        deadline = time.monotonic() + timeout_s
        while not _answers_ping(port):
            if server.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
                raise RuntimeError(f"redis-server exited with {server.returncode} while starting:\n{tail}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"redis-server on 127.0.0.1:{port} did not answer PING within {timeout_s} s"
                )
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_processes(server, timeout_s=15)
