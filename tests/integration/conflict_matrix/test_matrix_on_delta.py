"""The conflict matrix against real two-writer runs on delta-spark: every pair run must agree with it.

Each pair runs on its own copy of a tiny template table (a directory copy: no Spark work), with one forced
interleaving: the loser is held at a gate after it read its snapshot (``tests/support/held.py``), the
winner commits, the loser is released and commits once (Delta's own conflict check, no retry of ours).
The matrix is asked about the same pair, with the loser's and the winner's pinning passed per side
(``pinned_a``/``pinned_b``): a loser it names must fail with one of the exceptions it names, and a loser it
does not name must commit. Every pair is designed so that a "can" is a real overlap (same partition, an
unpinned reader of the whole table, or an unpartitioned table), so a "can" that commits is a disagreement.

Layouts (``LAYOUTS``, 82 pairs; every loser and every winner runs in at least one): the loser works on
partition ``p = 'a'``; the winner on the same partition, on the other one (``p = 'b'``: the per-side cells,
where a pinned loser survives a winner that writes elsewhere, pinned or not), or on an unpartitioned
table. Losers: append, INSERT … SELECT from the same table, replaceWhere, UPDATE, DELETE, MERGE pinned and
unpinned. Winners: the same (UPDATE and DELETE select their partition's rows by id, without a partition
predicate), OPTIMIZE, ZORDER, ADD COLUMNS, an allow-listed property change (enabling deletion vectors) and
one that is not allow-listed (``delta.logRetentionDuration``).
Observed on PySpark 4.2.0 + delta-spark 4.4.0, local filesystem.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_deltacc.conflict_matrix import EXCEPTION_NAMES, TableTraits, can_conflict
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.occ import classify
from tests.support.gate import Gate
from tests.support.held import gate_udf, hold

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow_module(5.5),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

SCHEMA = "id INT, p STRING, v STRING"
#: The ids the operations touch per partition: both in its first file (see _template), so a winner that
#: rewrites one of them rewrites the file the loser read.
IDS = {"a": (1, 2), "b": (3, 4)}
GATE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Ctx:
    """One pair's run: the table, the partition the op works on, and (for the loser) its gate."""

    spark: SparkSession
    path: str
    part: str
    partitioned: bool
    gate: Gate | None = None

    @property
    def table(self) -> str:
        return f"delta.`{self.path}`"

    def held_where(self, value: int) -> str:
        """A SQL condition that is always true and blocks at the gate on the row with id ``value``."""
        assert self.gate is not None
        return f"{gate_udf(self.spark, self.gate, only=value)}(id)"

    def frame(self, rows: list[tuple[int, str, str]], *, held: bool = False) -> DataFrame:
        frame = self.spark.createDataFrame(rows, SCHEMA).coalesce(1)
        return frame.where(self.gate.column("id")) if held and self.gate is not None else frame

    def merge(self, rows: list[tuple[int, str, str]], *, pinned: bool, held: bool) -> None:
        from delta.tables import DeltaTable

        condition = "t.id = s.id" + (f" AND t.p = '{self.part}'" if pinned else "")
        (
            DeltaTable.forPath(self.spark, self.path)
            .alias("t")
            .merge(self.frame(rows, held=held).alias("s"), condition)
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )


@dataclass(frozen=True)
class Op:
    """An operation as the matrix knows it, and how to run it.

    :param name: the pair id part.
    :param kind: its OpKind.
    :param pinned: it carries a literal predicate on the partition column.
    :param run: runs it (held at the context's gate when it is the loser).
    """

    name: str
    kind: OpKind
    pinned: bool
    run: Callable[[Ctx], None]


def _sql(ctx: Ctx, statement: str) -> None:
    ctx.spark.sql(statement)


def _append(ctx: Ctx) -> None:
    ctx.frame([(10, ctx.part, "x")], held=ctx.gate is not None).write.format("delta").mode("append").save(
        ctx.path
    )


def _insert_select(ctx: Ctx) -> None:
    held = f" AND {ctx.held_where(IDS[ctx.part][0])}" if ctx.gate else ""
    _sql(ctx, f"INSERT INTO {ctx.table} SELECT id + 100, p, v FROM {ctx.table} WHERE p = '{ctx.part}'{held}")


