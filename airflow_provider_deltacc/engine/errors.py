"""Moved to :mod:`airflow_provider_deltacc.contract.errors`; this module re-exports its names."""

from __future__ import annotations

from airflow_provider_deltacc.contract.errors import (
    InputError,
    short_repr,
)

__all__ = [
    "InputError",
    "short_repr",
]
