"""The typed spec's JSON form: what parse_spec reads back is the very spec, for every operation, source and
option; only a source function made to travel has one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_deltacc.contract.source_function import SourceFunction
from airflow_provider_deltacc.contract.spec_json import spec_to_json
from airflow_provider_deltacc.contract.spec_parse import parse_spec

pytestmark = pytest.mark.unit

ROWS = {
    "kind": "rows",
    "rows": [[1, "2026-01-01", "a"], {"id": 2, "d": "2026-01-02"}],
    "schema": "id INT, d DATE",
}
TXN = {"app_id": "orders-loader", "version": 7}
KNOWN_SNAPSHOT = {
    "version": 3,
    "partition_columns": ["d"],
    "schema": json.dumps(
        {"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True, "metadata": {}}]}
    ),
    "txn_unrecorded": True,
}

SPECS: dict[str, dict[str, Any]] = {
    "append created partitioned": {
        "operation": "append",
        "table": "/lake/orders",
        "source": ROWS,
        "options": {"partition_by": ["d"], "merge_schema": True},
        "txn": TXN,
        "commit_retry": {"max_attempts": 3, "min_wait_s": 0.5},
        "spark_conf": {"spark.sql.shuffle.partitions": "4"},
        "storage_guard": "exclusive_lease",
        "report_trail": {"run_token": "0123456789abcdef", "report_dir": "s3a://lake/_reports"},
        "turn_service": {"url": "http://127.0.0.1:40123", "token": "s3cret-token", "timeout_s": 60.0},
        "known_snapshot": KNOWN_SNAPSHOT,
    },
    "append clustered from a table": {
        "operation": "append",
        "table": "db.orders",
        "source": {"kind": "table", "name": "db.staging"},
        "options": {"cluster_by": ["id"], "create_if_missing": True},
    },
    "overwrite from parquet": {
        "operation": "overwrite_partitions",
        "table": "s3://lake/t",
        "source": {"kind": "parquet", "path": "/in", "options": {"mergeSchema": "true"}, "schema": "a INT"},
        "options": {"partition_values": [{"d": "2026-01-01"}], "max_partitions": 10},
    },
    "merge keyed, default clauses": {
        "operation": "merge",
        "table": "/lake/orders",
        "source": {"kind": "delta", "path": "/lake/staging", "version": 4},
        "options": {"keys": ["id", "d"]},
    },
    "merge with a condition, clauses, dedup and a pin list": {
        "operation": "merge",
        "table": "/lake/orders",
        "source": {"kind": "sql", "query": "SELECT * FROM staging WHERE d = '2026-01-01'"},
        "options": {
            "condition": "t.id = s.id AND t.d = s.d",
            "when_matched": [
                {"action": "delete", "condition": "s.deleted"},
                {"action": "update", "set": {"n": "t.n + s.n"}},
            ],
            "when_not_matched": [
                {"action": "insert", "condition": "NOT s.deleted", "values": {"id": "s.id"}}
            ],
            "dedup_order_by": "updated_at",
            "dedup_keys": ["id"],
            "partition_pin": ["d"],
            "max_pin_values": 50,
        },
    },
    "merge unpinned, insert only": {
        "operation": "merge",
        "table": "/lake/orders",
        "source": {"kind": "csv", "path": "/in.csv", "options": {"header": "true"}},
        "options": {"keys": ["id"], "partition_pin": None, "when_matched": []},
    },
    "merge auto pin": {
        "operation": "merge",
        "table": "/lake/orders",
        "source": ROWS,
        "options": {"keys": ["id"], "partition_pin": "auto"},
    },
    "update": {
        "operation": "update",
        "table": "/lake/orders",
        "options": {
            "set": {"n": "n + 1"},
            "set_values": {"status": "done", "amount": 1.5},
            "condition": "n < 10",
            "equals": {"region": None},
            "partition_values": [{"d": "2026-01-01"}, {"d": "2026-01-02"}],
        },
    },
    "delete": {"operation": "delete", "table": "/lake/orders", "options": {"equals": {"id": 3}}},
    "optimize zorder": {
        "operation": "optimize",
        "table": "/lake/orders",
        "options": {"partition_values": [{"d": "2026-01-01"}], "zorder_by": ["id"]},
    },
    "optimize full": {"operation": "optimize", "table": "db.clustered", "options": {"full": True}},
    "vacuum": {
        "operation": "vacuum",
        "table": "/lake/orders",
        "options": {"retention_hours": 200.5, "force": True, "dry_run": True},
    },
    "sql": {
        "operation": "sql",
        "table": "/lake/orders",
        "source": ROWS,
        "options": {
            "statement": "INSERT INTO {table} SELECT * FROM source WHERE d = :d",
            "args": {"d": "2026-01-01"},
            "op_class": "blind_append",
        },
    },
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_parse_spec_reads_the_json_form_back_into_the_very_spec(name: str) -> None:
    spec = parse_spec(SPECS[name])
    text = json.dumps(spec_to_json(spec))
    assert parse_spec(text) == spec


def _double(spark: Any) -> Any:
    return spark


def test_a_source_function_has_a_json_form_once_it_travelled() -> None:
    from airflow_provider_deltacc.spark_job.source_travel import travel_form

    local = parse_spec(
        {
            "operation": "append",
            "table": "/t",
            "source": {"kind": "callable", "function": _double},
            "options": {},
        }
    )
    with pytest.raises(ValueError, match="has a JSON form only once it was made to travel"):
        spec_to_json(local)
    travelled = travel_form(SourceFunction(_double, args=(1,)))
    spec = parse_spec({"operation": "append", "table": "/t", "source": travelled, "options": {}})
    assert spec_to_json(spec)["source"] == travelled
    back = parse_spec(json.dumps(spec_to_json(spec)))
    assert back.source is not None and back.source.function is not None
    assert back.source.function.args == (1,) and back.source.function.name.endswith("_double")


@pytest.mark.parametrize(
    ("turn_service", "field"),
    [
        ({"url": "ftp://127.0.0.1:1", "token": "t"}, "turn_service.url"),
        ({"url": "http://127.0.0.1:1"}, "turn_service.token"),
        ({"url": "http://127.0.0.1:1", "token": "t", "port": 1}, "turn_service.port"),
    ],
)
def test_a_bad_turn_service_is_refused_naming_the_field(turn_service: dict[str, Any], field: str) -> None:
    from airflow_provider_deltacc.contract.exceptions import SpecError

    spec = {**SPECS["delete"], "turn_service": turn_service}
    with pytest.raises(SpecError) as raised:
        parse_spec(spec)
    assert raised.value.field == field
