"""Moved to :mod:`airflow_provider_deltacc.contract.ddl`; this module re-exports its names."""

from __future__ import annotations

from airflow_provider_deltacc.contract.ddl import (
    ddl_column_names,
    delta_primitive_type,
    split_ddl_columns,
)

__all__ = [
    "ddl_column_names",
    "delta_primitive_type",
    "split_ddl_columns",
]
