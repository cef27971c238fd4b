"""Moved to :mod:`airflow_provider_deltacc.deployment.connect_server`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.deployment.connect_server import (
    CONNECT_SERVER_CLASS,
    DEFAULT_PORT,
    main,
    server_command,
    server_environment,
)

__all__ = [
    "CONNECT_SERVER_CLASS",
    "DEFAULT_PORT",
    "main",
    "server_command",
    "server_environment",
]

warnings.warn(
    "airflow_provider_deltacc.connect_server is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.deployment.connect_server",
    DeprecationWarning,
    stacklevel=2,
)
