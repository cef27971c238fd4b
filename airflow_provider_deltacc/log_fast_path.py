"""Moved to :mod:`airflow_provider_deltacc.delta_log.fast_path`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.delta_log.fast_path import (
    ANSWERED_BY,
    LOG_SAFE_READER_FEATURES,
    TXN_RETENTION_PROPERTY,
    LogAnswer,
    LogColumn,
    LogSnapshot,
    Verdict,
    answer_from_log,
    consult_log,
    empty_append_accepted,
    fast_path_verdict,
    find_committed_version,
    is_empty_append,
    log,
    log_may_answer,
    log_replay_supported,
    read_snapshot,
    txn_known_unrecorded,
)

__all__ = [
    "ANSWERED_BY",
    "LOG_SAFE_READER_FEATURES",
    "TXN_RETENTION_PROPERTY",
    "LogAnswer",
    "LogColumn",
    "LogSnapshot",
    "Verdict",
    "answer_from_log",
    "consult_log",
    "empty_append_accepted",
    "fast_path_verdict",
    "find_committed_version",
    "is_empty_append",
    "log",
    "log_may_answer",
    "log_replay_supported",
    "read_snapshot",
    "txn_known_unrecorded",
]

warnings.warn(
    "airflow_provider_deltacc.log_fast_path is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.delta_log.fast_path",
    DeprecationWarning,
    stacklevel=2,
)
