"""DeltaCCHook: run one Delta job spec through spark-submit, over Spark Connect, or in this process."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol

from airflow.sdk import BaseHook

from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.job_exit import report_or_raise
from airflow_provider_deltacc.hooks.spark_log import DEFAULT_SPARK_LOG_LEVEL, check_spark_log_level
from airflow_provider_deltacc.observability.secrets import mask_sensitive_conf

if TYPE_CHECKING:
    from airflow_provider_deltacc.delta_log.fast_path import LogAnswer
    from airflow_provider_deltacc.hooks.submit import SparkSubmitRunner
    from airflow_provider_deltacc.hooks.submit_options import SparkSubmitOptions
    from airflow_provider_deltacc.object_storage.connections import StoreCredentials
    from airflow_provider_deltacc.occ.commit_loop import Turns

ExecutionMode = Literal["spark_submit", "spark_connect", "in_process"]
EXECUTION_MODES: tuple[str, ...] = ("spark_submit", "spark_connect", "in_process")
#: The connection each mode uses when ``conn_id`` is not given (the apache-spark provider's defaults).
DEFAULT_CONN_IDS: dict[str, str] = {
    "spark_submit": "spark_default",
    "spark_connect": "spark_connect_default",
    "in_process": "spark_default",
}


class _Runner(Protocol):
    def run(self, spec: JobSpec, *, turns: Turns | None = None) -> tuple[int, dict[str, Any] | None]: ...

    def on_kill(self) -> None: ...


class DeltaCCHook(BaseHook):
    """Run the bundled OCC job for one operation and turn its outcome into a report or an error.

    ``spark_submit`` starts a driver per run through the apache-spark provider's ``spark`` connection and
    ``SparkSubmitHook`` (the Airflow-free core travels as py-files). ``spark_connect`` runs the commit loop in
    this process as a thin client of a long-lived Spark Connect server, reached through a ``spark_connect``
    connection. ``in_process`` runs the very same job code in a local SparkSession of this process, for tests
    and laptops.

    In every mode the table's Delta log is read first with delta-rs: a write whose txn identity is already
    committed, or an empty create of an existing table, is answered from it and nothing is started.

    :param conn_id: the ``spark`` (``spark_submit``) or ``spark_connect`` (``spark_connect``) connection;
        defaults to ``spark_default`` or ``spark_connect_default``. Unused by ``in_process``.
    :param execution_mode: ``spark_submit``, ``spark_connect`` or ``in_process``.
    :param spark_conf: extra Spark settings for the job.
    :param driver_python: the Python the Spark driver runs (``PYSPARK_DRIVER_PYTHON``, ``spark_submit``
        only); defaults to this interpreter for local masters and to Spark's default otherwise.
    :param job_name: the Spark application name.
    :param submit_options: the ``SparkSubmitHook`` arguments of a ``spark_submit`` job
        (:class:`~airflow_provider_deltacc.hooks.submit_options.SparkSubmitOptions`, or a dict of its keys).
    :param spark_log_level: the level of the Spark driver's own log in the task log (``spark_submit`` in
        client mode): ``WARN`` by default, ``INFO`` or ``DEBUG`` to see Spark's progress.
    :param report_dir: where a ``spark_submit`` driver leaves its report for when its report line does not
        arrive (cluster deploy mode); None: ``[deltacc] report_dir``, else the deploy mode's default.
    :param aws_conn_id: an ``aws`` connection for ``s3://``/``s3a://`` tables and sources: its keys, region
        and endpoint reach the job's session as S3A settings (in the job spec, never on the spark-submit
        command line) and every delta-rs read of the log as storage options (see
        :mod:`airflow_provider_deltacc.object_storage`).
    :param azure_conn_id: a ``wasb`` or ``adls`` connection for ``abfss://`` tables: its account key, service
        principal or SAS token, the same way (ABFS settings; delta-rs ``AZURE_STORAGE_*`` options).
    :param gcp_conn_id: a ``google_cloud_platform`` connection for ``gs://`` tables: its key file or key, the
        same way (GCS connector settings; delta-rs ``GOOGLE_SERVICE_ACCOUNT*`` options).
    """

    conn_name_attr = "conn_id"
    default_conn_name = "spark_default"
    conn_type = "spark"
    hook_name = "Delta Lake concurrency control"

    def __init__(
        self,
        *,
        conn_id: str | None = None,
        execution_mode: ExecutionMode = "spark_submit",
        spark_conf: dict[str, str] | None = None,
        driver_python: str | None = None,
        job_name: str = "deltacc",
        submit_options: SparkSubmitOptions | dict[str, Any] | None = None,
        spark_log_level: str = DEFAULT_SPARK_LOG_LEVEL,
        report_dir: str | None = None,
        aws_conn_id: str | None = None,
        azure_conn_id: str | None = None,
        gcp_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        if execution_mode not in EXECUTION_MODES:
            raise DeltaCCInputError(
                f"execution_mode={execution_mode!r} is not supported; "
                f"use one of {', '.join(EXECUTION_MODES)}",
                field="execution_mode",
                value=execution_mode,
            )
        self.conn_id = conn_id or DEFAULT_CONN_IDS[execution_mode]
        self.execution_mode = execution_mode
        self.spark_conf = dict(spark_conf or {})
        self.driver_python = driver_python
        self.job_name = job_name
        self.submit_options = submit_options
        self.spark_log_level = check_spark_log_level(spark_log_level)
        self.report_dir = report_dir
        self.aws_conn_id = aws_conn_id
        self.azure_conn_id = azure_conn_id
        self.gcp_conn_id = gcp_conn_id

    @cached_property
    def store_credentials(self) -> list[StoreCredentials]:
        """The credentials of the object-store connections the hook names (looked up once)."""
        from airflow_provider_deltacc.object_storage.connections import StoreConnections

        return StoreConnections.of(self).credentials()

    @property
    def storage_options(self) -> dict[str, str] | None:
        """delta-rs storage options for the job's table (None: delta-rs reads the environment)."""
        from airflow_provider_deltacc.object_storage.connections import delta_rs_options_of

        return delta_rs_options_of(self.store_credentials) or None

    def check_deployment(self, table: Table) -> None:
        """Refuse a deployment that cannot work, at the task's start (``spark_submit``: cluster deploy mode
        on a standalone or local master, or with nowhere to leave the driver's report; see
        :meth:`~airflow_provider_deltacc.hooks.submit.SparkSubmitRunner.check_deployment`).

        :param table: the job's table.
        """
        if self.execution_mode == "spark_submit":
            self.submit_runner.check_deployment(table)

    def run(
        self, spec: JobSpec | Mapping[str, Any], *, consult_log: bool = True, turns: Turns | None = None
    ) -> dict[str, Any]:
        """Run the job and return its report; raise a classified exception when it did not succeed.

        :param spec: the job spec: typed (an operator's, built once), or a dict, parsed here once (see
            :mod:`airflow_provider_deltacc.contract.spec_parse`); it becomes JSON only for a spark-submit
            driver.
        :param consult_log: first ask the table's Delta log (see :meth:`consult_log`) and start nothing
            when it answers; False when the caller already asked.
        :param turns: the writer's place among the writers of its table, taken by the commit loop before its
            first attempt and after a lost conflict, when the loop runs in this process (``spark_connect``,
            ``in_process``; see :attr:`loop_runs_here`).
        :raises DeltaCCInputError: also for a dict that is not a valid job spec, with the report the job
            would give it (nothing is started).
        """
        job = self.job_spec(spec)
        if consult_log:
            answer = self._consult_log(job)
            if answer.report is not None:
                return answer.report
            job = answer.spec_to_run(job)
        code, report = self.runner.run(job, turns=turns)
        try:
            return report_or_raise(code, report)
        except DeltaCCInputError as exc:
            # The driver knows the refused credentials, not the connection they came from: name it here.
            reason = ((exc.report or {}).get("error") or {}).get("reason")
            if exc.field != "aws_conn_id" or not self.aws_conn_id or not reason:
                raise
            raise DeltaCCInputError(
                f"bad input: aws_conn_id={self.aws_conn_id!r}: {reason}",
                field=exc.field,
                value=self.aws_conn_id,
                report=exc.report,
            ) from None

    def consult_log(self, spec: JobSpec | Mapping[str, Any]) -> LogAnswer:
        """What the table's Delta log tells about the job before any Spark starts (the hook's one question to
        the log): ``report`` is the job's report when the log answers it, else None, and then the answer's
        spec to run tells the job what it need not read again (see
        :meth:`~airflow_provider_deltacc.delta_log.fast_path.LogAnswer.spec_to_run`).

        The log answers a write whose txn identity is already committed (reported ``skipped_duplicate``) and
        an append of no rows to a table that exists (a ``create_if_missing`` task, a no-op). Nothing is
        started: no spark-submit, no SparkSession, no Spark Connect session (see
        :mod:`airflow_provider_deltacc.delta_log.fast_path` for when the log cannot answer).

        :param spec: the job spec; a dict that is not a valid job spec is not answered (:meth:`run` says
            what is wrong with it).
        """
        from airflow_provider_deltacc.delta_log.fast_path import LogAnswer

        try:
            job = self.job_spec(spec)
        except DeltaCCInputError:
            return LogAnswer()
        return self._consult_log(job)

    def _consult_log(self, job: JobSpec) -> LogAnswer:
        """:meth:`consult_log` for a spec :meth:`job_spec` already prepared (a run prepares it once)."""
        from airflow_provider_deltacc.delta_log.fast_path import consult_log

        answer = consult_log(job, storage_options=self.storage_options)
        if answer.report is not None:
            self.log.info("Answered from the Delta log, no Spark started: %s", answer.report["summary"])
        return answer

    def job_spec(self, spec: JobSpec | Mapping[str, Any]) -> JobSpec:
        """The spec as the job gets it, typed: the object-store connections' Hadoop settings under the hook's
        ``spark_conf``, under the spec's own; secrets masked. The hook's public entry: a dict is parsed here,
        and nothing past it sees one.

        :param spec: the job spec.
        :raises DeltaCCInputError: a dict that is not a valid job spec, with the report the job would give it.
        """
        from airflow_provider_deltacc.object_storage.connections import hadoop_conf_of

        job = spec if isinstance(spec, JobSpec) else _parsed(spec)
        own = job.spark_conf
        from_connection = hadoop_conf_of(self.store_credentials)
        conf = {**from_connection, **self.spark_conf, **own}
        if conf != own:
            job = replace(job, spark_conf=conf)
        mask_sensitive_conf(conf)
        return job

    def on_kill(self) -> None:
        """Stop the running job."""
        if "runner" in self.__dict__:
            self.runner.on_kill()

    @property
    def loop_runs_here(self) -> bool:
        """Whether the commit loop runs in this process (``spark_connect``, ``in_process``): only then can it
        take turns with the lease store (``spark_submit``'s loop runs in the Spark driver)."""
        return self.execution_mode != "spark_submit"

    @property
    def driver_reaches_worker(self) -> bool:
        """Whether the job's commit loop runs in a Spark driver on this machine (``spark_submit``, client
        deploy mode), which can ask this process for its turns on a loopback address."""
        return self.execution_mode == "spark_submit" and self.submit_runner.driver_runs_here

    @cached_property
    def runner(self) -> _Runner:
        """What runs the job in this execution mode."""
        if self.execution_mode == "spark_connect":
            from airflow_provider_deltacc.hooks.connect import SparkConnectRunner

            return SparkConnectRunner(conn_id=self.conn_id, job_name=self.job_name)
        if self.execution_mode == "in_process":
            return _InProcessRunner()
        return self.submit_runner

    @cached_property
    def submit_runner(self) -> SparkSubmitRunner:
        """The spark-submit runner: the connection's master, the driver's environment, the submit hook."""
        from airflow_provider_deltacc.hooks.submit import SparkSubmitRunner

        return SparkSubmitRunner(
            conn_id=self.conn_id,
            spark_conf=self.spark_conf,
            driver_python=self.driver_python,
            job_name=self.job_name,
            submit_options=self.submit_options,
            spark_log_level=self.spark_log_level,
            report_dir=self.report_dir,
            storage_options=self.storage_options,
        )