def _replace_where(ctx: Ctx) -> None:
    frame = ctx.frame([(20, ctx.part, "x")], held=ctx.gate is not None)
    writer = frame.write.format("delta").mode("overwrite").option("replaceWhere", f"p = '{ctx.part}'")
    writer.save(ctx.path)


def _rows(ctx: Ctx, row: int) -> str:
    """The loser pins its partition and holds at the gate; the winner selects the row by id only."""
    if ctx.gate is None:
        return f"id = {row}"
    return f"p = '{ctx.part}' AND id = {row} AND {ctx.held_where(row)}"


def _update(ctx: Ctx) -> None:
    _sql(ctx, f"UPDATE {ctx.table} SET v = 'u' WHERE {_rows(ctx, IDS[ctx.part][0])}")


def _delete(ctx: Ctx) -> None:
    _sql(ctx, f"DELETE FROM {ctx.table} WHERE {_rows(ctx, IDS[ctx.part][1])}")


def _merge(pinned: bool) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        ctx.merge(
            [(IDS[ctx.part][0], ctx.part, "m"), (30, ctx.part, "m")], pinned=pinned, held=bool(ctx.gate)
        )

    return run


def _optimize(zorder: bool) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        where = f" WHERE p = '{ctx.part}'" if ctx.partitioned else ""
        _sql(ctx, f"OPTIMIZE {ctx.table}{where}" + (" ZORDER BY (id)" if zorder else ""))

    return run


def _alter(clause: str) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        _sql(ctx, f"ALTER TABLE {ctx.table} {clause}")

    return run


K = OpKind
APPEND = Op("append", K.BLIND_APPEND, False, _append)
INSERT_SELECT = Op("insert_select", K.INSERT_SELECT, True, _insert_select)
REPLACE_WHERE = Op("replace_where", K.OVERWRITE, True, _replace_where)
UPDATE = Op("update", K.UPDATE, True, _update)
DELETE = Op("delete", K.DELETE, True, _delete)
MERGE_PINNED = Op("merge_pinned", K.MERGE, True, _merge(pinned=True))
MERGE_UNPINNED = Op("merge_unpinned", K.MERGE, False, _merge(pinned=False))
# Winners: UPDATE and DELETE select their partition's rows by id, without a partition predicate.
UPDATE_BY_ID = Op("update_by_id", K.UPDATE, False, _update)
DELETE_BY_ID = Op("delete_by_id", K.DELETE, False, _delete)
OPTIMIZE = Op("optimize", K.OPTIMIZE, True, _optimize(zorder=False))
ZORDER = Op("zorder", K.OPTIMIZE_ZORDER, True, _optimize(zorder=True))
ADD_COLUMNS = Op("add_columns", K.SCHEMA_CHANGE, False, _alter("ADD COLUMNS (extra INT)"))
ENABLE_DVS = Op(
    "enable_deletion_vectors",
    K.ENABLE_FEATURE,
    False,
    _alter("SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"),
)
LOG_RETENTION = Op(
    "log_retention",
    K.SCHEMA_CHANGE,
    False,
    _alter("SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days')"),
)
READERS = (INSERT_SELECT, REPLACE_WHERE, UPDATE, DELETE, MERGE_PINNED, MERGE_UNPINNED)


@dataclass(frozen=True)
class Layout:
    """Where the winner works, and the pairs run there.

    :param name: the test id.
    :param partitioned: the table is partitioned by ``p``.
    :param winner_part: the partition the winner works on (the loser works on ``a``).
    :param losers: the held operations.
    :param winners: the operations committing meanwhile.
    :param extra: (loser, winner) pairs run besides every loser against every winner.
    """

    name: str
    partitioned: bool
    winner_part: str
    losers: tuple[Op, ...]
    winners: tuple[Op, ...]

    extra: tuple[tuple[Op, Op], ...] = ()

    def pairs(self) -> list[tuple[Op, Op]]:
        return [*itertools.product(self.losers, self.winners), *self.extra]


LAYOUTS = (
    # Every loser against data winners in its own partition and against both property changes; ADD COLUMNS
    # fails them the way the other property change does.
    Layout(
        "same_partition",
        True,
        "a",
        (APPEND, *READERS),
        (APPEND, MERGE_PINNED, OPTIMIZE, ENABLE_DVS, LOG_RETENTION),
        ((APPEND, ADD_COLUMNS), (UPDATE, ADD_COLUMNS), (MERGE_UNPINNED, ADD_COLUMNS)),
    ),
    # The per-side cells: pinned losers against winners elsewhere, pinned (OPTIMIZE) or not.
    Layout("other_partition", True, "b", READERS, (APPEND, UPDATE_BY_ID, MERGE_UNPINNED, OPTIMIZE)),
    Layout(
        "unpartitioned",
        False,
        "a",
        tuple(op for op in READERS if op is not MERGE_PINNED),
        (INSERT_SELECT, REPLACE_WHERE, DELETE_BY_ID, ZORDER),
    ),
)


