"""What every Delta operator shares: the job's hook, validation, submission and the commit report.

Writers derive from :class:`~airflow_provider_deltacc.operators.write_base.DeltaWriteOperator`, OPTIMIZE and
VACUUM from :class:`~airflow_provider_deltacc.operators.maintenance_base.DeltaMaintenanceOperator`; each
takes only the arguments it uses.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator, XComArg

from airflow_provider_deltacc.api_support.arguments import RefusesRenamedArguments
from airflow_provider_deltacc.contract.exceptions import refuse_renamed
from airflow_provider_deltacc.contract.operations import OperationClass, operation_class
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCError, DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.hooks.lease_store import UsesLeaseStore
from airflow_provider_deltacc.hooks.spark_log import DEFAULT_SPARK_LOG_LEVEL
from airflow_provider_deltacc.lineage.assets import declare_table_outlet, mapped_outlets, record_table_event
from airflow_provider_deltacc.observability.links import DeltaCommitReportLink
from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy
from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY

if TYPE_CHECKING:
    import jinja2
    from airflow.sdk import Context, RetryPolicy

    from airflow_provider_deltacc.contract.spec import JobSpec, OperationOptions, SourceSpec
    from airflow_provider_deltacc.contract.storage_safety import StorageSafety
    from airflow_provider_deltacc.contract.txn import TxnIdentity
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
    from airflow_provider_deltacc.hooks.submit_options import SparkSubmitOptions
    from airflow_provider_deltacc.retries.tries import TryDecision

DEFAULT_AIRFLOW_RETRIES = 2
DEFAULT_RETRY_POLICY = DeltaConflictRetryPolicy()
#: The serialized field (a JSON string) with what the conflict advisor reads besides template fields.
ADVISOR_JSON = "advisor_json"


class DeltaBaseOperator(RefusesRenamedArguments, UsesLeaseStore, BaseOperator, ABC):
    """Run one Delta operation through the bundled OCC job and publish its commit report.

    Subclasses say which operation they run, build its ``source`` and ``options``, and run the spec
    (:meth:`run_spec`: a writer inside its write lease, maintenance after the gate).

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
    :param driver_python: the Python interpreter of the Spark driver.
    :param submit_options: the spark-submit arguments of a ``spark_submit`` task, typed and named as in
        ``SparkSubmitOperator``: ``SparkSubmitOptions(driver_memory="2g", num_executors=4, packages=…)``, or
        a dict of the same keys. ``jars``, ``py_files``, ``files`` and ``env_vars`` are added to the
        provider's own (see :mod:`airflow_provider_deltacc.hooks.submit_options`).
    :param spark_log_level: the level of the Spark driver's own log in the task log (``spark_submit``, client
        mode): ``WARN`` (default), or ``INFO``/``DEBUG`` to see Spark's progress. (templated)
    :param lease_store_url: the older way to name the lease store (``sqlite:///…`` or ``postgresql://…``),
        used when no ``lease_store_conn_id`` is set; None reads ``$DELTACC_LEASE_STORE_URL``, else the
        embedded SQLite file (only under the LocalExecutor or in ``dag.test()``).
    :param lease_ttl: how long a lease outlives its last heartbeat (a crashed worker's lease expires), in
        seconds or a timedelta.
    :param allow_unsafe_concurrent_writes: on storage that cannot exclude concurrent writers (``s3://``,
        ``s3a://``, ``s3n://`` without ``spark.delta.logStore.<scheme>.impl`` set to
        ``io.delta.storage.S3DynamoDBLogStore`` in ``spark_conf``; see
        :mod:`airflow_provider_deltacc.contract.storage_safety`) every writer and maintenance run holds a
        lease no other lease on the table overlaps. True (or ``$DELTACC_ALLOW_UNSAFE_CONCURRENT_WRITES=true``)
        lets them run concurrently anyway: only when one writer at a time is guaranteed otherwise, since
        concurrent commits there can be lost without an error.
    :param lease_store_conn_id: the lease store's Airflow connection: ``postgres`` (shared by every worker)
        or ``sqlite`` (its host is the file). None reads ``[deltacc] lease_store_conn_id``, then
        ``lease_store_url``; see :mod:`airflow_provider_deltacc.hooks.lease_store`.
    :param emit_asset: declare the table as an outlet (:mod:`airflow_provider_deltacc.lineage.assets`) and
        emit an asset event on each commit; False declares nothing (``outlets`` given by you are kept).
    :param aws_conn_id: an ``aws`` connection for a table or source on S3 (or an S3-compatible store): its
        keys, region and endpoint reach Spark's S3A settings and every delta-rs read of the log (see
        :mod:`airflow_provider_deltacc.object_storage`). None: the credentials where the job runs. (templated)
    :param azure_conn_id: a ``wasb`` or ``adls`` connection for a table on ADLS (``abfss://``), the same way.
        (templated)
    :param gcp_conn_id: a ``google_cloud_platform`` connection for a table on GCS (``gs://``), the same way.
        (templated)
    """

    operation: ClassVar[str]

    template_fields: Sequence[str] = (
        "table",
        "spark_conf",
        "spark_log_level",
        "aws_conn_id",
        "azure_conn_id",
        "gcp_conn_id",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"spark_conf": "json"}
    operator_extra_links = (DeltaCommitReportLink(),)
    ui_color = "#00ADD4"
    ui_fgcolor = "#fff"
    #: Constructor arguments the conflict advisor reads that are not template fields. The DAG processor stores
    #: them in the serialized DAG too (:attr:`advisor_json`): the api-server reads DAGs from there.
    advisor_arguments: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        table: str,
        conn_id: str | None = None,
        execution_mode: str = "spark_submit",
        commit_retry: dict[str, Any] | None = None,
        spark_conf: dict[str, str] | None = None,
        driver_python: str | None = None,
        submit_options: SparkSubmitOptions | dict[str, Any] | None = None,
        spark_log_level: str = DEFAULT_SPARK_LOG_LEVEL,
        lease_store_url: str | None = None,
        lease_ttl: float | timedelta = 120.0,
        allow_unsafe_concurrent_writes: bool = False,
        lease_store_conn_id: str | None = None,
        emit_asset: bool = True,
        aws_conn_id: str | None = None,
        azure_conn_id: str | None = None,
        gcp_conn_id: str | None = None,
        retries: int | None = DEFAULT_AIRFLOW_RETRIES,
        retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
        do_xcom_push: bool = False,
        **kwargs: Any,
    ) -> None:
        # retries/retry_policy are named parameters (not kwargs.setdefault) so that ``.partial()`` of mapped
        # tasks picks these defaults up and DAG/task-group ``default_args`` can still override them. The
        # report is pushed once, as ``deltacc_report``: not again as ``return_value`` (do_xcom_push).
        refuse_renamed(kwargs, self.renamed_arguments, owner=type(self).__name__)
        super().__init__(retries=retries, retry_policy=retry_policy, do_xcom_push=do_xcom_push, **kwargs)
        self.table = table
        self.conn_id = conn_id
        self.execution_mode = execution_mode
        self.commit_retry = commit_retry
        self.spark_conf = spark_conf
        self.driver_python = driver_python
        self.submit_options = submit_options
        self.spark_log_level = spark_log_level
        self.lease_store_url = lease_store_url
        self.lease_ttl = lease_ttl
        self.allow_unsafe_concurrent_writes = allow_unsafe_concurrent_writes
        self.lease_store_conn_id = lease_store_conn_id
        self.emit_asset = emit_asset
        self.aws_conn_id = aws_conn_id
        self.azure_conn_id = azure_conn_id
        self.gcp_conn_id = gcp_conn_id
        self.table_outlet = declare_table_outlet(self, emit_asset=emit_asset)

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        """Airflow's ``partial()``, with the table's asset (or the task's alias) declared as an outlet: a
        mapped task's ``__init__`` runs only when it runs, after outlets must be known. A dataclass among the
        :attr:`advisor_arguments` (``table_traits``) goes on as its dict form, which the operator takes too:
        the serialized DAG keeps a dict, but only the text of a dataclass."""
        for name in cls.advisor_arguments:
            value = kwargs.get(name)
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                kwargs[name] = dataclasses.asdict(value)
        operator_partial = super().partial(**kwargs)
        dag = operator_partial.kwargs.get("dag")
        outlets = mapped_outlets(operator_partial.kwargs, dag_id=dag.dag_id if dag else None)
        if outlets is not None:
            operator_partial.kwargs["outlets"] = outlets
        return operator_partial

    @classmethod
    def get_serialized_fields(cls) -> frozenset[str]:
        """Airflow's serialized fields and :attr:`advisor_json` (added as Airflow's sensors add theirs)."""
        return frozenset(super().get_serialized_fields() | {ADVISOR_JSON})

    @property
    def advisor_json(self) -> str:
        """The provider class, the values of :attr:`advisor_arguments` and the template fields the advisor
        would misread from Airflow's text of them (``as_text``: a timestamp in a partition spec), as JSON
        text. One string rather than a field per argument: Airflow keeps a string as it is (a dict field would
        not deserialize), an explicit None stays in it, and a value Airflow cannot serialize cannot break the
        DAG's serialization."""
        provider = next(c for c in type(self).__mro__ if c.__module__.startswith(f"{_PACKAGE}."))
        found = {
            "class": f"{provider.__module__}.{provider.__qualname__}",
            "arguments": {name: _json_value(getattr(self, name, None)) for name in self.advisor_arguments},
            "as_text": sorted(n for n in self.template_fields if not _reads_alike(getattr(self, n, None))),
        }
        return json.dumps(found, sort_keys=True)

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
            aws_conn_id=self.aws_conn_id,
            azure_conn_id=self.azure_conn_id,
            gcp_conn_id=self.gcp_conn_id,
        )

    def render_template_fields(self, context: Context, jinja_env: jinja2.Environment | None = None) -> None:
        """Render as usual, then register the values of sensitive ``spark_conf`` keys (secret keys, tokens,
        passwords) with Airflow's secrets masker, so the rendered fields in the UI and the task log show
        ``***`` instead."""
        super().render_template_fields(context, jinja_env)
        from airflow_provider_deltacc.observability.secrets import mask_sensitive_conf

        mask_sensitive_conf(self.spark_conf)

    # -- what subclasses provide -------------------------------------------------------------------
    def build_source(self, context: Context) -> SourceSpec | None:
        """The job's source (None for operations that read no source)."""
        return None

    @abstractmethod
    def build_options(self, context: Context) -> OperationOptions:
        """The job's options (see :mod:`airflow_provider_deltacc.contract.spec_options`)."""

    def build_txn(self, context: Context) -> TxnIdentity | None:
        """The job's exactly-once identity (None: the operation records none)."""
        return None

    @abstractmethod
    def run_spec(self, context: Context, spec: JobSpec) -> dict[str, Any]:
        """Run the validated spec and return the job's report (a writer in its lease, maintenance after the
        gate)."""

    # -- the shared flow ---------------------------------------------------------------------------
    def execute(self, context: Context) -> dict[str, Any]:
        """Run the operation and push one commit report to XCom (``deltacc_report``) that lists every try.

        The report is also returned, for direct callers; ``do_xcom_push`` is False by default so Airflow
        does not store it a second time as ``return_value``.
        """
        spec = self.build_spec(context)
        self.hook.check_deployment(spec.table)
        self.check_lease_store()
        self.log.info("Running Delta %s on %s", self.operation.upper(), self.table)
        from airflow_provider_deltacc.leases.heartbeat import LEASE_OBSERVER
        from airflow_provider_deltacc.observability.metrics import count_live_leases

        observing = LEASE_OBSERVER.set(count_live_leases)
        try:
            return self.publish_run(context, spec)
        finally:
            LEASE_OBSERVER.reset(observing)

    def build_spec(self, context: Context) -> JobSpec:
        """The typed job spec, built once from the operator's arguments and validated as the Spark job
        validates it: fail before anything is submitted (or leased) when the spec or an operator argument is
        invalid. It goes on to the lease, the log and the job; it becomes JSON only for a spark-submit
        driver, which gets a source function pickled by value (a function that cannot travel fails here,
        before any lease or write).

        :raises DeltaCCInputError: naming the task, the field, the value and the fix.
        """
        from airflow_provider_deltacc.contract.exceptions import SpecError
        from airflow_provider_deltacc.contract.spec_build import commit_retry_of, job_spec

        try:
            source = self.build_source(context)
            if self.execution_mode == "spark_submit":
                from airflow_provider_deltacc.operators.sources import travelling_source

                source = travelling_source(source, task_id=self.task_id, driver_python=self.driver_python)
            options = self.build_options(context)
            txn = self.build_txn(context)
            self.validate_arguments()
            return job_spec(
                operation=self.operation,
                table=self.table,
                options=options,
                source=source,
                commit_retry=commit_retry_of(dict(self.commit_retry) if self.commit_retry else None),
                txn=txn,
            )
        except SpecError as exc:
            raise DeltaCCInputError(
                f"{self.task_id}: {exc}", field=exc.field, value=getattr(exc, "value", None)
            ) from None

    def validate_arguments(self) -> None:
        """Check the arguments that never reach the job spec: the execution mode, the Spark log level, the
        lease TTL (subclasses add their own)."""
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
        from airflow_provider_deltacc.hooks.submit_options import check_submit_options

        if check_submit_options(self.submit_options) and self.execution_mode != "spark_submit":
            self.log.warning(
                "%s: submit_options are spark-submit arguments and are not used with execution_mode=%r",
                self.task_id,
                self.execution_mode,
            )
        self.lease_ttl_s  # noqa: B018 (checks the argument)

    @property
    def lease_ttl_s(self) -> float:
        """``lease_ttl`` in seconds.

        :raises DeltaCCInputError: naming ``lease_ttl`` unless it is positive seconds or a timedelta.
        """
        try:
            ttl = (
                self.lease_ttl.total_seconds()
                if isinstance(self.lease_ttl, timedelta)
                else float(self.lease_ttl)
            )
        except (TypeError, ValueError):
            ttl = float("nan")
        if not math.isfinite(ttl) or ttl <= 0:
            raise DeltaCCInputError(
                f"{self.task_id}: lease_ttl={self.lease_ttl!r} must be a positive number of seconds or a "
                "timedelta, e.g. 120 (a lease outlives its last heartbeat by this long)",
                field="lease_ttl",
                value=self.lease_ttl,
            )
        return ttl

    def check_lease_store(self) -> None:
        """Resolve and check the lease store at the task's start (see :class:`UsesLeaseStore`)."""
        self.log.info("lease store: %s", self.resolve_lease_store().describe())

    def publish_run(self, context: Context, spec: JobSpec) -> dict[str, Any]:
        """Run the spec and publish its report, also when it fails.

        A failed try opens its failure with one line stating Airflow's decision and its reason (see
        :meth:`decide_try`), then the conflict lines, then the summary.
        """
        from airflow_provider_deltacc.observability.metrics import emit_try_metrics

        try:
            report = self.run_spec(context, spec)
        except DeltaCCError as exc:
            decision = self.decide_try(context, exc)
            if decision is not None:
                self.log.error("%s", decision.log_line(*_try_numbers(context)))
            failed = exc.report or {"operation": self.operation.upper(), "table": self.table, "attempts": []}
            failed.setdefault("status", "error")
            emit_try_metrics(
                self.table,
                self.operation,
                failed,
                airflow_decision=decision.action if decision is not None else None,
                infrastructure=isinstance(exc, DeltaCCInfrastructureError),
            )
            self._publish(context, failed, decision)
            raise
        emit_try_metrics(self.table, self.operation, report)
        published = self._publish(context, report, None)
        self.committed_run = (spec, report)  # for get_openlineage_facets_on_complete
        record_table_event(self, context, spec, published)
        return published

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The run's OpenLineage inputs and output (see :mod:`airflow_provider_deltacc.lineage.openlineage`);
        called by the OpenLineage provider only, when it is installed."""
        from airflow_provider_deltacc.lineage.openlineage import operator_lineage

        spec, report = getattr(self, "committed_run", None) or (None, None)
        return operator_lineage(self.table, spec.source if spec is not None else None, report)

    def decide_try(self, context: Context, exc: DeltaCCError) -> TryDecision | None:
        """Airflow's decision on this failed try, asked of the task's retry policy now (the policy keeps it,
        so Airflow gets the same one); None for a retry policy that is not the provider's."""
        from airflow_provider_deltacc.retries.tries import TryDecision

        policy = getattr(self, "retry_policy", None)
        if not isinstance(policy, DeltaConflictRetryPolicy):
            return None
        try_number, max_tries = _try_numbers(context)
        decision = policy.evaluate(exc, try_number=try_number, max_tries=max_tries, context=context)
        return TryDecision.from_retry_decision(decision, try_number, max_tries)

    # -- storage that cannot exclude concurrent writers ------------------------------------------------
    @property
    def operation_class(self) -> OperationClass:
        """The class the Spark job runs this task's operation as, for Airflow's retry policy: the operation
        registry decides it from :meth:`class_options` and the Spark settings this worker can see (a MERGE
        under schema auto-merge is schema-changing)."""
        from airflow_provider_deltacc.spark_jars.spark_defaults import visible_spark_conf

        conf = self.spark_conf if isinstance(self.spark_conf, dict) else None
        return operation_class(
            self.operation, self.class_options(), visible_spark_conf(self.execution_mode, conf)
        )

    def class_options(self) -> dict[str, Any]:
        """The options that decide the operation's class (see :meth:`operation_class`); none by default."""
        return {}

    def storage_safety(self) -> StorageSafety:
        """Whether concurrent Spark writers are safe on this table's storage, from what the task can see:
        the table path, the operator's ``spark_conf`` and the ``spark-defaults.conf`` spark-submit reads on
        this worker (see :func:`~airflow_provider_deltacc.spark_jars.spark_defaults.visible_spark_conf`; the
        Spark job checks again with the driver's effective settings).

        Where no log store is configured, the driver's S3 log store is the provider's put-if-absent one
        (:func:`~airflow_provider_deltacc.spark_jars.put_if_absent.log_store_defaults`; in ``spark_connect``
        mode only when ``spark_conf`` names it, since the server's settings are not visible here); it is
        safe for concurrent writers where the S3 endpoint proves it does conditional writes
        (:func:`~airflow_provider_deltacc.object_storage.conditional_writes.conditional_writes`, once per
        endpoint), else the writers are serialized as with Delta's own S3 log store."""
        from airflow_provider_deltacc.contract.storage_safety import (
            PUT_IF_ABSENT_LOG_STORE,
            spark_storage_safety,
        )
        from airflow_provider_deltacc.spark_jars.put_if_absent import log_store_defaults
        from airflow_provider_deltacc.spark_jars.spark_defaults import visible_spark_conf

        conf = visible_spark_conf(self.execution_mode, self.spark_conf)
        if self.execution_mode != "spark_connect":
            conf = {**log_store_defaults(conf), **conf}
        verdict = spark_storage_safety(Table(self.table), conf)
        if verdict.log_store != PUT_IF_ABSENT_LOG_STORE:
            return verdict
        from airflow_provider_deltacc.object_storage.conditional_writes import (
            conditional_writes,
            options_from_spark_conf,
        )
        from airflow_provider_deltacc.object_storage.writer_safety import without_conditional_writes

        answer = conditional_writes(self.table, self.hook.storage_options or options_from_spark_conf(conf))
        if answer.supported:
            return verdict
        return without_conditional_writes(verdict, answer.endpoint, answer.reason)

    def unsafe_writes_allowed(self) -> bool:
        """The explicit override: the operator argument or ``$DELTACC_ALLOW_UNSAFE_CONCURRENT_WRITES``."""
        from airflow_provider_deltacc.contract.storage_safety import OVERRIDE_ENV, is_truthy

        return bool(self.allow_unsafe_concurrent_writes) or is_truthy(os.environ.get(OVERRIDE_ENV, ""))

    def guard_storage(self, spec: JobSpec) -> tuple[JobSpec, bool]:
        """The spec marked with its storage guard, and whether this run must be alone on the table (see
        :func:`airflow_provider_deltacc.turns.guard_storage`)."""
        from airflow_provider_deltacc.turns.guarded import guard_storage

        return guard_storage(
            spec, self.storage_safety(), allow_unsafe=self.unsafe_writes_allowed(), logger=self.log
        )

    def _publish(
        self, context: Context, report: dict[str, Any], decision: TryDecision | None
    ) -> dict[str, Any]:
        from airflow_provider_deltacc.operators.report_lines import log_report
        from airflow_provider_deltacc.retries.tries import add_try_to_history

        spanning = add_try_to_history(context, report, decision=decision, logger=self.log)
        context["ti"].xcom_push(key=REPORT_XCOM_KEY, value=spanning)
        log_report(self.log, report, self.operation, self.table)
        return spanning

    def on_kill(self) -> None:
        if "hook" in self.__dict__:
            self.hook.on_kill()


_PACKAGE = __name__.split(".", 1)[0]


def _json_value(value: Any) -> Any:
    """``value`` as plain JSON, the same text in every parse (the DAG's hash must not change): enums by value,
    dataclasses as dicts, sets sorted, any other object as its text or, without one, its class name."""
    if isinstance(value, Enum):
        return _json_value(value.value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _json_value(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(key): _json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((_json_value(item) for item in value), key=str)
    kind = type(value)
    if callable(value) or (kind.__str__ is object.__str__ and kind.__repr__ is object.__repr__):
        return f"<{kind.__module__}.{kind.__qualname__}>"  # the default repr holds a memory address
    return str(value)


def _reads_alike(value: Any, *, nested: bool = False) -> bool:
    """Whether the advisor reads a template field's value from a serialized DAG as from the operator.

    Airflow stores an object as its text. At the top of a field that reads the same (a source function is no
    inline rows either way, a decimal's text is its number); inside a list or a dict, a timestamp's or a
    decimal's text would read as a partition value the advisor cannot predict from the object. A date keeps
    its ISO text, an XComArg becomes a template naming its task.
    """
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _reads_alike(v, nested=True) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_reads_alike(item, nested=True) for item in value)
    if not nested or value is None or isinstance(value, str | int | float | bool | XComArg):
        return True
    return type(value) is date


def lease_holder(context: Context) -> str:
    """The lease holder for the running task instance: ``dag.task[map]/run`` (see ``format_holder``)."""
    from airflow_provider_deltacc.leases import format_holder

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
