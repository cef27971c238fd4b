"""The Spark job's exit codes: the driver exits with one, the Airflow hook maps it to a task outcome."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """How the job ended.

    ``BAD_INPUT`` is ``EX_USAGE``, ``UNAVAILABLE`` is ``EX_UNAVAILABLE`` (the Spark Connect server or the
    cluster went away) and ``CONFLICT_RETRYABLE`` is ``EX_TEMPFAIL`` from ``sysexits.h``.
    """

    SUCCESS = 0
    FAILURE = 1
    BAD_INPUT = 64
    UNAVAILABLE = 69
    CONFLICT_RETRYABLE = 75
    CONFLICT_FATAL = 76
