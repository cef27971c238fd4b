"""Operators that write to Delta tables through the bundled OCC job.

Importing this package is cheap: the operator modules load on first attribute access, and pyspark is
only ever imported on the Spark driver, never here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.api_support.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from airflow_provider_deltacc.hooks.submit_options import SparkSubmitOptions
    from airflow_provider_deltacc.operators.maintenance import DeltaOptimizeOperator, DeltaVacuumOperator
    from airflow_provider_deltacc.operators.write import (
        DeltaAppendOperator,
        DeltaDeleteOperator,
        DeltaMergeOperator,
        DeltaOverwritePartitionsOperator,
        DeltaSqlOperator,
        DeltaUpdateOperator,
    )

_MODULES = {
    "DeltaAppendOperator": "write",
    "DeltaOverwritePartitionsOperator": "write",
    "DeltaMergeOperator": "write",
    "DeltaUpdateOperator": "write",
    "DeltaDeleteOperator": "write",
    "DeltaSqlOperator": "write",
    "DeltaOptimizeOperator": "maintenance",
    "DeltaVacuumOperator": "maintenance",
    "SparkSubmitOptions": "airflow_provider_deltacc.hooks.submit_options",
}
__all__ = [
    "DeltaAppendOperator",
    "DeltaDeleteOperator",
    "DeltaMergeOperator",
    "DeltaOptimizeOperator",
    "DeltaOverwritePartitionsOperator",
    "DeltaSqlOperator",
    "DeltaUpdateOperator",
    "DeltaVacuumOperator",
    "SparkSubmitOptions",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
