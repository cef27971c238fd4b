"""JVM-free reads of a Delta table's log with delta-rs: the table's facts and commits for sensors
and triggers (``reads``), the answer a job gets before any Spark starts (``fast_path``), and a job's
outcome learnt from the log when its report never arrived (``outcome_recovery``).

``airflow_provider_deltacc.delta_log`` itself still gives the names of
:mod:`airflow_provider_deltacc.delta_log.reads`, where they lived before they had
a room; each loads on first access, so importing the room stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.api_support.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from airflow_provider_deltacc.delta_log.reads import (
        TableCondition,
        check_table,
        require_table_location,
    )

_MODULES = {
    "require_table_location": "reads",
    "TableCondition": "reads",
    "check_table": "reads",
}
__all__ = [
    "TableCondition",
    "check_table",
    "require_table_location",
]

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
