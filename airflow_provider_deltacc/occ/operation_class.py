"""The class of an operation, as far as retrying a conflict is concerned.

Its own small module: the operators need it when a DAG file is parsed, the decision table only on
failure.
"""

from __future__ import annotations

from enum import StrEnum


class OperationClass(StrEnum):
    """What an operation does to a table, as far as retrying a conflict is concerned."""

    BLIND_APPEND = "blind_append"
    READ_MODIFY_WRITE = "read_modify_write"
    MAINTENANCE = "maintenance"
    SCHEMA_CHANGING = "schema_changing"
