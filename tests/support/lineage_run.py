"""Run one append with ``dag.test()`` in this process, with the OpenLineage provider's listener on.

Run as ``python -m tests.support.lineage_run TABLE SOURCE_PATH DAG_FOLDER`` by a test that sets
``AIRFLOW__OPENLINEAGE__TRANSPORT`` (a file transport) in the environment: the OpenLineage provider reads
its configuration once per process, so a test process that already asked cannot turn it on.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from tests.support.airflow_runs import serialize_dag

DAG_ID = "deltacc_lineage_run"
TASK_ID = "append_events"


def main(table: str, source_path: str, dag_folder: str) -> int:
    from airflow.sdk import DAG

    from airflow_provider_deltacc.operators import DeltaAppendOperator

    with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaAppendOperator(
            task_id=TASK_ID,
            table=table,
            source={"kind": "parquet", "path": source_path},
            execution_mode="in_process",
            retries=0,
        )
    serialize_dag(dag, Path(dag_folder))
    run = dag.test()
    return 0 if str(run.get_task_instance(TASK_ID).state) == "success" else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
