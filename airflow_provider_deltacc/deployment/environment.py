"""Every environment variable the provider reads or sets, in one place: the deployment guide's table is
generated from it (``scripts/gen_docs.py``), and a test checks that every variable the code names is here.

The ``[deltacc]`` config options are declared in :mod:`airflow_provider_deltacc.deployment.config`; the
table lists them too, with the environment variable that sets each one.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_deltacc.contract.storage_safety import OVERRIDE_ENV
from airflow_provider_deltacc.deployment.config import SECTION, provider_config
from airflow_provider_deltacc.deployment.placement import K8S_EXECUTOR_POD_ENV
from airflow_provider_deltacc.leases.factory import LEASE_STORE_URL_ENV
from airflow_provider_deltacc.leases.sqlite_store import LEASE_DB_ENV
from airflow_provider_deltacc.spark_jars.delta_jars import JAR_CACHE_ENV

#: Names of variables the provider works with that ``hooks.connect`` and ``hooks.spark_log`` define; spelled
#: here to keep this module free of Airflow imports (the test checks them against those modules).
CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"
SUBMIT_OPTS_ENV = "SPARK_SUBMIT_OPTS"
#: Where a worker keeps its warm Spark Connect sessions (``hooks.connect_sessions``).
CONNECT_SESSION_POOL_ENV = "DELTACC_CONNECT_SESSION_POOL_DIR"


@dataclass(frozen=True)
class EnvVar:
    """One environment variable.

    :param name: the variable.
    :param how: ``reads`` (a setting of yours), ``sets`` (for a process it starts) or ``internal``.
    :param where: which process reads or sets it.
    :param meaning: what it does, and its default.
    """

    name: str
    how: str
    where: str
    meaning: str


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        JAR_CACHE_ENV,
        "reads",
        "whatever starts a Spark driver: the worker (spark_submit in client mode, in_process), "
        "deltacc-connect-server, `jar_setup --fetch`",
        "the Delta jar cache (default `~/.cache/airflow-provider-deltacc/jars`)",
    ),
    EnvVar(
        LEASE_STORE_URL_ENV,
        "reads",
        "workers (writers, maintenance, the write-window sensor)",
        "the older way to name the lease store, used when no lease_store_conn_id is configured: "
        "`sqlite:////path/leases.db` or `postgresql://user:password@host:5432/db`",
    ),
    EnvVar(
        LEASE_DB_ENV,
        "reads",
        "the same",
        "the embedded SQLite lease file when no store is named (default "
        "`~/.cache/airflow-provider-deltacc/leases.db`)",
    ),
    EnvVar(
        CONNECT_SESSION_POOL_ENV,
        "reads",
        "workers (spark_connect)",
        "where the worker keeps the Spark Connect sessions tasks ended cleanly, for the next task on the "
        "same server (default `deltacc-connect-sessions-<uid>` in the temporary directory; deployment.md)",
    ),
    EnvVar(
        OVERRIDE_ENV,
        "reads",
        "writers",
        "`true` lets writers on S3 without Delta's DynamoDB log store overlap (see object-storage.md)",
    ),
    EnvVar(
        K8S_EXECUTOR_POD_ENV,
        "reads",
        "writers and maintenance",
        "set by Airflow's KubernetesExecutor in its pods: the task may run on any machine, so the lease "
        "store must be shared",
    ),
    EnvVar(
        "SPARK_HOME",
        "reads, sets",
        "the spark_submit hook, for spark-submit",
        "yours wins; unset, pip's pyspark folder (which has `bin/spark-submit`)",
    ),
    EnvVar(
        "SPARK_CONF_DIR",
        "reads",
        "writers (spark_submit, in_process)",
        "where the `spark-defaults.conf` spark-submit applies is (else `$SPARK_HOME/conf`, else pip's "
        "pyspark's `conf`); the operators read a Delta log store set there when they judge S3 storage",
    ),
    EnvVar(
        "PATH",
        "sets",
        "the spark_submit hook, for spark-submit",
        "the interpreter's `bin/` is added when `spark-submit` is not on the PATH",
    ),
    EnvVar(
        "PYSPARK_PYTHON",
        "sets",
        "the spark_submit hook (for the driver), a local session (in_process)",
        "the driver's Python: `driver_python`, else this interpreter for local masters; "
        "a local session sets it only when unset",
    ),
    EnvVar("PYSPARK_DRIVER_PYTHON", "sets", "the same", "the same as PYSPARK_PYTHON"),
    EnvVar(
        "SPARK_LOCAL_IP",
        "sets",
        "a local session (in_process, the tests)",
        "defaults to 127.0.0.1 for a local master (a local driver needs only loopback); yours wins",
    ),
    EnvVar(
        SUBMIT_OPTS_ENV,
        "sets",
        "the spark_submit hook, in client mode",
        "the driver's log4j configuration (spark_log_level) is put in front of yours",
    ),
    EnvVar(
        CONNECT_MODE_ENV,
        "internal",
        "spark_connect mode",
        "pyspark's mark of a Spark Connect client process: held while an operation runs on a Connect "
        "session, and put back as it was afterwards and after each session is created",
    ),
    EnvVar(
        "PYSPARK_GATEWAY_PORT",
        "internal",
        "the Spark job",
        "set by spark-submit; tells the job it runs under spark-submit (a plain Python process with no "
        "Delta session running is refused)",
    ),
)


def config_env_name(option: str) -> str:
    """The environment variable that sets ``[deltacc] <option>``.

    :param option: the option's name.
    """
    return f"AIRFLOW__{SECTION.upper()}__{option.upper()}"


def settings_table_markdown() -> str:
    """The table of every environment variable and ``[deltacc]`` option, as Markdown."""
    lines = [
        "| variable or option | reads or sets | where | meaning |",
        "|---|---|---|---|",
    ]
    for var in ENV_VARS:
        lines.append(f"| `{var.name}` | {var.how} | {var.where} | {var.meaning} |")
    for name, option in provider_config()[SECTION]["options"].items():
        default = option["default"]
        shown = "unset" if default is None else ("empty" if default == "" else f"`{default}`")
        description = " ".join(str(option["description"]).split())
        lines.append(
            f"| `[{SECTION}] {name}` (`{config_env_name(name)}`) | reads | workers | "
            f"{description} Default: {shown}. |"
        )
    return "\n".join(lines) + "\n"


def documented_names() -> set[str]:
    """Every environment variable name in the table."""
    options = provider_config()[SECTION]["options"]
    return {var.name for var in ENV_VARS} | {config_env_name(name) for name in options}
