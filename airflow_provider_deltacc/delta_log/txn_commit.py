"""Which commit recorded a txn identity, found through the versions' checksum files.

A skipped duplicate reports the table version whose commit recorded its identity. Reading commit files
newest first costs a read of every commit since, and one commit may hold a row for every file of the table
(15 MB for 100,000 files). The checksum file delta-spark writes beside each commit lists every identity the
table has recorded so far (``setTransactions``), and an identity's version there never goes down from one
table version to the next, so bisecting the checksums finds the first version listing it in about
``log2(versions)`` reads of a few hundred bytes each. The caller confirms that version by reading its commit
file; anything else (a checksum not listing identities, identities that expired) leaves the answer to the
scan of the commit files.

A version without a checksum is taken as older than the history the log keeps: Delta's log cleanup deletes
the oldest versions, checksums included, so a table with a retention has none for its first versions, and
the bisection goes on in the newer half. Where a checksum is missing for another reason (a writer that
wrote none), the version found may be wrong; the caller's read of its commit file then says so.

Airflow-free and pyspark-free.
"""

from __future__ import annotations

from airflow_provider_deltacc.delta_log.checksum import read_checksum
from airflow_provider_deltacc.delta_log.log_storage import LogFiles


def version_by_checksums(files: LogFiles, app_id: str, txn_version: int, latest: int) -> int | None:
    """The first table version whose checksum lists ``app_id`` at ``txn_version`` or beyond, when that
    listing is exactly ``txn_version``; None when the checksums cannot tell (the latest one is missing, or
    one on the way does not list the identities).

    :param files: the log folder.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    :param latest: the newest table version.
    """
    newest = read_checksum(files, latest)
    if newest is None or newest.txns is None or newest.txns.get(app_id, -1) < txn_version:
        return None
    low, high, at_high = 0, latest, newest.txns[app_id]  # at_high: high's listing, >= txn_version throughout
    while low < high:
        middle = (low + high) // 2
        checksum = read_checksum(files, middle)
        if checksum is None:  # cleaned up with the versions before it: the identity was recorded later
            low = middle + 1
            continue
        if checksum.txns is None:
            return None
        found = checksum.txns.get(app_id, -1)
        if found >= txn_version:
            high, at_high = middle, found
        else:
            low = middle + 1
    return high if at_high == txn_version else None
