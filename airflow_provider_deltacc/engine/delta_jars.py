"""Moved to :mod:`airflow_provider_deltacc.spark_jars.delta_jars`; this module re-exports its names and keeps
``python -m airflow_provider_deltacc.engine.delta_jars [--fetch]`` working (scripts, images and docs run it).
"""

from __future__ import annotations

import sys

from airflow_provider_deltacc.spark_jars.delta_jars import (
    FETCH_COMMAND,
    JAR_CACHE_ENV,
    SPARK_OWNED_GROUPS,
    DeltaCoordinates,
    DeltaJarsMissingError,
    cache_root,
    cached_jars,
    fetch,
    installed_coordinates,
    jar_dir,
    main,
    pyspark_home,
    resolve_into,
    shipped_by_spark,
    spark_artifact_ids,
)

__all__ = [
    "FETCH_COMMAND",
    "JAR_CACHE_ENV",
    "SPARK_OWNED_GROUPS",
    "DeltaCoordinates",
    "DeltaJarsMissingError",
    "cache_root",
    "cached_jars",
    "fetch",
    "installed_coordinates",
    "jar_dir",
    "main",
    "pyspark_home",
    "resolve_into",
    "shipped_by_spark",
    "spark_artifact_ids",
]

if __name__ == "__main__":
    sys.exit(main())
