"""Classification of pairs with the matrix: verdict, exceptions, losers, concrete reasons and fixes."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.advisor.findings import FindingLevel
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaSqlOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from tests.unit.advisor.helpers import REFERENCE, T, add_column, dag, pair, rows, run

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::UserWarning")]

DAY1, DAY2 = "2026-11-01", "2026-11-02"


def test_unpinned_merge_against_an_append_will_conflict_and_says_why() -> None:
    with dag() as d:
        DeltaMergeOperator(task_id="merge", table=T, source=rows(DAY2, 1), keys=["id"], partition_pin=None)
        DeltaAppendOperator(task_id="append", table=T, source=rows(DAY1, 9), partition_by=["date"])
    finding = pair(run(d), "merge", "append")
    assert finding.level is FindingLevel.WILL
    assert finding.exceptions == ("ConcurrentAppendException",)
    assert finding.losers == ("d.merge",)
    assert finding.reason.startswith(
        "merge (MERGE without partition pin) reads the whole table; a concurrent blind append by append adds "
        "files to date=2026-11-01, so it will raise ConcurrentAppendException in merge"
    )
    assert finding.fixes[0].startswith("pin merge:")
    assert any("staging_append_then_merge" in fix for fix in finding.fixes)
    assert finding.fixes[-1] == "add a dependency: merge >> append"


def test_disjoint_literal_partitions_cannot_conflict() -> None:
    with dag() as d:
        DeltaUpdateOperator(task_id="u1", table=T, set_values={"v": "1"}, partition_values=[{"date": DAY1}])
        DeltaDeleteOperator(task_id="d2", table=T, partition_values=[{"date": DAY2}])
    finding = pair(run(d), "u1", "d2")
    assert finding.level is FindingLevel.CANNOT
    assert "touches only date=2026-11-01" in finding.reason and "only date=2026-11-02" in finding.reason
    assert finding.exceptions == () and finding.fixes == ()
    assert "disjoint_partition_pins" in finding.verdict.rules


def test_a_merge_pinned_by_its_keys_uses_the_tables_partition_columns() -> None:
    with dag() as d:
        DeltaAppendOperator(task_id="create", table=T, source=rows(DAY2, 5), partition_by=["date"])
        DeltaMergeOperator(task_id="keyed", table=T, source=rows(DAY1, 1), keys=["id", "date"])
        DeltaMergeOperator(task_id="not_keyed", table="/data/other", source=rows(DAY1, 1), keys=["id"])
        DeltaAppendOperator(task_id="other_append", table="/data/other", source=rows(DAY2, 5))
    analysis = run(d)
    assert pair(analysis, "keyed", "create").level is FindingLevel.CANNOT, (
        "date=2026-11-01 vs date=2026-11-02"
    )
    unknown = pair(analysis, "not_keyed", "other_append")
    assert unknown.level is FindingLevel.CAN
    assert "partition columns unknown" in unknown.reason


def test_same_literal_partition_will_conflict_both_ways() -> None:
    with dag() as d:
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "1"}, partition_values=[{"date": DAY1}])
        DeltaDeleteOperator(task_id="x", table=T, partition_values=[{"date": DAY1}, {"date": DAY2}])
    finding = pair(run(d), "u", "x")
    assert finding.level is FindingLevel.WILL
    assert set(finding.losers) == {"d.u", "d.x"}
    assert "ConcurrentDeleteReadException" in finding.exceptions


def test_templated_partitions_assume_the_worst() -> None:
    with dag() as d:
        DeltaUpdateOperator(
            task_id="u", table=T, set_values={"v": "1"}, partition_values=[{"date": "{{ ds }}"}]
        )
        DeltaDeleteOperator(task_id="x", table=T, partition_values=[{"date": DAY1}])
    finding = pair(run(d), "u", "x")
    assert finding.level is FindingLevel.CAN
    assert "partition_values is templated" in finding.reason
    assert "Assumes the worst" in finding.reason and "if they touch the same partitions" in finding.reason


def test_schema_change_fails_every_writer_and_pinning_cannot_help() -> None:
    with dag() as d:
        add_column()
        DeltaAppendOperator(task_id="append", table=T, source=rows(DAY1, 1))
    finding = pair(run(d), "alter", "append")
    assert finding.level is FindingLevel.WILL
    assert finding.losers == ("d.append",)
    assert "MetadataChangedException" in finding.exceptions
    assert finding.fixes[0].startswith("run the schema change alone")


def test_ungated_sql_optimize_is_told_to_move_into_a_window_and_gated_is_mitigated() -> None:
    with dag() as d:
        DeltaSqlOperator(
            task_id="sql_optimize", table=T, statement="OPTIMIZE {table}", op_class="maintenance"
        )
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "1"}, partition_values=[{"date": DAY1}])
        DeltaOptimizeOperator(task_id="gated_optimize", table="/data/other")
        DeltaUpdateOperator(task_id="u2", table="/data/other", set_values={"v": "1"})
    analysis = run(d)
    ungated = pair(analysis, "sql_optimize", "u")
    assert ungated.level is FindingLevel.CAN, "OPTIMIZE may find nothing to compact: never 'will'"
    assert ungated.fixes[0].startswith("move sql_optimize into a write window")
    gated = pair(analysis, "gated_optimize", "u2")
    assert "Mitigated by the gate" in gated.reason
    assert gated.fixes[0].startswith("already gated")


def test_vacuum_is_a_hazard_with_its_retention_named() -> None:
    with dag() as d:
        DeltaVacuumOperator(task_id="vacuum", table=T, retention_hours=1, force=True)
        DeltaAppendOperator(task_id="append", table=T, source=rows(DAY1, 1))
    finding = pair(run(d), "vacuum", "append")
    assert finding.level is FindingLevel.HAZARD
    assert "retention 1 h, force=True" in finding.reason
    assert finding.exceptions == ()
    assert "retention_hours" in finding.fixes[0]


def test_the_profile_and_traits_of_a_maintenance_operator_apply_to_its_table() -> None:
    with dag() as d:
        DeltaOptimizeOperator(task_id="opt", table=T, profile="databricks_write_serializable")
        DeltaMergeOperator(task_id="merge", table=T, source=rows(DAY1, 1), keys=["id"], partition_pin=None)
        DeltaAppendOperator(task_id="append", table=T, source=rows(DAY1, 2))
        DeltaMergeOperator(
            task_id="merge_oss", table="/data/oss", source=rows(DAY1, 1), keys=["id"], partition_pin=None
        )
        DeltaAppendOperator(task_id="append_oss", table="/data/oss", source=rows(DAY1, 2))
    analysis = run(d)
    assert pair(analysis, "merge", "append").level is FindingLevel.CANNOT, (
        "WriteSerializable ignores blind appends"
    )
    assert pair(analysis, "merge_oss", "append_oss").level is FindingLevel.WILL


def test_identity_columns_make_two_appends_conflict() -> None:
    with dag() as d:
        DeltaOptimizeOperator(task_id="opt", table=T, table_traits={"identity_columns": True})
        DeltaAppendOperator(task_id="a", table=T, source=rows(DAY1, 1))
        DeltaAppendOperator(task_id="b", table=T, source=rows(DAY2, 2))
    finding = pair(run(d), "a", "b")
    assert finding.level is FindingLevel.WILL
    assert finding.exceptions == ("MetadataChangedException",)


def test_findings_are_sorted_worst_first() -> None:
    with dag() as d:
        DeltaAppendOperator(task_id="a", table=T, source=rows(DAY1, 1))
        DeltaAppendOperator(task_id="b", table=T, source=rows(DAY1, 2))
        DeltaMergeOperator(task_id="m", table=T, source=rows(DAY1, 1), keys=["id"], partition_pin=None)
    levels = [f.level.rank for f in run(d).findings]
    assert levels == sorted(levels) and levels[0] == FindingLevel.WILL.rank


def test_gated_maintenance_is_mitigated_by_leases_and_a_lease_free_writer_is_not() -> None:
    with dag("d", max_active_runs=2) as d:
        DeltaOptimizeOperator(task_id="opt", table=T, partition_values=[{"date": DAY1}])
        DeltaUpdateOperator(
            task_id="no_lease",
            table=T,
            set_values={"v": "1"},
            partition_values=[{"date": DAY1}],
            use_write_lease=False,
        )
    analysis = run(d)
    itself = pair(analysis, "opt", "opt")
    assert itself.level is FindingLevel.CAN
    assert "Mitigated by maintenance leases: a second opt waits" in itself.reason
    unseen = pair(analysis, "opt", "no_lease")
    assert "Mitigated" not in unseen.reason
    assert unseen.fixes[0].startswith("no_lease has use_write_lease=False")


def test_a_task_against_itself_names_runs_or_mapped_instances() -> None:
    with dag("d", max_active_runs=2) as d:
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "1"}, partition_values=[{"date": DAY1}])
        DeltaMergeOperator.partial(task_id="m", table="/data/other", keys=["id"], partition_pin=None).expand(
            source=[rows(DAY1, 1), rows(DAY2, 2)]
        )
    analysis = run(d)
    runs = pair(analysis, "u", "u")
    assert runs.level is FindingLevel.WILL, "two runs update the same literal partition"
    assert runs.reason.startswith("Two concurrent runs of u (UPDATE) each reads date=2026-11-01")
    assert runs.fixes == ("set max_active_runs=1 on d so two runs never write /data/orders at once",)
    mapped = pair(analysis, "m", "m")
    assert mapped.reason.startswith("Two concurrent instances of m (MERGE without partition pin)")


def test_partition_columns_can_be_read_from_the_delta_log(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from airflow_provider_deltacc.advisor.analysis import analyse, delta_log_columns

    data = pa.table({"id": [1], "date": [DAY1], "v": ["x"]})
    partitioned, flat = str(tmp_path / "partitioned"), str(tmp_path / "flat")
    write_deltalake(partitioned, data, partition_by=["date"])
    write_deltalake(flat, data)
    with dag() as d:
        DeltaMergeOperator(task_id="merge", table=partitioned, source=rows(DAY1, 1), keys=["id", "date"])
        DeltaAppendOperator(task_id="append", table=partitioned, source=rows(DAY2, 2))
        DeltaUpdateOperator(task_id="u1", table=flat, set_values={"v": "1"}, condition="id = 1")
        DeltaDeleteOperator(task_id="d2", table=flat, condition="id = 2")
    offline = run(d)
    assert pair(offline, "merge", "append").level is FindingLevel.CAN, "partition columns unknown offline"
    assert pair(offline, "u1", "d2").level is FindingLevel.CAN, "SQL conditions are not analysed"
    read = analyse([d], reference=REFERENCE, read_columns=delta_log_columns())
    assert pair(read, "merge", "append").level is FindingLevel.CANNOT, "keyed pin on date: 11-01 vs 11-02"
    flat_pair = pair(read, "u1", "d2")
    assert flat_pair.level is FindingLevel.WILL, "one unpartitioned table: both rewrite the same files"
    assert "the table is not partitioned" in flat_pair.reason
