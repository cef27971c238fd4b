"""What a job's exit means to the task: its exit code and report turned into the report (success) or a
classified exception."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.exceptions import (
    DeltaCCInfrastructureError,
    DeltaCCInputError,
    DeltaConflictFatal,
    DeltaConflictRetryable,
)


def report_or_raise(code: int, report: dict[str, Any] | None) -> dict[str, Any]:
    """Map the job's exit code and report to the report (success) or to a classified exception.

    :param code: the job's :class:`~airflow_provider_deltacc.contract.exit_codes.ExitCode`.
    :param report: the job's report, None when it printed none.
    """
    report = report or {}
    error = report.get("error") or {}
    message = error.get("message") or report.get("summary") or ""
    if code == ExitCode.SUCCESS and report:
        return report
    if code == ExitCode.BAD_INPUT:
        raise DeltaCCInputError(
            f"bad input: {message}", field=error.get("field"), value=error.get("value"), report=report
        )
    if code == ExitCode.UNAVAILABLE:
        lapsed = error.get("type") == "LeaseLapsedError"
        raise DeltaCCInfrastructureError(
            message if lapsed else f"Spark went away while the job ran: {message}",
            unreachable=error.get("unreachable") or "the Spark cluster",
            report=report,
        )
    if code == ExitCode.CONFLICT_RETRYABLE:
        raise DeltaConflictRetryable(f"Delta conflict outlasted the in-job retries: {message}", report=report)
    if code == ExitCode.CONFLICT_FATAL:
        raise DeltaConflictFatal(f"non-retryable Delta conflict: {message}", report=report)
    if code == ExitCode.SUCCESS:
        raise AirflowException(
            "the Delta job exited 0 but its outcome is unknown: no report line, no report in its "
            "report_dir, and no commit of this run in the Delta log (nothing was committed); see the log "
            "above"
        )
    raise AirflowException(f"the Delta job failed (exit code {code}): {message or 'see the log above'}")
