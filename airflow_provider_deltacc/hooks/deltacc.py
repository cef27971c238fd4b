"""DeltaCCHook: run one Delta job spec through spark-submit (or in this process) and read its report."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.engine.redaction import redact_text, sensitive_values
from airflow_provider_deltacc.exceptions import (
    DeltaCCInputError,
    DeltaConflictFatal,
    DeltaConflictRetryable,
)
from airflow_provider_deltacc.spark_job.exit_codes import ExitCode
from airflow_provider_deltacc.spark_job.report_line import REPORT_PREFIX, parse_report_line

ExecutionMode = Literal["spark_submit", "in_process"]
EXECUTION_MODES: tuple[str, ...] = ("spark_submit", "in_process")
#: How long the hook waits for a TCP connection to a ``spark://`` master before it gives up.
MASTER_CONNECT_TIMEOUT_S = 5.0

DELTA_SPARK_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


class DeltaCCHook(BaseHook):
    """Submit the bundled OCC Spark job for one operation and turn its outcome into a report or an error.

    It reuses the apache-spark provider's ``spark`` connection (master, deploy mode, queue, binary,
    Kerberos) and submits through its ``SparkSubmitHook`` in client mode. The application is the
    ``spark_job`` module inside this installed package, the py-files are the zipped Airflow-free core,
    and the jars are the cached Delta jars. ``in_process`` runs the very same job code in a local
    SparkSession of this process, for tests and laptops.

    :param conn_id: a ``spark`` connection; only used by ``spark_submit``.
    :param execution_mode: ``spark_submit`` or ``in_process``.
    :param spark_conf: extra Spark settings for the job.
    :param driver_python: the Python the Spark driver runs (``PYSPARK_DRIVER_PYTHON``); defaults to
        this interpreter for local masters and to Spark's default otherwise.
    :param job_name: the Spark application name.
    :param submit_options: extra keyword arguments for ``SparkSubmitHook`` (``driver_memory``,
        ``executor_memory``, ``num_executors``, ``principal``, ...).
    """

    conn_name_attr = "conn_id"
    default_conn_name = "spark_default"
    conn_type = "spark"
    hook_name = "Delta Lake concurrency control"

    def __init__(
        self,
        *,
        conn_id: str = default_conn_name,
        execution_mode: ExecutionMode = "spark_submit",
        spark_conf: dict[str, str] | None = None,
        driver_python: str | None = None,
        job_name: str = "deltacc",
        submit_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if execution_mode not in EXECUTION_MODES:
            raise DeltaCCInputError(
                f"execution_mode={execution_mode!r} is not supported; "
                f"use one of {', '.join(EXECUTION_MODES)}",
                field="execution_mode",
                value=execution_mode,
            )
        self.conn_id = conn_id
        self.execution_mode = execution_mode
        self.spark_conf = dict(spark_conf or {})
        self.driver_python = driver_python
        self.job_name = job_name
        self.submit_options = dict(submit_options or {})
        self._submit_hook: _ReportingSparkSubmitHook | None = None
        self._connection_secrets: list[str] = []

    def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Run the job and return its report; raise a classified exception when it did not succeed.

        :param spec: the job spec (see :mod:`airflow_provider_deltacc.spark_job.spec`).
        """
        if self.spark_conf:
            spec = {**spec, "spark_conf": {**self.spark_conf, **(spec.get("spark_conf") or {})}}
        mask_sensitive_conf(spec.get("spark_conf"))
        if self.execution_mode == "in_process":
            from airflow_provider_deltacc.spark_job.main import run_job

            code, report = run_job(spec)
            return raise_for_outcome(code, report)
        code, maybe_report = self._spark_submit(spec)
        return raise_for_outcome(code, maybe_report)

    def on_kill(self) -> None:
        """Stop the running Spark job."""
        if self._submit_hook is not None:
            self._submit_hook.on_kill()
            return
        if self.execution_mode == "in_process" and "pyspark" in sys.modules:
            from pyspark.sql import SparkSession

            session = SparkSession.getActiveSession()
            if session is not None:
                session.sparkContext.cancelAllJobs()

    @cached_property
    def _connection_master(self) -> str:
        try:
            conn = self.get_connection(self.conn_id)
            self._connection_secrets = connection_secrets(conn)
            mask_values(self._connection_secrets)
        except Exception as exc:  # AirflowNotFoundException, or a secrets backend error
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: no such Airflow connection. Create a 'spark' connection, e.g. "
                f"AIRFLOW_CONN_{self.conn_id.upper()}='spark://host:7077' or 'spark://local', or use "
                "execution_mode='in_process'.",
                field="conn_id",
                value=self.conn_id,
            ) from exc
        # The master URL as SparkSubmitHook builds it (a URI connection keeps its scheme in conn_type).
        host = conn.host or ""
        if conn.conn_type == "spark" and host and ("://" in host or not conn.port):
            master = host
        else:
            master = f"{conn.conn_type}://{host}"
        return f"{master}:{conn.port}" if conn.port else master

    def check_master_reachable(self, timeout_s: float = MASTER_CONNECT_TIMEOUT_S) -> None:
        """Fail fast when a ``spark://`` master refuses connections or does not answer within ``timeout_s``
        (spark-submit itself would retry for minutes). Other masters (``local``, ``yarn``, ``k8s://``) are
        not probed.

        :param timeout_s: the longest wait for one TCP connection.
        :raises DeltaCCInputError: naming ``conn_id`` and the master when no master of the URL answers.
        """
        master = self._connection_master
        if not master.startswith("spark://"):
            return
        errors = []
        for address in master.removeprefix("spark://").split(","):
            host, _, port = address.strip().rpartition(":")
            try:
                with socket.create_connection((host or address, int(port or 7077)), timeout=timeout_s):
                    return
            except (OSError, ValueError) as exc:
                errors.append(f"{address.strip()}: {type(exc).__name__}: {exc}")
        raise DeltaCCInputError(
            f"conn_id={self.conn_id!r}: the Spark master {master} cannot be reached ({'; '.join(errors)}). "
            "Start the master, or fix the connection's host and port.",
            field="conn_id",
            value=self.conn_id,
        )

    def _spark_submit(self, spec: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        from airflow_provider_deltacc.engine.delta_jars import (
            JAR_CACHE_ENV,
            DeltaJarsMissingError,
            cache_root,
            cached_jars,
        )
        from airflow_provider_deltacc.hooks.bundle import build_bundle

        master = self._connection_master
        try:
            jars = [str(p) for p in cached_jars()]
        except DeltaJarsMissingError as exc:
            raise DeltaCCInputError(
                f"{JAR_CACHE_ENV}: {exc}", field=JAR_CACHE_ENV, value=str(cache_root())
            ) from None
        self.check_master_reachable()
        py_files = [str(p) for p in build_bundle()] + [jars[0]]  # jar 0 carries the `delta` Python API
        with tempfile.TemporaryDirectory(prefix="deltacc-spec-") as work:
            spec_file = Path(work) / "spec.json"
            spec_file.write_text(json.dumps(spec))
            hook = self._submit_hook_for(
                conn_id=self.conn_id,
                conf={**DELTA_SPARK_CONF, **self.spark_conf},
                py_files=",".join(py_files),
                jars=",".join(jars),
                name=self.job_name,
                application_args=["--spec", str(spec_file)],
                env_vars=self._driver_env(master),
                **self.submit_options,
            )
            hook.secrets = [
                *self._connection_secrets,
                *sensitive_values(spec.get("spark_conf")),
                *sensitive_values(self.submit_options),
            ]
            self._submit_hook = hook
            try:
                hook.submit(application=str(spark_job_application()))
                code = 0
            except AirflowException:
                if hook.returncode is None:
                    raise
                code = hook.returncode
            finally:
                self._submit_hook = None
        return code, hook.report

    def _submit_hook_for(self, **kwargs: Any) -> _ReportingSparkSubmitHook:
        """The SparkSubmitHook; a connection it refuses (e.g. a bad ``spark-binary`` extra) is bad input."""
        try:
            return _ReportingSparkSubmitHook(**kwargs)
        except (ValueError, TypeError) as exc:
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: the apache-spark provider refuses this connection or its "
                f"options: {exc}",
                field="conn_id",
                value=self.conn_id,
            ) from None

    def _driver_env(self, master: str) -> dict[str, str]:
        env: dict[str, str] = {}
        python = self.driver_python or (sys.executable if "local" in master else None)
        if python:
            env["PYSPARK_PYTHON"] = python
            env["PYSPARK_DRIVER_PYTHON"] = python
        if shutil.which("spark-submit") is None:
            # pyspark installs spark-submit next to this interpreter; the worker's PATH may not have it.
            env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        if "SPARK_HOME" not in os.environ and (home := pip_spark_home()):
            # pip's spark-submit finds SPARK_HOME by importing pyspark with PYSPARK_DRIVER_PYTHON, which
            # fails (and yields "/bin/spark-class: No such file") when the driver Python has no pyspark.
            env["SPARK_HOME"] = home
        return env


