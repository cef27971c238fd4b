"""OpenLineage datasets of a Delta operator: the source it read and the table version it committed.

Called only by the OpenLineage provider (``get_openlineage_facets_on_complete``), so OpenLineage is imported
here, inside the functions, and never when a DAG is parsed or the provider is not installed.

Dataset naming follows OpenLineage's conventions for paths: ``file`` + the absolute path, ``s3://bucket`` +
the key, ``<scheme>://<authority>`` + the path for other stores. A catalog table is namespace
``spark_catalog`` (or its catalog) and name ``schema.table``.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from airflow_provider_deltacc.contract.table_location import CATALOG_ASSET_SCHEME
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.lineage.assets import table_asset_uri

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

    from airflow_provider_deltacc.contract.spec import SourceSpec


def dataset_name(table: str) -> tuple[str, str]:
    """OpenLineage ``(namespace, name)`` of a Delta table or a file source (a path or a catalog name)."""
    parsed = urlsplit(table_asset_uri(table))
    if parsed.scheme == CATALOG_ASSET_SCHEME:
        schema, _, name = parsed.path.strip("/").partition("/")
        return parsed.netloc, f"{schema}.{name}"
    if parsed.scheme == "file":
        return "file", parsed.path
    return f"{parsed.scheme}://{parsed.netloc}", parsed.path.lstrip("/")


def operator_lineage(table: str, source: SourceSpec | None, report: dict[str, Any] | None) -> OperatorLineage:
    """The inputs (the source's table or path; a query as the job's SQL facet) and the output (the target
    table with the committed version) of one run.

    :param table: the target table.
    :param source: the source the run read (its spec's); None when there is none or the task did not commit.
    :param report: the run's report; None when the task did not commit.
    """
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import dataset_version_dataset, sql_job

    namespace, name = dataset_name(table)
    facets: dict[str, Any] = {}
    version = (report or {}).get("table_version")
    if version is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(version))
    inputs: list[Any] = []
    job_facets: dict[str, Any] = {}
    # A source function's inputs are whatever its code reads: unknown here (its spec names the function).
    where = None if source is None or source.kind == "callable" else source.path or source.name
    if source is not None and source.kind == "sql":
        job_facets["sql"] = sql_job.SQLJobFacet(query=str(source.query), dialect="spark")
    elif where:
        # A relative source path has no stable name to report.
        with suppress(DeltaCCInputError):
            inputs.append(InputDataset(*dataset_name(where)))
    return OperatorLineage(
        inputs=inputs, outputs=[OutputDataset(namespace, name, facets=facets)], job_facets=job_facets
    )
