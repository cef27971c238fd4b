"""Parse and validate a job spec completely, before any Spark work; pyspark-free.

Shape::

    {"operation": "append|overwrite_partitions|merge|update|delete|optimize|vacuum|sql",
     "table": "<path or catalog name>",
     "source": {"kind": "delta|table|parquet|csv|sql|rows|callable", ...} | null,
     "options": {...},  "commit_retry": {...},  "txn": {"app_id": "...", "version": 7} | null,
     "spark_conf": {...},  "storage_guard": "exclusive_lease|override" | null,
     "outcome": {"run_token": "<hex>", "report_dir": "<path or URI>" | null} | null,
     "turn_service": {"url": "http://host:port", "token": "<secret>", "timeout_s": 1800, "fenced": false}
        | null}

Every problem raises :class:`SpecError` naming the field, the bad value and the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.exceptions import InputError, SpecError
from airflow_provider_deltacc.contract.operations import OPERATIONS, OperationClass
from airflow_provider_deltacc.contract.source_function import SourceFunction, from_travel_form
from airflow_provider_deltacc.contract.spec import (
    DEFAULT_WHEN_MATCHED,
    DEFAULT_WHEN_NOT_MATCHED,
    PARTITION_AND_CLUSTER,
    SOURCE_KINDS,
    STORAGE_GUARDS,
    AppendOptions,
    DeleteOptions,
    JobSpec,
    MergeClause,
    MergeOptions,
    OperationOptions,
    OptimizeOptions,
    OutcomeSpec,
    OverwritePartitionsOptions,
    SourceSpec,
    SqlOptions,
    TurnServiceSpec,
    UpdateOptions,
    VacuumOptions,
)
from airflow_provider_deltacc.contract.spec_fields import Fields, check_one_statement
from airflow_provider_deltacc.contract.table import CATALOG_NAME_RE, check_table_name
from airflow_provider_deltacc.contract.txn import TxnIdentity

__all__ = ["parse_spec"]

TOP_LEVEL = (
    "operation",
    "table",
    "source",
    "options",
    "commit_retry",
    "txn",
    "spark_conf",
    "storage_guard",
    "outcome",
    "turn_service",
)
#: Top-level fields by their names before the rename -> their names now.
RENAMED = {"retry_policy": "commit_retry"}
_RUN_TOKEN_RE = re.compile(r"^[0-9a-f]{8,64}$")
#: The longest VACUUM retention accepted (100 years); beyond it Delta's millisecond arithmetic overflows.
MAX_RETENTION_HOURS = 876_000.0


def parse_spec(spec: str | bytes | Mapping[str, Any] | JobSpec) -> JobSpec:
    """Validate a job spec (a dict or its JSON text) and return the typed :class:`JobSpec`; a typed spec is
    returned as it is (it was validated when it was built).

    :param spec: the spec.
    :raises SpecError: on the first problem found.
    """
    if isinstance(spec, JobSpec):
        return spec
    data: Any = dict(spec) if isinstance(spec, Mapping) else spec
    if isinstance(spec, str | bytes):
        try:
            data = json.loads(spec)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            text = spec if isinstance(spec, str) else spec.decode("utf-8", "replace")
            raise SpecError("<spec>", text, f"is not valid JSON ({exc}); pass one JSON object") from None
    top = Fields(data, "")
    for old, new in RENAMED.items():
        if old in top.data:
            raise SpecError(old, top.data[old], f"is called {new}: name the field {new}")
    top.only(TOP_LEVEL, "a job spec")
    operation = top.data.get("operation")
    if operation not in OPERATIONS:
        raise SpecError("operation", operation, f"unknown operation; use one of {', '.join(OPERATIONS)}")
    try:
        table = check_table_name(top.data.get("table"))
        txn = None if top.data.get("txn") is None else TxnIdentity.from_dict(top.data["txn"])
    except SpecError:
        raise
    except InputError as exc:
        raise SpecError(exc.field, exc.value, exc.message) from None
    if txn is not None and OPERATIONS[operation].is_maintenance:
        raise SpecError(
            "txn",
            top.data["txn"],
            f"{operation} records no transaction identity (it is idempotent); remove txn",
        )
    source = _source(top, operation)
    options = _OPTIONS[operation](Fields(top.data.get("options") or {}, "options"))
    _cross_check(options)
    return JobSpec(
        operation=operation,
        table=table,
        options=options,
        source=source,
        commit_retry=_commit_retry(top),
        txn=txn,
        spark_conf=top.mapping("spark_conf", values="conf"),
        storage_guard=_storage_guard(top.data.get("storage_guard")),
        outcome=_outcome(top.data.get("outcome")),
        turn_service=_turn_service(top.data.get("turn_service")),
    )


def _outcome(raw: Any) -> OutcomeSpec | None:
    if raw is None:
        return None
    fields = Fields(raw, "outcome")
    fields.only(("run_token", "report_dir"), "outcome")
    token = fields.data.get("run_token")
    if not isinstance(token, str) or not _RUN_TOKEN_RE.match(token):
        raise SpecError("outcome.run_token", token, "must be 8 to 64 lowercase hex digits, e.g. uuid4().hex")
    report_dir = fields.data.get("report_dir")
    if report_dir is not None and (not isinstance(report_dir, str) or not report_dir.strip()):
        raise SpecError("outcome.report_dir", report_dir, "must be a directory path or URI, or null")
    return OutcomeSpec(run_token=token, report_dir=report_dir)


def _turn_service(raw: Any) -> TurnServiceSpec | None:
    if raw is None:
        return None
    fields = Fields(raw, "turn_service")
    fields.only(("url", "token", "timeout_s", "fenced"), "turn_service")
    url = fields.string("url", required=True)
    assert url is not None
    if not url.startswith("http://"):
        raise SpecError("turn_service.url", url, "must be the service's http://host:port address")
    token = fields.string("token", required=True)
    assert token is not None
    timeout_s = fields.number("timeout_s")
    fenced = fields.boolean("fenced", False)
    return TurnServiceSpec(url, token, 1800.0 if timeout_s is None else timeout_s, fenced)


def _storage_guard(raw: Any) -> str | None:
    if raw is None or raw in STORAGE_GUARDS:
        return raw
    raise SpecError(
        "storage_guard",
        raw,
        f"must be one of {', '.join(STORAGE_GUARDS)} or null (see the storage safety docs)",
    )


def _commit_retry(top: Fields) -> CommitRetryPolicy:
    """``commit_retry``, the in-job retry policy."""
    name = "commit_retry"
    raw = top.data.get(name)
    if raw is None:
        return CommitRetryPolicy()
    if not isinstance(raw, dict):
        raise SpecError(name, raw, 'must be an object such as {"max_attempts": 5}')
    known = CommitRetryPolicy().to_dict()
    for key, value in raw.items():
        if key not in known:
            raise SpecError(
                f"{name}.{key}", value, f"unknown field; valid fields are {', '.join(sorted(known))}"
            )
    try:
        return CommitRetryPolicy.from_dict(raw)
    except (TypeError, ValueError) as exc:
        field = next((f"{name}.{k}" for k in raw if f".{k} " in f"{exc} "), name)
        value = raw.get(field.removeprefix(f"{name}."), raw)
        raise SpecError(field, value, str(exc)) from None


def _source(top: Fields, operation: str) -> SourceSpec | None:
    raw = top.data.get("source")
    if raw is None:
        if OPERATIONS[operation].needs_source:
            raise SpecError(
                "source", None, f'{operation} needs a source, e.g. {{"kind": "delta", "path": ...}}'
            )
        return None
    if not OPERATIONS[operation].reads_source:
        raise SpecError("source", raw, f"{operation} reads no source; remove it or set it to null")
    src = Fields(raw, "source")
    kind = src.data.get("kind")
    if kind not in SOURCE_KINDS:
        raise SpecError("source.kind", kind, f"unknown source kind; use one of {', '.join(SOURCE_KINDS)}")
    if kind == "delta":
        src.only(("kind", "path", "version"), "a delta source")
        return SourceSpec(kind, path=src.string("path", required=True), version=src.integer("version", None))
    if kind == "table":
        src.only(("kind", "name"), "a table source")
        name = src.string("name", required=True)
        if name is None or not CATALOG_NAME_RE.fullmatch(name):
            raise SpecError("source.name", name, "must be a catalog name like 'db.table'")
        return SourceSpec(kind, name=name)
    if kind in ("parquet", "csv"):
        src.only(("kind", "path", "options", "schema"), f"a {kind} source")
        return SourceSpec(
            kind,
            path=src.string("path", required=True),
            options=src.mapping("options", values="conf"),
            schema=src.string("schema"),
        )
    if kind == "sql":
        src.only(("kind", "query"), "a sql source")
        return SourceSpec(kind, query=src.sql("query", required=True))
    if kind == "callable":
        return SourceSpec(kind, function=_source_function(src))
    src.only(("kind", "rows", "schema"), "a rows source")
    rows = src.data.get("rows")
    if not isinstance(rows, list):
        raise SpecError("source.rows", rows, "must be a list of rows (lists in schema order, or objects)")
    return SourceSpec(kind, rows=tuple(rows), schema=src.string("schema", required=True))


def _source_function(src: Fields) -> SourceFunction:
    """A source function in this process (``function``), or pickled by a worker for this driver."""
    if "function" in src.data:
        src.only(("kind", "function"), "a callable source")
        function = src.data["function"]
        if isinstance(function, SourceFunction):
            return function
        if not callable(function):
            raise SpecError("source.function", function, "must be a function of the Spark session")
        return SourceFunction(function)
    src.only(("kind", "name", "python", "pickled"), "a callable source")
    name = src.string("name", required=True)
    python = src.string("python", required=True)
    pickled = src.string("pickled", required=True)
    assert name is not None and python is not None and pickled is not None
    return from_travel_form(name, python, pickled)


def _append(f: Fields) -> AppendOptions:
    f.only(("create_if_missing", "partition_by", "merge_schema", "cluster_by"), "append options")
    return AppendOptions(
        create_if_missing=f.boolean("create_if_missing", True),
        partition_by=f.strings("partition_by"),
        merge_schema=f.boolean("merge_schema", False),
        cluster_by=f.strings("cluster_by"),
    )


def _overwrite(f: Fields) -> OverwritePartitionsOptions:
    f.only(("partition_values", "max_partitions"), "overwrite_partitions options")
    max_partitions = f.integer("max_partitions", 1000, minimum=1)
    assert max_partitions is not None
    return OverwritePartitionsOptions(
        partition_values=f.partition_values("partition_values"), max_partitions=max_partitions
    )


def _merge(f: Fields) -> MergeOptions:
    f.only(
        (
            "keys",
            "condition",
            "when_matched",
            "when_not_matched",
            "dedup_order_by",
            "dedup_keys",
            "partition_pin",
            "max_pin_values",
        ),
        "merge options",
    )
    keys, condition = f.strings("keys"), f.sql("condition")
    if bool(keys) == (condition is not None):
        raise SpecError(
            "options.keys", list(keys) or None, "give exactly one of keys (a list of columns) or condition"
        )
    matched = _clauses(f, "when_matched", ("update", "delete"), "set", DEFAULT_WHEN_MATCHED)
    not_matched = _clauses(f, "when_not_matched", ("insert",), "values", DEFAULT_WHEN_NOT_MATCHED)
    if not matched and not not_matched:
        raise SpecError(
            "options.when_matched", [], "a MERGE needs at least one when_matched or when_not_matched"
        )
    dedup_order_by, dedup_keys = f.string("dedup_order_by"), f.strings("dedup_keys")
    if dedup_order_by is not None and not (dedup_keys or keys):
        raise SpecError("options.dedup_keys", None, "dedup_order_by with a condition needs dedup_keys")
    if dedup_keys and dedup_order_by is None:
        raise SpecError(
            "options.dedup_order_by", None, "dedup_keys needs dedup_order_by (the 'latest' column)"
        )
    max_pin_values = f.integer("max_pin_values", 1000, minimum=1)
    assert max_pin_values is not None
    return MergeOptions(
        keys=keys,
        condition=condition,
        when_matched=matched,
        when_not_matched=not_matched,
        dedup_order_by=dedup_order_by,
        dedup_keys=dedup_keys,
        partition_pin=_pin(f),
        max_pin_values=max_pin_values,
    )


def _pin(f: Fields) -> tuple[str, ...] | Literal["auto", "keyed"] | None:
    if "partition_pin" not in f.data:
        return "keyed"
    raw = f.data["partition_pin"]
    if raw is None:
        return None
    if isinstance(raw, str):
        if raw == "auto":
            return "auto"
        if raw == "keyed":
            return "keyed"
        raise SpecError("options.partition_pin", raw, 'must be "auto", "keyed", a list of columns or null')
    return f.strings("partition_pin") or None


def _clauses(
    f: Fields, key: str, actions: tuple[str, ...], assign_key: str, default: tuple[MergeClause, ...]
) -> tuple[MergeClause, ...]:
    items = f.objects(key)
    if items is None:
        return default
    clauses: list[MergeClause] = []
    for item in items:
        item.only(("action", "condition", assign_key), f"a {key} clause")
        action = item.data.get("action")
        if action not in actions:
            raise SpecError(item.name("action"), action, f"must be one of {', '.join(actions)}")
        if action == "delete" and item.has(assign_key):
            raise SpecError(item.name(assign_key), item.data[assign_key], "a delete clause sets nothing")
        assignments = item.mapping(assign_key, values="sql") if item.has(assign_key) else None
        if assignments is not None and not assignments:
            raise SpecError(item.name(assign_key), {}, "must set at least one column, or be omitted for all")
        clauses.append(MergeClause(action, item.sql("condition"), assignments))
    return tuple(clauses)


def _update(f: Fields) -> UpdateOptions:
    f.only(("set", "set_values", "condition", "equals", "partition_values"), "update options")
    options = UpdateOptions(
        set=f.mapping("set", values="sql"),
        set_values=f.mapping("set_values", values="scalar"),
        condition=f.sql("condition"),
        equals=f.mapping("equals", values="scalar"),
        partition_values=f.partition_values("partition_values"),
    )
    if not options.set and not options.set_values:
        raise SpecError("options.set", None, "an update must set something: give set and/or set_values")
    overlap = sorted(set(options.set) & set(options.set_values))
    if overlap:
        raise SpecError(
            f"options.set_values.{overlap[0]}", options.set_values[overlap[0]], "also in set; keep one"
        )
    _require_filter(options.condition, options.equals, options.partition_values, "update")
    return options


def _delete(f: Fields) -> DeleteOptions:
    f.only(("condition", "equals", "partition_values"), "delete options")
    options = DeleteOptions(
        condition=f.sql("condition"),
        equals=f.mapping("equals", values="scalar"),
        partition_values=f.partition_values("partition_values"),
    )
    _require_filter(options.condition, options.equals, options.partition_values, "delete")
    return options


def _require_filter(condition: str | None, equals: dict[str, Any], partitions: Any, operation: str) -> None:
    if condition is None and not equals and partitions is None:
        raise SpecError(
            "options.condition",
            None,
            f"an unfiltered {operation} touches every row; give condition, equals or partition_values "
            '(use condition "true" to mean every row)',
        )


def _optimize(f: Fields) -> OptimizeOptions:
    f.only(("partition_values", "zorder_by", "full"), "optimize options")
    return OptimizeOptions(
        partition_values=f.partition_values("partition_values"),
        zorder_by=f.strings("zorder_by"),
        full=f.boolean("full", False),
    )


def _vacuum(f: Fields) -> VacuumOptions:
    f.only(("retention_hours", "force", "dry_run"), "vacuum options")
    retention = f.number("retention_hours")
    if retention is not None and retention > MAX_RETENTION_HOURS:
        raise SpecError(
            "options.retention_hours",
            retention,
            f"must be <= {MAX_RETENTION_HOURS:g} hours (100 years); omit it to use the table's "
            "delta.deletedFileRetentionDuration",
        )
    return VacuumOptions(
        retention_hours=retention,
        force=f.boolean("force", False),
        dry_run=f.boolean("dry_run", False),
    )


def _sql(f: Fields) -> SqlOptions:
    f.only(("statement", "args", "op_class"), "sql options")
    statement = f.sql("statement", required=True)
    assert statement is not None
    check_one_statement("options.statement", statement)
    op_class = f.data.get("op_class", OperationClass.READ_MODIFY_WRITE.value)
    valid = [c.value for c in OperationClass]
    if op_class not in valid:
        raise SpecError("options.op_class", op_class, f"must be one of {', '.join(valid)}")
    return SqlOptions(
        statement=statement, args=f.mapping("args", values="scalar"), op_class=OperationClass(op_class)
    )


def _cross_check(options: OperationOptions) -> None:
    if isinstance(options, AppendOptions) and options.partition_by and options.cluster_by:
        raise SpecError(
            "options.cluster_by",
            {"partition_by": list(options.partition_by), "cluster_by": list(options.cluster_by)},
            PARTITION_AND_CLUSTER,
        )
    if (
        isinstance(options, OptimizeOptions)
        and options.full
        and (options.zorder_by or options.partition_values)
    ):
        raise SpecError(
            "options.full",
            True,
            "OPTIMIZE FULL reclusters a liquid-clustered table, which takes neither zorder_by nor "
            "partition_values; drop them (or drop full)",
        )
    if isinstance(options, AppendOptions) and options.partition_by and not options.create_if_missing:
        raise SpecError(
            "options.partition_by", list(options.partition_by), "only applies when create_if_missing is true"
        )


_OPTIONS: dict[str, Callable[[Fields], OperationOptions]] = {
    "append": _append,
    "overwrite_partitions": _overwrite,
    "merge": _merge,
    "update": _update,
    "delete": _delete,
    "optimize": _optimize,
    "vacuum": _vacuum,
    "sql": _sql,
}
