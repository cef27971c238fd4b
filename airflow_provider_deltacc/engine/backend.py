"""What the engine needs from a session beyond SQL and DataFrames, for classic and Spark Connect sessions.

Every Delta operation is written once, as SQL and DataFrame calls that both kinds of session offer. The few
things that have no SQL form, or whose SQL form is slow, sit behind :class:`SparkBackend`:

* :class:`~airflow_provider_deltacc.engine.backend_jvm.JvmBackend` (a classic session, driver in this
  process) reads the JVM ``DeltaLog`` through py4j: one consistent snapshot, commit files without a Spark
  job.
* :class:`~airflow_provider_deltacc.engine.backend_connect.ConnectBackend` (a Spark Connect session) has no
  JVM to reach: it asks the server with ``DESCRIBE DETAIL``/``DESCRIBE HISTORY`` and reads the txn actions of
  ``_delta_log`` with the server's own file readers, so it needs no storage credentials here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.engine.table import TableState

#: One commit found in a table's log: (version, Delta operation name, operation metrics).
CommitEntry = tuple[int, str, dict[str, Any]]


class SparkBackend(Protocol):
    """The session-specific reads of the engine (see the module docstring)."""

    spark: SparkSession

    def table_exists(self, table: Table) -> bool:
        """True when ``table`` (a path or a catalog name) exists and is a Delta table."""
        ...

    def path_exists(self, path: str) -> bool:
        """True when anything exists at ``path``."""
        ...

    def read_table_state(self, table: Table, app_ids: tuple[str, ...]) -> TableState:
        """The latest snapshot of an existing Delta table, with the recorded txn versions of ``app_ids``."""
        ...

    def state_if_exists(self, table: Table, app_ids: tuple[str, ...]) -> TableState | None:
        """:meth:`read_table_state` when the table exists and is a Delta table, else None (one read)."""
        ...

    def tagged_commits(
        self, table: Table, tag: str, after_version: int | None, started_at: float
    ) -> list[CommitEntry]:
        """The commits whose ``userMetadata`` is ``tag``, ascending: after ``after_version`` when it is known,
        else made since ``started_at`` (see :func:`~airflow_provider_deltacc.engine.commits.history_commits`).
        """
        ...

    def forget_last_commit(self) -> None:
        """Forget which commit the session made last, so that :meth:`tagged_commits` can tell a write that
        committed nothing from one that did."""
        ...

    def txn_commit(
        self, table: Table, app_id: str, txn_version: int, latest: int, max_versions: int
    ) -> int | None:
        """The version whose commit recorded ``(app_id, txn_version)``, reading back at most ``max_versions``
        commits from ``latest``; None when not found. May raise; callers treat it as informational."""
        ...

    def explicit_confs(self, keys: tuple[str, ...]) -> dict[str, str | None]:
        """The value set on the session for each key, None when unset (one round trip on Spark Connect)."""
        ...

    def apply_confs(self, changes: Mapping[str, str | None]) -> None:
        """Set each key to its value, and unset each key whose value is None (on Spark Connect, one round
        trip for the settings and one for the keys to unset)."""
        ...

    def check_parses(self, statement: str) -> None:
        """Parse (not run) a SQL statement; raise the parser's exception when it does not parse."""
        ...


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (``pyspark.sql.connect``), False for a classic one.

    :param spark: a SparkSession of either kind.
    """
    return type(spark).__module__.startswith("pyspark.sql.connect")


def backend_for(spark: SparkSession) -> SparkBackend:
    """The backend for this session's kind.

    :param spark: a SparkSession of either kind.
    """
    if is_connect(spark):
        from airflow_provider_deltacc.engine.backend_connect import ConnectBackend

        return ConnectBackend(spark)
    from airflow_provider_deltacc.engine.backend_jvm import JvmBackend

    return JvmBackend(spark)
