"""The provider's ``[deltacc]`` Airflow config section: what it declares, and reading it.

Declared in provider info (``get_provider_info()["config"]``), so ``airflow config list`` shows it, and set
like any Airflow option: in ``airflow.cfg`` or as ``AIRFLOW__DELTACC__<OPTION>``. Every reader passes a
fallback, so a process that has not loaded the providers' config still gets the documented default.
Read these at execute, not at DAG parse; the one exception is ``default_deferrable``, which, like Airflow's
own providers, is an operator constructor default.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

SECTION = "deltacc"
LEASE_STORE_CONN_ID = "lease_store_conn_id"
DEFAULT_DEFERRABLE = "default_deferrable"
ALLOW_UNSHARED_LEASE_STORE = "allow_unshared_lease_store"
REPORT_DIR = "report_dir"
LEASE_HISTORY_DAYS = "lease_history_days"
DEFAULT_LEASE_HISTORY_DAYS = 7

#: Spelled as users write them in messages.
LEASE_STORE_CONN_ID_OPTION = f"[{SECTION}] {LEASE_STORE_CONN_ID}"
ALLOW_UNSHARED_OPTION = f"[{SECTION}] {ALLOW_UNSHARED_LEASE_STORE}"
ALLOW_UNSHARED_ENV = f"AIRFLOW__{SECTION.upper()}__{ALLOW_UNSHARED_LEASE_STORE.upper()}"


def provider_config() -> dict[str, Any]:
    """The ``config`` entry of provider info (Airflow's provider-info schema)."""
    return {
        SECTION: {
            "description": (
                "Delta Lake concurrency control: where write leases live, and how maintenance and the "
                "sensors wait."
            ),
            "options": {
                LEASE_STORE_CONN_ID: {
                    "description": (
                        "The Airflow connection of the lease store every writer, OPTIMIZE, VACUUM and "
                        "write-window sensor shares: a 'postgres' connection (e.g. Airflow's own metadata "
                        "database) or a 'sqlite' connection whose host is the lease file. A task's own "
                        "lease_store_conn_id argument overrides it. Empty: the older lease_store_url "
                        "argument or DELTACC_LEASE_STORE_URL, else the embedded SQLite file, which only "
                        "the LocalExecutor and dag.test() may use."
                    ),
                    "version_added": "0.1.0",
                    "type": "string",
                    "example": "deltacc_leases",
                    "default": "",
                },
                DEFAULT_DEFERRABLE: {
                    "description": (
                        "The deferrable default of OPTIMIZE, VACUUM, DeltaWriteWindowSensor and "
                        "DeltaTableVersionSensor: wait (for the maintenance gate, for a commit) in the "
                        "triggerer (True) or in the worker (False). Unset: [operators] default_deferrable, "
                        "whose own default is False."
                    ),
                    "version_added": "0.1.0",
                    "type": "boolean",
                    "example": "True",
                    "default": None,
                },
                ALLOW_UNSHARED_LEASE_STORE: {
                    "description": (
                        "Let writers and maintenance use a SQLite lease store under an executor that may "
                        "run tasks on several machines (Celery, Kubernetes, Edge, ...). Each machine then "
                        "has its own leases, so OPTIMIZE and VACUUM cannot see writers elsewhere; set it "
                        "only when every task that writes or maintains a table runs on one machine."
                    ),
                    "version_added": "0.1.0",
                    "type": "boolean",
                    "example": "True",
                    "default": "False",
                },
                REPORT_DIR: {
                    "description": (
                        "Where a spark_submit job's driver leaves its report (a path or URI the cluster "
                        "can write and the Airflow workers can read, e.g. s3a://bucket/deltacc-reports), "
                        "for when its report line does not reach the worker: in cluster deploy mode the "
                        "driver's stdout stays in the cluster's logs. Empty: in client mode the task's "
                        "own temporary directory; in cluster mode _deltacc_reports in the directory that "
                        "holds a path table (a catalog table then needs this option)."
                    ),
                    "version_added": "0.1.0",
                    "type": "string",
                    "example": "s3a://lake/_deltacc_reports",
                    "default": "",
                },
                LEASE_HISTORY_DAYS: {
                    "description": (
                        "How many days the lease store keeps leases that ended (released or expired). "
                        "Older ones are deleted by the tasks themselves, at most every ten minutes per "
                        "worker process, right after one of them is granted a lease, so the table stays "
                        "bounded. 0 keeps them all (then run `deltacc-leases purge` yourself)."
                    ),
                    "version_added": "0.1.0",
                    "type": "integer",
                    "example": "30",
                    "default": str(DEFAULT_LEASE_HISTORY_DAYS),
                },
            },
        }
    }


def _conf() -> Any:
    from airflow.sdk.configuration import conf

    return conf


def configured_lease_store_conn_id() -> str | None:
    """``[deltacc] lease_store_conn_id``, or None when it is empty."""
    value = _conf().get(SECTION, LEASE_STORE_CONN_ID, fallback="")
    return str(value).strip() or None


def configured_report_dir() -> str | None:
    """``[deltacc] report_dir``, or None when it is empty."""
    value = _conf().get(SECTION, REPORT_DIR, fallback="")
    return str(value).strip() or None


def default_deferrable() -> bool:
    """``[deltacc] default_deferrable``, else ``[operators] default_deferrable`` (False by default)."""
    conf = _conf()
    operators_default = conf.getboolean("operators", "default_deferrable", fallback=False)
    if str(conf.get(SECTION, DEFAULT_DEFERRABLE, fallback="")).strip() == "":
        return bool(operators_default)
    return bool(conf.getboolean(SECTION, DEFAULT_DEFERRABLE, fallback=operators_default))


def configured_lease_history() -> timedelta | None:
    """``[deltacc] lease_history_days`` as a timedelta; None (keep every lease) for 0."""
    days = _conf().getint(SECTION, LEASE_HISTORY_DAYS, fallback=DEFAULT_LEASE_HISTORY_DAYS)
    return timedelta(days=days) if days > 0 else None


def unshared_lease_store_allowed() -> bool:
    """``[deltacc] allow_unshared_lease_store`` (False by default)."""
    return bool(_conf().getboolean(SECTION, ALLOW_UNSHARED_LEASE_STORE, fallback=False))
