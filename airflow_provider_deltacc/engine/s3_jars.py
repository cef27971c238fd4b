"""Moved to :mod:`airflow_provider_deltacc.spark_jars.s3_jars`; this module re-exports its names."""

from __future__ import annotations

from airflow_provider_deltacc.spark_jars.s3_jars import (
    SDK_MODULES,
    cached_s3_jars,
    fetch_s3_jars,
    hadoop_version,
    keep_s3_jar,
    s3_jar_dir,
    sdk_version,
)

__all__ = [
    "SDK_MODULES",
    "cached_s3_jars",
    "fetch_s3_jars",
    "hadoop_version",
    "keep_s3_jar",
    "s3_jar_dir",
    "sdk_version",
]
