"""A rival writer for a job that spark-submit runs in its own driver: one real, deterministic Delta conflict.

The driver is another process with its own JVM, so the hold is installed there at interpreter start-up:
``submit_hold_site/sitecustomize.py`` goes on the PYTHONPATH that spark-submit passes to the driver, and when
that driver runs the bundled job (``spark_job/__main__.py``) it calls :func:`install_hold`, which acts when
:data:`HOLD_GATE_ENV` is set. The job's first attempt then reads its source through a
:class:`~tests.support.gate.Gate` UDF that blocks after Delta has taken the transaction's snapshot. A thread
of the test waits at the gate, commits the rival write and opens the gate; the held commit meets Delta's
real conflict check, and the next attempt runs untouched.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.gate import Gate

if TYPE_CHECKING:
    import pytest
    from pyspark.sql import DataFrame

HOLD_GATE_ENV = "DELTACC_TEST_HOLD_GATE"
HOLD_COLUMN_ENV = "DELTACC_TEST_HOLD_COLUMN"
SITE_DIR = Path(__file__).with_name("submit_hold_site")


@contextmanager
def rival_during_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rival: Callable[[], object], *, gate_column: str
) -> Iterator[None]:
    """Hold the first spark-submit job started inside the block and commit ``rival`` while it is held.

    :param tmp_path: where the gate's files go.
    :param monkeypatch: sets the driver's PYTHONPATH and the gate's environment for the block.
    :param rival: the concurrent write.
    :param gate_column: a column of the job's source, read by the gate.
    """
    gate = Gate(tmp_path, timeout_s=180)
    path = [str(SITE_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    monkeypatch.setenv(HOLD_GATE_ENV, str(gate.directory))
    monkeypatch.setenv(HOLD_COLUMN_ENV, gate_column)
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            while not gate.entered_file.exists():
                if gate.released_file.exists():
                    return  # the block ended without the job reaching the gate
                time.sleep(0.05)
            rival()
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            gate.release()

    thread = threading.Thread(target=serve, name="submit-rival", daemon=True)
    thread.start()
    try:
        yield
    finally:
        gate.release()
        thread.join(gate.timeout_s)
    if errors:
        raise AssertionError("the rival write failed") from errors[0]
    assert gate.entered_file.exists(), "no spark-submit job reached the gate"


def install_hold() -> None:
    """In the driver: hold the first attempt of the job at the test's gate, if one is set (see the module
    docstring)."""
    if not os.environ.get(HOLD_GATE_ENV):
        return
    import airflow_provider_deltacc.spark_job.main as job_main

    gate = Gate.existing(Path(os.environ[HOLD_GATE_ENV]), timeout_s=180)
    column = os.environ[HOLD_COLUMN_ENV]
    run_job = job_main.run_job

    def held_first_attempt(frame: DataFrame, attempt: int) -> DataFrame:
        return frame.coalesce(1).where(gate.column(column)) if attempt == 1 else frame

    def run_job_held(
        spec: Any, spark: Any = None, *, source_hook: Any = None, turns: Any = None, **kwargs: Any
    ) -> Any:
        return run_job(spec, spark, source_hook=held_first_attempt, turns=turns, **kwargs)

    job_main.run_job = run_job_held  # type: ignore[assignment]
