"""Concurrent, exactly-once writes to Delta Lake tables from Apache Airflow."""

from __future__ import annotations

__version__ = "0.1.0"
