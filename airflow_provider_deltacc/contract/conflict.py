"""Conflict kinds and the :class:`Conflict` record the classifier produces."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Literal

ConflictSource = Literal["delta-spark", "delta-rs"]

#: The longest ``Conflict.message`` kept; the full text stays in the task log.
MESSAGE_LIMIT = 500


class ConflictKind(StrEnum):
    """The kind of an optimistic-concurrency conflict, mirroring Delta's exception classes.

    The value is the lowercase member name, so it is stable in JSON reports.
    """

    APPEND = "append"
    DELETE_READ = "delete_read"
    DELETE_DELETE = "delete_delete"
    METADATA_CHANGED = "metadata_changed"
    PROTOCOL_CHANGED = "protocol_changed"
    CONCURRENT_TRANSACTION = "concurrent_transaction"
    CONCURRENT_WRITE = "concurrent_write"
    MAX_COMMIT_ATTEMPTS = "max_commit_attempts"


@dataclass(frozen=True)
class Conflict:
    """One classified commit conflict.

    :param kind: what kind of conflict it is.
    :param table: the table name or path the message names (Delta >= 4.1 only), else None.
    :param winning_version: the table version the winning commit created, if the message says.
    :param winning_operation: the winning commit's operation (``WRITE``, ``MERGE``, ``OPTIMIZE`` ...).
    :param partition: the partition hint as the message prints it, e.g. ``[date=2026-11-20]``;
        None for an unpartitioned table or when the message gives no hint.
    :param message: the first line(s) of the original message, at most ``MESSAGE_LIMIT`` characters.
    :param exception_type: the Python type of the exception that carried the conflict ("" for text).
    :param source: ``"delta-spark"`` or ``"delta-rs"``.
    :param create_race: True when the conflict is two writers creating the same table at once.
    """

    kind: ConflictKind
    table: str | None = None
    winning_version: int | None = None
    winning_operation: str | None = None
    partition: str | None = None
    message: str = ""
    exception_type: str = ""
    source: ConflictSource = "delta-spark"
    create_race: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict; :meth:`from_dict` reverses it exactly."""
        data = asdict(self)
        data["kind"] = self.kind.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Conflict:
        """Rebuild a conflict from :meth:`to_dict` output.

        Unknown keys are ignored so that a report written by a newer job still parses.

        :param data: the dict to read.
        """
        return cls(
            kind=ConflictKind(data["kind"]),
            table=data.get("table"),
            winning_version=data.get("winning_version"),
            winning_operation=data.get("winning_operation"),
            partition=data.get("partition"),
            message=data.get("message", ""),
            exception_type=data.get("exception_type", ""),
            source=data.get("source", "delta-spark"),
            create_race=bool(data.get("create_race", False)),
        )

    def where(self) -> str:
        """Describe where the conflict happened and who won, e.g. ``partition [d=1] (winner: MERGE v41)``."""
        parts: list[str] = []
        if self.partition:
            parts.append(f"partition {self.partition}")
        winner = " ".join(
            p
            for p in (
                self.winning_operation,
                f"v{self.winning_version}" if self.winning_version is not None else None,
            )
            if p
        )
        if winner:
            parts.append(f"(winner: {winner})")
        if self.create_race:
            parts.append("(concurrent table creation)")
        return " ".join(parts)

    def summary(self) -> str:
        """Return one line, e.g. ``APPEND on orders partition [date=1] (winner: MERGE v41) [delta-spark]``."""
        text = self.kind.name
        if self.table:
            text += f" on {self.table}"
        where = self.where()
        if where:
            text += f" {where}"
        return f"{text} [{self.source}]"
