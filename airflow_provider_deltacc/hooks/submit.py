"""Run a job spec through spark-submit: the bundled core as py-files, the cached Delta jars, one driver JVM.

It reuses the apache-spark provider's ``spark`` connection (master, deploy mode, queue, binary, Kerberos) and
its ``SparkSubmitHook``. The job prints one report line, which is taken out of the log. When that line does
not arrive (cluster deploy mode: the driver's stdout is the cluster's; a driver killed after its commit), the
outcome is read from the report the driver left in ``report_dir`` or from the run's tagged commits in the
table's Delta log (see :mod:`airflow_provider_deltacc.delta_log.lost_report`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.contract.redaction import redact_text, sensitive_values
from airflow_provider_deltacc.contract.spec import JobSpec, ReportTrailSpec
from airflow_provider_deltacc.contract.spec_json import spec_to_json
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.hooks.spark_log import DEFAULT_SPARK_LOG_LEVEL, driver_log_env
from airflow_provider_deltacc.hooks.submit_options import (
    JOINED,
    SparkSubmitOptions,
    check_submit_options,
    joined,
)
from airflow_provider_deltacc.observability.secrets import connection_secrets, mask_values
from airflow_provider_deltacc.spark_jars.spark_defaults import pip_spark_home
from airflow_provider_deltacc.spark_job.report_line import REPORT_PREFIX, parse_report_line

if TYPE_CHECKING:
    from airflow_provider_deltacc.occ.commit_loop import Turns

log = logging.getLogger(__name__)

#: How long the hook waits for a TCP connection to a ``spark://`` master before it gives up.
MASTER_CONNECT_TIMEOUT_S = 5.0
#: Where a cluster-mode driver leaves its report by default, next to a path table (outside it).
DEFAULT_REPORT_SUBDIR = "_deltacc_reports"
#: Exit statuses a shell or container runtime reports for a child that SIGKILL or SIGTERM ended.
_SHELL_SIGNAL_CODES = frozenset({128 + signal.SIGKILL, 128 + signal.SIGTERM})


class SparkSubmitRunner:
    """Submit one job spec with spark-submit and return its exit code and report.

    :param conn_id: a ``spark`` connection.
    :param spark_conf: extra Spark settings for the job.
    :param driver_python: the Python the Spark driver runs (``PYSPARK_DRIVER_PYTHON``); defaults to
        this interpreter for local masters and to Spark's default otherwise.
    :param job_name: the Spark application name.
    :param submit_options: extra keyword arguments for ``SparkSubmitHook``.
    :param spark_log_level: the level of the driver's own log (log4j), when the driver runs in the
        spark-submit process (client mode); see :mod:`airflow_provider_deltacc.hooks.spark_log`.
    :param report_dir: where the driver leaves its report (see :meth:`report_dir_for`); None:
        ``[deltacc] report_dir``, else the default of the deploy mode.
    :param storage_options: delta-rs storage options for reading the table's log when the report line
        does not arrive (None: the environment's).
    """

    def __init__(
        self,
        *,
        conn_id: str,
        spark_conf: dict[str, str],
        driver_python: str | None,
        job_name: str,
        submit_options: SparkSubmitOptions | Mapping[str, Any] | None,
        spark_log_level: str = DEFAULT_SPARK_LOG_LEVEL,
        report_dir: str | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self.conn_id = conn_id
        self.storage_options = storage_options
        self.report_dir = report_dir
        self.spark_conf = spark_conf
        self.driver_python = driver_python
        self.job_name = job_name
        self.submit_options = check_submit_options(submit_options)
        self.spark_log_level = spark_log_level
        self.connection_secrets: list[str] = []
        self._submit_hook: ReportingSparkSubmitHook | None = None
        self._killed_here = False

    @cached_property
    def connection(self) -> Any:
        """The ``spark`` connection; its secrets are registered with Airflow's secrets masker."""
        try:
            conn = BaseHook.get_connection(self.conn_id)
            self.connection_secrets = connection_secrets(conn)
            mask_values(self.connection_secrets)
        except Exception as exc:  # AirflowNotFoundException, or a secrets backend error
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: no such Airflow connection. Create a 'spark' connection, e.g. "
                f"AIRFLOW_CONN_{self.conn_id.upper()}='spark://host:7077' or 'spark://local', or use "
                "execution_mode='in_process'.",
                field="conn_id",
                value=self.conn_id,
            ) from exc
        if conn.conn_type == "spark_connect":
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r} is a 'spark_connect' connection; spark-submit needs a 'spark' "
                "connection (a master URL). Use execution_mode='spark_connect' to run over this connection.",
                field="conn_id",
                value=self.conn_id,
            )
        return conn

    @cached_property
    def connection_master(self) -> str:
        """The master URL as ``SparkSubmitHook`` builds it from the connection."""
        conn = self.connection
        # A URI connection keeps its scheme in conn_type.
        host = conn.host or ""
        if conn.conn_type == "spark" and host and ("://" in host or not conn.port):
            master = host
        else:
            master = f"{conn.conn_type}://{host}"
        return f"{master}:{conn.port}" if conn.port else master

    @property
    def deploy_mode(self) -> str:
        """``client`` or ``cluster``: ``submit_options["deploy_mode"]``, else the connection's ``deploy-mode``
        extra (as ``SparkSubmitHook`` reads them), else ``client``."""
        deploy_mode = self.submit_options.get("deploy_mode")
        if not deploy_mode:
            extra = self.connection.extra_dejson
            deploy_mode = extra.get("deploy-mode") if isinstance(extra, dict) else None
        return str(deploy_mode or "client")

    @property
    def driver_runs_here(self) -> bool:
        """True unless the deploy mode is ``cluster``: in client mode spark-submit's JVM is the driver."""
        return self.deploy_mode != "cluster"

    def check_deployment(self, table: Table) -> None:
        """Refuse, before anything is leased or submitted, a deployment that cannot work.

        Spark refuses cluster deploy mode for Python applications on a standalone master, and on a local
        one at all; and a cluster-mode driver needs somewhere to leave its report that this worker can read:
        by default next to a path table, so a catalog table needs ``report_dir``.

        :param table: the job's table.
        :raises DeltaCCInputError: naming ``deploy_mode`` or ``report_dir``, the value and the fix.
        """
        if self.driver_runs_here:
            return
        master = self.connection_master
        if master.startswith(("spark://", "local")):
            kind = "a standalone" if master.startswith("spark://") else "a local"
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: deploy_mode='cluster' cannot run this job on {kind} master "
                f"({master}): Spark supports cluster deploy mode for Python applications only on YARN and "
                "Kubernetes. Use deploy_mode='client' (the driver runs in the Airflow worker), or a yarn or "
                "k8s:// master.",
                field="deploy_mode",
                value="cluster",
            )
        if self.chosen_report_dir() is None and default_report_dir(table) is None:
            raise DeltaCCInputError(
                "report_dir: in cluster deploy mode the driver of a job on the catalog table "
                f"{table.name!r} has nowhere to leave its report for this worker. Set [deltacc] report_dir "
                "(or the hook's report_dir) to a directory both the cluster and the Airflow workers can "
                "reach, e.g. s3a://bucket/deltacc-reports.",
                field="report_dir",
                value=None,
            )

    def chosen_report_dir(self) -> str | None:
        """``report_dir`` as given, else ``[deltacc] report_dir``; None when neither is set."""
        from airflow_provider_deltacc.deployment.config import configured_report_dir

        return self.report_dir or configured_report_dir()

    def report_dir_for(self, table: Table, work: Path) -> str | None:
        """Where the driver leaves its report: the chosen ``report_dir``; else, in client mode, the run's
        own temporary directory (the driver runs on this machine); else :func:`default_report_dir`.

        :param table: the job's table.
        :param work: the run's temporary directory.
        """
        chosen = self.chosen_report_dir()
        if chosen:
            return chosen
        return str(work) if self.driver_runs_here else default_report_dir(table)

    def submit_conf(self, master: str, spec: dict[str, Any]) -> dict[str, str]:
        """The ``--conf`` settings: the small-job defaults of a local master (only those no ``spark_conf``
        sets), the Delta settings, the put-if-absent S3 log store (unless a log store is configured: in
        ``spark_conf``, the spec's or the ``spark-defaults.conf`` spark-submit reads), then ``spark_conf``.

        :param master: the master URL.
        :param spec: the job spec's JSON form (its ``spark_conf`` is applied by the job's session builder).
        """
        from airflow_provider_deltacc.spark_jars.delta_conf import DELTA_SPARK_CONF, local_defaults
        from airflow_provider_deltacc.spark_jars.put_if_absent import log_store_defaults
        from airflow_provider_deltacc.spark_jars.spark_defaults import spark_defaults

        chosen = {**self.spark_conf, **(spec.get("spark_conf") or {})}
        defaults = {k: v for k, v in local_defaults(master).items() if k not in chosen}
        log_store = log_store_defaults({**spark_defaults(), **chosen})
        return {**defaults, **DELTA_SPARK_CONF, **log_store, **self.spark_conf}

    def master_addresses(self) -> list[tuple[str, int]]:
        """The host and port of each master a ``spark://`` URL names (several for standby masters; port 7077
        when none is given); empty for other masters.

        :raises DeltaCCInputError: naming ``conn_id`` and the URL when it is malformed.
        """
        master = self.connection_master
        if not master.startswith("spark://"):
            return []
        addresses = []
        for address in master.removeprefix("spark://").split(","):
            host, colon, port = address.strip().rpartition(":")
            if not colon:
                host, port = port, ""
            host = host.strip("[]")  # an IPv6 literal
            if not host or not (port or "7077").isdigit() or not 0 < int(port or 7077) < 65536:
                raise DeltaCCInputError(
                    f"conn_id={self.conn_id!r}: the Spark master URL {master} is malformed at {address!r}; "
                    "give spark://host:port (or spark://host1:port1,host2:port2 for standby masters)",
                    field="conn_id",
                    value=self.conn_id,
                )
            addresses.append((host, int(port or 7077)))
        return addresses

    def check_master_reachable(self, timeout_s: float = MASTER_CONNECT_TIMEOUT_S) -> None:
        """Fail fast when a ``spark://`` master refuses connections or does not answer within ``timeout_s``
        (spark-submit itself would retry for minutes). Other masters (``local``, ``yarn``, ``k8s://``) are
        not probed.

        :param timeout_s: the longest wait for one TCP connection.
        :raises DeltaCCInputError: when the URL is malformed (a configuration mistake).
        :raises DeltaCCInfrastructureError: naming ``conn_id`` and the master when no master of the URL
            answers (a master that is down or restarting; Airflow retries the task).
        """
        errors = []
        for host, port in self.master_addresses():
            try:
                with socket.create_connection((host, port), timeout=timeout_s):
                    return
            except OSError as exc:
                errors.append(f"{host}:{port}: {type(exc).__name__}: {exc}")
        if not errors:
            return
        master = self.connection_master
        raise DeltaCCInfrastructureError(
            f"conn_id={self.conn_id!r}: the Spark master {master} cannot be reached ({'; '.join(errors)}). "
            "Start the master, or fix the connection's host and port.",
            unreachable=f"Spark master {master} (conn_id={self.conn_id!r})",
        )

    def run(self, spec: JobSpec, *, turns: Turns | None = None) -> tuple[int, dict[str, Any] | None]:
        """Submit ``spec`` and wait for the driver; return its exit code and report line (None if none).

        The spec becomes JSON here, in the file the driver reads: the one place the typed spec is text.

        :param spec: the job spec, ``spark_conf`` already merged.
        :param turns: not used: the commit loop runs in the driver, which cannot reach the lease store, so
            its retries back off by the policy (the writer took its first turn before submitting).
        """
        from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError
        from airflow_provider_deltacc.hooks.bundle import build_bundle
        from airflow_provider_deltacc.spark_jars.delta_jars import JAR_CACHE_ENV, cache_root, cached_jars

        master = self.connection_master
        try:
            jars = [str(p) for p in cached_jars()]
        except DeltaJarsMissingError as exc:
            raise DeltaCCInputError(
                f"{JAR_CACHE_ENV}: {exc}", field=JAR_CACHE_ENV, value=str(cache_root())
            ) from None
        self.check_deployment(spec.table)
        self.check_master_reachable()
        py_files = [str(p) for p in build_bundle()] + [jars[0]]  # jar 0 carries the `delta` Python API
        # A killed driver's Python outlives its JVM and may still write its report in here while the task
        # leaves: a leftover file must not replace the try's outcome with a cleanup error.
        with tempfile.TemporaryDirectory(prefix="deltacc-spec-", ignore_cleanup_errors=True) as work:
            report_dir = self.report_dir_for(spec.table, Path(work))
            trail = ReportTrailSpec(run_token=uuid.uuid4().hex, report_dir=report_dir)
            job = replace(spec, report_trail=trail)
            data = spec_to_json(job)
            spec_file = Path(work) / f"deltacc-spec-{trail.run_token}.json"
            spec_file.write_text(json.dumps(data))
            submit_options, spec_arg = self.ship_spec(spec_file)
            env = self.driver_env(master)
            log_here = self.driver_runs_here  # in cluster mode the driver's log is the cluster's
            if log_here:
                env.update(driver_log_env(Path(work), self.spark_log_level, os.environ))
            hook = self.submit_hook_for(
                conn_id=self.conn_id,
                conf=self.submit_conf(master, data),
                name=self.job_name,
                application_args=["--spec", spec_arg],
                **{key: value for key, value in submit_options.items() if key not in JOINED},
                py_files=joined(py_files, submit_options.get("py_files")),
                jars=joined(jars, submit_options.get("jars")),
                env_vars={**(submit_options.get("env_vars") or {}), **env},
            )
            if log_here:
                hook.log.info("Spark driver log level: %s (spark_log_level)", self.spark_log_level)
            hook.secrets = [
                *self.connection_secrets,
                *sensitive_values(job.spark_conf),
                *sensitive_values(self.submit_options),
            ]
            # Reset before publishing the hook: an on_kill that sees the hook must not be forgotten.
            self._killed_here = False
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
            if hook.report is not None or self._killed_here:
                return code, hook.report
            recovered = self.recover_lost_report(job)
        if recovered is not None:
            return recovered
        self.raise_if_driver_killed(hook.driver_exit_code)
        return code, None

    def ship_spec(self, spec_file: Path) -> tuple[dict[str, Any], str]:
        """The submit options and the ``--spec`` argument that get the spec file to the driver: its path in
        client mode; in cluster mode the file goes with ``--files`` (added to any ``files`` option), which
        YARN and Kubernetes put in the driver's working directory, and the job reads it by name there.

        :param spec_file: the spec file on this machine.
        """
        if self.driver_runs_here:
            return self.submit_options, str(spec_file)
        files = ",".join(filter(None, [self.submit_options.get("files"), str(spec_file)]))
        return {**self.submit_options, "files": files}, spec_file.name

    def recover_lost_report(self, job: JobSpec) -> tuple[int, dict[str, Any]] | None:
        """The exit code and report the report line did not bring: from the report the driver left, else
        from the run's commits in the Delta log (see :mod:`airflow_provider_deltacc.delta_log.lost_report`).

        :param job: the spec as submitted, with its ``report_trail``.
        """
        from airflow_provider_deltacc.delta_log.lost_report import recover_lost_report

        log.info("No report line from the Spark driver; asking its report directory and the Delta log")
        return recover_lost_report(job, storage_options=self.storage_options)

    def raise_if_driver_killed(self, code: int | None) -> None:
        """A driver that ended by a signal without a report was killed from outside (the cluster's OOM
        killer, a preempted node or container, an operator): infrastructure, not this job's fault. Its
        re-run is safe: the txn identity makes it a skipped duplicate if the killed driver had committed.

        :param code: the driver's exit status as the apache-spark provider reports it.
        :raises DeltaCCInfrastructureError: naming ``conn_id``, the master and the signal.
        """
        signal_name = killing_signal(code)
        if signal_name is None:
            return
        raise DeltaCCInfrastructureError(
            f"conn_id={self.conn_id!r}: the Spark driver (master {self.connection_master}) was killed by "
            f"{signal_name} (exit status {code}) before it reported an outcome. A re-run is safe: if the "
            "killed driver committed, the re-run finds its txn identity and skips the write.",
            unreachable=f"the Spark driver JVM (killed by {signal_name}; conn_id={self.conn_id!r})",
        )

    def on_kill(self) -> None:
        """Kill the running spark-submit (and, through the provider, its driver)."""
        if self._submit_hook is not None:
            self._killed_here = True
            self._submit_hook.on_kill()

    def submit_hook_for(self, **kwargs: Any) -> ReportingSparkSubmitHook:
        """The SparkSubmitHook; a connection it refuses (e.g. a bad ``spark-binary`` extra) is bad input."""
        try:
            return ReportingSparkSubmitHook(**kwargs)
        except (ValueError, TypeError) as exc:
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: the apache-spark provider refuses this connection or its "
                f"options: {exc}",
                field="conn_id",
                value=self.conn_id,
            ) from None

    def driver_env(self, master: str) -> dict[str, str]:
        """The driver's environment: its Python, and where pip's spark-submit and Spark home are.

        :param master: the master URL.
        """
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


