"""Moved to :mod:`airflow_provider_deltacc.contract.storage_safety`; this module re-exports its names."""

from __future__ import annotations

from airflow_provider_deltacc.contract.storage_safety import (
    DYNAMODB_LOG_STORE,
    LEGACY_LOG_STORE_CONF,
    OVERRIDE_ARGUMENT,
    OVERRIDE_ENV,
    S3_SCHEMES,
    SINGLE_DRIVER_LOG_STORE,
    StorageSafety,
    delta_rs_storage_safety,
    is_truthy,
    mixed_storage_safety,
    spark_storage_safety,
    table_scheme,
)

__all__ = [
    "DYNAMODB_LOG_STORE",
    "LEGACY_LOG_STORE_CONF",
    "OVERRIDE_ARGUMENT",
    "OVERRIDE_ENV",
    "S3_SCHEMES",
    "SINGLE_DRIVER_LOG_STORE",
    "StorageSafety",
    "delta_rs_storage_safety",
    "is_truthy",
    "mixed_storage_safety",
    "spark_storage_safety",
    "table_scheme",
]
