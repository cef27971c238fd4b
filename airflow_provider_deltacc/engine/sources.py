"""Build the source DataFrame of an operation, afresh on every call (every attempt)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.spec import SourceSpec
from airflow_provider_deltacc.engine.source_function import source_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType


def load_source(spark: SparkSession, source: SourceSpec) -> DataFrame:
    """Return a new DataFrame for ``source``; nothing is cached between calls.

    :param spark: the session of the operation.
    :param source: the source spec.
    :raises InputError: if inline rows do not fit their schema.
    """
    kind = source.kind
    if kind == "delta":
        reader = spark.read.format("delta")
        if source.version is not None:
            reader = reader.option("versionAsOf", source.version)
        return reader.load(source.path)
    if kind == "table":
        assert source.name is not None
        return spark.read.table(source.name)
    if kind in ("parquet", "csv"):
        reader = spark.read.options(**source.options)
        if source.schema:
            reader = reader.schema(source.schema)
        assert source.path is not None
        return reader.parquet(source.path) if kind == "parquet" else reader.csv(source.path)
    if kind == "sql":
        assert source.query is not None
        return spark.sql(source.query)
    if kind == "rows":
        return _rows_frame(spark, source)
    if kind == "callable":
        assert source.function is not None
        return source_frame(source.function, spark)
    raise InputError("source.kind", kind, "unknown source kind")


class SourceReader:
    """An operation's source, checked against the table before it is written.

    A declarative source (a path, a table, a query, rows) is read and checked once, before the first
    attempt, so bad input fails before the commit loop. A source function is the user's code: it is never
    called before the writer's turn, and each attempt calls it afresh and checks what it returned (its
    columns may differ from call to call), so its bad input fails inside the first attempt, before anything
    is written.

    :param spark: the operation's session.
    :param source: the source spec.
    :param check: raises :class:`InputError` when a source frame does not fit the operation.
    """

    def __init__(self, spark: SparkSession, source: SourceSpec, check: Callable[[DataFrame], None]) -> None:
        self.spark, self.source, self.check = spark, source, check
        self.probed = None if self.calls_user_code else probe_source(spark, source)
        if self.probed is not None:
            check(self.probed)

    @property
    def calls_user_code(self) -> bool:
        """Whether the source is the user's function (called in every attempt, never before)."""
        return self.source.kind == "callable"

    def load(self) -> DataFrame:
        """A new DataFrame of the source for this attempt."""
        frame = load_source(self.spark, self.source)
        if self.calls_user_code:
            self.check(frame)
        return frame

    def metrics(self) -> dict[str, Any]:
        """What the report says about the source: the function's name for a source function."""
        function = self.source.function
        return {"source_function": function.name} if function is not None else {}


def probe_source(spark: SparkSession, source: SourceSpec) -> DataFrame:
    """Load the source once to check it can be read (path exists, query parses, schema fits).

    :param spark: the session of the operation.
    :param source: the source spec (not a source function: see :class:`SourceReader`).
    :raises InputError: naming ``source`` when Spark cannot read it.
    """
    try:
        frame = load_source(spark, source)
        frame.schema  # noqa: B018 - forces analysis of lazily-resolved readers
    except InputError:
        raise
    except Exception as exc:  # AnalysisException, ParseException, IllegalArgumentException ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise InputError("source", _describe(source), f"cannot be read: {first}") from None
    return frame


def _describe(source: SourceSpec) -> str:
    return f"{source.kind}:{source.path or source.name or source.query or 'rows'}"


def _rows_frame(spark: SparkSession, source: SourceSpec) -> DataFrame:
    schema, rows = source_rows(spark, source)
    try:
        _verify_rows(rows, schema)
        if _arrow_friendly(schema) and _has_pyarrow():
            # Through Arrow the JVM decodes the rows itself; a list of Python rows is pickled and every job
            # over it starts Python workers, which costs more than a small MERGE's own work.
            return spark.createDataFrame(_arrow_table(rows, schema), schema)
        return spark.createDataFrame(rows, schema)
    except (TypeError, ValueError) as exc:  # pyarrow's errors are ValueError/TypeError subclasses too
        raise InputError(
            "source.rows", source.rows, f"do not match the schema {source.schema}: {exc}"
        ) from None


