"""Triggers that run in the triggerer; they read Delta logs with delta-rs, never with a JVM.

Importing this package is cheap: each class's module loads on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.api_support.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger
    from airflow_provider_deltacc.triggers.table_version import DeltaTableTrigger

_MODULES = {
    "DeltaGateTrigger": "gate",
    "DeltaTableTrigger": "table_version",
}
__all__ = [
    "DeltaGateTrigger",
    "DeltaTableTrigger",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
