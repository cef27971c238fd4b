"""What a task read and wrote, told to Airflow: Delta tables as assets (``assets``) and OpenLineage
datasets (``openlineage``).

``airflow_provider_deltacc.lineage`` itself still gives the names of
:mod:`airflow_provider_deltacc.lineage.openlineage`, where they lived before they had
a room; each loads on first access, so importing the room stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.api_support.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from airflow_provider_deltacc.lineage.openlineage import (
        dataset_name,
        operator_lineage,
    )

_MODULES = {
    "dataset_name": "openlineage",
    "operator_lineage": "openlineage",
}
__all__ = [
    "dataset_name",
    "operator_lineage",
]

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
