"""Pair finding: dependency paths, task groups, mapped tasks, concurrent runs, schedules across DAGs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_deltacc.advisor.pairs import UNKNOWN_TABLE
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaUpdateOperator,
)
from tests.unit.advisor.helpers import T, dag, pair, pairs, rows, run

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::UserWarning")]


def test_tasks_on_one_table_without_a_path_between_them_pair_up() -> None:
    with dag() as d:
        DeltaAppendOperator(task_id="a", table=T, source=rows("2026-11-01", 1))
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "y"}, partition_values=[{"date": "1"}])
        DeltaAppendOperator(task_id="elsewhere", table="/data/other", source=rows("2026-11-01", 1))
    analysis = run(d)
    assert pairs(analysis) == {frozenset({"d.a", "d.u"})}
    assert pair(analysis, "a", "u").timing == "no dependency path between them"


def test_a_dependency_path_even_through_other_tasks_rules_a_pair_out() -> None:
    from airflow.providers.standard.operators.empty import EmptyOperator

    with dag() as d:
        first = DeltaUpdateOperator(task_id="first", table=T, set_values={"v": "1"})
        middle = EmptyOperator(task_id="middle")
        last = DeltaDeleteOperator(task_id="last", table=T, condition="v = '1'")
        DeltaAppendOperator(task_id="side", table=T, source=rows("2026-11-01", 1))
        first >> middle >> last
    assert pairs(run(d)) == {frozenset({"d.first", "d.side"}), frozenset({"d.last", "d.side"})}


def test_task_groups_are_flattened_and_their_edges_count() -> None:
    from airflow.sdk import TaskGroup

    with dag() as d:
        with TaskGroup("load") as load:
            DeltaAppendOperator(task_id="a1", table=T, source=rows("2026-11-01", 1))
            DeltaAppendOperator(task_id="a2", table=T, source=rows("2026-11-02", 2))
        merge = DeltaMergeOperator(task_id="merge", table=T, source=rows("2026-11-01", 1), keys=["id"])
        load >> merge
    assert pairs(run(d)) == {frozenset({"d.load.a1", "d.load.a2"})}


def test_mapped_instances_count_against_each_other_unless_limited_to_one() -> None:
    with dag() as d:
        DeltaMergeOperator.partial(task_id="m", table=T, keys=["id"], partition_pin=None).expand(
            source=[rows("2026-11-01", 1), rows("2026-11-02", 2)]
        )
        DeltaMergeOperator.partial(
            task_id="one_at_a_time", table="/data/other", keys=["id"], max_active_tis_per_dag=1
        ).expand(source=[rows("2026-11-01", 1)])
    analysis = run(d)
    assert pairs(analysis) == {frozenset({"d.m"})}
    finding = pair(analysis, "m", "m")
    assert finding.timing == "its mapped instances run concurrently"
    assert finding.level.value == "will"


def test_a_task_meets_itself_across_runs_only_when_max_active_runs_allows() -> None:
    with dag("one", max_active_runs=1) as single:
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "1"})
    with dag("many", max_active_runs=3, schedule="0 2 * * *") as many:
        DeltaUpdateOperator(task_id="u", table="/data/other", set_values={"v": "1"})
    analysis = run(single, many)
    assert pairs(analysis) == {frozenset({"many.u"})}
    assert "max_active_runs=3" in pair(analysis, "many.u", "many.u").timing
    assert "manual run" in pair(analysis, "many.u", "many.u").timing


def test_cross_dag_pairs_follow_the_schedules() -> None:
    hour = {"dagrun_timeout": timedelta(hours=1)}
    with dag("night", schedule="0 2 * * *", **hour) as night:
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "1"})
    with dag("half_past", schedule="30 2 * * *", **hour) as half_past:
        DeltaAppendOperator(task_id="a", table=T, source=rows("2026-11-01", 1))
    with dag("morning", schedule="0 5 * * *", **hour) as morning:
        DeltaDeleteOperator(task_id="d", table=T, condition="true")
    with dag("manual") as manual:
        DeltaAppendOperator(task_id="m", table=T, source=rows("2026-11-01", 1))
    analysis = run(night, half_past, morning, manual)
    found = pairs(analysis)
    assert frozenset({"night.u", "half_past.a"}) in found
    assert "first at 2026-11-23 02:30 UTC" in pair(analysis, "night.u", "half_past.a").timing
    assert frozenset({"night.u", "morning.d"}) not in found, "02:00-03:00 and 05:00-06:00 never overlap"
    assert frozenset({"half_past.a", "morning.d"}) not in found
    assert "may overlap anything" in pair(analysis, "manual.m", "morning.d").timing


def test_timedelta_schedules_and_catchup() -> None:
    with dag("every_6h", schedule=timedelta(hours=6), dagrun_timeout=timedelta(minutes=30)) as six:
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "1"})
    with dag("at_3", schedule="0 3 * * *", dagrun_timeout=timedelta(minutes=30)) as three:
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "2"})
    with dag("at_3_catchup", schedule="0 3 * * *", catchup=True) as late:
        DeltaUpdateOperator(task_id="u", table="/data/other", set_values={"v": "2"})
    with dag("every_6h_b", schedule=timedelta(hours=6)) as six_b:
        DeltaUpdateOperator(task_id="u", table="/data/other", set_values={"v": "1"})
    found = pairs(run(six, three, late, six_b))
    assert frozenset({"every_6h.u", "at_3.u"}) not in found, "0/6/12/18h vs 3h, 30 minutes each"
    assert frozenset({"at_3_catchup.u", "every_6h_b.u"}) in found


def test_a_templated_table_is_paired_with_every_table() -> None:
    with dag() as d:
        DeltaUpdateOperator(task_id="any", table="{{ params.table }}", set_values={"v": "1"})
        DeltaAppendOperator(task_id="a", table=T, source=rows("2026-11-01", 1))
        DeltaAppendOperator(task_id="b", table="/data/other", source=rows("2026-11-01", 1))
    analysis = run(d)
    assert pairs(analysis) == {frozenset({"d.any", "d.a"}), frozenset({"d.any", "d.b"})}
    finding = pair(analysis, "any", "a")
    assert finding.table == T
    assert any("table is templated" in note for note in finding.assumptions)
    assert "Assumes the worst" in finding.reason


def test_two_templated_tables_pair_under_the_unknown_table() -> None:
    with dag() as d:
        DeltaUpdateOperator(task_id="x", table="{{ params.a }}", set_values={"v": "1"})
        DeltaUpdateOperator(task_id="y", table="{{ params.b }}", set_values={"v": "1"})
    assert pair(run(d), "x", "y").table == UNKNOWN_TABLE


def test_non_provider_tasks_are_ignored() -> None:
    from airflow.providers.standard.operators.empty import EmptyOperator

    with dag() as d:
        EmptyOperator(task_id="e1")
        EmptyOperator(task_id="e2")
    analysis = run(d)
    assert analysis.findings == () and analysis.tasks == ()
