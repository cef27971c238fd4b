"""Locate the jars Spark needs for ``s3a://`` tables (the set-up step,
:mod:`~airflow_provider_deltacc.spark_jars.jar_setup`, fetches them).

pip's pyspark ships Hadoop's client but not ``hadoop-aws`` (the S3A filesystem) nor the AWS SDK it calls.
The set-up step fetches ``hadoop-aws`` at the version of pyspark's own Hadoop, and only the AWS SDK v2
modules S3A uses (S3, its transfer manager, STS and the Apache HTTP client: 38 jars, about 14 MB)
instead of the SDK's ``bundle`` that ``hadoop-aws`` names (about 650 MB). They live beside the Delta jars, in
``<jar cache>/hadoop-aws-<version>/``, and every Spark the provider starts gets them with the Delta jars,
so a task writing to S3 names no jar.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError
from airflow_provider_deltacc.spark_jars.delta_jars import cache_root, pyspark_home


def hadoop_version(spark_jars: Path | None = None) -> str:
    """The Hadoop version pyspark ships (from its ``hadoop-client-api`` jar)."""
    jars = spark_jars or pyspark_home() / "jars"
    for jar in jars.glob("hadoop-client-api-*.jar"):
        return jar.stem.removeprefix("hadoop-client-api-")
    raise DeltaJarsMissingError(f"pyspark's Hadoop client jar is not in {jars}: is pyspark installed whole?")


def s3_jar_dir(version: str | None = None) -> Path:
    return cache_root() / f"hadoop-aws-{version or hadoop_version()}"


def cached_s3_jars(version: str | None = None) -> list[Path]:
    """The cached S3 jars, ``hadoop-aws`` first; empty when the set-up step has not fetched them."""
    version = version or hadoop_version()
    directory = s3_jar_dir(version)
    main_jar = directory / f"hadoop-aws-{version}.jar"
    if not main_jar.is_file():
        return []
    return [main_jar, *sorted(p for p in directory.glob("*.jar") if p != main_jar)]
