"""Exactly-once identities: a :class:`TxnIdentity` ``(app_id, version)`` names one logical write, and Delta
skips a later write whose version is not greater than the one recorded for its app id.

Plain Python: the operators derive and check identities, the worker's log fast path reads recorded versions
from the Delta log, and the Spark job commits them (:mod:`airflow_provider_deltacc.engine.txn`).

Deriving identities for Airflow:

* ``app_id`` must be stable across tries of the same task and unique per logical writer, e.g.
  ``"<dag_id>.<task_id>"`` (plus the map index for mapped tasks). XCom is cleared between tries, so derive it;
  never use the try number or a random id.
* ``version`` must grow monotonically per app id, e.g. the data interval end as epoch seconds or
  ``int(logical_date.strftime("%Y%m%d%H"))``. Re-running the same interval reuses the same version and is a
  no-op once it has landed.
* A backfill of an older interval would carry a lower version and be silently skipped; give backfills their
  own app id (e.g. ``"<dag_id>.<task_id>.backfill.<interval start>"``). Each app id stays in the Delta log
  until ``delta.setTransactionRetentionDuration`` expires it.
* The same identity with different data is still skipped: the identity names the input, so it must change
  whenever the input does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_provider_deltacc.contract.exceptions import InputError

#: Delta stores txnVersion as a Java long.
MAX_TXN_VERSION = 2**63 - 1


@dataclass(frozen=True)
class TxnIdentity:
    """An idempotent-write identity: Delta skips a write whose version is ``<=`` the recorded one.

    :param app_id: stable per logical writer (non-empty).
    :param version: monotonically increasing per app id (a non-negative Java long).
    """

    app_id: str
    version: int

    def __post_init__(self) -> None:
        if not isinstance(self.app_id, str) or not self.app_id.strip():
            raise InputError("txn.app_id", self.app_id, "must be a non-empty string, e.g. 'dag_id.task_id'")
        if isinstance(self.version, bool) or not isinstance(self.version, int):
            raise InputError(
                "txn.version", self.version, "must be an integer, e.g. the interval end in epoch s"
            )
        if not 0 <= self.version <= MAX_TXN_VERSION:
            raise InputError("txn.version", self.version, f"must be between 0 and {MAX_TXN_VERSION}")

    @classmethod
    def from_dict(cls, data: Any) -> TxnIdentity:
        """Build an identity from ``{"app_id": ..., "version": ...}``.

        :param data: the dict.
        :raises InputError: on a missing, unknown or invalid field.
        """
        if not isinstance(data, dict):
            raise InputError("txn", data, 'must be an object {"app_id": "...", "version": 7} or null')
        unknown = sorted(set(data) - {"app_id", "version"})
        if unknown:
            raise InputError(
                f"txn.{unknown[0]}", data[unknown[0]], "unknown field; txn has app_id and version"
            )
        for key in ("app_id", "version"):
            if key not in data:
                raise InputError(f"txn.{key}", None, "is required when txn is given")
        return cls(app_id=data["app_id"], version=data["version"])

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"app_id": ..., "version": ...}``."""
        return {"app_id": self.app_id, "version": self.version}

    def writer_options(self) -> dict[str, str]:
        """Return the DataFrameWriter options that carry this identity."""
        return {"txnAppId": self.app_id, "txnVersion": str(self.version)}


def already_committed(recorded_version: int, txn: TxnIdentity) -> bool:
    """Return True when Delta would skip ``txn`` because ``recorded_version`` covers it.

    :param recorded_version: the version recorded for ``txn.app_id`` (-1 if none).
    :param txn: our identity.
    """
    return recorded_version >= txn.version


def committed_reason(txn: TxnIdentity, recorded_version: int) -> str:
    """Why a write with ``txn`` is skipped: its identity is already committed.

    :param txn: our identity.
    :param recorded_version: the version recorded for ``txn.app_id``.
    """
    return (
        f"txn {txn.app_id!r} version {txn.version} is already committed (recorded version {recorded_version})"
    )


def duplicate_metrics(recorded_version: int, committed_version: int | None, reason: str) -> dict[str, Any]:
    """The metrics of a skipped duplicate's report.

    ``committed_version`` resolves an ambiguous commit (the earlier run died after committing, before it
    reported): it names the table version that recorded this exact identity, or is None when that commit was
    not found (not among the newest commits read, cleaned up, or a newer version of the identity superseded
    it).

    :param recorded_version: the version recorded for the app id.
    :param committed_version: the table version whose commit recorded this exact identity, or None.
    :param reason: why the write was skipped.
    """
    where = f"; committed in table version {committed_version}" if committed_version is not None else ""
    return {
        "recorded_txn_version": recorded_version,
        "committed_version": committed_version,
        "skip_reason": reason + where,
    }