def _template(spark: SparkSession, path: Path, *, partitioned: bool) -> Path:
    """Two files per partition (ids 1, 2 then 5, 6 in ``a``; 3, 4 then 7, 8 in ``b``), or two in all, so
    OPTIMIZE has something to compact."""
    for round_ids in ((1, 2, 3, 4), (5, 6, 7, 8)):
        rows = [(i, "a" if i in (1, 2, 5, 6) else "b", "seed") for i in round_ids]
        writer = spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append")
        (writer.partitionBy("p") if partitioned else writer).save(str(path))
    return path


@dataclass(frozen=True)
class Outcome:
    pair: str
    predicted: str
    happened: str

    @property
    def agrees(self) -> bool:
        return self.predicted == self.happened or (
            self.predicted.startswith("fails") and self.happened in self.predicted
        )


def _predict(layout: Layout, loser: Op, winner: Op) -> str:
    """``commits``, or ``fails: <exception names>`` when the matrix names the loser's side."""
    other = layout.name == "other_partition"
    pinned_loser, pinned_winner = other and loser.pinned, other and winner.pinned
    verdict = can_conflict(
        loser.kind,
        winner.kind,
        traits=TableTraits(partitioned=layout.partitioned),
        pinned_a=pinned_loser,
        pinned_b=pinned_winner,
    )
    loses = verdict.conflicts and loser.kind in verdict.losers
    if loses and loser.kind == winner.kind and pinned_loser != pinned_winner:
        loses = not pinned_loser  # two of a kind: only the unpinned one can lose
    return "fails: " + ", ".join(EXCEPTION_NAMES[k] for k in verdict.exceptions) if loses else "commits"


def _run(spark: SparkSession, root: Path, template: Path, layout: Layout, loser: Op, winner: Op) -> str:
    pair_dir = root / f"{loser.name}-{winner.name}"
    path = pair_dir / "table"
    shutil.copytree(template, path)
    gate = Gate(pair_dir, timeout_s=GATE_TIMEOUT_S)
    with hold(gate, lambda: loser.run(Ctx(spark, str(path), "a", layout.partitioned, gate))) as held:
        winner.run(Ctx(spark, str(path), layout.winner_part, layout.partitioned))
    if held.error is None:
        return "commits"
    conflict = classify(held.error)
    if conflict is None:
        raise AssertionError(f"{pair_dir.name}: the loser failed without a conflict: {held.error!r}")
    return EXCEPTION_NAMES[conflict.kind]


def _cases() -> list[tuple[Layout, Op]]:
    """One test per layout and loser (each a few pairs, so no test outlives its timeout on a slow box)."""
    return [
        (layout, loser) for layout in LAYOUTS for loser in dict.fromkeys(held for held, _ in layout.pairs())
    ]


@pytest.fixture(scope="module")
def templates(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each layout's template table, written once for the module and copied for every pair."""
    root = tmp_path_factory.mktemp("matrix-templates")
    return {
        layout.name: _template(spark, root / layout.name, partitioned=layout.partitioned)
        for layout in LAYOUTS
    }


@pytest.mark.parametrize(
    ("layout", "loser"), _cases(), ids=lambda case: case.name if isinstance(case, (Layout, Op)) else None
)
def test_the_matrix_agrees_with_real_two_writer_runs(
    spark: SparkSession, templates: dict[str, Path], tmp_path: Path, layout: Layout, loser: Op
) -> None:
    outcomes = [
        Outcome(
            f"{loser.name} held, {winner.name} wins",
            _predict(layout, loser, winner),
            _run(spark, tmp_path, templates[layout.name], layout, loser, winner),
        )
        for pair_loser, winner in layout.pairs()
        if pair_loser is loser
    ]
    disagreements = [o for o in outcomes if not o.agrees]
    assert not disagreements, "\n".join(
        f"{o.pair}: matrix {o.predicted}, Delta {o.happened}" for o in disagreements
    )
