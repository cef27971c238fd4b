"""TaskFlow decorators: ``@task.delta_merge``, ``@task.delta_append``, ``@task.delta_overwrite_partitions``.

Registered under ``task-decorators`` in the provider info, so ``from airflow.sdk import task`` finds them.
Importing this package is cheap: the decorators' module loads on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.api_support.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from airflow_provider_deltacc.decorators.delta import (
        delta_append_task,
        delta_merge_task,
        delta_overwrite_partitions_task,
    )

_MODULES = {
    "delta_append_task": "delta",
    "delta_merge_task": "delta",
    "delta_overwrite_partitions_task": "delta",
}
__all__ = ["delta_append_task", "delta_merge_task", "delta_overwrite_partitions_task"]


__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
