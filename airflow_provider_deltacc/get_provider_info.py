"""Provider metadata for Airflow's ProvidersManager (entry point ``apache_airflow_provider``)."""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc import __version__
from airflow_provider_deltacc.deployment.config import provider_config

_INTEGRATION = "Delta Lake"


def get_provider_info() -> dict[str, Any]:
    """Describe this provider to Airflow; ``package-name`` must equal the distribution name."""
    return {
        "package-name": "airflow-provider-deltacc",
        "name": "Delta Lake Concurrency Control",
        "description": (
            "Concurrent, exactly-once writes to Delta Lake tables on Spark: conflict classification, "
            "bounded retries, exactly-once identities and write windows for OPTIMIZE and VACUUM."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": _INTEGRATION,
                "external-doc-url": "https://docs.delta.io/latest/concurrency-control.html",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_provider_deltacc.operators.write",
                    "airflow_provider_deltacc.operators.maintenance",
                    # the operators behind @task.delta_merge, @task.delta_append, ...
                    "airflow_provider_deltacc.decorators.delta",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_provider_deltacc.sensors.table_version",
                    "airflow_provider_deltacc.sensors.write_window",
                ],
            }
        ],
        "hooks": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_provider_deltacc.hooks.deltacc",
                    # the SparkSubmitHook the deltacc hook submits through in spark_submit mode
                    "airflow_provider_deltacc.hooks.submit",
                ],
            }
        ],
        "triggers": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_provider_deltacc.triggers.table_version",
                    "airflow_provider_deltacc.triggers.gate",
                ],
            }
        ],
        # The hook reuses the apache-spark provider's `spark` connection type (master, deploy mode,
        # queue, Kerberos); a second type with the same fields would not earn its place.
        "connection-types": [],
        # @task.delta_merge, @task.delta_append, @task.delta_overwrite_partitions: your own PySpark code
        # as the source of a conflict-safe write (see airflow_provider_deltacc.decorators.delta).
        "task-decorators": [
            {"class-name": f"airflow_provider_deltacc.decorators.delta.{name}_task", "name": name}
            for name in ("delta_merge", "delta_append", "delta_overwrite_partitions")
        ],
        "extra-links": ["airflow_provider_deltacc.observability.links.DeltaCommitReportLink"],
        # The [deltacc] section: `airflow config list` shows it, AIRFLOW__DELTACC__* sets it.
        "config": provider_config(),
        "plugins": [
            {
                "name": "deltacc_conflicts",
                "plugin-class": "airflow_provider_deltacc.ui.plugin.DeltaConflictsPlugin",
            }
        ],
        # `airflow db migrate` creates and upgrades the conflicts page's summary table with it.
        "db-managers": ["airflow_provider_deltacc.ui.summary_db.ReportSummaryDBManager"],
    }