def source_rows(spark: SparkSession, source: SourceSpec) -> tuple[StructType, list[tuple[Any, ...]]]:
    """Return the schema and the rows of an inline ``rows`` source, converted to the schema's Python types.

    :param spark: the session whose parser reads the schema.
    :param source: a source spec of kind ``rows``.
    :raises InputError: on a bad schema or a row that does not fit it.
    """
    from pyspark.sql.types import StructType

    assert source.schema is not None
    try:
        schema = parse_ddl(spark, source.schema)
    except Exception as exc:  # pyspark raises parse errors of several types
        raise InputError("source.schema", source.schema, f"is not a valid DDL schema: {exc}") from None
    if not isinstance(schema, StructType):
        raise InputError("source.schema", source.schema, "must list columns, e.g. 'id INT, date DATE'")
    return schema, [_convert_row(row, index, schema) for index, row in enumerate(source.rows or ())]


def parse_ddl(spark: SparkSession, ddl: str) -> DataType:
    """Parse a DDL type string (``id INT, day DATE`` or ``int``) with the parser of ``spark``'s kind.

    ``DataType.fromDDL`` chooses the classic or the Spark Connect parser from process-wide state (pyspark's
    Connect mark, :mod:`~airflow_provider_deltacc.spark_jars.connect_mode`), so in a process holding both
    kinds (tests, the library API, ``dag.test()`` of mixed DAGs) it can pick the other kind's. Each session
    parses with its own (``SparkSession._parse_ddl``, private in pyspark 4.x: on the Connect server, or in the
    classic session's JVM; ``tests/unit/engine/test_pyspark_private_api.py`` fails when it changes).

    :param spark: the session.
    :param ddl: the type string.
    """
    parsed: DataType = spark._parse_ddl(ddl)
    return parsed


def _verify_rows(rows: list[tuple[Any, ...]], schema: StructType) -> None:
    # The checks createDataFrame(rows, schema) makes: exact types (no float into BIGINT), ranges, nulls.
    from pyspark.sql.types import _make_type_verifier

    verify = _make_type_verifier(schema)
    for row in rows:
        verify(row)


def _has_pyarrow() -> bool:
    # The driver needs nothing installed beyond PySpark: a bare cluster Python takes the plain path.
    from importlib.util import find_spec

    return find_spec("pyarrow") is not None


def _arrow_friendly(schema: StructType) -> bool:
    from pyspark.sql import types as T

    atomic = (
        T.StringType,
        T.BooleanType,
        T.ByteType,
        T.ShortType,
        T.IntegerType,
        T.LongType,
        T.FloatType,
        T.DoubleType,
        T.DecimalType,
        T.DateType,
        T.TimestampType,
        T.TimestampNTZType,
        T.BinaryType,
    )
    # Char/varchar subclass StringType but Arrow has no such type: they keep the plain path.
    return all(
        isinstance(f.dataType, atomic) and not isinstance(f.dataType, T.CharType | T.VarcharType)
        for f in schema.fields
    )


def _arrow_table(rows: list[tuple[Any, ...]], schema: StructType) -> Any:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import TimestampType

    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    columns = []
    for index, field in enumerate(schema.fields):
        values = [row[index] for row in rows]
        if isinstance(field.dataType, TimestampType):
            # A naive datetime is local time, as createDataFrame(rows) reads it; Arrow's column is UTC.
            values = [v.astimezone() if v is not None and v.tzinfo is None else v for v in values]
        columns.append(pa.array(values, type=arrow_schema.field(index).type))
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def _convert_row(row: Any, index: int, schema: StructType) -> tuple[Any, ...]:
    names = schema.fieldNames()
    if isinstance(row, dict):
        unknown = sorted(set(row) - set(names))
        if unknown:
            raise InputError(
                f"source.rows[{index}].{unknown[0]}", row[unknown[0]], f"not in the schema {names}"
            )
        values = [row.get(name) for name in names]
    elif isinstance(row, list | tuple):
        if len(row) != len(names):
            raise InputError(
                f"source.rows[{index}]", row, f"has {len(row)} values; the schema has {len(names)}"
            )
        values = list(row)
    else:
        raise InputError(f"source.rows[{index}]", row, "must be a list (schema order) or an object")
    return tuple(
        _convert_value(value, f.dataType, f"source.rows[{index}].{f.name}")
        for value, f in zip(values, schema.fields, strict=True)
    )


def _convert_value(value: Any, data_type: DataType, field_name: str) -> Any:
    # JSON has no dates, timestamps or decimals; accept their ISO/string forms for inline rows.
    name = data_type.typeName()
    if value is None or not isinstance(value, str | int | float):
        return value
    try:
        if name == "date" and isinstance(value, str):
            return date.fromisoformat(value)
        if name in ("timestamp", "timestamp_ntz") and isinstance(value, str):
            return datetime.fromisoformat(value)
        if name == "decimal":
            return Decimal(str(value))
        if name in ("float", "double") and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
    except ValueError as exc:
        raise InputError(field_name, value, f"is not a valid {data_type.simpleString()}: {exc}") from None
    return value
