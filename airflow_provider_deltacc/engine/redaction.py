"""Moved to :mod:`airflow_provider_deltacc.contract.redaction`; this module re-exports its names."""

from __future__ import annotations

from airflow_provider_deltacc.contract.redaction import (
    MIN_SECRET_LENGTH,
    REDACTED,
    SENSITIVE_KEY_RE,
    hide_jvm_protocol_log,
    is_sensitive_key,
    redact_conf,
    redact_text,
    sensitive_values,
)

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SENSITIVE_KEY_RE",
    "hide_jvm_protocol_log",
    "is_sensitive_key",
    "redact_conf",
    "redact_text",
    "sensitive_values",
]
