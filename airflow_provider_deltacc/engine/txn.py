"""Exactly-once writes with Delta's idempotent transaction identities (``SetTransaction`` actions).

A :class:`TxnIdentity` ``(app_id, version)`` is committed atomically with the data. Delta skips a later write
whose version is not greater than the one recorded for its app id. Appends and partition overwrites pass it as
DataFrameWriter options (``txnAppId``/``txnVersion``); MERGE, UPDATE, DELETE and SQL read it only from session
confs (:func:`txn_confs`), which the operation sets for its write alone and always removes afterwards.

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

from airflow_provider_deltacc.contract.txn import TxnIdentity

__all__ = [
    "TXN_APP_ID_CONF",
    "TXN_AUTO_RESET_CONF",
    "TXN_CONFS",
    "TXN_VERSION_CONF",
    "txn_confs",
]

TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
TXN_AUTO_RESET_CONF = "spark.databricks.delta.write.txnVersion.autoReset.enabled"
TXN_CONFS = (TXN_APP_ID_CONF, TXN_VERSION_CONF, TXN_AUTO_RESET_CONF)


def txn_confs(txn: TxnIdentity | None) -> dict[str, str]:
    """The session confs that carry ``txn`` to MERGE/UPDATE/DELETE/SQL, for one write (see
    :func:`~airflow_provider_deltacc.engine.confs.session_confs`); none for no identity.

    autoReset is on, so Delta itself clears the version after the first write that reads it.

    :param txn: the identity, or None.
    """
    if txn is None:
        return {}
    return {
        TXN_APP_ID_CONF: txn.app_id,
        TXN_VERSION_CONF: str(txn.version),
        TXN_AUTO_RESET_CONF: "true",
    }
