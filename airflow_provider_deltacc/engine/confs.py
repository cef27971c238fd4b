"""Set session confs for the length of a block, and give each operation a session of its own."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.engine.errors import InputError
from airflow_provider_deltacc.engine.redaction import REDACTED, hide_jvm_protocol_log, is_sensitive_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def explicit_confs(spark: SparkSession, keys: Iterable[str]) -> dict[str, str | None]:
    """Return the value set on the session for each key, None when unset (defaults do not count).

    One JVM call per key: ``spark.conf.getAll`` copies the whole map entry by entry over py4j and ends its
    iteration with a JVM exception, which costs more than the job it guards when operations are small.

    :param spark: the session.
    :param keys: the conf keys.
    """
    jconf: Any = spark._jsparkSession.sessionState().conf()
    return {key: str(jconf.getConfString(key)) if jconf.contains(key) else None for key in keys}


@contextmanager
def session_confs(spark: SparkSession, confs: Mapping[str, str]) -> Iterator[None]:
    """Set ``confs`` on the session inside the block; afterwards restore what was explicitly set before
    (or unset the key), even when the block raises.

    :param spark: the session.
    :param confs: conf key to value.
    """
    previous = explicit_confs(spark, confs)
    try:
        for key, value in confs.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def isolated_session(spark: SparkSession, spark_conf: Mapping[str, str]) -> SparkSession:
    """Return a child session (same JVM, SparkContext, catalog and Delta log cache; its own SQL confs).

    Delta's idempotent-write and commit-metadata settings are session confs, so two operations running at
    once in one process (threads, the in-process mode) would otherwise read each other's. Temporary views
    of the parent are not visible in the child; use catalog tables or global temporary views.

    :param spark: the parent session.
    :param spark_conf: runtime confs for the operation; a key equal to the parent's value is left alone.
    :raises InputError: if Spark rejects a runtime conf's value.
    """
    hide_jvm_protocol_log(spark_conf)
    child = spark.newSession()
    explicit = explicit_confs(spark, spark_conf)
    for key, value in spark_conf.items():
        if explicit[key] == value:
            continue
        try:
            child.conf.set(key, value)
        except Exception as exc:  # pyspark raises several types for static/core confs and bad values
            if not child.conf.isModifiable(key):
                # Static and core confs are fixed when the JVM starts (spark-submit --conf, or the session
                # builder in spark_job.main); a running in-process session cannot take them.
                log.warning("spark_conf %s cannot change in a running session; ignored: %s", key, exc)
                continue
            if is_sensitive_key(key):  # Spark's message may quote the value
                raise InputError(f"spark_conf.{key}", REDACTED, "is not accepted by Spark") from None
            raise InputError(f"spark_conf.{key}", value, f"is not accepted by Spark: {exc}") from exc
    return child
