"""Stand-ins around the real job that keep its report line from the submitter, as a cluster deploy mode
driver does (its stdout is the cluster's), or that kill the driver right after its commit.

``lost_report_site/sitecustomize.py`` goes on the PYTHONPATH spark-submit passes to the driver; when that
driver runs the bundled job it calls :func:`install_lost_report`, which acts on :data:`LOSE_REPORT_ENV`:

* ``line``: the job runs untouched, but its stdout drops the ``DELTACC_REPORT`` line;
* ``kill_after_commit``: the driver SIGKILLs itself as soon as the job returns, after its commit, before it
  leaves a report file or prints its line.

The site also installs :func:`tests.support.submit_hold.install_hold`, so a held conflict works with either.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import pytest

LOSE_REPORT_ENV = "DELTACC_TEST_LOSE_REPORT"
SITE_DIR = Path(__file__).with_name("lost_report_site")


def lose_the_report(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Make every spark-submit driver started afterwards lose its report ``how`` (``line`` or
    ``kill_after_commit``).

    :param monkeypatch: sets the driver's PYTHONPATH and the stand-in's environment.
    :param how: see the module docstring.
    """
    path = [str(SITE_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    monkeypatch.setenv(LOSE_REPORT_ENV, how)


class _WithoutReportLines:
    """A stdout that drops the job's report line and passes everything else on."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from airflow_provider_deltacc.spark_job.report_line import REPORT_PREFIX

        kept = "".join(line for line in text.splitlines(True) if not line.startswith(REPORT_PREFIX))
        return self._stream.write(kept)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def install_lost_report() -> None:
    """In the driver: lose the report as :data:`LOSE_REPORT_ENV` says (see the module docstring)."""
    import sys

    import airflow_provider_deltacc.spark_job.main as job_main

    how = os.environ.get(LOSE_REPORT_ENV)
    if how == "line":
        sys.stdout = _WithoutReportLines(sys.stdout)  # type: ignore[assignment]
    elif how == "kill_after_commit":
        run_job = job_main.run_job

        def run_then_die(*args: Any, **kwargs: Any) -> Any:
            result = run_job(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
            return result

        job_main.run_job = run_then_die
