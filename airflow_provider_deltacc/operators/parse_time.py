"""Parse-time warnings for what one operator shows on its own: no I/O, no DAG walk, a few comparisons.

They go through :func:`warnings.warn` with :class:`DeltaConflictWarning`, which Airflow's DAG processor
records with the DAG file (and ``python -W error::...DeltaConflictWarning`` turns into errors in CI).
Pairs need the whole picture: that is the advisor's job (``deltacc-advisor``). Mapped operators are not
constructed at parse time, so ``.partial(...).expand(...)`` tasks are only judged by the advisor.
"""

from __future__ import annotations

import warnings
from typing import Any

from airflow_provider_deltacc.api_support.arguments import dag_file_stacklevel
from airflow_provider_deltacc.contract.op_kinds import kinds_of, statement_kind
from airflow_provider_deltacc.contract.operations import OPERATIONS
from airflow_provider_deltacc.exceptions import DeltaCCInputError, DeltaConflictWarning

#: Delta's default ``delta.deletedFileRetentionDuration``.
DEFAULT_RETENTION_HOURS = 168.0


def warn_conflict(message: str) -> None:
    """Emit one :class:`DeltaConflictWarning` pointing at the DAG file's line.

    :param message: what conflicts, with whom, and the fix.
    """
    warnings.warn(message, DeltaConflictWarning, stacklevel=dag_file_stacklevel())


def check_merge(task_id: str, table: Any, partition_pin: Any) -> None:
    """A MERGE without partition pin reads the whole table: any concurrent writer on it can fail it.

    :param task_id: the task.
    :param table: its table.
    :param partition_pin: its ``partition_pin``.
    """
    if partition_pin is None:
        warn_conflict(
            f"{task_id}: MERGE into {table} with partition_pin=None reads the whole table; a concurrent "
            "append or DML on any partition will fail it with ConcurrentAppendException. Pin it "
            "(partition_pin='keyed' with the partition column among the keys, or 'auto'), or land concurrent "
            "sources with staging_append_then_merge; run deltacc-advisor to see which tasks overlap it."
        )


def check_clustered_pin(task_id: str, table: Any, cluster_by: Any, pin: Any) -> None:
    """A pin on a table known to be liquid-clustered pins nothing: say once what protects it instead.

    Measured on OSS Delta (``docs/clustering.md``): a clustered table has no partitions, and predicates on
    its clustering columns do not narrow the conflict check, so any commit during a MERGE/UPDATE/DELETE
    fails it with ConcurrentAppendException.

    :param task_id: the task.
    :param table: its table.
    :param cluster_by: the clustering columns the task or group declares (nothing is judged without them).
    :param pin: its ``partition_pin`` / ``partition_values`` (None: no pin, nothing to say).
    """
    if not cluster_by or pin is None:
        return
    warn_conflict(
        f"{task_id}: {table} is liquid-clustered by {list(cluster_by)} and has no partitions, so the pin "
        f"{pin!r} keeps no concurrent writer away; in open-source Delta predicates on clustering columns do "
        "not narrow conflicts either (any commit during a MERGE, UPDATE or DELETE fails it with "
        "ConcurrentAppendException). What works: land concurrent sources with staging_append_then_merge, "
        "let such writers take turns through their write leases (on by default), or "
        "declare write windows. See docs/clustering.md."
    )


def check_vacuum(task_id: str, table: Any, retention_hours: Any, force: Any) -> None:
    """A forced VACUUM below Delta's default retention can delete files of writers that run longer.

    :param task_id: the task.
    :param table: its table.
    :param retention_hours: its ``retention_hours`` (a template is not judged).
    :param force: its ``force``.
    """
    if force is not True or isinstance(retention_hours, bool) or not isinstance(retention_hours, int | float):
        return
    if retention_hours < DEFAULT_RETENTION_HOURS:
        warn_conflict(
            f"{task_id}: VACUUM of {table} with force=True and retention_hours={retention_hours:g} (below "
            f"Delta's default {DEFAULT_RETENTION_HOURS:g} h) can delete files a writer has written and not "
            f"yet committed if it runs longer than {retention_hours:g} h, and files old snapshots still "
            "read. Keep the table's retention and force=False."
        )


def one_statement(task_id: str, statement: str) -> None:
    """Refuse a statement text that is not one statement, when the DAG is parsed (see
    :func:`~airflow_provider_deltacc.contract.spec_fields.check_one_statement`).

    :param task_id: the task.
    :param statement: its statement.
    :raises DeltaCCInputError: naming ``statement``.
    """
    from airflow_provider_deltacc.contract.exceptions import SpecError
    from airflow_provider_deltacc.contract.spec_fields import check_one_statement

    try:
        check_one_statement("statement", statement)
    except SpecError as exc:
        raise DeltaCCInputError(f"{task_id}: {exc}", field="statement", value=statement) from None


def check_sql(task_id: str, table: Any, statement: Any) -> None:
    """Refuse more than one statement; warn that OPTIMIZE/VACUUM as plain SQL skips the maintenance gate:
    concurrent writers are not waited for.

    :param task_id: the task.
    :param table: its table.
    :param statement: its statement (a template is not judged).
    """
    if isinstance(statement, str) and "{{" not in statement:
        one_statement(task_id, statement)
        kind = statement_kind(statement)
        maintenance = [op for op in OPERATIONS.values() if op.is_maintenance and kind in kinds_of(op.name)]
        if maintenance:
            verb = maintenance[0].verb
            operator = f"Delta{maintenance[0].name.capitalize()}Operator"
            warn_conflict(
                f"{task_id}: {verb} of {table} through DeltaSqlOperator does not wait for writers (no "
                f"maintenance gate), so it can fail concurrent DML or delete their files; use {operator} or "
                "table_maintenance, which wait for writer leases and declared write windows."
            )
