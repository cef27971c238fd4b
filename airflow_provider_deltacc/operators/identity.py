"""Exactly-once txn identities for Airflow tasks, stable across tries.

Delta skips a write whose ``(txnAppId, txnVersion)`` it has already committed, so the identity must
be the same on every try of one task instance and different for work that must really land again.
XCom is cleared between tries in Airflow 3, so the identity is derived, not stored:

``run`` (default)
    app id ``airflow/<dag_id>/<task_id>/<map_index>/<run_id>``, version 1. Every task instance writes
    exactly once; backfills and re-runs of old intervals are new runs, so they are never mistaken for
    duplicates. Each run leaves one small SetTransaction entry in the table log; set the table property
    ``delta.setTransactionRetentionDuration`` (e.g. ``interval 30 days``) to expire old ones.
``interval``
    app id ``airflow/<dag_id>/<task_id>/<map_index>``, version = the end of the data interval (or the
    logical date, or the run's ``run_after``) in epoch seconds. One entry per task; versions grow with
    the schedule. A backfill of an *older* interval then has a lower version and is skipped as a
    duplicate (and reported as such), so use it only for tables that are never backfilled.

Both can be overridden with explicit ``txn_app_id``/``txn_version`` on the operator.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_deltacc.exceptions import DeltaCCInputError

if TYPE_CHECKING:
    from airflow.sdk import Context

IdentityStrategy = Literal["run", "interval"]
STRATEGIES: tuple[str, ...] = ("run", "interval")


def _task_key(context: Context) -> str:
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    return f"airflow/{ti.dag_id}/{ti.task_id}/{-1 if map_index is None else map_index}"


def _interval_version(context: Context) -> int:
    moment: Any = None
    for key in ("data_interval_end", "logical_date"):
        moment = context.get(key)
        if moment is not None:
            break
    if moment is None:
        moment = getattr(context.get("dag_run"), "run_after", None)
    if not isinstance(moment, datetime):
        raise DeltaCCInputError(
            "txn_identity='interval' needs a data interval, logical date or run_after on the run; "
            "use txn_identity='run' for this DAG",
            field="txn_identity",
            value="interval",
        )
    return int(moment.timestamp())


def derive_txn_identity(context: Context, strategy: str = "run") -> tuple[str, int]:
    """Return ``(app_id, version)`` for the running task instance.

    :param context: the task's Airflow context.
    :param strategy: ``run`` or ``interval``; see the module docstring.
    """
    if strategy == "run":
        return f"{_task_key(context)}/{context['run_id']}", 1
    if strategy == "interval":
        return _task_key(context), _interval_version(context)
    raise DeltaCCInputError(
        f"txn_identity={strategy!r} is not supported; use one of {', '.join(STRATEGIES)}",
        field="txn_identity",
        value=strategy,
    )
