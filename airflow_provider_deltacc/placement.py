"""Moved to :mod:`airflow_provider_deltacc.deployment.placement`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.deployment.placement import (
    K8S_EXECUTOR_POD_ENV,
    LOCAL_EXECUTORS,
    executor_names,
    running_in_dag_test,
    tasks_may_run_elsewhere,
)

__all__ = [
    "K8S_EXECUTOR_POD_ENV",
    "LOCAL_EXECUTORS",
    "executor_names",
    "running_in_dag_test",
    "tasks_may_run_elsewhere",
]

warnings.warn(
    "airflow_provider_deltacc.placement is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.deployment.placement",
    DeprecationWarning,
    stacklevel=2,
)
