"""The commit report: every attempt of one write, its conflicts and its outcome, as JSON-safe data."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from airflow_provider_deltacc.contract.conflict import Conflict

AttemptOutcome = Literal["committed", "conflict", "skipped_duplicate", "error"]
ReportStatus = Literal["committed", "skipped_duplicate", "conflict_exhausted", "conflict_fatal", "error"]

_STATUS_TEXT: dict[str, str] = {
    "committed": "committed",
    "skipped_duplicate": "skipped as an already-committed duplicate",
    "conflict_exhausted": "gave up on conflicts",
    "conflict_fatal": "failed on a non-retryable conflict",
    "error": "failed with a non-conflict error",
}


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt of the work.

    :param number: the 1-based attempt number.
    :param started_at: when the attempt started, in seconds since the epoch.
    :param duration_s: how long the attempt ran.
    :param outcome: ``committed``, ``conflict``, ``skipped_duplicate`` or ``error``.
    :param conflict: the classified conflict when ``outcome`` is ``conflict``.
    :param exception: ``"<type>: <first line>"`` of the exception, if the attempt raised.
    :param wait_s: the backoff slept after this attempt (0 when no further attempt followed).
    :param wasted_s: the work thrown away: the duration of a failed attempt, else 0.
    :param turn_wait_s: after a lost conflict, the wait for its turn (the writers granted before it),
        before retrying (0 when there were no turns or nobody ahead).
    """

    number: int
    started_at: float
    duration_s: float
    outcome: AttemptOutcome
    conflict: Conflict | None = None
    exception: str | None = None
    wait_s: float = 0.0
    wasted_s: float = 0.0
    turn_wait_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict; :meth:`from_dict` reverses it exactly."""
        return {
            "number": self.number,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "outcome": self.outcome,
            "conflict": self.conflict.to_dict() if self.conflict is not None else None,
            "exception": self.exception,
            "wait_s": self.wait_s,
            "wasted_s": self.wasted_s,
            "turn_wait_s": self.turn_wait_s,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttemptRecord:
        """Rebuild a record from :meth:`to_dict` output (unknown keys are ignored).

        :param data: the dict to read.
        """
        conflict = data.get("conflict")
        return cls(
            number=data["number"],
            started_at=data["started_at"],
            duration_s=data["duration_s"],
            outcome=data["outcome"],
            conflict=Conflict.from_dict(conflict) if conflict is not None else None,
            exception=data.get("exception"),
            wait_s=data.get("wait_s", 0.0),
            wasted_s=data.get("wasted_s", 0.0),
            turn_wait_s=data.get("turn_wait_s", 0.0),
        )


@dataclass
class CommitReport:
    """Everything that happened while committing one operation.

    :param operation: the operation name, e.g. ``MERGE``.
    :param table: the target table as the user named it.
    :param status: ``committed``, ``skipped_duplicate``, ``conflict_exhausted``, ``conflict_fatal`` or
        ``error``.
    :param table_version: the table version after the commit, when known.
    :param attempts: every attempt in order.
    :param skipped_duplicate: True when the write was skipped because its txn identity was already committed.
    :param total_seconds: wall time from the first attempt to the end, waits included.
    :param txn_app_id: the idempotent-write app id, if any.
    :param txn_version: the idempotent-write version, if any.
    :param metrics: operation metrics from the successful attempt.
    :param first_turn_wait_s: before the first attempt, the time spent waiting for the writers of the table
        granted before this one that it would surely conflict with (see ``turns/lease_turns.py``).
    :param max_attempts: the in-job attempt limit, so attempts read "attempt 1 of 5" everywhere.
    :param pinned_columns: the partition columns the write pinned its condition to (empty: not pinned).
    """

    operation: str
    table: str
    status: ReportStatus = "committed"
    table_version: int | None = None
    attempts: list[AttemptRecord] = field(default_factory=list)
    skipped_duplicate: bool = False
    total_seconds: float = 0.0
    txn_app_id: str | None = None
    txn_version: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    first_turn_wait_s: float = 0.0
    max_attempts: int | None = None
    pinned_columns: list[str] = field(default_factory=list)

    @property
    def conflicts(self) -> list[Conflict]:
        """The conflicts met, in attempt order."""
        return [a.conflict for a in self.attempts if a.conflict is not None]

    @property
    def wasted_seconds(self) -> float:
        """Seconds of work thrown away by failed attempts (waits not included)."""
        return sum(a.wasted_s for a in self.attempts)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict; :meth:`from_dict` reverses it exactly."""
        return {
            "operation": self.operation,
            "table": self.table,
            "status": self.status,
            "table_version": self.table_version,
            "attempts": [a.to_dict() for a in self.attempts],
            "skipped_duplicate": self.skipped_duplicate,
            "total_seconds": self.total_seconds,
            "txn_app_id": self.txn_app_id,
            "txn_version": self.txn_version,
            "metrics": dict(self.metrics),
            "first_turn_wait_s": self.first_turn_wait_s,
            "max_attempts": self.max_attempts,
            "pinned_columns": list(self.pinned_columns),
        }

    def to_json(self) -> str:
        """Return the report as one line of JSON."""
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CommitReport:
        """Rebuild a report from :meth:`to_dict` output (unknown keys are ignored).

        :param data: the dict to read.
        """
        return cls(
            operation=data["operation"],
            table=data["table"],
            status=data["status"],
            table_version=data.get("table_version"),
            attempts=[AttemptRecord.from_dict(a) for a in data.get("attempts", [])],
            skipped_duplicate=bool(data.get("skipped_duplicate", False)),
            total_seconds=data.get("total_seconds", 0.0),
            txn_app_id=data.get("txn_app_id"),
            txn_version=data.get("txn_version"),
            metrics=dict(data.get("metrics") or {}),
            first_turn_wait_s=data.get("first_turn_wait_s", 0.0),
            max_attempts=data.get("max_attempts"),
            pinned_columns=list(data.get("pinned_columns") or []),
        )

    @classmethod
    def from_json(cls, text: str) -> CommitReport:
        """Parse :meth:`to_json` output.

        :param text: the JSON text.
        """
        return cls.from_dict(json.loads(text))

    def summary_line(self) -> str:
        """Return one line for logs.

        For example
        ``MERGE on orders: committed v42 after 3 attempts, 2 conflicts (APPEND x2), 1.8 s wasted``.
        """
        status = _STATUS_TEXT.get(self.status, self.status)
        if self.table_version is not None and self.status in ("committed", "skipped_duplicate"):
            status += f" v{self.table_version}"
        attempts = len(self.attempts)
        conflicts = self.conflicts
        if conflicts:
            counts = Counter(c.kind.name for c in conflicts)
            detail = ", ".join(f"{name} x{count}" for name, count in counts.items())
            conflict_text = f"{len(conflicts)} conflict{'s' if len(conflicts) != 1 else ''} ({detail})"
        else:
            conflict_text = "no conflicts"
        return (
            f"{self.operation} on {self.table}: {status} after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}, {conflict_text}, {self.wasted_seconds:.1f} s wasted"
        )
