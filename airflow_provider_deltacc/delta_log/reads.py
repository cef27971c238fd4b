"""JVM-free reads of a Delta table's log, for sensors and triggers (the provider's log reader, see
:mod:`airflow_provider_deltacc.delta_log.log_reader`; delta-rs where it cannot).

Spark is never started here: the triggerer and the scheduler-side sensors read ``_delta_log``
directly. Tables must be addressed by storage location (path or URI); catalog names need Spark.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCInputError


def require_table_location(table: str, field_name: str = "table") -> Table:
    """The table at ``table`` when it is a path or URI delta-rs can open, else an input error.

    :param table: the sensor's table argument.
    :param field_name: the argument's name, for the error.
    :raises DeltaCCInputError: naming ``field_name`` for a catalog name or a malformed one.
    """
    try:
        checked = Table.of(table, field_name)
    except InputError as exc:
        raise DeltaCCInputError(str(exc), field=field_name, value=table) from None
    if checked.is_path:
        return checked
    raise DeltaCCInputError(
        f"{field_name}={table!r} looks like a catalog table name; this reads the Delta log with delta-rs, "
        "which needs the table's storage location (a path or URI such as s3://bucket/orders)",
        field=field_name,
        value=table,
    )


@dataclass(frozen=True)
class TableCondition:
    """What a sensor waits for; every given part must hold.

    :param after_version: a commit newer than this version exists.
    :param operation: a commit of this operation (``WRITE``, ``MERGE``, ``OPTIMIZE`` …) exists, newer
        than ``after_version`` when that is given.
    :param partition: the table has data in this partition (column → value, compared as strings).
    """

    after_version: int | None = None
    operation: str | None = None
    partition: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.after_version is None and not self.operation and not self.partition:
            raise DeltaCCInputError(
                "give at least one of after_version, operation or partition to wait for",
                field="after_version",
                value=None,
            )
        if self.after_version is not None and (
            not isinstance(self.after_version, int) or self.after_version < -1
        ):
            raise DeltaCCInputError(
                f"after_version={self.after_version!r} must be an integer >= -1",
                field="after_version",
                value=self.after_version,
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_table(
    table: Table, condition: TableCondition, storage_options: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """Return what satisfied the condition (version, operation, partition, timestamp), or None to wait.

    A table that does not exist yet simply does not satisfy the condition.
    """
    from airflow_provider_deltacc.contract.exceptions import TableNotFoundError
    from airflow_provider_deltacc.delta_log.log_reader import commit_infos, log_state

    try:
        state = log_state(table, storage_options, partitions=bool(condition.partition))
    except TableNotFoundError:
        return None
    version = state.version
    floor = -1 if condition.after_version is None else condition.after_version
    if version <= floor:
        return None
    match: dict[str, Any] = {"table": table.name, "version": version}
    if condition.operation:
        wanted = condition.operation.upper()
        history = commit_infos(table, storage_options, max(1, version - floor))
        newer = [h for h in history if h.get("version", -1) > floor]
        hits = [h for h in newer if str(h.get("operation", "")).upper() == wanted]
        if not hits:
            return None
        latest = max(hits, key=lambda h: h["version"])
        match.update(
            version=latest["version"], operation=latest["operation"], timestamp=latest.get("timestamp")
        )
    if condition.partition:
        wanted_partition = {k: str(v) for k, v in condition.partition.items()}
        present = state.partitions or ()
        if not any(all(p.get(k) == v for k, v in wanted_partition.items()) for p in present):
            return None
        match["partition"] = wanted_partition
    return match