def default_report_dir(table: Table) -> str | None:
    """The report directory of a cluster-mode driver when none is configured: ``_deltacc_reports`` in the
    directory that holds a path table (outside the table, so Delta, VACUUM and readers never see it; on the
    storage the driver writes and this worker's log fast path already reads); None for a catalog table.

    :param table: the job's table.
    """
    if not table.is_path:
        return None
    parent = table.name.rstrip("/").rpartition("/")[0]
    if not parent or parent.endswith(":/") or parent.endswith("://"):
        return None  # a table at the root of a bucket or file system: nothing above it to use
    return f"{parent}/{DEFAULT_REPORT_SUBDIR}"


def killing_signal(code: int | None) -> str | None:
    """The signal that ended a process with exit status ``code``, e.g. ``SIGKILL``; None for a normal exit.

    ``subprocess`` gives ``-N`` for a process a signal ended; a shell, a container runtime or a JVM reporting
    its child gives ``128 + N`` (137 for SIGKILL, 143 for SIGTERM; other values above 128 are ordinary
    exit codes as often as not, and are not read as signals).

    :param code: the exit status.
    """
    if code is None:
        return None
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    if code in _SHELL_SIGNAL_CODES:
        return signal.Signals(code - 128).name
    return None


def spark_job_application() -> Path:
    """The file spark-submit runs: ``spark_job/__main__.py`` of the installed package."""
    return Path(str(resources.files("airflow_provider_deltacc.spark_job") / "__main__.py"))


