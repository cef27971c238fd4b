"""Answer a job from the table's Delta log, before any Spark session or JVM starts.

Two kinds of job need no Spark at all:

* **a committed duplicate**: the version the log records for the job's txn app id is ``>=`` the job's own,
  so Delta would skip the write. It is reported ``skipped_duplicate`` with the same metrics the engine gives
  (``recorded_txn_version``, ``committed_version``, ``skip_reason``);
* **an empty create of an existing table**: an ``append`` of no inline rows (what ``create_if_missing``
  tasks such as the staging group's ``create_staging``/``create_target`` submit) to a table that exists,
  when the engine would accept it (the partition columns match ``partition_by``, every declared column
  exists with the same type). Nothing to create, nothing to write: a no-op report.

Both reports say ``"answered_by": "delta-log"`` in their metrics. Whatever the log cannot answer exactly as
Delta would, falls through to Spark (the answer is None): catalog tables (no path to read), relative paths
and scheme-less paths when ``spark.hadoop.fs.defaultFS`` points elsewhere, S3 tables the job would refuse
without a ``storage_guard``, storage that cannot be opened or read (any error, logged at debug), reader
features that change how the log is replayed (``v2Checkpoint``, catalog-managed commits, unknown ones),
tables with ``delta.setTransactionRetentionDuration`` (Delta's snapshot drops expired txn entries, the log
reader and delta-rs do not), and operations without a txn identity (OPTIMIZE, VACUUM).

The log is read by the provider's own reader (:mod:`airflow_provider_deltacc.delta_log.log_reader`: the newest
checkpoint's ``txn``, ``metaData`` and ``protocol`` columns and the commits after it), or by delta-rs for
a log that reader does not read exactly.

A write the log does not answer (``append``, ``overwrite_partitions``, ``merge``, ``update``, ``delete``,
with or without a txn identity) is handed the snapshot it showed (:class:`LogAnswer`, the spec's
``known_snapshot``: version, partition columns, schema, and whether the write's txn identity is recorded),
when the log is replayed as Delta replays it. Its first attempt plans from that instead of
asking Spark again: ``DESCRIBE TABLE EXTENDED`` and an analysis of the table, each a load of the log on the
server (0.3 s a task at 10,000 files over Spark Connect). A check the job fails on it is made again on
Spark's own read, which decides (the table may have changed since); what Delta checks at commit, it still
checks. A write that must check its identity itself before it writes (a source function, which must not be
called for a duplicate) skips that check, a Spark job over the log, on its first attempt when the snapshot
showed the identity unrecorded. Only another try of the same task committing in between could make that
stale, and then Delta's own check at commit time skips the write and the task reports
``skipped_duplicate`` (the function has been called once). Retries always read the log on Spark.

This runs in the Airflow worker, not on the Spark driver: it imports neither Airflow nor pyspark, and
``deltalake`` only when a log is read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from airflow_provider_deltacc.contract.commit_report import AttemptRecord, CommitReport
from airflow_provider_deltacc.contract.commits import records_txn
from airflow_provider_deltacc.contract.ddl import delta_primitive_type, split_ddl_columns
from airflow_provider_deltacc.contract.spec import AppendOptions, JobSpec, KnownSnapshot
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import is_relative
from airflow_provider_deltacc.contract.txn import already_committed, committed_reason, duplicate_metrics

log = logging.getLogger(__name__)

#: The ``answered_by`` metric of a report the log gave.
ANSWERED_BY = "delta-log"
TXN_RETENTION_PROPERTY = "delta.setTransactionRetentionDuration"
#: Reader features that change what a data file means, not how the log is replayed into a snapshot.
LOG_SAFE_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
    }
)
#: The operations whose first attempt plans from the table's snapshot: the writes (OPTIMIZE and VACUUM read
#: theirs on Spark; VACUUM's retention must be the table's at the time it runs).
PLANNED_FROM_SNAPSHOT = frozenset({"append", "overwrite_partitions", "merge", "update", "delete"})
_DEFAULT_FS_CONF = "spark.hadoop.fs.defaultFS"
# Makes a DDL ``TIMESTAMP`` mean TIMESTAMP_NTZ for the job.
_TIMESTAMP_TYPE_CONF = "spark.sql.timestampType"
# Column metadata that makes Delta check more than the type when a column is written.
_IDENTITY_PREFIX = "delta.identity."
_CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"

Verdict = Literal["duplicate", "table_exists"]


@dataclass(frozen=True)
class LogColumn:
    """A top-level column of the table's schema.

    :param name: the column name (logical, also under column mapping).
    :param type: the Delta log's name of a primitive type (``long``, ``decimal(10,2)``), "" for others.
    :param nullable: whether the column accepts nulls.
    :param metadata_keys: the keys of the column's metadata.
    """

    name: str
    type: str
    nullable: bool
    metadata_keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LogSnapshot:
    """What the fast path needs from the table's latest snapshot.

    :param version: the snapshot's table version.
    :param min_reader_version: the protocol's minimum reader version.
    :param reader_features: the protocol's reader features.
    :param configuration: the table properties.
    :param partition_columns: the partition columns, in table order.
    :param columns: the top-level columns.
    :param recorded_txn_version: the version recorded for the job's txn app id, -1 when none.
    :param schema_string: the table schema, as the log's JSON.
    """

    version: int
    min_reader_version: int
    reader_features: frozenset[str]
    configuration: Mapping[str, str]
    partition_columns: tuple[str, ...]
    columns: tuple[LogColumn, ...]
    recorded_txn_version: int = -1
    schema_string: str = ""

    def column(self, name: str) -> LogColumn | None:
        """The column spelled exactly ``name``, or None.

        :param name: the column name.
        """
        return next((column for column in self.columns if column.name == name), None)


@dataclass(frozen=True)
class LogAnswer:
    """What the table's Delta log told about a job before any Spark started.

    :param report: the job's report when the log alone gives Delta's answer, else None (run it).
    :param known_snapshot: when the log does not answer a write, the snapshot it showed; None when it was
        not read or cannot be trusted (a log the readers do not replay as Delta does).
    """

    report: dict[str, Any] | None = None
    known_snapshot: KnownSnapshot | None = None

    def spec_to_run(self, job: JobSpec) -> JobSpec:
        """``job`` with the snapshot the log showed as its ``known_snapshot``, so that its first attempt need
        not ask Spark for it again.

        :param job: the job spec this answer is for.
        """
        return job if self.known_snapshot is None else replace(job, known_snapshot=self.known_snapshot)


def consult_log(job: JobSpec, *, storage_options: Mapping[str, str] | None = None) -> LogAnswer:
    """Read the table's Delta log for the job: its report when the log answers it, else what the job may
    skip re-reading (see :class:`LogAnswer`).

    :param job: the job spec, ``spark_conf`` merged in.
    :param storage_options: delta-rs storage options (object-store credentials); None uses the environment.
    """
    started_at, start = time.time(), time.monotonic()
    answers = may_skip_spark(job)
    if not (answers or job.operation in PLANNED_FROM_SNAPSHOT) or not log_readable(job):
        return LogAnswer()
    try:
        snapshot = read_snapshot(job.table, job.txn.app_id if job.txn else None, storage_options)
    except Exception as exc:  # no table there, storage that cannot be reached: Spark says what is wrong
        log.debug("cannot read the Delta log of %s (%s); Spark runs the job", job.table, exc)
        return LogAnswer()
    verdict = fast_path_verdict(job, snapshot) if answers else None
    if verdict is None:
        return LogAnswer(known_snapshot=known_snapshot(job, snapshot))
    if verdict == "duplicate":
        assert job.txn is not None
        recorded = snapshot.recorded_txn_version
        committed = find_committed_version(
            job.table,
            job.txn.app_id,
            job.txn.version,
            snapshot.version,
            storage_options,
            configuration=snapshot.configuration,
        )
        metrics = duplicate_metrics(recorded, committed, committed_reason(job.txn, recorded))
    else:
        metrics = {
            "created_table": False,
            "noop": True,
            "noop_reason": "the table already exists and the append has no rows: nothing to create or write",
        }
    return LogAnswer(report=_report(job, snapshot, verdict, metrics, started_at, time.monotonic() - start))


def txn_known_unrecorded(job: JobSpec, snapshot: LogSnapshot) -> bool:
    """Whether the snapshot shows the job's txn identity unrecorded exactly as Delta's snapshot would.

    The log reader (like delta-rs) keeps txn entries that Delta's retention drops, so an identity it shows
    unrecorded is unrecorded for Delta too; but only on a log replayed as Delta does.

    :param job: the parsed spec.
    :param snapshot: the table's latest snapshot.
    """
    return (
        job.txn is not None
        and log_replay_supported(snapshot)
        and not already_committed(snapshot.recorded_txn_version, job.txn)
    )


def known_snapshot(job: JobSpec, snapshot: LogSnapshot) -> KnownSnapshot | None:
    """The snapshot the job's first attempt may plan from: for a write, when the log is replayed as Delta
    replays it; else None.

    :param job: the parsed spec.
    :param snapshot: the table's latest snapshot.
    """
    if job.operation not in PLANNED_FROM_SNAPSHOT or not log_replay_supported(snapshot):
        return None
    return KnownSnapshot(
        version=snapshot.version,
        partition_columns=snapshot.partition_columns,
        schema=snapshot.schema_string,
        txn_unrecorded=txn_known_unrecorded(job, snapshot),
    )


def log_may_answer(job: JobSpec) -> bool:
    """Whether the job is one the log could answer, judged from the spec alone (no I/O).

    :param job: the parsed spec.
    """
    return may_skip_spark(job) and log_readable(job)


def may_skip_spark(job: JobSpec) -> bool:
    """Whether the job is of a kind the log's answer could spare Spark: one with a txn identity, or an empty
    append; not OPTIMIZE, VACUUM or a write without an identity (nothing to skip).

    :param job: the parsed spec.
    """
    return job.txn is not None or is_empty_append(job)


def log_readable(job: JobSpec) -> bool:
    """Whether the worker reads the same Delta log as the job's Spark, judged from the spec alone (no I/O).

    :param job: the parsed spec.
    """
    if not job.table.is_path:
        return False  # a catalog table: its location is the catalog's to resolve
    if is_relative(job.table):
        return False  # relative to the Spark driver's working directory, not ours
    if not job.table.uri_scheme and not job.spark_conf.get(_DEFAULT_FS_CONF, "file:").startswith("file:"):
        return False  # Spark resolves a scheme-less path on another file system
    return _storage_accepted(job)


def is_empty_append(job: JobSpec) -> bool:
    """Whether the job appends no rows: an inline ``rows`` source with an empty list.

    :param job: the parsed spec.
    """
    source = job.source
    return job.operation == "append" and source is not None and source.kind == "rows" and not source.rows


def read_snapshot(
    table: Table, app_id: str | None, storage_options: Mapping[str, str] | None = None
) -> LogSnapshot:
    """Read the table's latest snapshot with the provider's log reader (delta-rs where it cannot, see
    :mod:`airflow_provider_deltacc.delta_log.log_reader`).

    :param table: a path or URI.
    :param app_id: the txn app id whose recorded version to read, or None.
    :param storage_options: delta-rs storage options.
    :raises Exception: when there is no Delta table there or its storage cannot be read.
    """
    from airflow_provider_deltacc.delta_log.log_reader import log_state

    state = log_state(table, storage_options, app_ids=() if app_id is None else (app_id,))
    columns = tuple(
        LogColumn(
            name=str(field["name"]),
            type=field["type"] if isinstance(field.get("type"), str) else "",
            nullable=bool(field.get("nullable")),
            metadata_keys=frozenset(field.get("metadata") or {}),
        )
        for field in state.schema_fields()
    )
    return LogSnapshot(
        version=state.version,
        min_reader_version=state.min_reader_version,
        reader_features=state.reader_features,
        configuration=state.configuration,
        partition_columns=state.partition_columns,
        columns=columns,
        recorded_txn_version=state.txn_versions.get(app_id, -1) if app_id is not None else -1,
        schema_string=state.schema_string,
    )


def fast_path_verdict(job: JobSpec, snapshot: LogSnapshot) -> Verdict | None:
    """What the log answers for this job: a committed duplicate, an existing table, or None (run it).

    :param job: the parsed spec (see :func:`log_may_answer`).
    :param snapshot: the table's latest snapshot.
    """
    if not log_replay_supported(snapshot):
        return None
    # With a txn retention Delta's snapshot may have dropped entries the log reader still shows.
    if (
        job.txn is not None
        and not _txn_entries_may_expire(snapshot)
        and already_committed(snapshot.recorded_txn_version, job.txn)
    ):
        return "duplicate"
    if is_empty_append(job) and empty_append_accepted(job, snapshot):
        return "table_exists"
    return None


def log_replay_supported(snapshot: LogSnapshot) -> bool:
    """Whether this table's log is replayed (by the log reader or delta-rs) into the snapshot Delta sees.

    :param snapshot: the table's latest snapshot.
    """
    if snapshot.min_reader_version > 3:
        return False
    return snapshot.min_reader_version < 3 or snapshot.reader_features <= LOG_SAFE_READER_FEATURES


def empty_append_accepted(job: JobSpec, snapshot: LogSnapshot) -> bool:
    """Whether the engine would accept an append of no rows with the declared schema to this table.

    It would when ``partition_by`` (if given) names the table's partition columns, no ``cluster_by`` is given
    (its check needs Spark), and every declared column
    exists (same spelling) with the same simple type, is not an identity or CHAR/VARCHAR column, and is not
    nullable where the table's is NOT NULL; nor may a NOT NULL column be left out. Anything else, including a
    schema this cannot read without Spark, is left to Spark, which reports the error.

    :param job: an empty append (see :func:`is_empty_append`).
    :param snapshot: the table's latest snapshot.
    """
    options = job.options
    assert isinstance(options, AppendOptions) and job.source is not None
    if options.merge_schema or options.cluster_by or _TIMESTAMP_TYPE_CONF in job.spark_conf:
        return False  # (cluster_by: the clustering columns are checked by Spark, DESCRIBE DETAIL)
    if options.partition_by and [c.lower() for c in options.partition_by] != [
        c.lower() for c in snapshot.partition_columns
    ]:
        return False
    try:
        declared = split_ddl_columns(job.source.schema or "")
    except ValueError:
        return False
    written: set[str] = set()
    for name, definition in declared:
        simple = delta_primitive_type(definition)
        column = snapshot.column(name)
        if simple is None or column is None or name in written:
            return False
        type_name, nullable = simple
        if column.type != type_name or (nullable and not column.nullable) or _checked_on_write(column):
            return False
        written.add(name)
    return all(column.nullable or column.name in written for column in snapshot.columns)


def find_committed_version(
    table: Table,
    app_id: str,
    txn_version: int,
    latest: int,
    storage_options: Mapping[str, str] | None = None,
    *,
    configuration: Mapping[str, str] | None = None,
) -> int | None:
    """The table version whose commit recorded ``(app_id, txn_version)`` in a local table's log: the version
    its checksum files point to (:func:`~airflow_provider_deltacc.delta_log.txn_commit.version_by_checksums`)
    when that commit file confirms it, else the ``_delta_log/<version>.json`` files read newest first, the
    long ones last (:func:`~airflow_provider_deltacc.delta_log.txn_commit.version_by_scan`); None when not
    found or not a local table (on object storage the scan would cost a request a commit).

    :param table: the table path or URI.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    :param latest: the newest table version.
    :param storage_options: delta-rs storage options.
    :param configuration: the table's properties (its checkpoint interval says where an older checkpoint is).
    """
    from airflow_provider_deltacc.delta_log.log_storage import LocalLogFiles, open_log_files
    from airflow_provider_deltacc.delta_log.txn_commit import (
        checkpoint_intervals,
        read_commit,
        version_by_checksums,
        version_by_scan,
    )

    if table.local_path is None:
        return None
    files = open_log_files(table, storage_options)
    assert isinstance(files, LocalLogFiles)
    try:
        found = version_by_checksums(files, app_id, txn_version, latest)
        if found is not None:
            text = read_commit(files, found)
            if text is not None and records_txn(text, app_id, txn_version):
                return found
        intervals = checkpoint_intervals(configuration or {})
        return version_by_scan(files, app_id, txn_version, latest, intervals=intervals)
    except Exception as exc:  # informational only: never lose the answer over it
        log.debug("could not find the commit of txn %s version %s in %s: %s", app_id, txn_version, table, exc)
        return None


def _storage_accepted(job: JobSpec) -> bool:
    """False when the job would refuse the table's storage (S3 without a multi-writer log store and no
    ``storage_guard``); the operators always set the guard there, direct hook callers may not."""
    from airflow_provider_deltacc.contract.storage_safety import (
        S3_SCHEMES,
        spark_storage_safety,
    )

    if job.storage_guard is not None or job.table.scheme not in S3_SCHEMES:
        return True
    from airflow_provider_deltacc.spark_jars.put_if_absent import log_store_defaults

    # A Spark the provider starts has the put-if-absent log store unless the spec's settings name another.
    return spark_storage_safety(job.table, {**log_store_defaults(job.spark_conf), **job.spark_conf}).safe


def _txn_entries_may_expire(snapshot: LogSnapshot) -> bool:
    wanted = TXN_RETENTION_PROPERTY.lower()
    return any(key.lower() == wanted for key in snapshot.configuration)


def _checked_on_write(column: LogColumn) -> bool:
    return _CHAR_VARCHAR_KEY in column.metadata_keys or any(
        key.startswith(_IDENTITY_PREFIX) for key in column.metadata_keys
    )


def _report(
    job: JobSpec,
    snapshot: LogSnapshot,
    verdict: Verdict,
    metrics: dict[str, Any],
    started_at: float,
    seconds: float,
) -> dict[str, Any]:
    skipped = verdict == "duplicate"
    status: Literal["skipped_duplicate", "committed"] = "skipped_duplicate" if skipped else "committed"
    report = CommitReport(
        operation=job.operation.upper(),
        table=job.table.name,
        status=status,
        table_version=snapshot.version,
        attempts=[AttemptRecord(1, started_at, seconds, status)],
        skipped_duplicate=skipped,
        total_seconds=seconds,
        txn_app_id=job.txn.app_id if job.txn else None,
        txn_version=job.txn.version if job.txn else None,
        metrics={**metrics, "answered_by": ANSWERED_BY},
    )
    result = report.to_dict()
    result["summary"] = report.summary_line()
    return result
