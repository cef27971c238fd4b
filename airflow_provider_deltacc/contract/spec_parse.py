"""Read a job spec's JSON form (or a dict of it) into the typed spec, validated completely before any Spark
work; pyspark-free.

It is read at two boundaries only: the Spark driver reading the JSON the worker wrote
(:mod:`airflow_provider_deltacc.spark_job.main`), and the hook's public entry, where a caller may pass a dict
(:class:`~airflow_provider_deltacc.hooks.deltacc.DeltaCCHook`). Everything else builds the typed spec from its
parts (:mod:`~airflow_provider_deltacc.contract.spec_build`).

Shape::

    {"operation": "append|overwrite_partitions|merge|update|delete|optimize|vacuum|sql",
     "table": "<path or catalog name>",
     "source": {"kind": "delta|table|parquet|csv|sql|rows|callable", ...} | null,
     "options": {...},  "commit_retry": {...},  "txn": {"app_id": "...", "version": 7} | null,
     "spark_conf": {...},  "storage_guard": "exclusive_lease|override" | null,
     "report_trail": {"run_token": "<hex>", "report_dir": "<path or URI>" | null} | null,
     "turn_service": {"url": "http://host:port", "token": "<secret>", "timeout_s": 1800, "fenced": false}
        | null,
     "known_snapshot": {"version": 12, "partition_columns": ["day"], "schema": "<the log's schemaString>",
        "txn_unrecorded": true} | null}

``report_trail``, ``turn_service`` and ``known_snapshot`` are set by the provider.

Every problem raises :class:`SpecError` naming the field, the bad value and the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.spec import JobSpec, KnownSnapshot, ReportTrailSpec, TurnServiceSpec
from airflow_provider_deltacc.contract.spec_build import (
    check_operation,
    check_source,
    check_storage_guard,
    check_table,
    check_txn,
    commit_retry_of,
    job_spec,
    txn_of,
)
from airflow_provider_deltacc.contract.spec_fields import Fields
from airflow_provider_deltacc.contract.spec_options import options_of
from airflow_provider_deltacc.contract.spec_sources import source_of

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
    "report_trail",
    "turn_service",
    "known_snapshot",
)
#: Top-level fields by their names before the rename -> their names now.
RENAMED = {"retry_policy": "commit_retry"}
_RUN_TOKEN_RE = re.compile(r"^[0-9a-f]{8,64}$")


def parse_spec(spec: str | bytes | Mapping[str, Any]) -> JobSpec:
    """Validate a job spec (its JSON text or a dict of it) and return the typed :class:`JobSpec`.

    :param spec: the spec.
    :raises SpecError: on the first problem found.
    """
    top = Fields(_json_object(spec), "")
    for old, new in RENAMED.items():
        if old in top.data:
            raise SpecError(old, top.data[old], f"is called {new}: name the field {new}")
    top.only(TOP_LEVEL, "a job spec")
    operation = check_operation(top.data.get("operation"))
    table = check_table(top.data.get("table"))
    txn = None if top.data.get("txn") is None else txn_of(top.data["txn"])
    check_txn(operation, txn, top.data.get("txn"))
    raw_source = top.data.get("source")
    check_source(operation, raw_source)
    source = None if raw_source is None else source_of(raw_source)
    options = options_of(operation, top.data.get("options"))
    commit_retry = commit_retry_of(top.data.get("commit_retry"))
    spark_conf = top.mapping("spark_conf", values="conf")
    storage_guard = check_storage_guard(top.data.get("storage_guard"))
    return job_spec(
        operation=operation,
        table=table,
        options=options,
        source=source,
        commit_retry=commit_retry,
        txn=txn,
        spark_conf=spark_conf,
        storage_guard=storage_guard,
        report_trail=_report_trail(top.data.get("report_trail")),
        turn_service=_turn_service(top.data.get("turn_service")),
        known_snapshot=_known_snapshot(top.data.get("known_snapshot")),
    )


def _json_object(spec: str | bytes | Mapping[str, Any]) -> Any:
    if isinstance(spec, Mapping):
        return dict(spec)
    if not isinstance(spec, str | bytes):
        return spec  # not an object: Fields says so
    try:
        return json.loads(spec)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        text = spec if isinstance(spec, str) else spec.decode("utf-8", "replace")
        raise SpecError("<spec>", text, f"is not valid JSON ({exc}); pass one JSON object") from None


def _report_trail(raw: Any) -> ReportTrailSpec | None:
    if raw is None:
        return None
    at = "report_trail"
    fields = Fields(raw, at)
    fields.only(("run_token", "report_dir"), at)
    token = fields.data.get("run_token")
    if not isinstance(token, str) or not _RUN_TOKEN_RE.match(token):
        raise SpecError(f"{at}.run_token", token, "must be 8 to 64 lowercase hex digits, e.g. uuid4().hex")
    report_dir = fields.data.get("report_dir")
    if report_dir is not None and (not isinstance(report_dir, str) or not report_dir.strip()):
        raise SpecError(f"{at}.report_dir", report_dir, "must be a directory path or URI, or null")
    return ReportTrailSpec(run_token=token, report_dir=report_dir)


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


def _known_snapshot(raw: Any) -> KnownSnapshot | None:
    if raw is None:
        return None
    fields = Fields(raw, "known_snapshot")
    fields.only(("version", "partition_columns", "schema", "txn_unrecorded"), "known_snapshot")
    version = fields.integer("version", None)
    schema = fields.string("schema", required=True)
    assert schema is not None
    try:
        fields_list = json.loads(schema)["fields"]
    except (ValueError, TypeError, KeyError):
        fields_list = None
    if not isinstance(fields_list, list):
        raise SpecError("known_snapshot.schema", schema, "must be the log's schemaString (a JSON struct)")
    if version is None:
        raise SpecError("known_snapshot.version", None, "is required (the table version read)")
    return KnownSnapshot(
        version, fields.strings("partition_columns"), schema, fields.boolean("txn_unrecorded", False)
    )
