"""Set session confs for the length of a block, and give each operation a session of its own."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.redaction import REDACTED, hide_jvm_protocol_log, is_sensitive_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def explicit_confs(spark: SparkSession, keys: Iterable[str]) -> dict[str, str | None]:
    """Return the value set on the session for each key, None when unset (defaults do not count).

    :param spark: the session.
    :param keys: the conf keys.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    return backend_for(spark).explicit_confs(tuple(keys))


@contextmanager
def session_confs(spark: SparkSession, confs: Mapping[str, str]) -> Iterator[None]:
    """Set ``confs`` on the session inside the block; afterwards restore what was explicitly set before
    (or unset the key), even when the block raises.

    :param spark: the session.
    :param confs: conf key to value.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    backend = backend_for(spark)
    previous = backend.explicit_confs(tuple(confs))
    try:
        backend.apply_confs(confs)
        yield
    except BaseException:
        restore_confs(spark, previous, failing=True)
        raise
    restore_confs(spark, previous)


def restore_confs(spark: SparkSession, previous: Mapping[str, str | None], *, failing: bool = False) -> None:
    """Put back the settings ``previous`` names (unset a key whose value is None).

    :param spark: the session.
    :param previous: conf key to the value to restore, None to unset.
    :param failing: the block that changed them raised: a restore that fails too is logged, not raised, so
        the block's own error says what happened (a Spark Connect session lost with its server cannot be
        restored, and its ``NO_ACTIVE_SESSION`` would hide why the block failed).
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    try:
        backend_for(spark).apply_confs(previous)
    except Exception:
        if not failing:
            raise
        log.debug("could not restore the session's settings after the block failed", exc_info=True)


def isolated_session(spark: SparkSession, spark_conf: Mapping[str, str]) -> SparkSession:
    """Return a child session (same JVM, SparkContext, catalog and Delta log cache; its own SQL confs).

    Delta's idempotent-write and commit-metadata settings are session confs, so two operations running at
    once in one process (threads, the in-process mode) would otherwise read each other's. Temporary views
    of the parent are not visible in the child; use catalog tables or global temporary views.

    :param spark: the parent session (a classic one: a Spark Connect session has no children).
    :param spark_conf: runtime confs for the operation; a key the child already has (a static setting the
        application started with) is left alone.
    :raises InputError: if Spark rejects a runtime conf's value.
    """
    hide_jvm_protocol_log(spark_conf)
    child = spark.newSession()
    # Compared with the child, not the parent: a new session starts from the application's settings, not
    # from the parent's runtime ones, and the parent may itself be an earlier operation's child (pyspark
    # makes each new session the thread's active one).
    for key, value in runtime_confs(child, spark_conf).items():
        set_runtime_conf(child, key, value)
    return child


def runtime_confs(spark: SparkSession, spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The settings of ``spark_conf`` that differ from what ``spark`` has set.

    :param spark: the session.
    :param spark_conf: the wanted settings.
    """
    explicit = explicit_confs(spark, spark_conf)
    return {key: value for key, value in spark_conf.items() if explicit[key] != value}


def set_runtime_conf(spark: SparkSession, key: str, value: str) -> bool:
    """Set one setting on a running session; False (with a warning) when it is fixed at start-up.

    :param spark: the session.
    :param key: the setting.
    :param value: its value.
    :raises InputError: if Spark rejects the value of a runtime setting.
    """
    try:
        spark.conf.set(key, value)
    except Exception as exc:  # pyspark raises several types for static/core confs and bad values
        if not spark.conf.isModifiable(key):
            # Static and core confs are fixed when the JVM starts (spark-submit --conf, the session builder in
            # spark_job.main, the Spark Connect server's own settings); a running session cannot take them.
            log.warning(
                "spark_conf %s cannot change in a running session; ignored: %s", key, _first_line(exc)
            )
            return False
        if is_sensitive_key(key):  # Spark's message may quote the value
            raise InputError(f"spark_conf.{key}", REDACTED, "is not accepted by Spark") from None
        raise InputError(f"spark_conf.{key}", value, f"is not accepted by Spark: {exc}") from exc
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
