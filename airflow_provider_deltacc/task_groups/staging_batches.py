"""What one run of ``staging_append_then_merge`` appends, merges and cleans up: a batch id per source, the
sources tagged with it, the MERGE's source query over exactly these batches, and the staging partitions the
cleanup deletes. Pure functions of their arguments: no Airflow, no Spark."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_deltacc.contract.literals import quote_identifier, string_literal
from airflow_provider_deltacc.contract.table import CATALOG_NAME_RE, Table
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.operators.sources import source_form

DEFAULT_BATCH_COLUMN = "batch_id"
_SRC_ALIAS = "__deltacc_src"


def plan_batches_for(
    sources: Sequence[str | dict[str, Any]],
    *,
    staging_table: str,
    batch_column: str = DEFAULT_BATCH_COLUMN,
    batch_prefix: str,
) -> dict[str, Any]:
    """What one run appends, merges and cleans up; a pure function of its arguments.

    :param sources: the run's sources, in order.
    :param staging_table: the staging table.
    :param batch_column: the batch id column.
    :param batch_prefix: ``<dag_id>/<group_id>/<run_id>``; batch ``i`` is ``<prefix>/<i>``.
    :returns: ``batch_ids``, ``appends`` (the tagged sources, one per mapped append), ``merge_source`` (the
        MERGE's source) and ``cleanup_partitions`` (the staging partitions to delete afterwards).
    """
    batch_ids = [f"{batch_prefix}/{index}" for index in range(len(sources))]
    return {
        "batch_ids": batch_ids,
        "appends": [
            tag_source(source, batch_id, batch_column=batch_column, field=f"sources[{index}]")
            for index, (source, batch_id) in enumerate(zip(sources, batch_ids, strict=True))
        ],
        "merge_source": {
            "kind": "sql",
            "query": merge_source_query(staging_table, batch_ids, batch_column=batch_column),
        },
        "cleanup_partitions": [{batch_column: batch_id} for batch_id in batch_ids],
    }


def merge_source_query(
    staging_table: str, batch_ids: Sequence[str], *, batch_column: str = DEFAULT_BATCH_COLUMN
) -> str:
    """The MERGE's source: the staged rows of exactly these batches, without the batch column.

    Batch ids are quoted as SQL string literals (a quote in an id stays data), in a form that reads the
    same whatever ``spark.sql.parser.escapedStringLiterals`` says.

    :param staging_table: the staging table (path or catalog name).
    :param batch_ids: the batches to read; none reads nothing.
    :param batch_column: the batch id column.
    """
    column = quote_identifier(batch_column)
    if batch_ids:
        where = f"{column} IN ({', '.join(string_literal(b, escaped=True) for b in batch_ids)})"
    else:
        where = "false"
    return f"SELECT * EXCEPT ({column}) FROM {Table(staging_table).sql} WHERE {where}"


def tag_source(
    source: str | dict[str, Any],
    batch_id: str,
    *,
    batch_column: str = DEFAULT_BATCH_COLUMN,
    field: str = "source",
) -> dict[str, Any]:
    """Return ``source`` with a constant ``batch_column`` holding ``batch_id``, as a source dict.

    Inline rows get the value added; every other kind becomes a SQL query over the original
    (``SELECT *, '<batch id>' AS batch_id FROM ...``). CSV and parquet sources with reader options or a
    schema cannot be expressed in SQL: land them as Delta or parquet first, or pass a SQL query.

    :param source: what ``DeltaAppendOperator(source=...)`` accepts.
    :param batch_id: the batch id.
    :param batch_column: the column to add.
    :param field: the argument name for errors (``sources[2]``).
    :raises DeltaCCInputError: naming ``field`` when the source cannot be tagged.
    """
    spec = source_form(source, field=field)
    if not isinstance(spec, dict):
        raise DeltaCCInputError(f"{field}={source!r} is not a source", field=field, value=source)
    kind = spec.get("kind")
    column = quote_identifier(batch_column)
    literal = string_literal(batch_id, escaped=True)
    if kind == "rows":
        rows = spec.get("rows")
        schema = spec.get("schema")
        if not isinstance(rows, list) or not isinstance(schema, str):
            raise DeltaCCInputError(
                f"{field}: a rows source needs 'rows' (a list) and 'schema' (DDL)", field=field, value=source
            )
        tagged = [
            {**row, batch_column: batch_id} if isinstance(row, dict) else [*row, batch_id] for row in rows
        ]
        return {"kind": "rows", "rows": tagged, "schema": f"{schema}, {column} STRING"}
    if kind == "sql":
        relation = f"({_required(spec, 'query', field)}) AS {_SRC_ALIAS}"
        return {"kind": "sql", "query": f"SELECT {_SRC_ALIAS}.*, {literal} AS {column} FROM {relation}"}
    if kind == "delta":
        relation = f"delta.{quote_identifier(_required(spec, 'path', field))}"
        if spec.get("version") is not None:
            relation += f" VERSION AS OF {int(spec['version'])}"
    elif kind == "table":
        name = _required(spec, "name", field)
        if not CATALOG_NAME_RE.fullmatch(name):
            raise DeltaCCInputError(f"{field}: {name!r} is not a catalog name", field=field, value=source)
        relation = ".".join(quote_identifier(part) for part in name.split("."))
    elif kind in ("parquet", "csv"):
        if spec.get("options") or spec.get("schema"):
            raise DeltaCCInputError(
                f"{field}: a {kind} source with reader options or a schema cannot be tagged with a batch id "
                "in SQL; pass a SQL query (SELECT ... FROM read_files(...)) or land it as parquet/Delta",
                field=field,
                value=source,
            )
        relation = f"{kind}.{quote_identifier(_required(spec, 'path', field))}"
    else:
        raise DeltaCCInputError(f"{field}: unknown source kind {kind!r}", field=field, value=source)
    return {"kind": "sql", "query": f"SELECT *, {literal} AS {column} FROM {relation}"}


def _required(spec: dict[str, Any], key: str, field: str) -> str:
    value = spec.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DeltaCCInputError(f"{field}: needs {key!r}", field=f"{field}.{key}", value=value)
    return value
