"""Delta tables as Airflow assets: the URI of a table, the operators' outlets and the events they emit.

Every writer and maintenance operator declares its target table as an outlet (``emit_asset=False`` turns it
off). The asset's URI is derived from the ``table`` argument when the DAG is parsed:

* a path table is its normalized location, the one its lease key names: ``/data/orders`` →
  ``file:///data/orders``, ``s3a://b/orders`` and ``s3n://…`` → ``s3://b/orders`` (the URI the Amazon
  provider's normalizer gives), ``abfs``/``wasb[s]`` → ``abfss`` on the account's ``dfs`` host, any other
  scheme kept; scheme and host lower-cased, credentials dropped, without trailing slashes;
* a catalog table is ``x-deltacc-table://<catalog>/<schema>/<table>`` (``orders`` →
  ``x-deltacc-table://spark_catalog/default/orders``). The ``x-`` prefix marks a private scheme Airflow
  leaves as it is.

A table known only when the task runs (a Jinja template, or a mapped task's expanded ``table``) cannot be
an outlet: outlets are declared when the DAG is parsed. Such a task declares an asset *alias* instead
(:func:`table_alias`), and emits the table's event through it; a DAG scheduled on the table's asset
runs all the same. A mapped task whose ``table`` is given to ``partial()`` declares the table's asset itself.

On a commit the task attaches the commit to the event's ``extra`` (see :func:`event_extra`). A write Delta
skipped as a duplicate, or one that committed no new version, emits no event. Through an alias that is
simply no event added. A declared asset outlet is taken out of the running task's outlets instead: Airflow
records one event for each asset outlet the finished task reports (``SucceedTask.task_outlets``), and has no
other way to withdraw it. ``tests/integration/airflow_face/test_asset_events.py`` fails if that changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.operations import OPERATIONS
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import asset_uri
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.retries.tries import report_tries

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_deltacc.contract.spec import JobSpec

ASSET_GROUP = "delta"


def table_asset_uri(table: str, *, task_id: str = "") -> str:
    """The asset URI of a Delta table (:func:`~airflow_provider_deltacc.contract.table_location.asset_uri`).

    :param table: the operator's ``table`` argument: a path or a catalog name.
    :param task_id: the task, for the error.
    :raises DeltaCCInputError: naming ``table`` when no stable URI can be derived from it (a template, a
        relative path, a malformed name).
    """
    where = f"{task_id}: " if task_id else ""
    fix = "give an absolute path or a catalog name, or set emit_asset=False (and add your own outlets)"
    if not isinstance(table, str) or not table.strip() or "{{" in table or "{%" in table:
        raise DeltaCCInputError(
            f"{where}table={table!r}: cannot derive the table's asset URI when the DAG is parsed "
            f"(it is empty or a template); {fix}",
            field="table",
            value=table,
        )
    try:
        return asset_uri(Table(table))
    except InputError as exc:
        raise DeltaCCInputError(f"{where}{exc}; {fix}", field="table", value=table) from None


def table_asset(table: str, *, task_id: str = "") -> Asset:
    """The asset of a Delta table: its URI (:func:`table_asset_uri`) is also its name."""
    uri = table_asset_uri(table, task_id=task_id)
    return Asset(uri=uri, name=uri, group=ASSET_GROUP)


def check_outlets(outlets: Iterable[Any], *, task_id: str) -> None:
    """Fail when a user outlet is not an asset: the table's events could not be attached to it.

    :raises DeltaCCInputError: naming ``outlets``, the value and the fix.
    """
    for outlet in outlets:
        if not isinstance(outlet, Asset | AssetAlias):
            raise DeltaCCInputError(
                f"{task_id}: outlets contains {outlet!r} ({type(outlet).__name__}), which is not an "
                "airflow.sdk.Asset or AssetAlias; wrap it, e.g. Asset('s3://bucket/key'), or remove it",
                field="outlets",
                value=repr(outlet),
            )


def is_template(table: Any) -> bool:
    """A Jinja-templated ``table``: its value is known only when the task runs."""
    return isinstance(table, str) and ("{{" in table or "{%" in table)


def table_alias(dag_id: str | None, task_id: str) -> AssetAlias:
    """The asset alias a task declares when its table is known only at run time (see the module docstring)."""
    return AssetAlias(name=f"deltacc-table-of/{dag_id or '-'}/{task_id}", group=ASSET_GROUP)


def table_outlet(table: Any, *, dag_id: str | None, task_id: str) -> Asset | AssetAlias:
    """The outlet that stands for a task's table: its asset when ``table`` is a string known when the DAG
    is parsed, else (a template, an XCom or expanded value, no value) the task's alias.

    :raises DeltaCCInputError: naming ``table`` when a known table has no stable URI.
    """
    if isinstance(table, str) and not is_template(table):
        return table_asset(table, task_id=task_id)
    return table_alias(dag_id, task_id)


def _with_outlet(outlets: list[Any], outlet: Asset | AssetAlias) -> list[Any]:
    if outlet not in outlets:
        outlets.append(outlet)
    return outlets


def declare_table_outlet(operator: Any, *, emit_asset: bool) -> Asset | None:
    """Check the operator's outlets and, unless ``emit_asset`` is False, add its table's outlet to them.

    A mapped task's outlets were declared by :func:`mapped_outlets`; when they hold the task's alias, the
    runtime table is emitted through it and no asset outlet is added.

    :returns: the table's asset when it is an outlet, else None (an alias, or nothing).
    """
    check_outlets(operator.outlets, task_id=operator.task_id)
    if not emit_asset:
        return None
    alias = table_alias(operator.dag_id, operator.task_id)
    outlet = (
        alias
        if alias in operator.outlets
        else table_outlet(operator.table, dag_id=operator.dag_id, task_id=operator.task_id)
    )
    _with_outlet(operator.outlets, outlet)
    return outlet if isinstance(outlet, Asset) else None


def mapped_outlets(partial_kwargs: dict[str, Any], *, dag_id: str | None) -> list[Any] | None:
    """The outlets of a mapped writer, declared when ``partial()`` is called (``__init__`` runs only later):
    the user's, plus :func:`table_outlet` of the ``table`` given to ``partial()`` (an expanded ``table`` is
    not given there: each mapped instance emits the table it wrote through the alias). None when
    ``emit_asset=False``.
    """
    if partial_kwargs.get("emit_asset", True) is False:
        return None
    task_id = str(partial_kwargs.get("task_id", ""))
    outlets = list(partial_kwargs.get("outlets") or [])
    check_outlets(outlets, task_id=task_id)
    return _with_outlet(outlets, table_outlet(partial_kwargs.get("table"), dag_id=dag_id, task_id=task_id))


def event_extra(spec: JobSpec, report: dict[str, Any]) -> dict[str, Any]:
    """The extra of a commit's asset event: JSON-safe, small, stable keys.

    ``version`` the committed table version; ``operation``; ``changes_data`` False for OPTIMIZE and VACUUM;
    ``rows_written`` when Delta's metrics give it; ``metrics`` Delta's operation metrics; ``partitions`` the
    partition values the write was restricted to (None: not restricted, or unknown); ``skipped_duplicate``.
    """
    partitions = getattr(spec.options, "partition_values", None)
    operation = str(spec.operation or report.get("operation") or "").lower()
    metrics = {k: v for k, v in (report.get("metrics") or {}).items() if _json_scalar(v)}
    rows = metrics.get("numOutputRows", metrics.get("numTargetRowsInserted"))
    return {
        "version": report.get("table_version"),
        "operation": operation,
        "changes_data": _changes_data(operation),
        "rows_written": _as_int(rows),
        "metrics": metrics,
        "partitions": [dict(p) for p in partitions] if partitions else None,
        "skipped_duplicate": bool(report.get("skipped_duplicate")),
        "txn_app_id": report.get("txn_app_id"),
    }


def emits_event(report: dict[str, Any]) -> bool:
    """Whether a successful report is new data: not a skipped duplicate, not a no-op without a version."""
    metrics = report.get("metrics") or {}
    return not report.get("skipped_duplicate") and not metrics.get("noop")


def unannounced_commit(report: dict[str, Any]) -> dict[str, Any] | None:
    """The commit an earlier try of this task instance made, when this try skipped it as a duplicate.

    A try that committed and then failed (its worker lost, a later step raising) emitted no event, and the
    retry that finds its txn identity committed is not new data by itself: the retry announces that commit.
    ``report`` is the report spanning the task instance's tries
    (:mod:`airflow_provider_deltacc.retries.tries`).
    """
    if not report.get("skipped_duplicate"):
        return None
    for entry in reversed(report_tries(report)[:-1]):
        if (
            entry.get("status") == "committed"
            and entry.get("table_version") is not None
            and entry.get("txn_app_id") == report.get("txn_app_id")
        ):
            return entry
    return None


def record_table_event(
    operator: Any, context: Context, spec: JobSpec, report: dict[str, Any]
) -> dict[str, Any] | None:
    """Attach the commit to the table's asset event, or withdraw the outlet when nothing was committed.

    :returns: the event's extra, or None when no event is emitted.
    """
    asset: Asset | None = getattr(operator, "table_outlet", None)
    alias = _declared_alias(operator)
    if asset is None and alias is None:
        return None
    earlier = unannounced_commit(report)
    if earlier is not None:
        operator.log.info(
            "try %s committed version %s and failed before its asset event: announcing it now",
            earlier.get("try_number"),
            earlier.get("table_version"),
        )
        report = {**earlier, "tries": report.get("tries")}
    if not emits_event(report):
        if asset is not None:
            # Airflow registers one event per asset outlet the finished task reports: no outlet, no event.
            operator.outlets = [outlet for outlet in operator.outlets if outlet != asset]
        operator.log.info("no asset event for %s: nothing new was committed", operator.table)
        return None
    events = context.get("outlet_events")
    if events is None:  # a direct call with a hand-made context: no task runner to record events
        return None
    extra = event_extra(spec, report)
    if asset is not None:
        events[asset].extra = extra
    else:
        assert alias is not None  # checked above
        try:
            asset = table_asset(operator.table, task_id=operator.task_id)
        except DeltaCCInputError as exc:
            operator.log.warning("no asset event: %s", exc)
            return None
        events[alias].add(asset, extra=extra)
    operator.log.info("asset event for %s: version %s", asset.uri, extra["version"])
    return extra


def _declared_alias(operator: Any) -> AssetAlias | None:
    if not getattr(operator, "emit_asset", False):
        return None
    alias = table_alias(operator.dag_id, operator.task_id)
    return alias if alias in operator.outlets else None


def _json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _changes_data(operation: str) -> bool:
    """Whether the operation can change the table's rows: maintenance only rewrites or deletes files."""
    known = OPERATIONS.get(operation)
    return known is None or not known.is_maintenance
