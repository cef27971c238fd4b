"""Build a local, Delta-enabled SparkSession from the cached Delta jars. Its settings are in
:mod:`airflow_provider_deltacc.spark_jars.delta_conf`.

The worker's and the tests' code, never the Spark driver's: a driver's session comes from spark-submit, so
none of this travels in the bundle shipped to it (:mod:`airflow_provider_deltacc.hooks.bundle`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.redaction import hide_jvm_protocol_log
from airflow_provider_deltacc.spark_jars.connect_mode import running_classic_session
from airflow_provider_deltacc.spark_jars.delta_conf import (
    DELTA_SPARK_CONF,
    HANDLED_CONFLICT_LOGGERS,
    local_defaults,
)
from airflow_provider_deltacc.spark_jars.delta_jars import JAR_CACHE_ENV, cache_root, cached_jars
from airflow_provider_deltacc.spark_jars.put_if_absent import log_store_defaults
from airflow_provider_deltacc.spark_jars.spark_defaults import spark_defaults

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["in_process_session", "local_delta_session"]


def in_process_session(spark_conf: Mapping[str, str] | None = None) -> SparkSession:
    """The session of a job run in this process (the in-process mode): the running one, or a local Delta
    session started with ``spark_conf`` (py4j's protocol log kept from its secrets, as for a driver's).

    :param spark_conf: Spark settings for a new session.
    :raises InputError: when the Delta jars are not in the jar cache (the message says how to fetch them).
    """
    from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError, InputError

    hide_jvm_protocol_log(spark_conf)
    try:
        return local_delta_session(app_name="deltacc-job", extra_conf=dict(spark_conf or {}))
    except DeltaJarsMissingError as exc:
        raise InputError(JAR_CACHE_ENV, str(cache_root()), str(exc)) from None


def local_delta_session(
    *,
    app_name: str = "deltacc",
    master: str = "local[2]",
    warehouse_dir: str | None = None,
    extra_conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """Return a local SparkSession with the Delta extension and catalog, using the cached jars, and the
    put-if-absent S3 log store as Delta's S3 log store unless ``extra_conf`` or ``spark-defaults.conf`` sets
    one (:func:`~airflow_provider_deltacc.spark_jars.put_if_absent.log_store_defaults`).

    If a session is already active in this process it is returned (Spark allows one JVM per process);
    the Delta settings are static, so a session started without them is rejected.

    :param app_name: Spark application name.
    :param master: Spark master URL; ``local[2]`` fits a 2-core laptop or CI machine.
    :param warehouse_dir: directory for managed tables (``spark.sql.warehouse.dir``).
    :param extra_conf: additional Spark settings, applied last.
    :param log_level: log level of the Spark context.
    """
    from pyspark.sql import SparkSession

    # The driver's Python workers must use this interpreter, not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        # A local driver only needs loopback; binding elsewhere is slow and may be blocked.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    active = running_classic_session()
    if active is not None:
        extensions = active.conf.get("spark.sql.extensions", "") or ""
        if "DeltaSparkSessionExtension" not in extensions:
            raise RuntimeError(
                "A SparkSession without the Delta extension is already running in this process; "
                "stop it before calling local_delta_session()."
            )
        return active

    jars = ",".join(str(p) for p in cached_jars())
    builder = SparkSession.builder.appName(app_name).master(master).config("spark.jars", jars)
    log_store = log_store_defaults({**spark_defaults(), **(extra_conf or {})})
    settings = {**local_defaults(master), "spark.driver.memory": "1g", **DELTA_SPARK_CONF, **log_store}
    for key, value in settings.items():
        builder = builder.config(key, value)
    if warehouse_dir:
        builder = builder.config("spark.sql.warehouse.dir", warehouse_dir)
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse_dir}")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    _quiet_handled_conflict_logs(session)
    return session


def _quiet_handled_conflict_logs(session: SparkSession) -> None:
    jvm = session.sparkContext._jvm
    if jvm is None:
        return
    level = jvm.org.apache.logging.log4j.Level.OFF
    for name in HANDLED_CONFLICT_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
