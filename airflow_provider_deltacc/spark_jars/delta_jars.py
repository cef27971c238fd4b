"""Locate the Delta Lake jars that match the installed pyspark.

The jars live in a cache directory, ``$DELTACC_JAR_CACHE`` or ``~/.cache/airflow-provider-deltacc/jars``,
one sub-directory per Maven coordinate. Only the set-up step
(:mod:`~airflow_provider_deltacc.spark_jars.jar_setup`, ``python -m
airflow_provider_deltacc.spark_jars.jar_setup --fetch``) downloads; every other caller just reads the cache
and fails with a message that names the set-up command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError

JAR_CACHE_ENV = "DELTACC_JAR_CACHE"
FETCH_COMMAND = "python -m airflow_provider_deltacc.spark_jars.jar_setup --fetch"


@dataclass(frozen=True)
class DeltaCoordinates:
    """The Maven coordinate of the delta-spark jar for one pyspark installation."""

    spark_minor: str
    scala_binary: str
    delta_version: str

    @property
    def artifact_id(self) -> str:
        return f"delta-spark_{self.spark_minor}_{self.scala_binary}"

    @property
    def maven(self) -> str:
        return f"io.delta:{self.artifact_id}:{self.delta_version}"


def pyspark_home() -> Path:
    """The directory of the installed pyspark package (it holds ``jars/`` and ``bin/``)."""
    dist = metadata.distribution("pyspark")
    return Path(str(dist.locate_file("pyspark")))


def _scala_binary_version(spark_jars: Path) -> str:
    for jar in spark_jars.glob("scala-library-*.jar"):
        full = jar.stem.removeprefix("scala-library-")
        return ".".join(full.split(".")[:2])
    return "2.13"


def installed_coordinates() -> DeltaCoordinates:
    """Derive the delta-spark coordinate from the installed ``pyspark`` and ``delta-spark`` packages."""
    spark_version = metadata.version("pyspark")
    delta_version = metadata.version("delta-spark")
    spark_minor = ".".join(spark_version.split(".")[:2])
    return DeltaCoordinates(
        spark_minor=spark_minor,
        scala_binary=_scala_binary_version(pyspark_home() / "jars"),
        delta_version=delta_version,
    )


def cache_root() -> Path:
    configured = os.environ.get(JAR_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "airflow-provider-deltacc" / "jars"


def jar_dir(coords: DeltaCoordinates | None = None) -> Path:
    coords = coords or installed_coordinates()
    return cache_root() / f"{coords.artifact_id}-{coords.delta_version}"


def cached_jars(coords: DeltaCoordinates | None = None) -> list[Path]:
    """The cached jars every Spark the provider starts gets: delta-spark first, its dependencies, then the
    S3 jars when the set-up step fetched them (:mod:`~airflow_provider_deltacc.spark_jars.s3_jars`) and the
    put-if-absent S3 log store when it built it (:mod:`~airflow_provider_deltacc.spark_jars.put_if_absent`);
    raise :class:`DeltaJarsMissingError` when the Delta jars are absent."""
    from airflow_provider_deltacc.spark_jars.put_if_absent import cached_log_store_jar
    from airflow_provider_deltacc.spark_jars.s3_jars import cached_s3_jars

    coords = coords or installed_coordinates()
    directory = jar_dir(coords)
    main_jar = directory / f"{coords.artifact_id}-{coords.delta_version}.jar"
    if not main_jar.is_file():
        raise DeltaJarsMissingError(
            f"Delta jar {coords.maven} is not in the jar cache {directory}. "
            f"Run the set-up step once: `{FETCH_COMMAND}` (or `make setup`); set {JAR_CACHE_ENV} "
            "to use another cache directory."
        )
    others = sorted(p for p in directory.glob("*.jar") if p != main_jar)
    log_store = cached_log_store_jar()
    return [main_jar, *others, *cached_s3_jars(), *([log_store] if log_store else [])]
