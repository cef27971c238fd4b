"""The conflicts page's SQL text made into statements: list parameters expanded, time parameters typed."""

from __future__ import annotations

import re
from typing import Any

#: The parameters that hold a push time (typed as Airflow's timestamps, so SQLite compares them as it stores
#: them).
_TIMES = ("since", "until", "fill_since")


def bound(sql: str, *, pushed_out: bool = False) -> Any:
    """``sql`` with its list parameters (``IN :name``) expanded and its times (:data:`_TIMES`) typed as
    Airflow's ``xcom.timestamp`` is.

    :param sql: SQL text with ``:name`` parameters.
    :param pushed_out: the statement returns a push time as ``pushed``: read it as a time (SQLite returns
        text).
    """
    from airflow.models.xcom import XComModel
    from sqlalchemy import bindparam, text

    params: list[Any] = [bindparam(name, expanding=True) for name in re.findall(r"\bIN :(\w+)", sql)]
    timestamp = XComModel.__table__.c.timestamp.type
    params += [bindparam(name, type_=timestamp) for name in _TIMES if f":{name}" in sql]
    statement = text(sql).bindparams(*params)
    return statement.columns(pushed=timestamp) if pushed_out else statement
