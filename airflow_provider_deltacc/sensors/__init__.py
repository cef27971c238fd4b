"""Sensors on Delta tables; they read the Delta log with delta-rs, never with a JVM.

Importing this package is cheap: each class's module loads on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.api_support.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from airflow_provider_deltacc.sensors.table_version import DeltaTableVersionSensor
    from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor

_MODULES = {
    "DeltaTableVersionSensor": "table_version",
    "DeltaWriteWindowSensor": "write_window",
}
__all__ = [
    "DeltaTableVersionSensor",
    "DeltaWriteWindowSensor",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