class _InProcessRunner:
    """The job in a local SparkSession of this process (started once, reused by later runs)."""

    def run(self, spec: JobSpec, *, turns: Turns | None = None) -> tuple[int, dict[str, Any]]:
        from airflow_provider_deltacc.spark_jars.local_session import in_process_session
        from airflow_provider_deltacc.spark_job.main import run_job

        return run_job(spec, turns=turns, session_factory=in_process_session)

    def on_kill(self) -> None:
        if "pyspark" not in sys.modules:
            return
        from airflow_provider_deltacc.spark_jars.connect_mode import running_classic_session

        session = running_classic_session()
        if session is not None:
            session.sparkContext.cancelAllJobs()


def _parsed(spec: Mapping[str, Any]) -> JobSpec:
    """A caller's dict, read into the typed spec; one that is not a valid job spec fails as the job would
    fail it (``bad input``, with its report), before anything starts.

    :param spec: the dict.
    :raises DeltaCCInputError: naming the field, the value and the fix.
    """
    from airflow_provider_deltacc.contract.exceptions import InputError
    from airflow_provider_deltacc.contract.exit_codes import ExitCode
    from airflow_provider_deltacc.contract.spec_parse import parse_spec
    from airflow_provider_deltacc.spark_job.main import bare_report

    try:
        return parse_spec(spec)
    except InputError as exc:
        report_or_raise(ExitCode.BAD_INPUT, bare_report(dict(spec), None, "bad_input", exc))
        raise AssertionError("report_or_raise raises for bad input") from exc
