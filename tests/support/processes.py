"""Stopping the servers the tests start: politely first, then for sure."""

from __future__ import annotations

import subprocess


def stop_processes(*processes: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    """SIGTERM every process, then wait for each; SIGKILL one that is still running after ``timeout_s`` and
    reap it.

    :param processes: the processes, signalled in the order given.
    :param timeout_s: how long each may take to exit after SIGTERM (and after SIGKILL).
    """
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)
