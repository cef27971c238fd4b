"""DAGs in the Airflow metadata DB as the DAG processor leaves them (``dag``, ``dag_version`` and
``serialized_dag`` rows), for tests of what the api-server reads from there: it imports no DAG file."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: The bundle the DAG processor files the DAGs folder's DAGs under.
BUNDLE = "dags-folder"


def write_serialized_dags(dags: Iterable[Any]) -> None:
    """Serialize ``dags`` (DAG objects) into the metadata DB through the DAG processor's own path:
    ``DagBag.bag_dag`` then ``sync_bag_to_db`` (``LazyDeserializedDAG``, ``SerializedDagModel.write_dag``)."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(collect_dags=False)
    for dag in dags:
        bag.bag_dag(dag)
    sync_bag_to_db(bag, BUNDLE, None)


def read_serialized_dags(dag_ids: Sequence[str]) -> dict[str, Any]:
    """The latest serialized DAGs ``dag_ids`` as the api-server reads them (``SerializedDAG``), by id."""
    from airflow.models.serialized_dag import SerializedDagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = SerializedDagModel.get_latest_serialized_dags(dag_ids=list(dag_ids), session=session)
        return {row.dag_id: row.dag for row in rows}


def remove_serialized_dags(dag_ids: Iterable[str]) -> None:
    """Delete the DAGs ``dag_ids`` with everything the DAG processor and the UI tests wrote for them."""
    from airflow.models.dag import DagTag
    from airflow.models.dagcode import DagCode
    from airflow.models.serialized_dag import SerializedDagModel
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    from tests.support.ui_metadata import clear_task_instances

    ids = list(dag_ids)
    with create_session() as session:
        for model in (SerializedDagModel, DagCode, DagTag):
            session.execute(delete(model).where(model.dag_id.in_(ids)))
        clear_task_instances(session, ids)
