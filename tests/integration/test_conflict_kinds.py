"""One real, deterministic Delta conflict per kind, classified and decided by the OCC core.

Every case holds the losing transaction *after* its snapshot read (a gate UDF in the DML condition or in
the written DataFrame, see ``tests/support/held.py``), commits the rival in the test thread, releases the
loser and asserts: the Delta exception reached Python as Delta's own class and text, ``classify`` names
the kind (with table, winning version/operation and partition where the message states them),
``decide_conflict`` gives the expected verdict, and the loser committed nothing. Observed on PySpark 4.2.0 +
delta-spark 4.4.0, local filesystem.

How each kind is reached, and what it took (Delta 4.4 ``ConflictChecker`` runs, per winning commit:
protocol, metadata, domain metadata, txn app ids, *added files* (Serializable), *deleted-vs-read*, then
*deleted-vs-deleted*; the first failing check decides the exception):

* APPEND: a DELETE on ``p = 'a'`` against a blind append into ``p = 'a'``.
* DELETE_READ needs a winner that removes files the loser read *without adding a file the loser's
  partition predicate matches* (otherwise the earlier added-files check fires). The winner is an
  ``UPDATE ... SET p = 'c' WHERE p = 'a'``: it rewrites the loser's files into another partition.
  A DML against a concurrent OPTIMIZE of its partition gets **APPEND**, not DELETE_READ: OPTIMIZE adds
  its compacted file to that partition (``dataChange=false`` does not exempt it). That is asserted too.
* DELETE_DELETE needs a loser that removes a file it did not *read*: every DELETE/UPDATE/MERGE/overwrite
  removes only files it obtained through ``txn.filterFiles(...)``, which also records them as read, so
  they always hit DELETE_READ first; OPTIMIZE records its bin files as read too (and cannot be held by a
  Python UDF). The one Delta 4.4 writer that removes files without tracking them as read is a **dynamic
  partition overwrite** (``OptimisticTransaction.filterFiles(newFiles: Seq[AddFile])`` records only a
  partition predicate). So the loser is a DPO of ``p = 'a'``, the winner a metadata-only
  ``DELETE ... WHERE p = 'a'`` (removes the partition's files and adds none).
* METADATA_CHANGED: a blind append against ``ALTER TABLE ADD COLUMNS``; Delta >= 4.1 tolerates only
  allow-listed metadata changes, and a new column is not one of them.
* PROTOCOL_CHANGED: two writers creating the same table on an empty path (``create_race``).
* CONCURRENT_TRANSACTION: two appends with the same ``txnAppId``/``txnVersion``; a re-run is skipped.

CONCURRENT_WRITE and MAX_COMMIT_ATTEMPTS cannot come from this provider's operations:

* ``DELTA_CONCURRENT_WRITE`` is thrown only by ``OptimisticTransaction.commitLarge`` (CLONE, CONVERT,
  RESTORE, the pre-downgrade commit of DROP FEATURE), which does no conflict resolution, and by a
  filesystem-to-coordinated-commits upgrade that loses its race. Appends, DML and OPTIMIZE commit through
  ``commit``/``doCommitRetryIteratively``, which resolve a lost race with the conflict checker, so they
  see one of the kinds above, even when the winner is a RESTORE. The exception is shown here from the
  other side: a RESTORE (the loser) is held by occupying both local task slots with a gated job after it
  opened its transaction, while a metadata-only commit wins.
* ``DELTA_MAX_COMMIT_RETRIES_EXCEEDED`` is thrown when the internal retry loop runs out of attempts; the
  limit is the internal conf ``spark.databricks.delta.maxCommitAttempts``, default 10,000,000, and each
  attempt is a put-if-absent of one log file, so with the default it would take ten million rival commits
  landing during one commit. It *is* deterministic once that internal conf is lowered to 0 (a single
  attempt): two blind appends that never logically conflict then fail the loser. That is shown with a
  control run under the default, where the same race commits both appends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.occ import classify, decide_conflict
from airflow_provider_deltacc.spark_jars.delta_conf import local_master_cores
from tests.support.gate import Gate
from tests.support.held import HeldCall, gate_udf, hold

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, p STRING, v STRING"
GATE_TIMEOUT_S = 90.0


def _table(spark: SparkSession, path: str, *, files_per_partition: int = 1) -> None:
    """A tiny table partitioned by ``p``: round ``k`` adds a file per partition, ids ``10k`` and ``10k+1``."""
    for k in range(files_per_partition):
        rows = [(10 * k + i, p, f"v{i}") for p in ("a", "b") for i in range(2)]
        spark.createDataFrame(rows, SCHEMA).repartition(1).write.format("delta").mode("append").partitionBy(
            "p"
        ).save(path)


def _history(spark: SparkSession, path: str) -> list[tuple[int, str]]:
    from delta.tables import DeltaTable

    return [(h["version"], h["operation"]) for h in DeltaTable.forPath(spark, path).history().collect()]


def _rows(spark: SparkSession, path: str) -> set[tuple[object, ...]]:
    return {tuple(r) for r in spark.read.format("delta").load(path).collect()}


def _gated(spark: SparkSession, gate: Gate, rows: list[tuple[int, str, str]]) -> DataFrame:
    """A one-partition DataFrame whose write blocks at ``gate``."""
    return spark.createDataFrame(rows, SCHEMA).coalesce(1).where(gate.column("id"))


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    g = Gate(tmp_path, timeout_s=GATE_TIMEOUT_S)
    try:
        yield g
    finally:
        g.release()  # never leave a Python worker blocked for the next test


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0]


def test_append_delete_loses_to_append_into_its_partition(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    from delta.exceptions import ConcurrentAppendException

    _table(spark, table_path)
    before = _rows(spark, table_path)
    fn = gate_udf(spark, gate)

    with hold(gate, lambda: spark.sql(f"DELETE FROM delta.`{table_path}` WHERE p = 'a' AND {fn}(id)")) as dml:
        spark.createDataFrame([(9, "a", "late")], SCHEMA).write.format("delta").mode("append").save(
            table_path
        )

    exc = dml.raised(ConcurrentAppendException)
    assert _first_line(exc).startswith("[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] Transaction conflict")
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.APPEND
    assert conflict.partition == "[p=a]"
    assert (conflict.winning_operation, conflict.winning_version) == ("WRITE", 1)
    assert conflict.table is not None and table_path in conflict.table
    verdict = decide_conflict(conflict.kind, OperationClass.READ_MODIFY_WRITE, owns_txn_identity=False)
    assert verdict.retry and verdict.max_replans is None
    assert _history(spark, table_path) == [(1, "WRITE"), (0, "WRITE")]
    assert _rows(spark, table_path) == before | {(9, "a", "late")}, "the DELETE removed nothing"


def test_delete_read_update_loses_to_update_that_rewrote_its_files(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    from delta.exceptions import ConcurrentDeleteReadException

    _table(spark, table_path)
    fn = gate_udf(spark, gate)

    update = f"UPDATE delta.`{table_path}` SET v = 'loser' WHERE p = 'a' AND {fn}(id)"
    with hold(gate, lambda: spark.sql(update)) as dml:
        # Rewrites (removes) the files the held UPDATE read, and adds the new ones outside its partition.
        spark.sql(f"UPDATE delta.`{table_path}` SET p = 'c' WHERE p = 'a'")

    exc = dml.raised(ConcurrentDeleteReadException)
    assert _first_line(exc).startswith(
        "[DELTA_CONCURRENT_DELETE_READ.WITH_PARTITION_HINT] Transaction conflict"
    )
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.DELETE_READ
    assert conflict.partition == "[p=a]"
    assert (conflict.winning_operation, conflict.winning_version) == ("UPDATE", 1)
    assert conflict.table is not None and table_path in conflict.table
    assert decide_conflict(conflict.kind, OperationClass.READ_MODIFY_WRITE, owns_txn_identity=False).retry
    assert _history(spark, table_path) == [(1, "UPDATE"), (0, "WRITE")]
    rows = _rows(spark, table_path)
    assert {r[1] for r in rows} == {"b", "c"} and all(r[2] != "loser" for r in rows)


def test_dml_against_optimize_of_its_partition_is_an_append_conflict(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    """Not DELETE_READ: the compaction *adds* a file to the partition the DML read, checked first."""
    from delta.exceptions import ConcurrentAppendException
    from delta.tables import DeltaTable

    _table(spark, table_path, files_per_partition=3)
    before = _rows(spark, table_path)
    # Three files to compact, so the DELETE scans them in two tasks: hold only the one that sees id 20,
    # or both task slots would be held and the OPTIMIZE could never run.
    fn = gate_udf(spark, gate, only=20)

    with hold(gate, lambda: spark.sql(f"DELETE FROM delta.`{table_path}` WHERE p = 'a' AND {fn}(id)")) as dml:
        metrics = DeltaTable.forPath(spark, table_path).optimize().where("p = 'a'").executeCompaction()
        assert metrics.collect()[0]["metrics"]["numFilesRemoved"] == 3

    exc = dml.raised(ConcurrentAppendException)
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.APPEND
    assert (conflict.winning_operation, conflict.winning_version, conflict.partition) == (
        "OPTIMIZE",
        3,
        "[p=a]",
    )
    assert _history(spark, table_path)[0] == (3, "OPTIMIZE")
    assert _rows(spark, table_path) == before


def test_delete_delete_dynamic_overwrite_loses_to_partition_delete(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    from delta.exceptions import ConcurrentDeleteDeleteException

    _table(spark, table_path)
    before = _rows(spark, table_path)
    writer = (
        _gated(spark, gate, [(7, "a", "loser")])
        .write.format("delta")
        .mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
    )

    with hold(gate, lambda: writer.save(table_path)) as dpo:
        # Metadata-only: removes every file of p='a' and adds none, so no added-files conflict.
        spark.sql(f"DELETE FROM delta.`{table_path}` WHERE p = 'a'")

    exc = dpo.raised(ConcurrentDeleteDeleteException)
    assert _first_line(exc).startswith(
        "[DELTA_CONCURRENT_DELETE_DELETE.WITH_PARTITION_HINT] Transaction conflict"
    )
    assert "that this transaction attempted to delete" in str(exc)
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.DELETE_DELETE
    assert conflict.partition == "[p=a]"
    assert (conflict.winning_operation, conflict.winning_version) == ("DELETE", 1)
    assert conflict.table is not None and table_path in conflict.table
    assert decide_conflict(conflict.kind, OperationClass.READ_MODIFY_WRITE, owns_txn_identity=False).retry
    assert _history(spark, table_path) == [(1, "DELETE"), (0, "WRITE")]
    assert _rows(spark, table_path) == {r for r in before if r[1] == "b"}, "the overwrite wrote nothing"


def test_metadata_changed_blind_append_loses_to_add_columns(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    from delta.exceptions import MetadataChangedException

    _table(spark, table_path)
    before = _rows(spark, table_path)
    writer = _gated(spark, gate, [(7, "a", "loser")]).write.format("delta").mode("append")

    with hold(gate, lambda: writer.save(table_path)) as append:
        spark.sql(f"ALTER TABLE delta.`{table_path}` ADD COLUMNS (extra STRING)")

    exc = append.raised(MetadataChangedException)
    assert _first_line(exc).startswith(
        "[DELTA_METADATA_CHANGED] MetadataChangedException: The metadata of the Delta table"
    )
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.METADATA_CHANGED
    assert conflict.table is not None and table_path in conflict.table
    # The message names no version; the conflicting CommitInfo carries only the operation.
    assert conflict.winning_operation == "ADD COLUMNS"
    first = decide_conflict(conflict.kind, OperationClass.BLIND_APPEND, owns_txn_identity=False)
    assert first.retry and first.max_replans == 1
    again = decide_conflict(
        conflict.kind, OperationClass.BLIND_APPEND, owns_txn_identity=False, metadata_replans_used=1
    )
    assert not again.retry
    assert not decide_conflict(conflict.kind, OperationClass.SCHEMA_CHANGING, owns_txn_identity=False).retry
    assert _history(spark, table_path) == [(1, "ADD COLUMNS"), (0, "WRITE")]
    assert {(i, p, v) for i, p, v, _ in _rows(spark, table_path)} == before


def test_protocol_changed_two_writers_create_the_same_table(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    from delta.exceptions import ProtocolChangedException

    writer = _gated(spark, gate, [(7, "a", "loser")]).write.format("delta")

    with hold(gate, lambda: writer.save(table_path)) as create:
        spark.createDataFrame([(1, "a", "winner")], SCHEMA).write.format("delta").save(table_path)

    exc = create.raised(ProtocolChangedException)
    assert _first_line(exc).startswith(
        "[DELTA_PROTOCOL_CHANGED] ProtocolChangedException: The protocol version of the Delta table"
    )
    assert "multiple writers are writing to an empty directory" in str(exc)
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.PROTOCOL_CHANGED
    assert conflict.create_race
    assert conflict.winning_operation == "WRITE"
    for op in OperationClass:
        assert not decide_conflict(conflict.kind, op, owns_txn_identity=True).retry
    assert _history(spark, table_path) == [(0, "WRITE")]
    assert _rows(spark, table_path) == {(1, "a", "winner")}


def test_concurrent_transaction_same_txn_app_id_then_rerun_is_skipped(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    from delta.exceptions import ConcurrentTransactionException

    _table(spark, table_path)
    before = _rows(spark, table_path)
    identity = {"txnAppId": "deltacc-test-app", "txnVersion": "5"}
    writer = _gated(spark, gate, [(7, "a", "loser")]).write.format("delta").mode("append").options(**identity)

    with hold(gate, lambda: writer.save(table_path)) as append:
        spark.createDataFrame([(1, "a", "winner")], SCHEMA).write.format("delta").mode("append").options(
            **identity
        ).save(table_path)

    exc = append.raised(ConcurrentTransactionException)
    assert _first_line(exc).startswith("[DELTA_CONCURRENT_TRANSACTION] ConcurrentTransactionException:")
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.CONCURRENT_TRANSACTION
    assert conflict.winning_operation == "WRITE"
    assert decide_conflict(conflict.kind, OperationClass.BLIND_APPEND, owns_txn_identity=True).retry
    assert not decide_conflict(conflict.kind, OperationClass.BLIND_APPEND, owns_txn_identity=False).retry
    assert _history(spark, table_path) == [(1, "WRITE"), (0, "WRITE")]
    after_race = _rows(spark, table_path)
    assert after_race == before | {(1, "a", "winner")}

    # The retry the verdict allows: same identity, fresh DataFrame. Delta skips it (no commit, no error).
    spark.createDataFrame([(7, "a", "rerun")], SCHEMA).write.format("delta").mode("append").options(
        **identity
    ).save(table_path)
    assert _history(spark, table_path) == [(1, "WRITE"), (0, "WRITE")]
    assert _rows(spark, table_path) == after_race


def test_concurrent_write_restore_loses_to_a_commit_made_while_it_runs(
    spark: SparkSession, table_path: str, gate: Gate
) -> None:
    """RESTORE commits with ``commitLarge``: any commit after its read version fails it outright.

    RESTORE runs no Python, so it is held differently: a gated job first occupies both task slots of
    ``local[2]``; RESTORE then opens its transaction (its read version is the cached snapshot, no job
    needed) and queues its first Spark job behind the gated one, which is observed through its job
    group. The winner is ``SET TBLPROPERTIES``, which needs no task slot to write its commit file.
    """
    from delta.exceptions import ConcurrentWriteException
    from delta.tables import DeltaTable

    _table(spark, table_path, files_per_partition=2)
    before = _rows(spark, table_path)
    assert _history(spark, table_path)[0] == (1, "WRITE")  # also caches the latest snapshot
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    # The master's task slots, not sc.defaultParallelism: the shared session sets that to 1 (ONE_PARTITION),
    # and a hog of one task would leave RESTORE a free slot to run, and commit, before the winner.
    slots = local_master_cores(sc.master)
    assert slots is not None, f"the shared session's master {sc.master!r} is not local"
    group = f"restore-{gate.directory.name}"
    hog = spark.range(0, slots, 1, numPartitions=slots).where(gate.column("id"))

    def restore() -> None:
        sc.setJobGroup(group, "held RESTORE")  # this Python thread's own (pinned) JVM thread
        DeltaTable.forPath(spark, table_path).restoreToVersion(0)

    def active_tasks() -> int:
        stages = (tracker.getStageInfo(s) for s in tracker.getActiveStageIds())
        return sum(s.numActiveTasks for s in stages if s is not None)

    restorer = HeldCall(restore, "held-restore")
    winner = HeldCall(
        lambda: spark.sql(f"ALTER TABLE delta.`{table_path}` SET TBLPROPERTIES ('deltacc.test' = 'x')"),
        "winner",
    )
    winner_commit = Path(table_path) / "_delta_log" / f"{2:020d}.json"
    try:
        with hold(gate, hog.count, name="slot-hog"):
            _wait_for(lambda: active_tasks() >= slots, "the gated job to occupy every task slot")
            restorer.start()
            _wait_for(lambda: bool(tracker.getJobIdsForGroup(group)), "RESTORE to submit its first job")
            assert restorer.is_alive() and active_tasks() == slots
            winner.start()
            _wait_for(winner_commit.exists, "the winner's commit file")
    finally:
        gate.release()
        for call in (restorer, winner):
            if call.started:
                call.join(GATE_TIMEOUT_S)

    assert winner.error is None, winner.error
    exc = restorer.raised(ConcurrentWriteException)
    assert _first_line(exc).startswith(
        "[DELTA_CONCURRENT_WRITE] ConcurrentWriteException: A concurrent transaction has written new data"
    )
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.CONCURRENT_WRITE
    assert conflict.winning_operation == "SET TBLPROPERTIES"
    # RESTORE is a read-modify-write of the whole table: re-running it would also revert the winner.
    assert not decide_conflict(conflict.kind, OperationClass.READ_MODIFY_WRITE, owns_txn_identity=False).retry
    assert _history(spark, table_path) == [(2, "SET TBLPROPERTIES"), (1, "WRITE"), (0, "WRITE")]
    assert _rows(spark, table_path) == before and len(before) == 8


@pytest.mark.parametrize("max_commit_attempts", [None, "0"], ids=["default", "internal-conf-0"])
def test_max_commit_attempts_only_with_the_internal_conf_lowered(
    spark: SparkSession, table_path: str, gate: Gate, max_commit_attempts: str | None
) -> None:
    """Two blind appends never logically conflict; only a lowered attempt limit makes the loser fail."""
    from py4j.protocol import Py4JJavaError

    conf = "spark.databricks.delta.maxCommitAttempts"
    _table(spark, table_path)
    before = _rows(spark, table_path)
    writer = _gated(spark, gate, [(7, "a", "held")]).write.format("delta").mode("append")
    if max_commit_attempts is not None:
        spark.conf.set(conf, max_commit_attempts)
    try:
        with hold(gate, lambda: writer.save(table_path)) as append:
            spark.createDataFrame([(1, "a", "winner")], SCHEMA).write.format("delta").mode("append").save(
                table_path
            )
    finally:
        spark.conf.unset(conf)

    if max_commit_attempts is None:
        assert append.error is None, append.error
        assert _history(spark, table_path) == [(2, "WRITE"), (1, "WRITE"), (0, "WRITE")]
        return
    # Not a Delta conflict class: PySpark has no conversion for it and re-raises the py4j error.
    exc = append.raised(Py4JJavaError)
    java = exc.java_exception.toString()
    assert java.startswith(
        "org.apache.spark.sql.delta.DeltaIllegalStateException: [DELTA_MAX_COMMIT_RETRIES_EXCEEDED]"
    ), java
    conflict = classify(exc)
    assert conflict is not None and conflict.kind is ConflictKind.MAX_COMMIT_ATTEMPTS
    assert decide_conflict(conflict.kind, OperationClass.BLIND_APPEND, owns_txn_identity=False).retry
    assert _history(spark, table_path) == [(1, "WRITE"), (0, "WRITE")]
    assert _rows(spark, table_path) == before | {(1, "a", "winner")}


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float = GATE_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)
