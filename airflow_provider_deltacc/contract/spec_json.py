"""The typed job spec as JSON: what crosses the spark-submit boundary, and nothing else.

An operator builds its :class:`~airflow_provider_deltacc.contract.spec.JobSpec` once; only a job submitted to
a Spark driver needs it as text, and :func:`spec_to_json` gives the dict that
:func:`~airflow_provider_deltacc.contract.spec_parse.parse_spec` reads back into an equal spec.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc.contract.spec import (
    DEFAULT_WHEN_MATCHED,
    DEFAULT_WHEN_NOT_MATCHED,
    AppendOptions,
    DeleteOptions,
    JobSpec,
    MergeClause,
    MergeOptions,
    OperationOptions,
    OptimizeOptions,
    OverwritePartitionsOptions,
    SourceSpec,
    SqlOptions,
    UpdateOptions,
    VacuumOptions,
)


def spec_to_json(spec: JobSpec) -> dict[str, Any]:
    """``spec`` as the JSON object the Spark job reads: ``parse_spec(spec_to_json(spec)) == spec``.

    A source function goes in the form the worker pickled it for the driver (``travelled``); one that never
    travelled cannot be written as JSON (it runs in this process: ``spark_connect`` or ``in_process``).

    :param spec: the job spec.
    :raises ValueError: for a source function that was not made to travel.
    """
    data: dict[str, Any] = {
        "operation": spec.operation,
        "table": spec.table.name,
        "source": None if spec.source is None else _source(spec.source),
        "options": options_to_json(spec.options),
        "commit_retry": spec.commit_retry.to_dict(),
    }
    if spec.txn is not None:
        data["txn"] = spec.txn.to_dict()
    if spec.spark_conf:
        data["spark_conf"] = dict(spec.spark_conf)
    if spec.storage_guard is not None:
        data["storage_guard"] = spec.storage_guard
    if spec.report_trail is not None:
        trail = spec.report_trail
        data["report_trail"] = {"run_token": trail.run_token, "report_dir": trail.report_dir}
    if spec.turn_service is not None:
        service = spec.turn_service
        data["turn_service"] = {
            "url": service.url,
            "token": service.token,
            "timeout_s": service.timeout_s,
            "fenced": service.fenced,
        }
    if spec.known_snapshot is not None:
        known = spec.known_snapshot
        data["known_snapshot"] = {
            "version": known.version,
            "partition_columns": list(known.partition_columns),
            "schema": known.schema,
            "txn_unrecorded": known.txn_unrecorded,
        }
    return data


def options_to_json(options: OperationOptions) -> dict[str, Any]:
    """An operation's options as the spec's ``options`` object."""
    if isinstance(options, AppendOptions):
        return {
            "create_if_missing": options.create_if_missing,
            "partition_by": list(options.partition_by),
            "merge_schema": options.merge_schema,
            "cluster_by": list(options.cluster_by),
        }
    if isinstance(options, OverwritePartitionsOptions):
        return {
            "partition_values": _partitions(options.partition_values),
            "max_partitions": options.max_partitions,
        }
    if isinstance(options, MergeOptions):
        return _merge(options)
    if isinstance(options, UpdateOptions):
        return {
            "set": dict(options.set),
            "set_values": dict(options.set_values),
            "condition": options.condition,
            "equals": dict(options.equals),
            "partition_values": _partitions(options.partition_values),
        }
    if isinstance(options, DeleteOptions):
        return {
            "condition": options.condition,
            "equals": dict(options.equals),
            "partition_values": _partitions(options.partition_values),
        }
    if isinstance(options, OptimizeOptions):
        return {
            "partition_values": _partitions(options.partition_values),
            "zorder_by": list(options.zorder_by),
            "full": options.full,
        }
    if isinstance(options, VacuumOptions):
        return {
            "retention_hours": options.retention_hours,
            "force": options.force,
            "dry_run": options.dry_run,
        }
    if isinstance(options, SqlOptions):
        return {
            "statement": options.statement,
            "args": dict(options.args),
            "op_class": options.op_class.value,
        }
    raise TypeError(f"no JSON form for {type(options).__name__}")


def _merge(options: MergeOptions) -> dict[str, Any]:
    pin = options.partition_pin
    data: dict[str, Any] = {
        "keys": list(options.keys) or None,
        "condition": options.condition,
        "dedup_order_by": options.dedup_order_by,
        "dedup_keys": list(options.dedup_keys),
        "partition_pin": list(pin) if isinstance(pin, tuple) else pin,
        "max_pin_values": options.max_pin_values,
    }
    # A default clause list is left out rather than written: an empty list means "no such clause".
    if options.when_matched != DEFAULT_WHEN_MATCHED:
        data["when_matched"] = [_clause(c, "set") for c in options.when_matched]
    if options.when_not_matched != DEFAULT_WHEN_NOT_MATCHED:
        data["when_not_matched"] = [_clause(c, "values") for c in options.when_not_matched]
    return data


def _clause(clause: MergeClause, assign_key: str) -> dict[str, Any]:
    data: dict[str, Any] = {"action": clause.action, "condition": clause.condition}
    if clause.assignments is not None:
        data[assign_key] = dict(clause.assignments)
    return data


def _partitions(values: tuple[dict[str, Any], ...] | None) -> list[dict[str, Any]] | None:
    return None if values is None else [dict(v) for v in values]


def _source(source: SourceSpec) -> dict[str, Any]:
    kind = source.kind
    if kind == "callable":
        travelled = source.function.travelled if source.function is not None else None
        if travelled is None:
            raise ValueError(
                "a source function runs in the worker's process; it has a JSON form only once it was made to "
                "travel to a Spark driver (spark_submit)"
            )
        return dict(travelled)
    if kind == "delta":
        return {"kind": kind, "path": source.path, "version": source.version}
    if kind == "table":
        return {"kind": kind, "name": source.name}
    if kind in ("parquet", "csv"):
        return {"kind": kind, "path": source.path, "options": dict(source.options), "schema": source.schema}
    if kind == "sql":
        return {"kind": kind, "query": source.query}
    return {"kind": kind, "rows": list(source.rows or ()), "schema": source.schema}
