"""The provider's put-if-absent Delta log store for S3: its jar, built from the Java source shipped in this
package, and the settings that make it the S3 log store of every Spark the provider starts.

``io.deltacc.storage.S3PutIfAbsentLogStore`` (``java/io/deltacc/storage/S3PutIfAbsentLogStore.java``) creates
each new commit file with S3 conditional writes (Hadoop 3.5 S3A's ``createFile()`` option
``fs.option.create.conditional.overwrite``), so of two drivers racing for one version exactly one wins and the
other's Delta retries at the next version, as on HDFS, ABFS or GCS. The set-up step (``jar_setup --fetch``)
compiles it with ``javac`` against the cached ``delta-storage`` jar and pyspark's Hadoop client into
``<jar cache>/deltacc-log-store-<digest>/``; the digest covers the source and both versions, so a changed
source gets a jar of its own and an existing one is never touched. Every other caller only reads the cache.

Plain Python, no pyspark import.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from airflow_provider_deltacc.contract.storage_safety import (
    LEGACY_LOG_STORE_CONF,
    PUT_IF_ABSENT_LOG_STORE,
    S3_SCHEMES,
)

#: The S3 schemes whose log store the provider sets (``s3n`` has no Hadoop 3 file system).
DEFAULT_SCHEMES = ("s3a", "s3")
#: Set to ``false`` (in ``spark_conf``, ``spark-defaults.conf`` or the environment) to keep Delta's own S3
#: log store: the provider then serializes the writers of S3 tables again.
SWITCH_CONF = "spark.deltacc.putIfAbsentLogStore.enabled"
JAR_NAME = "deltacc-log-store.jar"
_SOURCE = ("java", "io", "deltacc", "storage", "S3PutIfAbsentLogStore.java")


def java_source() -> Path:
    """The Java source of the log store, as installed with the package."""
    return Path(str(resources.files("airflow_provider_deltacc.spark_jars").joinpath(*_SOURCE)))


def jar_dir() -> Path:
    """Where the jar of this source, for these Delta and Hadoop versions, lives in the jar cache."""
    from airflow_provider_deltacc.spark_jars.delta_jars import cache_root, installed_coordinates
    from airflow_provider_deltacc.spark_jars.s3_jars import hadoop_version

    digest = hashlib.sha256(java_source().read_bytes())
    digest.update(f"{installed_coordinates().maven}|hadoop-{hadoop_version()}".encode())
    return cache_root() / f"deltacc-log-store-{digest.hexdigest()[:12]}"


def cached_log_store_jar() -> Path | None:
    """The built jar, or None when the set-up step has not built it (the provider then keeps Delta's own
    S3 log store and serializes the writers of S3 tables)."""
    try:
        jar = jar_dir() / JAR_NAME
    except Exception:  # no pyspark or Delta installed here: nothing to put on a class path
        return None
    return jar if jar.is_file() else None


def user_log_store(conf: Mapping[str, str]) -> str | None:
    """The log store setting the user made for S3 (``key=value``), or None when there is none.

    :param conf: the Spark settings the driver will have, as far as they are known.
    """
    for key in (LEGACY_LOG_STORE_CONF, *(f"spark.delta.logStore.{s}.impl" for s in sorted(S3_SCHEMES))):
        value = str(conf.get(key) or "").strip()
        if value:
            return f"{key}={value}"
    return None


def switched_off(conf: Mapping[str, str]) -> bool:
    """Whether :data:`SWITCH_CONF` turns the put-if-absent log store off.

    :param conf: the Spark settings the driver will have, as far as they are known.
    """
    return str(conf.get(SWITCH_CONF, "true")).strip().lower() in ("false", "0", "no", "off")


def log_store_defaults(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings that make the put-if-absent log store Delta's S3 log store: none when the user set a log
    store of their own (a DynamoDB one, Delta's ``spark.delta.logStore.class``, anything), turned it off with
    :data:`SWITCH_CONF`, or its jar is not built.

    :param conf: the Spark settings the driver will have, as far as they are known (``spark_conf``, the
        ``spark-defaults.conf`` spark-submit reads); they win over these defaults.
    """
    known = dict(conf or {})
    if user_log_store(known) or switched_off(known) or cached_log_store_jar() is None:
        return {}
    return {f"spark.delta.logStore.{scheme}.impl": PUT_IF_ABSENT_LOG_STORE for scheme in DEFAULT_SCHEMES}