def mask_sensitive_conf(conf: Any) -> None:
    """Register the values of sensitive settings (see :mod:`airflow_provider_deltacc.engine.redaction`) with
    Airflow's secrets masker, so task logs and rendered fields show ``***`` in their place.

    :param conf: Spark settings (anything but a dict is ignored, e.g. an unrendered template).
    """
    if isinstance(conf, dict):
        mask_values(sensitive_values(conf))


def mask_values(values: list[str]) -> None:
    """Register secret values with Airflow's secrets masker (task process and supervisor).

    :param values: the secrets.
    """
    if not values:
        return
    from airflow.sdk.log import mask_secret

    for value in values:
        mask_secret(value)


def connection_secrets(conn: Any) -> list[str]:
    """The secrets of a connection: its password and every sensitive extra (``keytab``, ``token``, ...),
    also inside a nested ``conf``/``spark_conf`` object of the extras.

    :param conn: an Airflow connection.
    """
    secrets = [str(conn.password)] if getattr(conn, "password", None) else []
    try:
        extra = conn.extra_dejson
    except Exception:  # an unparsable extra: nothing to add
        extra = {}
    if isinstance(extra, dict):
        secrets += sensitive_values(extra)
        for nested in extra.values():
            if isinstance(nested, dict):
                secrets += sensitive_values(nested)
    return [s for s in secrets if s]


