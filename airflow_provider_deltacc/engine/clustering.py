"""Liquid clustering (``CLUSTER BY``): create a clustered table, read its clustering columns, OPTIMIZE FULL.

A path write with ``DataFrameWriter.clusterBy`` is silently ignored by Delta (measured on Delta 4.4: the table
comes out unclustered), so a clustered table is created with ``CREATE TABLE … CLUSTER BY`` and then written
to. Clustering and partitioning exclude each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.literals import quote_identifier
from airflow_provider_deltacc.contract.table import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def clustering_columns(spark: SparkSession, table: Table) -> tuple[str, ...]:
    """The table's clustering columns from ``DESCRIBE DETAIL`` (empty when it is not clustered).

    :param spark: the session.
    :param table: an existing Delta table.
    """
    row = spark.sql(f"DESCRIBE DETAIL {table.sql}").select("clusteringColumns").collect()[0]
    return tuple(str(c) for c in (row["clusteringColumns"] or ()))


def check_cluster_by_source(source: DataFrame, cluster_by: Sequence[str]) -> None:
    """Refuse clustering columns the source of a new table does not have.

    :param source: the first rows of the new table.
    :param cluster_by: the clustering columns.
    :raises InputError: naming ``options.cluster_by[i]``.
    """
    names = {c.lower() for c in source.columns}
    for index, column in enumerate(cluster_by):
        if column.lower() not in names:
            raise InputError(
                f"options.cluster_by[{index}]",
                column,
                f"is not a source column; source columns are {source.columns}",
            )


def check_existing_clustering(spark: SparkSession, table: Table, cluster_by: Sequence[str]) -> None:
    """Refuse ``cluster_by`` that differs from an existing table's clustering columns.

    :param spark: the session.
    :param table: the existing table.
    :param cluster_by: the clustering columns asked for.
    :raises InputError: naming ``options.cluster_by``.
    """
    actual = clustering_columns(spark, table)
    if [c.lower() for c in cluster_by] != [c.lower() for c in actual]:
        now = f"clustered by {list(actual)}" if actual else "not clustered"
        raise InputError(
            "options.cluster_by",
            list(cluster_by),
            f"the table exists and is {now}; drop cluster_by, make it match, or change the table's "
            "clustering with ALTER TABLE … CLUSTER BY",
        )


def create_clustered_table(
    spark: SparkSession, table: Table, source: DataFrame, cluster_by: Sequence[str]
) -> None:
    """Create the table empty with the source's schema, clustered by ``cluster_by`` (no-op if it exists).

    :param spark: the session.
    :param table: the table to create.
    :param source: the DataFrame whose schema the table gets.
    :param cluster_by: the clustering columns (checked against the source).
    """
    columns = ", ".join(quote_identifier(c) for c in cluster_by)
    # Built here, not with StructType.toDDL, which picks classic or Connect from process-wide state.
    ddl = ", ".join(
        f"{quote_identifier(f.name)} {f.dataType.simpleString()}{'' if f.nullable else ' NOT NULL'}"
        for f in source.schema.fields
    )
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table.sql} ({ddl}) USING delta CLUSTER BY ({columns})")


def is_unsupported_full(exc: BaseException) -> bool:
    """Whether ``OPTIMIZE … FULL`` failed because this Delta version does not parse it (before Delta 3.3).

    :param exc: what ``spark.sql`` raised.
    """
    text = str(exc)
    return ("PARSE_SYNTAX_ERROR" in text or "mismatched input" in text) and "FULL" in text.upper()