class ReportingSparkSubmitHook(SparkSubmitHook):
    """A SparkSubmitHook that keeps the job's report line out of the log, remembers the exit code and
    redacts secrets from the command line it logs and from every line of spark-submit's output.

    The apache-spark provider masks only ``secret``/``password`` keys of the command line; this one masks
    every sensitive key (tokens, access and account keys, credentials) and the known secret values
    (``secrets``: the connection's password and sensitive extras, the sensitive settings).

    The apache-spark provider has no public way to filter or redact the output stream it logs, nor to read
    spark-submit's exit code, so this class uses these private members of ``SparkSubmitHook`` (each one
    is marked where it is used; ``tests/unit/airflow_face/test_spark_provider_private_api.py`` fails when
    the provider changes one, and pyproject bounds the provider below its next major version):

    - ``_mask_cmd(connection_cmd)``: overridden, to redact more than the provider does;
    - ``_process_spark_submit_log(itr)``: overridden, to take the report line out of the stream and redact
      every line before the provider logs it;
    - ``_submit_sp``, ``_spark_exit_code``, ``_is_kubernetes``: read, for the exit code (and ``_submit_sp``
      to kill a spark-submit that started after a kill request).

    Its ``on_kill`` also covers a kill that arrives while spark-submit is being started.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report: dict[str, Any] | None = None
        self.secrets: list[str] = []
        self._kill_requested = False

    def on_kill(self) -> None:
        # A kill that comes while spark-submit is being started, before ``_submit_sp`` exists, would be
        # lost: remember it, and kill the process as soon as its output is read (just after it started).
        self._kill_requested = True
        super().on_kill()

    # Private override: the provider logs the command line through _mask_cmd and nothing public.
    def _mask_cmd(self, connection_cmd: str | list[str]) -> str:
        return redact_text(super()._mask_cmd(connection_cmd), self.secrets)

    @property
    def returncode(self) -> int | None:
        process = self._submit_sp  # private: the provider keeps the spark-submit process only here
        return None if process is None else process.returncode

    @property
    def driver_exit_code(self) -> int | None:
        """The driver's exit status as the provider reports it: the Kubernetes driver pod's ``Exit code``
        when spark-submit logged a non-zero one (cluster deploy mode), else spark-submit's return code
        (client mode: spark-submit's JVM is the driver). The provider's other "killed" outcomes, a
        standalone driver's ``KILLED`` state and a YARN application's, come from tracking a cluster-mode
        driver after submission, which this hook's caller does not do."""
        # private: the provider parses the driver pod's exit code into _spark_exit_code and says nothing else
        pod_code = self._spark_exit_code if self._is_kubernetes else None
        return pod_code if pod_code else self.returncode

    # Private override: the only place the provider hands over spark-submit's output before logging it.
    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        if self._kill_requested and self._submit_sp is not None and self._submit_sp.poll() is None:
            self._submit_sp.kill()
        super()._process_spark_submit_log(self._without_report(itr))

    def _without_report(self, itr: Iterator[Any]) -> Iterator[Any]:
        for line in itr:
            if str(line).startswith(REPORT_PREFIX):
                self.report = parse_report_line(str(line))
                continue
            yield redact_text(line, self.secrets) if isinstance(line, str) else line
