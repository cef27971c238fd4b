"""Exactly-once writes with Delta's idempotent transaction identities (``SetTransaction`` actions).

A :class:`TxnIdentity` ``(app_id, version)`` is committed atomically with the data. Delta skips a later write
whose version is not greater than the one recorded for its app id. Appends and partition overwrites pass it as
DataFrameWriter options (``txnAppId``/``txnVersion``); MERGE, UPDATE, DELETE and SQL read it only from session
confs, which :func:`txn_session_confs` sets for one operation and always removes afterwards.

Before writing, the engine reads the recorded version from the same JVM snapshot it reads the table state from
(:func:`airflow_provider_deltacc.engine.table.read_table_state`): if it is ``>=`` ours the write is skipped
and reported as ``skipped_duplicate``. The JVM snapshot is used rather than delta-rs'
``DeltaTable.transaction_version`` because it works for catalog tables too, uses the session's storage
credentials and always understands the table protocol the writer uses. Delta's own check still runs at commit
time, so a duplicate that lands between our check and our commit is skipped by Delta (or fails with
ConcurrentTransactionException, which the commit loop retries into a skip).

The identity itself, and how to derive one for Airflow, live in :mod:`airflow_provider_deltacc.contract.txn`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.txn import (
    TxnIdentity,
)
from airflow_provider_deltacc.engine.confs import session_confs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "TXN_APP_ID_CONF",
    "TXN_AUTO_RESET_CONF",
    "TXN_CONFS",
    "TXN_VERSION_CONF",
    "txn_session_confs",
]

TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
TXN_AUTO_RESET_CONF = "spark.databricks.delta.write.txnVersion.autoReset.enabled"
TXN_CONFS = (TXN_APP_ID_CONF, TXN_VERSION_CONF, TXN_AUTO_RESET_CONF)


@contextmanager
def txn_session_confs(spark: SparkSession, txn: TxnIdentity | None) -> Iterator[None]:
    """Carry ``txn`` in the session confs MERGE/UPDATE/DELETE/SQL read, for the block only.

    autoReset is on, so Delta itself clears the version after the first write in the block; the confs are
    removed (or restored) when the block ends, even on an exception.

    :param spark: the session the operation runs in.
    :param txn: the identity, or None for no identity (then nothing is set).
    """
    if txn is None:
        yield
        return
    confs = {
        TXN_APP_ID_CONF: txn.app_id,
        TXN_VERSION_CONF: str(txn.version),
        TXN_AUTO_RESET_CONF: "true",
    }
    with session_confs(spark, confs):
        yield
