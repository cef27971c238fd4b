"""Loopback addresses that stand for separate machines in the multi-host tests (127.0.0.2, 127.0.0.3, ...).

A process started "on" a host carries :data:`HOST_ENV` with the host's address. Airflow's ``[core]
hostname_callable`` is :func:`host_address` in those deployments, so a task instance records the host its
Celery worker runs on, and the api-server fetches its log from that host's log server
(:func:`serve_logs_on`), as it would from another machine.
"""

from __future__ import annotations

import os
import sys

#: The address of the "machine" a process runs on.
HOST_ENV = "DELTACC_TEST_HOST"
#: What ``[core] hostname_callable`` names.
HOSTNAME_CALLABLE = f"{__name__}.host_address"


def host_address() -> str:
    """The host's address from :data:`HOST_ENV`; 127.0.0.1 for a process started on no host of its own."""
    return os.environ.get(HOST_ENV) or "127.0.0.1"


def serve_logs_on(host: str, port: int) -> None:
    """Airflow's worker log server (the app ``airflow celery worker`` serves) bound to ``host`` only, not to
    every interface as the worker's own would be: one machine's task logs, read by the api-server."""
    import uvicorn

    uvicorn.run(
        "airflow.utils.serve_logs.log_server:get_app",
        factory=True,
        host=host,
        port=port,
        log_level="warning",
        log_config=None,
        access_log=False,
    )


if __name__ == "__main__":  # python -m tests.support.hosts <host> <port>
    serve_logs_on(sys.argv[1], int(sys.argv[2]))
