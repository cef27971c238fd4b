"""The common base of every Delta operator: spec building, validation, submission, reporting."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator

from airflow_provider_deltacc.assets import declare_table_outlet, mapped_outlets, record_table_event
from airflow_provider_deltacc.exceptions import DeltaCCError, DeltaCCInputError, DeltaUnsafeStorageError
from airflow_provider_deltacc.hooks.lease_store import UsesLeaseStore
from airflow_provider_deltacc.hooks.spark_log import DEFAULT_SPARK_LOG_LEVEL
from airflow_provider_deltacc.links import DeltaCommitReportLink
from airflow_provider_deltacc.occ.operations import OperationClass, operation_class
from airflow_provider_deltacc.operators.identity import derive_txn_identity
from airflow_provider_deltacc.retry_policy import DeltaConflictRetryPolicy
from airflow_provider_deltacc.tries import REPORT_XCOM_KEY

if TYPE_CHECKING:
    import jinja2
    from airflow.sdk import Context, RetryPolicy

    from airflow_provider_deltacc.engine.storage_safety import StorageSafety
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
    from airflow_provider_deltacc.tries import TryDecision
    from airflow_provider_deltacc.windows import LeaseRequest

DEFAULT_AIRFLOW_RETRIES = 2
DEFAULT_RETRY_POLICY = DeltaConflictRetryPolicy()
_SKIPPED_NOTE = " (skipped duplicate: this txn identity already committed)"


class DeltaBaseOperator(UsesLeaseStore, BaseOperator):
    """Run one Delta operation through the bundled OCC job and publish its commit report.

    Subclasses say which operation they run and build its ``source`` and ``options``.

    :param table: the target Delta table: a path (``/data/orders``, ``s3a://…``) or a catalog name.
        (templated)
    :param conn_id: the ``spark`` connection (``spark_submit``, default ``spark_default``) or the
        ``spark_connect`` connection (``spark_connect``, default ``spark_connect_default``).
    :param execution_mode: ``spark_submit`` (default: a Spark driver per task), ``spark_connect`` (a thin
        client of a long-lived Spark Connect server; the commit loop runs in the worker) or ``in_process``
        (a local SparkSession in the worker; for tests and laptops).
    :param commit_retry: the in-job retry policy: ``max_attempts``, ``min_wait_s``, ``max_wait_s``,
        ``total_timeout_s``, ``jitter``. Defaults follow Iceberg (4 retries, 100 ms … 60 s, 30 min).
    :param spark_conf: extra Spark settings for the job. (templated)
    :param exactly_once: give the write a Delta txn identity so a retried try never writes twice.
    :param txn_identity: how the identity is derived: ``run`` or ``interval``; see
        :mod:`airflow_provider_deltacc.operators.identity`.
    :param txn_app_id: explicit txn app id, overriding the derived one. (templated)
    :param txn_version: explicit txn version, overriding the derived one. (templated)
    :param driver_python: the Python interpreter of the Spark driver.
    :param submit_options: extra ``SparkSubmitHook`` arguments (``driver_memory``, ``num_executors``, …).
    :param spark_log_level: the level of the Spark driver's own log in the task log (``spark_submit``, client
        mode): ``WARN`` (default), or ``INFO``/``DEBUG`` to see Spark's progress. (templated)
    :param use_write_lease: writers hold a write lease on the table while their job runs, so the maintenance
        gate keeps OPTIMIZE and VACUUM away from them; False opts out.
    :param lease_store_url: the older way to name the lease store (``sqlite:///…`` or ``postgresql://…``),
        used when no ``lease_store_conn_id`` is set; None reads ``$DELTACC_LEASE_STORE_URL``, else the
        embedded SQLite file (only under the LocalExecutor or in ``dag.test()``).
    :param maintenance_wait_timeout: seconds (or a timedelta) a writer waits for a conflicting maintenance
        lease before it writes anyway, with a warning.
    :param admission_timeout: seconds (or a timedelta) a writer waits for its turn behind the writers on the
        table it would surely conflict with (the conflict matrix's *will*: an unpinned MERGE and any other
        write, say), queued first come first served, and after a lost conflict for the writers ahead of it
        that it can conflict with, before retrying. Writers that cannot conflict never wait for each other.
        Past it the writer goes ahead. 0 turns the queue off (writers race and the commit loop retries).
        Capped by ``execution_timeout``.
    :param lease_ttl: seconds a lease outlives its last heartbeat (a crashed worker's lease expires).
    :param allow_unsafe_concurrent_writes: writers on storage that cannot exclude concurrent writers
        (``s3://``, ``s3a://``, ``s3n://`` without ``spark.delta.logStore.<scheme>.impl`` set to
        ``io.delta.storage.S3DynamoDBLogStore`` in ``spark_conf``; see
        :mod:`airflow_provider_deltacc.engine.storage_safety`) are serialized: each holds an exclusive lease
        on the table and fails, naming the missing setting, when the table stays busy past
        ``unsafe_storage_wait_timeout``. True (or ``$DELTACC_ALLOW_UNSAFE_CONCURRENT_WRITES=true``) lets them
        run concurrently anyway: only when one writer at a time is guaranteed otherwise, since concurrent
        commits there can be lost without an error.
    :param unsafe_storage_wait_timeout: seconds (or a timedelta) a writer on such storage waits for the
        table to be free before it fails.
    :param lease_store_conn_id: the lease store's Airflow connection: ``postgres`` (shared by every worker)
        or ``sqlite`` (its host is the file). None reads ``[deltacc] lease_store_conn_id``, then
        ``lease_store_url``; see :mod:`airflow_provider_deltacc.hooks.lease_store`.
    :param emit_asset: declare the table as an outlet (:mod:`airflow_provider_deltacc.assets`) and emit an
        asset event on each commit; False declares nothing (``outlets`` given by you are kept).
    """

    operation: ClassVar[str]
    writes_data: ClassVar[bool] = True

    template_fields: Sequence[str] = ("table", "spark_conf", "txn_app_id", "txn_version", "spark_log_level")
    template_fields_renderers: ClassVar[dict[str, str]] = {"spark_conf": "json"}
    operator_extra_links = (DeltaCommitReportLink(),)
    ui_color = "#00ADD4"
    ui_fgcolor = "#fff"

    def __init__(
        self,
        *,
        table: str,
        conn_id: str | None = None,
        execution_mode: str = "spark_submit",
        commit_retry: dict[str, Any] | None = None,
        spark_conf: dict[str, str] | None = None,
        exactly_once: bool = True,
        txn_identity: str = "run",
        txn_app_id: str | None = None,
        txn_version: int | str | None = None,
        driver_python: str | None = None,
        submit_options: dict[str, Any] | None = None,
        spark_log_level: str = DEFAULT_SPARK_LOG_LEVEL,
        use_write_lease: bool = True,
        lease_store_url: str | None = None,
        maintenance_wait_timeout: float | timedelta = 120.0,
        admission_timeout: float | timedelta = 1800.0,
        lease_ttl: float = 120.0,
        allow_unsafe_concurrent_writes: bool = False,
        unsafe_storage_wait_timeout: float | timedelta = 300.0,
        lease_store_conn_id: str | None = None,
        emit_asset: bool = True,
        retries: int | None = DEFAULT_AIRFLOW_RETRIES,
        retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
        do_xcom_push: bool = False,
        **kwargs: Any,
    ) -> None:
        # retries/retry_policy are named parameters (not kwargs.setdefault) so that ``.partial()`` of mapped
        # tasks picks these defaults up and DAG/task-group ``default_args`` can still override them. The
        # report is pushed once, as ``deltacc_report``: not again as ``return_value`` (do_xcom_push).
        super().__init__(retries=retries, retry_policy=retry_policy, do_xcom_push=do_xcom_push, **kwargs)
        self.table = table
        self.conn_id = conn_id
        self.execution_mode = execution_mode
        self.commit_retry = commit_retry
        self.spark_conf = spark_conf
        self.exactly_once = exactly_once
        self.txn_identity = txn_identity
        self.txn_app_id = txn_app_id
        self.txn_version = txn_version
        self.driver_python = driver_python
        self.submit_options = submit_options
        self.spark_log_level = spark_log_level
        self.use_write_lease = use_write_lease
        self.lease_store_url = lease_store_url
        self.maintenance_wait_timeout = maintenance_wait_timeout
        self.admission_timeout = admission_timeout
        self.lease_ttl = lease_ttl
        self.allow_unsafe_concurrent_writes = allow_unsafe_concurrent_writes
        self.unsafe_storage_wait_timeout = unsafe_storage_wait_timeout
        self.lease_store_conn_id = lease_store_conn_id
        self.emit_asset = emit_asset
        self.table_outlet = declare_table_outlet(self, emit_asset=emit_asset)

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        """Airflow's ``partial()``, with the table's asset (or the task's alias) declared as an outlet: a
        mapped task's ``__init__`` runs only when it runs, after outlets must be known."""
        operator_partial = super().partial(**kwargs)
        dag = operator_partial.kwargs.get("dag")
        outlets = mapped_outlets(operator_partial.kwargs, dag_id=dag.dag_id if dag else None)
        if outlets is not None:
            operator_partial.kwargs["outlets"] = outlets
        return operator_partial

    @cached_property
    def hook(self) -> DeltaCCHook:
        from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook

        return DeltaCCHook(
            conn_id=self.conn_id,
            execution_mode=self.execution_mode,  # type: ignore[arg-type]
            spark_conf=self.spark_conf,
            driver_python=self.driver_python,
            job_name=f"deltacc-{self.dag_id}-{self.task_id}",
            submit_options=self.submit_options,
            spark_log_level=self.spark_log_level,
        )

    def render_template_fields(self, context: Context, jinja_env: jinja2.Environment | None = None) -> None:
        """Render as usual, then register the values of sensitive ``spark_conf`` keys (secret keys, tokens,
        passwords) with Airflow's secrets masker, so the rendered fields in the UI and the task log show
        ``***`` instead."""
        super().render_template_fields(context, jinja_env)
        from airflow_provider_deltacc.hooks.secrets import mask_sensitive_conf

        mask_sensitive_conf(self.spark_conf)

    # -- what subclasses provide -------------------------------------------------------------------
    def build_source(self, context: Context) -> dict[str, Any] | None:
        """The job spec's ``source`` (None for operations that read no source)."""
        return None

    def build_options(self, context: Context) -> dict[str, Any]:
        """The job spec's ``options`` for this operation."""
        return {}

    # -- the shared flow ---------------------------------------------------------------------------
    def build_spec(self, context: Context) -> dict[str, Any]:
        """Assemble the job spec, validated as the Spark job will validate it."""
        spec: dict[str, Any] = {
            "operation": self.operation,
            "table": self.table,
            "source": self.build_source(context),
            "options": self.build_options(context),
        }
        if self.commit_retry:
            spec["retry_policy"] = dict(self.commit_retry)
        if self.writes_data and self.exactly_once:
            spec["txn"] = self._txn(context)
        return spec

    def _txn(self, context: Context) -> dict[str, Any]:
        app_id, version = derive_txn_identity(context, self.txn_identity)
        if self.txn_app_id:
            app_id = self.txn_app_id
        if self.txn_version not in (None, ""):
            try:
                version = int(self.txn_version)
            except (TypeError, ValueError):
                raise DeltaCCInputError(
                    f"txn_version={self.txn_version!r} is not an integer; give a non-negative integer "
                    "that grows with each new write of this app id",
                    field="txn_version",
                    value=self.txn_version,
                ) from None
        return {"app_id": app_id, "version": version}

    def validate_spec(self, spec: dict[str, Any]) -> None:
        """Fail before anything is submitted (or leased) when the spec or an operator argument is invalid."""
        from airflow_provider_deltacc.spark_job.spec import SpecError, parse_spec

        self.validate_arguments()
        try:
            parse_spec(spec)
        except SpecError as exc:
            raise DeltaCCInputError(
                f"{self.task_id}: {exc}", field=exc.field, value=getattr(exc, "value", None)
            ) from None

    def validate_arguments(self) -> None:
        """Check the arguments that never reach the job spec: the execution mode, the Spark log level,
        lease timings."""
        from airflow_provider_deltacc.hooks.deltacc import EXECUTION_MODES
        from airflow_provider_deltacc.hooks.spark_log import check_spark_log_level

        if self.execution_mode not in EXECUTION_MODES:
            raise DeltaCCInputError(
                f"{self.task_id}: execution_mode={self.execution_mode!r} is not supported; use one of "
                f"{', '.join(EXECUTION_MODES)}",
                field="execution_mode",
                value=self.execution_mode,
            )
        check_spark_log_level(self.spark_log_level, task_id=self.task_id)
        try:
            ttl = float(self.lease_ttl)
        except (TypeError, ValueError):
            ttl = float("nan")
        if not math.isfinite(ttl) or ttl <= 0:
            raise DeltaCCInputError(
                f"{self.task_id}: lease_ttl={self.lease_ttl!r} must be a positive number of seconds, "
                "e.g. 120 (a lease outlives its last heartbeat by this long)",
                field="lease_ttl",
                value=self.lease_ttl,
            )
        _seconds(self.maintenance_wait_timeout, "maintenance_wait_timeout")
        _seconds(self.admission_timeout, "admission_timeout")
        _seconds(self.unsafe_storage_wait_timeout, "unsafe_storage_wait_timeout")

    def execute(self, context: Context) -> dict[str, Any]:
        """Run the operation and push one commit report to XCom (``deltacc_report``) that lists every try.

        The report is also returned, for direct callers; ``do_xcom_push`` is False by default so Airflow
        does not store it a second time as ``return_value``.

        A failed try opens its failure with one line stating Airflow's decision and its reason (see
        :meth:`decide_try`), then the conflict lines, then the summary.
        """
        spec = self.build_spec(context)
        self.validate_spec(spec)
        self.hook.check_deployment(self.table)
        self.check_lease_store()
        self.log.info("Running Delta %s on %s", self.operation.upper(), self.table)
        try:
            report = self.run_spec(context, spec)
        except DeltaCCError as exc:
            decision = self.decide_try(context, exc)
            if decision is not None:
                self.log.error("%s", decision.log_line(*_try_numbers(context)))
            failed = exc.report or {"operation": self.operation.upper(), "table": self.table, "attempts": []}
            failed.setdefault("status", "error")
            self._publish(context, failed, decision)
            raise
        published = self._publish(context, report, None)
        self.committed_run = (spec, report)  # for get_openlineage_facets_on_complete
        record_table_event(self, context, spec, published)
        return published

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The run's OpenLineage inputs and output (see :mod:`airflow_provider_deltacc.lineage`); called by
        the OpenLineage provider only, when it is installed."""
        from airflow_provider_deltacc.lineage import operator_lineage

        spec, report = getattr(self, "committed_run", None) or ({}, None)
        source = spec.get("source") if isinstance(spec, dict) else None
        return operator_lineage(self.table, source, report)

    def decide_try(self, context: Context, exc: DeltaCCError) -> TryDecision | None:
        """Airflow's decision on this failed try, asked of the task's retry policy now (the policy keeps it,
        so Airflow gets the same one); None for a retry policy that is not the provider's."""
        from airflow_provider_deltacc.tries import TryDecision

        policy = getattr(self, "retry_policy", None)
        if not isinstance(policy, DeltaConflictRetryPolicy):
            return None
        try_number, max_tries = _try_numbers(context)
        decision = policy.evaluate(exc, try_number=try_number, max_tries=max_tries, context=context)
        return TryDecision.from_retry_decision(decision, try_number, max_tries)

    def check_lease_store(self) -> None:
        """Resolve and check the lease store at the task's start (see :class:`UsesLeaseStore`); writers with
        ``use_write_lease=False`` need none."""
        if not self.writes_data or self.use_write_lease:
            self.log.info("lease store: %s", self.resolve_lease_store().describe())

    def run_spec(self, context: Context, spec: dict[str, Any]) -> dict[str, Any]:
        """Submit the spec; a writer does so inside a write lease on the table.

        The lease names the operation kind and, when they are known, the partitions; it waits at most
        ``maintenance_wait_timeout`` for a conflicting maintenance lease, is heartbeated while the job runs
        and released afterwards, also when the job fails. A lease store that cannot be reached never fails
        the write (see :func:`airflow_provider_deltacc.windows.writer_lease`).

        Before any lease, a writer asks the table's Delta log (see
        :meth:`airflow_provider_deltacc.hooks.deltacc.DeltaCCHook.answer_from_log`): a committed duplicate, or
        an empty create of a table that exists, writes nothing, so it neither waits at the maintenance gate
        nor starts Spark.
        """
        spec, exclusive = self.guard_storage(spec)
        if not self.writes_data:
            return self.hook.run(spec)
        answered = self.hook.answer_from_log(spec)
        if answered is not None:
            return answered
        if exclusive:
            return self._run_exclusive(context, spec)
        if not self.use_write_lease:
            return self.hook.run(spec, consult_log=False)
        from airflow_provider_deltacc.windows import TurnQueue, writer_lease

        request = self._write_lease_request(context, spec)
        if request is None:
            return self.hook.run(spec, consult_log=False)
        admission_s = self._admission_seconds()
        with writer_lease(
            self.open_lease_store,
            request,
            wait_timeout_s=_seconds(self.maintenance_wait_timeout, "maintenance_wait_timeout"),
            logger=self.log,
        ) as held:
            if held is None or held.lease is None or held.store is None or admission_s <= 0:
                return self.hook.run(spec, consult_log=False)
            turns = TurnQueue(held.store, held.lease, timeout_s=admission_s, logger=self.log)
            if self.hook.loop_runs_here:
                return self.hook.run(spec, consult_log=False, turns=turns)
            # The Spark driver cannot reach the store: take the first turn before submitting.
            waited = turns.first() or 0.0
            try:
                report = self.hook.run(spec, consult_log=False)
            except DeltaCCError as exc:
                exc.report["admission_wait_s"] = waited
                raise
            report["admission_wait_s"] = waited
            return report

    def _admission_seconds(self) -> float:
        """``admission_timeout`` in seconds, no longer than the task's ``execution_timeout``."""
        seconds = _seconds(self.admission_timeout, "admission_timeout")
        if self.execution_timeout is not None:
            seconds = min(seconds, self.execution_timeout.total_seconds())
        return seconds

    @property
    def operation_class(self) -> OperationClass:
        """The class the Spark job runs this task's operation as, for Airflow's retry policy: the operation
        registry decides it from :meth:`class_options` and the Spark settings this worker can see (a MERGE
        under schema auto-merge is schema-changing)."""
        from airflow_provider_deltacc.hooks.spark_defaults import visible_spark_conf

        conf = self.spark_conf if isinstance(self.spark_conf, dict) else None
        return operation_class(
            self.operation, self.class_options(), visible_spark_conf(self.execution_mode, conf)
        )

    def class_options(self) -> dict[str, Any]:
        """The options that decide the operation's class (see :meth:`operation_class`); none by default."""
        return {}

    # -- storage that cannot exclude concurrent writers ------------------------------------------------
    def storage_safety(self) -> StorageSafety:
        """Whether concurrent Spark writers are safe on this table's storage, from what the task can see:
        the table path, the operator's ``spark_conf`` and the ``spark-defaults.conf`` spark-submit reads on
        this worker (see :func:`~airflow_provider_deltacc.hooks.spark_defaults.visible_spark_conf`; the
        Spark job checks again with the driver's effective settings)."""
        from airflow_provider_deltacc.engine.storage_safety import spark_storage_safety
        from airflow_provider_deltacc.hooks.spark_defaults import visible_spark_conf

        return spark_storage_safety(self.table, visible_spark_conf(self.execution_mode, self.spark_conf))

    def unsafe_writes_allowed(self) -> bool:
        """The explicit override: the operator argument or ``$DELTACC_ALLOW_UNSAFE_CONCURRENT_WRITES``."""
        from airflow_provider_deltacc.engine.storage_safety import OVERRIDE_ENV, is_truthy

        return bool(self.allow_unsafe_concurrent_writes) or is_truthy(os.environ.get(OVERRIDE_ENV, ""))

    def guard_storage(self, spec: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Mark the spec with how unsafe storage is guarded; True when this run must be alone on the table.

        Safe storage changes nothing. On unsafe storage the spec carries ``storage_guard`` (the Spark job
        refuses such a table without it): ``override`` when concurrent writes are explicitly allowed, else
        ``exclusive_lease``, and the caller must hold a lease no other lease on the table overlaps.
        """
        verdict = self.storage_safety()
        if verdict.safe:
            return spec, False
        if self.unsafe_writes_allowed():
            self.log.warning("%s; running anyway: allow_unsafe_concurrent_writes is set", verdict.message())
            return {**spec, "storage_guard": "override"}, False
        if self.writes_data and not self.use_write_lease:
            raise DeltaCCInputError(
                f"{self.task_id}: use_write_lease=False, but {verdict.message()}. Without a lease this task "
                "cannot make sure it is the only writer; keep use_write_lease=True",
                field="use_write_lease",
                value=False,
            )
        self.log.info("%s; holding an exclusive lease on the table while writing", verdict.message())
        return {**spec, "storage_guard": "exclusive_lease"}, True

    def _run_exclusive(self, context: Context, spec: dict[str, Any]) -> dict[str, Any]:
        """Run the spec inside a lease that no other lease on the table overlaps, or fail saying why."""
        from airflow_provider_deltacc.windows import (
            ExclusiveLeaseUnavailable,
            LeaseRequest,
            exclusive_writer_lease,
            writer_op_kind,
        )

        request = LeaseRequest(
            table=self.table,
            holder=lease_holder(context),
            op_kind=writer_op_kind(spec),
            partitions=None,
            ttl_s=float(self.lease_ttl),
        )
        wait_s = _seconds(self.unsafe_storage_wait_timeout, "unsafe_storage_wait_timeout")
        try:
            with exclusive_writer_lease(self.open_lease_store, request, wait_timeout_s=wait_s):
                return self.hook.run(spec, consult_log=False)
        except ExclusiveLeaseUnavailable as exc:
            verdict = self.storage_safety()
            raise DeltaUnsafeStorageError(
                f"{self.task_id}: refusing to write {self.table} concurrently: {exc}. {verdict.message()}",
                report={"table": self.table, "status": "refused", "storage_safety": verdict.to_dict()},
            ) from None

    def _write_lease_request(self, context: Context, spec: dict[str, Any]) -> LeaseRequest | None:
        """The writer's lease: holder from the task instance, kind from the spec, partitions when known."""
        from airflow_provider_deltacc.windows import LeaseRequest, writer_op_kind, writer_partitions

        try:
            return LeaseRequest(
                table=self.table,
                holder=lease_holder(context),
                op_kind=writer_op_kind(spec),
                partitions=writer_partitions(spec),
                ttl_s=float(self.lease_ttl),
            )
        except Exception as exc:
            self.log.warning(
                "cannot describe this write as a lease (%s: %s); writing %s without a lease",
                type(exc).__name__,
                exc,
                self.table,
            )
            return None

    def _publish(
        self, context: Context, report: dict[str, Any], decision: TryDecision | None
    ) -> dict[str, Any]:
        from airflow_provider_deltacc.tries import record_try

        spanning = record_try(context, report, decision=decision, logger=self.log)
        context["ti"].xcom_push(key=REPORT_XCOM_KEY, value=spanning)
        attempts = report.get("attempts") or []
        for attempt in attempts:
            if attempt.get("conflict"):
                self.log.warning("%s", conflict_log_line(report, attempt, self.table))
        self.log.info(
            "Delta %s on %s: status=%s version=%s attempts=%s conflicts=%s wasted=%.2fs%s%s",
            self.operation.upper(),
            report.get("table") or self.table,
            report.get("status"),
            report.get("table_version"),
            len(attempts),
            sum(1 for a in attempts if a.get("conflict")),
            sum(float(a.get("wasted_s") or 0.0) for a in attempts),
            _queue_note(report),
            _SKIPPED_NOTE if report.get("skipped_duplicate") else "",
        )
        return spanning

    def on_kill(self) -> None:
        if "hook" in self.__dict__:
            self.hook.on_kill()


def lease_holder(context: Context) -> str:
    """The lease holder for the running task instance: ``dag.task[map]/run`` (see ``format_holder``)."""
    from airflow_provider_deltacc.windows import format_holder

    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    return format_holder(
        str(ti.dag_id),
        str(ti.task_id),
        str(context.get("run_id") or getattr(ti, "run_id", "")),
        -1 if map_index is None else int(map_index),
    )


def _try_numbers(context: Context) -> tuple[int, int]:
    """The running try's number and the task instance's ``max_tries`` (tries = max_tries + 1)."""
    ti = context["ti"]
    return int(getattr(ti, "try_number", None) or 1), int(getattr(ti, "max_tries", None) or 0)


def _seconds(value: float | timedelta, name: str) -> float:
    """A non-negative number of seconds from seconds or a timedelta."""
    try:
        seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds >= 0:  # negative, NaN or not a number
        raise DeltaCCInputError(
            f"{name}={value!r} must be a non-negative number of seconds or a timedelta",
            field=name,
            value=value,
        )
    return seconds


def conflict_log_line(report: dict[str, Any], attempt: dict[str, Any], table: str) -> str:
    """One line per conflict: kind, table, partition if known, attempt n of m, what happened, what to do."""
    from airflow_provider_deltacc.occ.advice import advice_for
    from airflow_provider_deltacc.occ.kinds import Conflict

    conflict = attempt["conflict"]
    kind = str(conflict.get("kind", "")).upper()
    attempts = report.get("attempts") or []
    where = report.get("table") or table
    partition = f" partition {conflict['partition']}" if conflict.get("partition") else ""
    is_last = attempt is attempts[-1]
    queued = float(attempt.get("queue_s") or 0.0)
    if not is_last and queued:
        outcome = (
            f"retried from a fresh snapshot once the writers ahead had finished ({queued:.2f} s in the queue)"
        )
    elif not is_last:
        outcome = f"retried after {float(attempt.get('wait_s') or 0.0):.2f} s from a fresh snapshot"
    elif report.get("status") == "conflict_fatal":
        outcome = "not retryable"
    else:
        outcome = "in-job retries exhausted; Airflow decides the next try"
    try:
        advice = advice_for(Conflict.from_dict(conflict), pinned_columns=report.get("pinned_columns") or ())
    except (KeyError, ValueError):
        advice = ""
    limit = report.get("max_attempts") or len(attempts)
    admitted = float(report.get("admission_wait_s") or 0.0)
    if attempt is attempts[0] and admitted:
        outcome = f"{outcome} (it had waited {admitted:.2f} s for its turn before attempt 1)"
    return (
        f"Delta conflict {kind} on {where}{partition}, attempt {attempt.get('number')} of {limit}: "
        f"{outcome}. {advice}"
    ).strip()


def _queue_note(report: dict[str, Any]) -> str:
    """The time a writer spent in the table's queue (its admission wait and its queued retries), if any."""
    admitted = float(report.get("admission_wait_s") or 0.0)
    queued = sum(float(a.get("queue_s") or 0.0) for a in report.get("attempts") or [])
    if not admitted and not queued:
        return ""
    return f" queued={admitted + queued:.2f}s (admission {admitted:.2f}s, retries {queued:.2f}s)"
