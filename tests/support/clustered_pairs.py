"""Two writers on one liquid-clustered Delta table, the loser held after it read its snapshot.

The table is ``CLUSTER BY (k)`` with rows in ``k = 'a'`` (ids 1, 2, 11, 12) and ``k = 'b'`` (ids 3, 4, 13,
14), one file per ``k`` value and round, so the files' statistics separate the two clustering values and
data skipping can narrow what a DML reads. The held transaction blocks at a :class:`~tests.support.gate.Gate`
in its condition (or its MERGE source) while the rival commits; then it is released. Each statement runs
once, straight through Spark SQL: Delta's own commit retry is all there is, so a conflict is the exception
the held statement raises, classified with the provider's classifier.

``WRITERS`` names every statement; ``HOLDABLE`` those that evaluate a row condition (OPTIMIZE and ALTER TABLE
do not, so they are only ever the rival that commits first).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.occ.classifier import classify
from tests.support.gate import Gate
from tests.support.held import gate_udf, hold

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = "id INT, k STRING, v STRING"
GATE_TIMEOUT_S = 180.0
#: The id the gate blocks on: it lives in k = 'a' (and is the first row of the held MERGE's source).
HELD_ID = 1


@dataclass(frozen=True)
class Writer:
    """One statement of the experiment.

    :param name: how pairs name it.
    :param kind: the conflict matrix's operation kind.
    :param sql: the statement; ``{t}`` is the table, ``{gate}`` a condition that holds it (always true).
    :param on_clustering: its predicate narrows it to one clustering value (``k = 'a'`` or ``'b'``).
    :param optimizes: it needs several files per clustering value to have work.
    """

    name: str
    kind: OpKind
    sql: str
    on_clustering: bool = False
    optimizes: bool = False


_MERGE = (
    "MERGE INTO {t} AS t USING (SELECT * FROM VALUES (1, 'a', 'm'), (5, 'a', 'm') AS s(id, k, v) "
    "WHERE {gate}) AS s ON {on} WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)

WRITERS: dict[str, Writer] = {
    w.name: w
    for w in (
        Writer(
            "append",
            OpKind.BLIND_APPEND,
            "INSERT INTO {t} SELECT * FROM VALUES (21, 'c', 'n'), (1, 'c', 'n') AS s(id, k, v) WHERE {gate}",
        ),
        Writer("merge_on_k", OpKind.MERGE, _MERGE.replace("{on}", "t.id = s.id AND t.k = 'a'"), True),
        Writer("merge", OpKind.MERGE, _MERGE.replace("{on}", "t.id = s.id")),
        Writer("update_on_k", OpKind.UPDATE, "UPDATE {t} SET v = 'u' WHERE k = 'a' AND {gate}", True),
        Writer("update", OpKind.UPDATE, "UPDATE {t} SET v = 'u' WHERE id IN (1, 2) AND {gate}"),
        Writer("delete_on_k", OpKind.DELETE, "DELETE FROM {t} WHERE k = 'a' AND id = 2 AND {gate}", True),
        Writer("delete", OpKind.DELETE, "DELETE FROM {t} WHERE id = 2 AND {gate}"),
        # Rivals on the other clustering value (never held).
        Writer("update_on_other_k", OpKind.UPDATE, "UPDATE {t} SET v = 'w' WHERE k = 'b'", True),
        Writer("delete_on_other_k", OpKind.DELETE, "DELETE FROM {t} WHERE k = 'b' AND id = 4", True),
        Writer("optimize", OpKind.OPTIMIZE, "OPTIMIZE {t}", optimizes=True),
        Writer("optimize_full", OpKind.OPTIMIZE, "OPTIMIZE {t} FULL", optimizes=True),
        Writer("cluster_by", OpKind.CLUSTER_BY, "ALTER TABLE {t} CLUSTER BY (k, v)"),
    )
}
HOLDABLE = frozenset({"append", "merge_on_k", "merge", "update_on_k", "update", "delete_on_k", "delete"})


@dataclass(frozen=True)
class PairOutcome:
    """What happened: the held statement's conflict (None: it committed) and whether the rival committed."""

    held_conflict: ConflictKind | None
    held_error: str | None
    rival_committed: bool


def create_clustered_table(spark: SparkSession, path: str, *, rounds: int) -> None:
    """Create the ``CLUSTER BY (k)`` table and write ``rounds`` rounds of one file per clustering value."""
    table = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {table} ({SCHEMA}) USING delta CLUSTER BY (k)")
    for offset in (0, 10)[:rounds]:
        for k, ids in (("a", (1, 2)), ("b", (3, 4))):
            rows = [(offset + i, k, "seed") for i in ids]
            spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append").save(path)


def run_pair(spark: SparkSession, directory: Path, held: str, rival: str) -> PairOutcome:
    """Seed a fresh clustered table in ``directory``, hold ``held`` after it read its snapshot, commit
    ``rival``, release ``held``; return what happened."""
    if held not in HOLDABLE:
        raise ValueError(f"{held!r} evaluates no row condition, so it cannot be held; use it as the rival")
    path = str(directory / f"{held}-vs-{rival}")
    optimizes = WRITERS[held].optimizes or WRITERS[rival].optimizes
    create_clustered_table(spark, path, rounds=2 if optimizes else 1)
    table = f"delta.`{path}`"
    gate = Gate(directory, timeout_s=GATE_TIMEOUT_S)
    condition = f"{gate_udf(spark, gate, only=HELD_ID)}(id)"
    held_sql = WRITERS[held].sql.format(t=table, gate=condition)
    rival_sql = WRITERS[rival].sql.format(t=table, gate="true")
    rival_committed = False
    with hold(gate, lambda: spark.sql(held_sql).collect(), name=f"held-{held}") as call:
        spark.sql(rival_sql).collect()
        rival_committed = True
    error = call.error
    if error is None:
        return PairOutcome(None, None, rival_committed)
    conflict = classify(error)
    if conflict is None:
        raise AssertionError(f"{held} failed with something that is not a conflict: {error!r}")
    return PairOutcome(conflict.kind, type(error).__name__, rival_committed)