def pip_spark_home() -> str | None:
    """The Spark home of a pip-installed pyspark (the package folder, with ``bin/spark-submit``), found
    without importing pyspark; None when pyspark is not installed that way."""
    spec = importlib.util.find_spec("pyspark")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "bin" / "spark-submit").exists():
            return str(location)
    return None


def spark_job_application() -> Path:
    """The file spark-submit runs: ``spark_job/__main__.py`` of the installed package."""
    return Path(str(resources.files("airflow_provider_deltacc.spark_job") / "__main__.py"))


def raise_for_outcome(code: int, report: dict[str, Any] | None) -> dict[str, Any]:
    """Map the job's exit code and report to the report (success) or to a classified exception."""
    report = report or {}
    error = report.get("error") or {}
    message = error.get("message") or report.get("summary") or ""
    if code == ExitCode.SUCCESS and report:
        return report
    if code == ExitCode.BAD_INPUT:
        raise DeltaCCInputError(
            f"bad input: {message}", field=error.get("field"), value=error.get("value"), report=report
        )
    if code == ExitCode.CONFLICT_RETRYABLE:
        raise DeltaConflictRetryable(f"Delta conflict outlasted the in-job retries: {message}", report=report)
    if code == ExitCode.CONFLICT_FATAL:
        raise DeltaConflictFatal(f"non-retryable Delta conflict: {message}", report=report)
    if code == ExitCode.SUCCESS:
        raise AirflowException("the Delta job exited 0 but printed no report line; see the log above")
    raise AirflowException(f"the Delta job failed (exit code {code}): {message or 'see the log above'}")


class _ReportingSparkSubmitHook(SparkSubmitHook):
    """A SparkSubmitHook that keeps the job's report line out of the log, remembers the exit code and
    redacts secrets from the command line it logs and from every line of spark-submit's output.

    The apache-spark provider masks only ``secret``/``password`` keys of the command line; this one masks
    every sensitive key (tokens, access and account keys, credentials) and the known secret values
    (``secrets``: the connection's password and sensitive extras, the sensitive settings).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report: dict[str, Any] | None = None
        self.secrets: list[str] = []

    def _mask_cmd(self, connection_cmd: str | list[str]) -> str:
        return redact_text(super()._mask_cmd(connection_cmd), self.secrets)

    @property
    def returncode(self) -> int | None:
        process = self._submit_sp
        return None if process is None else process.returncode

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        super()._process_spark_submit_log(self._without_report(itr))

    def _without_report(self, itr: Iterator[Any]) -> Iterator[Any]:
        for line in itr:
            if str(line).startswith(REPORT_PREFIX):
                self.report = parse_report_line(str(line))
                continue
            yield redact_text(line, self.secrets) if isinstance(line, str) else line
