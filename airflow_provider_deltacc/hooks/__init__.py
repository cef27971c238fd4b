"""Hooks: submit the bundled Delta job through Spark.

Importing this package is cheap: each class's module loads on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.api_support.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
    from airflow_provider_deltacc.hooks.submit_options import SparkSubmitOptions

_MODULES = {
    "DeltaCCHook": "deltacc",
    "SparkSubmitOptions": "submit_options",
}
__all__ = [
    "DeltaCCHook",
    "SparkSubmitOptions",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
