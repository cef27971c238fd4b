"""The task log's lines about a commit report: one per conflict, and the summary."""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc.contract.try_times import TryTimes, seconds_of

_SKIPPED_NOTE = " (skipped duplicate: this txn identity already committed)"


def log_report(logger: Any, report: dict[str, Any], operation: str, table: str) -> None:
    """Log one warning per conflict of the report, then its one-line summary.

    :param logger: the task's logger.
    :param report: the job's report.
    :param operation: the operation, e.g. ``merge``.
    :param table: the table as the task names it.
    """
    attempts = report.get("attempts") or []
    for attempt in attempts:
        if attempt.get("conflict"):
            logger.warning("%s", conflict_log_line(report, attempt, table))
    times = TryTimes.of(report)
    logger.info(
        "Delta %s on %s: status=%s version=%s attempts=%s conflicts=%s wasted=%.2fs%s%s",
        operation.upper(),
        report.get("table") or table,
        report.get("status"),
        report.get("table_version"),
        len(attempts),
        sum(1 for a in attempts if a.get("conflict")),
        times.wasted_s,
        turn_wait_note(times),
        _SKIPPED_NOTE if report.get("skipped_duplicate") else "",
    )


def conflict_log_line(report: dict[str, Any], attempt: dict[str, Any], table: str) -> str:
    """One line per conflict: kind, table, partition if known, attempt n of m, what happened, what to do."""
    from airflow_provider_deltacc.contract.conflict import Conflict
    from airflow_provider_deltacc.occ.advice import advice_for

    conflict = attempt["conflict"]
    kind = str(conflict.get("kind", "")).upper()
    attempts = report.get("attempts") or []
    where = report.get("table") or table
    partition = f" partition {conflict['partition']}" if conflict.get("partition") else ""
    is_last = attempt is attempts[-1]
    turn_wait = seconds_of(attempt.get("turn_wait_s"))
    if not is_last and turn_wait:
        outcome = (
            "retried from a fresh snapshot once the writers ahead had finished "
            f"({turn_wait:.2f} s waiting for its turn)"
        )
    elif not is_last:
        outcome = f"retried after {float(attempt.get('wait_s') or 0.0):.2f} s from a fresh snapshot"
    elif report.get("status") == "conflict_fatal":
        outcome = "not retryable"
    else:
        outcome = "in-job retries exhausted; Airflow decides the next try"
    try:
        advice = advice_for(Conflict.from_dict(conflict), pinned_columns=report.get("pinned_columns") or ())
    except (KeyError, ValueError):
        advice = ""
    limit = report.get("max_attempts") or len(attempts)
    first_turn = seconds_of(report.get("first_turn_wait_s"))
    if attempt is attempts[0] and first_turn:
        outcome = f"{outcome} (it had waited {first_turn:.2f} s for its turn before attempt 1)"
    return (
        f"Delta conflict {kind} on {where}{partition}, attempt {attempt.get('number')} of {limit}: "
        f"{outcome}. {advice}"
    ).strip()


def turn_wait_note(times: TryTimes) -> str:
    """The time a writer waited for its turns (before its first attempt and before its retries), if any."""
    if not times.waited_s:
        return ""
    return (
        f" turn_wait={times.waited_s:.2f}s (first turn {times.first_turn_wait_s:.2f}s, "
        f"after conflicts {times.turn_wait_s:.2f}s)"
    )
