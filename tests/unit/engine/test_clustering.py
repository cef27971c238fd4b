"""Clustering without Spark: the spec, the operators' parse-time checks, the traits and the log reading."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.conflict_matrix import TableTraits
from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.spec import AppendOptions, OptimizeOptions
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.delta_log.table_facts import TableFacts, latest_clustering_columns
from airflow_provider_deltacc.engine.clustering import is_unsupported_full
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaOptimizeOperator

pytestmark = pytest.mark.unit

ROWS = {"kind": "rows", "rows": [[1, "eu"]], "schema": "id INT, region STRING"}


def test_the_spec_carries_cluster_by_and_full() -> None:
    append = parse_spec(
        {"operation": "append", "table": "/t", "source": ROWS, "options": {"cluster_by": ["region"]}}
    )
    assert append.options == AppendOptions(cluster_by=("region",))
    optimize = parse_spec({"operation": "optimize", "table": "/t", "options": {"full": True}})
    assert optimize.options == OptimizeOptions(full=True)


def test_the_spec_refuses_partition_by_with_cluster_by_naming_both() -> None:
    spec = {"operation": "append", "table": "/t", "source": ROWS}
    spec["options"] = {"partition_by": ["region"], "cluster_by": ["id"]}
    with pytest.raises(SpecError) as raised:
        parse_spec(spec)
    assert raised.value.field == "options.cluster_by"
    assert "partition_by" in str(raised.value) and "cluster_by" in str(raised.value)


def test_the_append_operator_refuses_both_at_parse_time() -> None:
    with pytest.raises(
        DeltaCCInputError, match=r"partition_by=\['date'\], cluster_by=\['region'\]"
    ) as raised:
        DeltaAppendOperator(
            task_id="a", table="/t", source="/in", partition_by=["date"], cluster_by=["region"]
        )
    assert raised.value.field == "cluster_by"


def test_the_append_operator_sends_cluster_by() -> None:
    op = DeltaAppendOperator(task_id="a", table="/t", source="/in", cluster_by=["region"])
    assert op.build_options({}).cluster_by == ("region",)  # type: ignore[arg-type]


def test_optimize_full_is_sent_and_refused_with_zorder() -> None:
    op = DeltaOptimizeOperator(task_id="o", table="/t", full=True)
    assert op.build_options({}) == OptimizeOptions(full=True)  # type: ignore[arg-type]
    with pytest.raises(DeltaCCInputError, match="full=True"):
        DeltaOptimizeOperator(task_id="o", table="/t", full=True, zorder_by=["id"])


def test_clustered_excludes_partitioned() -> None:
    with pytest.raises(ValueError, match="clustered"):
        TableTraits(partitioned=True, clustered=True)
    facts = TableFacts((), {}, clustered=True, clustering_columns=("region",))
    assert facts.traits() == TableTraits(clustered=True)


HISTORY: list[tuple[list[dict[str, Any]], tuple[str, ...]]] = [
    ([{"operation": "CREATE TABLE", "operationParameters": {"clusterBy": '["region"]'}}], ("region",)),
    (
        [
            {"operation": "WRITE", "operationParameters": {"mode": "Append"}},
            {"operation": "CLUSTER BY", "operationParameters": {"newClusteringColumns": "region,id"}},
            {"operation": "CREATE TABLE", "operationParameters": {"clusterBy": '["region"]'}},
        ],
        ("region", "id"),
    ),
    ([{"operation": "CLUSTER BY", "operationParameters": {"newClusteringColumns": ""}}], ()),
    ([{"operation": "WRITE", "operationParameters": {}}], ()),
]


@pytest.mark.parametrize(("history", "expected"), HISTORY)
def test_clustering_columns_come_from_the_newest_commit_that_set_them(
    history: list[dict[str, Any]], expected: tuple[str, ...]
) -> None:
    assert latest_clustering_columns(history) == expected


def test_an_old_delta_without_optimize_full_is_recognised() -> None:
    assert is_unsupported_full(ValueError("[PARSE_SYNTAX_ERROR] Syntax error at or near 'FULL'"))
    assert not is_unsupported_full(
        ValueError("[DELTA_OPTIMIZE_FULL_NOT_SUPPORTED] OPTIMIZE FULL is only ...")
    )
