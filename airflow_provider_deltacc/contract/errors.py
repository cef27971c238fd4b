"""The bad-input error, at its older path: it lives in :mod:`airflow_provider_deltacc.contract.exceptions`
with every other error of the core."""

from __future__ import annotations

from airflow_provider_deltacc.contract.exceptions import InputError, short_repr

__all__ = ["InputError", "short_repr"]
