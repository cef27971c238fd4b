"""Read the asset events a run recorded in the Airflow metadata DB."""

from __future__ import annotations

from typing import Any


def asset_events(uri: str) -> list[dict[str, Any]]:
    """Every event of the asset ``uri``, oldest first: the emitting task, run, map index and extra."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = (
            session.query(AssetEvent)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .filter(AssetModel.uri == uri)
            .order_by(AssetEvent.id)
            .all()
        )
        return [
            {
                "task_id": r.source_task_id,
                "run_id": r.source_run_id,
                "map_index": r.source_map_index,
                "extra": dict(r.extra),
            }
            for r in rows
        ]
