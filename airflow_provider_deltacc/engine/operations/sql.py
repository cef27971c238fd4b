"""``sql``: one arbitrary statement against the table, inside the commit loop and the txn identity."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.spec import JobSpec, SqlOptions
from airflow_provider_deltacc.engine.operations.base import (
    PreparedOperation,
    SourceHook,
    WriteResult,
    apply_hook,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.sources import load_source
from airflow_provider_deltacc.engine.table import TableState, require_delta_table
from airflow_provider_deltacc.occ.classifier import classify
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLE_PLACEHOLDER = "{table}"
SOURCE_VIEW = "source"


def build_sql(spark: SparkSession, spec: JobSpec, hook: SourceHook | None = None) -> PreparedOperation:
    """Validate a SQL operation and return its attempt.

    The statement is the user's own SQL; only ``{table}`` is replaced (by the quoted table reference), and
    values belong in ``args`` (``:name`` markers bound by Spark), never formatted into the text.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`SqlOptions`).
    :param hook: optional source hook.
    """
    opts = spec.options
    assert isinstance(opts, SqlOptions)
    require_delta_table(spark, spec.table)
    statement = opts.statement.replace(TABLE_PLACEHOLDER, spec.table.sql)
    _check_parses(spark, statement)
    source_spec = spec.source

    from pyspark.errors import AnalysisException

    def work(attempt: int) -> WorkResult:
        def write(current: TableState | None) -> WriteResult:
            if source_spec is not None:
                apply_hook(load_source(spark, source_spec), hook, attempt).createOrReplaceTempView(
                    SOURCE_VIEW
                )
            try:
                result = spark.sql(statement, args=opts.args or None)
            except AnalysisException as exc:  # an unknown column or table, a type error: nothing ran
                if classify(exc) is not None:  # a concurrent schema change: the commit loop re-plans
                    raise
                raise InputError("options.statement", opts.statement, _first_line(exc)) from None
            rows = result.limit(1).collect()
            metrics: dict[str, Any] = {}
            if rows:
                metrics["result"] = {k: _json_safe(v) for k, v in rows[0].asDict().items()}
            return WriteResult(metrics=metrics)

        return tracked_attempt(spark, spec.table, write, txn=spec.txn, txn_in_session=True)

    return prepared_operation("sql", work, options={"op_class": opts.op_class})


def _check_parses(spark: SparkSession, statement: str) -> None:
    """Parse (not run) the statement, so a syntax error fails before the table is touched."""
    from airflow_provider_deltacc.engine.backend import backend_for

    try:
        backend_for(spark).check_parses(statement)
    except Exception as exc:  # ParseException, through py4j or Spark Connect
        raise InputError("options.statement", statement, f"does not parse: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
