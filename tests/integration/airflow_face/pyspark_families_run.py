"""Parse the PySpark families' DAG file for one execution mode and run it with ``dag.test()`` in this
process: ``python -m tests.integration.airflow_face.pyspark_families_run MODE ROOT``.

A process of its own per mode, as a task's is: the ``spark_connect`` run starts no JVM here, the
``in_process`` run starts one, the ``spark_submit`` run one driver per task. ``ROOT/client-only`` is put on
this process's path only. Prints one line, ``FAMILIES_RESULT <json>``: every task instance's state and try
number, and whether this process started a JVM.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

RESULT_PREFIX = "FAMILIES_RESULT "
DAG_FOLDER = Path(__file__).resolve().parent / "pyspark_dags"


def main(mode: str, root: str) -> None:
    os.environ["DELTACC_FAMILIES_MODE"], os.environ["DELTACC_FAMILIES_ROOT"] = mode, root
    sys.path.insert(0, str(Path(root) / "client-only"))
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
    from pyspark import SparkContext

    bag = DagBag(dag_folder=str(DAG_FOLDER))
    assert not bag.import_errors, bag.import_errors
    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(bag, "dags-folder", None)
    run = bag.dags[f"deltacc_pyspark_families_{mode}"].test()

    states = {ti.task_id: [str(ti.state), ti.try_number] for ti in run.get_task_instances()}
    result = {"states": states, "jvm": SparkContext._gateway is not None}
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    # Leave without interpreter finalization, as the test run does (tests/conftest.py): with a JVM gateway
    # and pyarrow's thread pool in one process it now and then aborts after all is done.
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:])
