"""Moved to :mod:`airflow_provider_deltacc.contract.spec`; this module re-exports its names."""

from __future__ import annotations

from airflow_provider_deltacc.contract.spec import (
    DEFAULT_WHEN_MATCHED,
    DEFAULT_WHEN_NOT_MATCHED,
    PARTITION_AND_CLUSTER,
    SOURCE_KINDS,
    STORAGE_GUARDS,
    AppendOptions,
    DeleteOptions,
    JobSpec,
    MergeClause,
    MergeOptions,
    OperationOptions,
    OptimizeOptions,
    OutcomeSpec,
    OverwritePartitionsOptions,
    PartitionValues,
    SourceSpec,
    SqlOptions,
    UpdateOptions,
    VacuumOptions,
)

__all__ = [
    "DEFAULT_WHEN_MATCHED",
    "DEFAULT_WHEN_NOT_MATCHED",
    "PARTITION_AND_CLUSTER",
    "SOURCE_KINDS",
    "STORAGE_GUARDS",
    "AppendOptions",
    "DeleteOptions",
    "JobSpec",
    "MergeClause",
    "MergeOptions",
    "OperationOptions",
    "OptimizeOptions",
    "OutcomeSpec",
    "OverwritePartitionsOptions",
    "PartitionValues",
    "SourceSpec",
    "SqlOptions",
    "UpdateOptions",
    "VacuumOptions",
]
