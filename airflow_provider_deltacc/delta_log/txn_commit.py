"""Which commit recorded a txn identity, found through the versions' checksum files.

A skipped duplicate reports the table version whose commit recorded its identity. Reading commit files
newest first costs a read of every commit since, and one commit may hold a row for every file of the table
(15 MB for 100,000 files). The checksum file delta-spark writes beside each commit lists every identity the
table has recorded so far (``setTransactions``), and an identity's version there never goes down from one
table version to the next, so bisecting the checksums finds the first version listing it in about
``log2(versions)`` reads of a few hundred bytes each. The caller confirms that version by reading its commit
file; anything else (a checksum not listing identities, identities that expired) leaves the answer to the
scan of the commit files.

Without checksums (a table delta-rs wrote) the commit files are read newest first, as far back as
:data:`~airflow_provider_deltacc.contract.commits.TXN_SCAN_VERSIONS`, each to its first
:data:`COMMIT_HEAD_BYTES` only: a commit longer than that (a bulk load's or an OPTIMIZE's, a line per file)
is read whole only once the shorter ones said no. One commit records the identity, so the order changes
what is read, not the answer. Before that, the classic checkpoint just older than those commits, where the
table's checkpoint interval puts one, is read for its txn identities: when it lists the identity, its
commit is older than any the scan would read, and none is read (a re-run of a task whose write committed
long ago on a busy table).

A version without a checksum is taken as older than the history the log keeps: Delta's log cleanup deletes
the oldest versions, checksums included, so a table with a retention has none for its first versions, and
the bisection goes on in the newer half. Where a checksum is missing for another reason (a writer that
wrote none), the version found may be wrong; the caller's read of its commit file then says so.

Airflow-free and pyspark-free.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from airflow_provider_deltacc.contract.commits import TXN_SCAN_VERSIONS, records_txn, scan_for_txn_commit
from airflow_provider_deltacc.delta_log.checkpoint import read_checkpoint
from airflow_provider_deltacc.delta_log.checksum import read_checksum
from airflow_provider_deltacc.delta_log.log_segment import classic_checkpoint, commit_name
from airflow_provider_deltacc.delta_log.log_storage import LocalLogFiles, LogFiles

log = logging.getLogger(__name__)

#: How much of a commit file the scan reads before the commits of the window that are not longer.
COMMIT_HEAD_BYTES = 64 * 1024
CHECKPOINT_INTERVAL_PROPERTY = "delta.checkpointInterval"
#: Where a table sets no checkpoint interval, the writers' defaults: delta-spark's, then delta-rs's.
DEFAULT_CHECKPOINT_INTERVALS = (10, 100)


def read_commit(files: LogFiles, version: int) -> str | None:
    """The text of a version's commit file; None when it is not there.

    :param files: the log folder.
    :param version: the version.
    """
    try:
        return files.read(commit_name(version)).decode("utf-8")
    except FileNotFoundError:
        return None


def version_by_scan(
    files: LocalLogFiles,
    app_id: str,
    txn_version: int,
    latest: int,
    *,
    intervals: tuple[int, ...] = DEFAULT_CHECKPOINT_INTERVALS,
    max_versions: int = TXN_SCAN_VERSIONS,
) -> int | None:
    """The newest version whose commit file records ``(app_id, txn_version)``, from ``latest`` back (at most
    ``max_versions`` commits, :func:`~airflow_provider_deltacc.contract.commits.scan_for_txn_commit`), the
    commits longer than :data:`COMMIT_HEAD_BYTES` read whole last; None when none of them does, or when a
    checkpoint older than those commits already lists the identity (:func:`listed_before`).

    :param files: the log folder.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    :param latest: the newest table version.
    :param intervals: where to look for a checkpoint older than the scan (:func:`checkpoint_intervals`).
    :param max_versions: the most commit files to read.
    """
    if listed_before(files, app_id, txn_version, latest - max_versions + 1, intervals):
        return None
    longer: list[int] = []

    def read_head(version: int) -> str | None:
        try:
            head = files.read_head(commit_name(version), COMMIT_HEAD_BYTES + 1)
        except FileNotFoundError:
            return None
        if len(head) <= COMMIT_HEAD_BYTES:
            return head.decode("utf-8")
        longer.append(version)
        return head[: head.rfind(b"\n") + 1].decode("utf-8")  # its whole lines

    found = scan_for_txn_commit(read_head, app_id, txn_version, latest, max_versions)
    if found is not None:
        return found
    for version in longer:
        text = read_commit(files, version)
        if text is not None and records_txn(text, app_id, txn_version):
            return version
    return None


def checkpoint_intervals(configuration: Mapping[str, str]) -> tuple[int, ...]:
    """The versions apart at which a table's checkpoints are: its ``delta.checkpointInterval``, else the
    writers' defaults (:data:`DEFAULT_CHECKPOINT_INTERVALS`).

    :param configuration: the table's properties.
    """
    wanted = CHECKPOINT_INTERVAL_PROPERTY.lower()
    value = next((value for key, value in configuration.items() if key.lower() == wanted), "")
    return (int(value),) if value.strip().isdigit() and int(value) > 0 else DEFAULT_CHECKPOINT_INTERVALS


def listed_before(
    files: LogFiles, app_id: str, txn_version: int, version: int, intervals: tuple[int, ...]
) -> bool:
    """Whether a classic checkpoint older than ``version``, the newest at one of ``intervals``, lists
    ``app_id`` at ``txn_version`` or beyond: an identity's version only grows, so the commit that recorded it
    is older than that checkpoint, or there is none. False when no such checkpoint is there (a log cleanup
    took it; a multi-part or v2 one is not looked for) or it cannot be read.

    :param files: the log folder.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    :param version: the oldest version of the commits to be read.
    :param intervals: the checkpoint intervals to look at, in order.
    """
    for at in _checkpoint_versions_before(version, intervals):
        checkpoint = classic_checkpoint(at)
        if not files.exists(checkpoint.files[0]):
            continue
        try:
            found = read_checkpoint(files, checkpoint, txn=True, state=False)
        except Exception as exc:  # a hint only: the scan answers without it
            log.debug("could not read the txn identities of %s: %s", checkpoint.files[0], exc)
            return False
        return found.txns.get(app_id, -1) >= txn_version
    return False


def _checkpoint_versions_before(version: int, intervals: tuple[int, ...]) -> list[int]:
    """Where the newest checkpoint before ``version`` is at each interval, newest first: delta-spark
    checkpoints the versions that are multiples of the interval, delta-rs the ones before them."""
    found = set()
    for interval in intervals:
        found |= {(version - 1) // interval * interval, version // interval * interval - 1}
    return sorted((at for at in found if 0 <= at < version), reverse=True)


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
