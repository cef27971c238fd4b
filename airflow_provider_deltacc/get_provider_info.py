"""Provider metadata for Airflow's ProvidersManager (entry point ``apache_airflow_provider``)."""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc import __version__


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
                "integration-name": "Delta Lake",
                "external-doc-url": "https://docs.delta.io/latest/concurrency-control.html",
                "tags": ["software"],
            }
        ],
    }
