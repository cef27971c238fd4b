"""Delta tables as Airflow assets: the URI of a table, the operators' outlets and the events they emit.

Every writer and maintenance operator declares its target table as an outlet (``emit_asset=False`` turns it
off). The asset's URI is derived from the ``table`` argument when the DAG is parsed:

* a path table is its normalized location: ``/data/orders`` → ``file:///data/orders``, ``s3a://b/orders`` and
  ``s3n://…`` → ``s3://b/orders`` (the URI the Amazon provider's normalizer gives), any other scheme kept,
  lower-cased, without trailing slashes;
* a catalog table is ``x-deltacc-table://<catalog>/<schema>/<table>`` (``orders`` →
  ``x-deltacc-table://spark_catalog/default/orders``). The ``x-`` prefix marks a private scheme Airflow
  leaves as it is.

On a commit the task attaches the commit to the event's ``extra`` (see :func:`event_extra`). A write Delta
skipped as a duplicate, or one that committed no new version, emits no event: the table's asset is taken
out of the running task's outlets, and Airflow records events only for the outlets the finished task
reports.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from airflow.sdk import Asset, AssetAlias

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.occ.operations import OPERATIONS

if TYPE_CHECKING:
    from airflow.sdk import Context

CATALOG_SCHEME = "x-deltacc-table"
DEFAULT_CATALOG = "spark_catalog"
DEFAULT_SCHEMA = "default"
ASSET_GROUP = "delta"
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def table_asset_uri(table: str, *, task_id: str = "") -> str:
    """The asset URI of a Delta table (see the module docstring).

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
    if "/" in table or "\\" in table:
        return _path_uri(table, where, fix)
    parts = table.split(".")
    if not 1 <= len(parts) <= 3 or not all(part and set(part) <= _NAME_CHARS for part in parts):
        raise DeltaCCInputError(
            f"{where}table={table!r} is neither a path nor a catalog name like 'db.table'; {fix}",
            field="table",
            value=table,
        )
    catalog, schema, name = [DEFAULT_CATALOG, DEFAULT_SCHEMA][: 3 - len(parts)] + parts
    return f"{CATALOG_SCHEME}://{catalog}/{schema}/{name}".lower()


def _path_uri(table: str, where: str, fix: str) -> str:
    parsed = urlsplit(table)
    if not parsed.scheme:
        if not table.startswith("/"):
            raise DeltaCCInputError(
                f"{where}table={table!r} is a relative path: its asset URI would depend on the worker's "
                f"working directory; {fix}",
                field="table",
                value=table,
            )
        return urlunsplit(("file", "", _clean_path(table), "", ""))
    scheme = parsed.scheme.lower()
    if len(scheme) == 1:  # a Windows drive letter, not a scheme
        raise DeltaCCInputError(
            f"{where}table={table!r} is a Windows path; {fix}", field="table", value=table
        )
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    # A password (a key) never goes into an asset URI; a user part alone is kept (abfss' container).
    netloc = parsed.netloc.rpartition("@")[2] if parsed.password else parsed.netloc
    return urlunsplit((scheme, netloc, _clean_path(parsed.path), "", ""))


def _clean_path(path: str) -> str:
    cleaned = posixpath.normpath(path) if path else "/"
    return "/" + cleaned.lstrip("/") if cleaned != "." else "/"


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


def declare_table_outlet(operator: Any, *, emit_asset: bool) -> Asset | None:
    """Check the operator's outlets and, unless ``emit_asset`` is False, add its table's asset to them.

    A templated ``table`` gets no automatic outlet (its URI is unknown when the DAG is parsed, and an
    outlet must be declared then): the DAG keeps working, and users name the asset in ``outlets``.
    """
    check_outlets(operator.outlets, task_id=operator.task_id)
    if not emit_asset or is_template(operator.table):
        return None
    asset = table_asset(operator.table, task_id=operator.task_id)
    if asset not in operator.outlets:
        operator.outlets.append(asset)
    return asset


def event_extra(spec: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """The extra of a commit's asset event: JSON-safe, small, stable keys.

    ``version`` the committed table version; ``operation``; ``changes_data`` False for OPTIMIZE and VACUUM;
    ``rows_written`` when Delta's metrics give it; ``metrics`` Delta's operation metrics; ``partitions`` the
    partition values the write was restricted to (None: not restricted, or unknown); ``skipped_duplicate``.
    """
    operation = str(spec.get("operation") or report.get("operation") or "").lower()
    metrics = {k: v for k, v in (report.get("metrics") or {}).items() if _json_scalar(v)}
    rows = metrics.get("numOutputRows", metrics.get("numTargetRowsInserted"))
    options = spec.get("options") or {}
    return {
        "version": report.get("table_version"),
        "operation": operation,
        "changes_data": _changes_data(operation),
        "rows_written": _as_int(rows),
        "metrics": metrics,
        "partitions": options.get("partition_values") or None,
        "skipped_duplicate": bool(report.get("skipped_duplicate")),
        "txn_app_id": report.get("txn_app_id"),
    }


def emits_event(report: dict[str, Any]) -> bool:
    """Whether a successful report is new data: not a skipped duplicate, not a no-op without a version."""
    metrics = report.get("metrics") or {}
    return not report.get("skipped_duplicate") and not metrics.get("noop")


def record_table_event(
    operator: Any, context: Context, spec: dict[str, Any], report: dict[str, Any]
) -> dict[str, Any] | None:
    """Attach the commit to the table's asset event, or withdraw the outlet when nothing was committed.

    :returns: the event's extra, or None when no event is emitted.
    """
    asset: Asset | None = getattr(operator, "table_outlet", None)
    if asset is None:
        return None
    if not emits_event(report):
        # Airflow registers one event per outlet the finished task reports: no outlet, no event.
        operator.outlets = [outlet for outlet in operator.outlets if outlet != asset]
        operator.log.info("no asset event for %s: nothing new was committed", asset.uri)
        return None
    events = context.get("outlet_events")
    if events is None:  # a direct call with a hand-made context: no task runner to record events
        return None
    extra = event_extra(spec, report)
    events[asset].extra = extra
    operator.log.info("asset event for %s: version %s", asset.uri, extra["version"])
    return extra


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
