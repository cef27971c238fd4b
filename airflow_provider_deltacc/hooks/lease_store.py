"""Which lease store a task uses, and the rule that keeps a SQLite store where every task runs on one machine.

Resolution, first match wins:

1. the task's ``lease_store_conn_id``;
2. ``[deltacc] lease_store_conn_id``;
3. the older way: the task's ``lease_store_url``, else ``$DELTACC_LEASE_STORE_URL``;
4. the embedded SQLite file (``$DELTACC_LEASE_DB`` or ``~/.cache/airflow-provider-deltacc/leases.db``).

A ``postgres`` connection selects the PostgreSQL store, a ``sqlite`` connection (its host is the file) the
SQLite one. A SQLite store, the default or a configured one, is a file on one machine, so writers and
maintenance may use it only when every task runs on that machine (see
:mod:`airflow_provider_deltacc.deployment.placement`), unless ``[deltacc] allow_unshared_lease_store`` says
the user accepts the risk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.deployment.config import (
    ALLOW_UNSHARED_ENV,
    ALLOW_UNSHARED_OPTION,
    LEASE_STORE_CONN_ID,
    LEASE_STORE_CONN_ID_OPTION,
)
from airflow_provider_deltacc.exceptions import DeltaCCInputError

if TYPE_CHECKING:
    from sqlalchemy import URL

    from airflow_provider_deltacc.leases import LeaseStore

_EXAMPLE_CONN = "AIRFLOW_CONN_DELTACC_LEASES='postgresql://airflow:PASSWORD@postgres:5432/airflow'"


@dataclass(frozen=True)
class LeaseStoreTarget:
    """A resolved lease store: what to open, and which setting chose it (for messages).

    :param source: the setting that chose it: ``lease_store_conn_id``, ``[deltacc] lease_store_conn_id``,
        ``lease_store_url``, ``$DELTACC_LEASE_STORE_URL`` or ``the embedded default``.
    :param url: the store's URL; it may hold a password, so it is never shown (see :meth:`describe`).
    :param conn_id: the Airflow connection it was read from, if any.
    """

    source: str
    url: str | URL = field(repr=False)
    conn_id: str | None = None

    @property
    def is_sqlite(self) -> bool:
        """Whether the store is a SQLite file (local to one machine)."""
        from sqlalchemy import make_url

        if isinstance(self.url, str) and "://" not in self.url:
            return True  # a plain file path
        return make_url(self.url).get_backend_name() == "sqlite"

    @property
    def is_default(self) -> bool:
        """Whether nothing was configured and the embedded SQLite file was chosen."""
        from airflow_provider_deltacc.leases.factory import EMBEDDED_DEFAULT

        return self.source == EMBEDDED_DEFAULT

    def describe(self) -> str:
        """The setting and the store, password hidden."""
        from airflow_provider_deltacc.leases import mask_url

        store = mask_url(self.url)
        if self.conn_id is not None:
            return f"{self.source}={self.conn_id!r} ({store})"
        return f"{self.source} ({store})"

    def open(self) -> LeaseStore:
        """Open the store (the caller closes it)."""
        from airflow_provider_deltacc.deployment.config import configured_lease_history
        from airflow_provider_deltacc.leases import store_from_url

        return store_from_url(self.url, history_retention=configured_lease_history())

    def trigger_kwargs(self) -> dict[str, Any]:
        """How :class:`~airflow_provider_deltacc.triggers.gate.DeltaGateTrigger` finds the same store.

        A connection travels as its id: the triggerer reads the connection itself, so its password is never
        in the trigger's serialized kwargs. A URL (the older way, or the default file) travels resolved, so
        the triggerer's own environment cannot send it to another store.
        """
        if self.conn_id is not None:
            return {"lease_store_conn_id": self.conn_id}
        if isinstance(self.url, str):
            return {"lease_store_url": self.url}
        return {"lease_store_url": self.url.render_as_string(hide_password=False)}


def connection_store_url(conn_id: str, *, setting: str = LEASE_STORE_CONN_ID) -> URL:
    """The lease store URL of an Airflow connection; its secrets go to Airflow's secrets masker.

    :param conn_id: a ``postgres`` or ``sqlite`` connection.
    :param setting: the setting that named it, for errors (the argument or the config option).
    :raises DeltaCCInputError: a missing connection or one of another type, naming ``setting``.
    """
    from airflow.sdk import BaseHook

    from airflow_provider_deltacc.leases import store_url_from_connection
    from airflow_provider_deltacc.observability.secrets import connection_secrets, mask_values

    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception as exc:  # AirflowNotFoundException, or a secrets backend error
        raise DeltaCCInputError(
            f"{setting}={conn_id!r}: no such Airflow connection ({type(exc).__name__}). Create it where the "
            f"workers and the triggerer read connections: a 'postgres' connection every worker reaches, "
            f"e.g. {_EXAMPLE_CONN.replace('DELTACC_LEASES', conn_id.upper())}, or a 'sqlite' connection "
            "whose host is the lease file",
            field=LEASE_STORE_CONN_ID,
            value=conn_id,
        ) from None
    mask_values(connection_secrets(conn))
    try:
        return store_url_from_connection(
            conn.conn_type,
            host=conn.host,
            port=conn.port,
            login=conn.login,
            password=conn.password,
            schema=conn.schema,
            extra=conn.extra_dejson,
        )
    except ValueError as exc:
        raise DeltaCCInputError(
            f"{setting}={conn_id!r}: {exc}", field=LEASE_STORE_CONN_ID, value=conn_id
        ) from None


def resolve_lease_store(*, conn_id: str | None, url: str | None) -> LeaseStoreTarget:
    """The lease store a task uses (see the module docstring for the order).

    :param conn_id: the task's ``lease_store_conn_id``.
    :param url: the task's ``lease_store_url``.
    :raises DeltaCCInputError: a connection that is missing or of another type.
    """
    from airflow_provider_deltacc.deployment.config import configured_lease_store_conn_id
    from airflow_provider_deltacc.leases import store_url_and_source

    if conn_id:
        return LeaseStoreTarget(LEASE_STORE_CONN_ID, connection_store_url(conn_id), conn_id)
    configured = configured_lease_store_conn_id()
    if configured:
        setting = LEASE_STORE_CONN_ID_OPTION
        return LeaseStoreTarget(setting, connection_store_url(configured, setting=setting), configured)
    resolved, source = store_url_and_source(url)
    return LeaseStoreTarget(source, resolved)


def require_shared_store(target: LeaseStoreTarget, *, task_id: str) -> None:
    """Fail when a SQLite store would be used while tasks may run on other machines.

    Passes for a PostgreSQL store; for SQLite when every task runs on this machine (local executors,
    ``dag.test()``) or ``[deltacc] allow_unshared_lease_store`` is set.

    :param target: the resolved store.
    :param task_id: the task, for the message.
    :raises DeltaCCInputError: naming ``[deltacc] lease_store_conn_id`` / ``lease_store_conn_id``, the fix and
        the opt-out.
    """
    from airflow_provider_deltacc.deployment.config import unshared_lease_store_allowed
    from airflow_provider_deltacc.deployment.placement import tasks_may_run_elsewhere

    if not target.is_sqlite or unshared_lease_store_allowed():
        return
    elsewhere = tasks_may_run_elsewhere()
    if elsewhere is None:
        return
    if target.is_default:
        what = "no shared lease store is configured, so this task would use the embedded SQLite lease file"
    else:
        what = f"the lease store {target.describe()} is a SQLite file"
    raise DeltaCCInputError(
        f"{task_id}: {what}, but {elsewhere}. A SQLite file lives on one machine's disk: OPTIMIZE and "
        "VACUUM could not see writers on other machines and would run in the middle of their writes. Set "
        f"{LEASE_STORE_CONN_ID_OPTION} (AIRFLOW__DELTACC__LEASE_STORE_CONN_ID) or the task's "
        f"{LEASE_STORE_CONN_ID} to a 'postgres' connection every worker reaches (Airflow's metadata database "
        f"will do), e.g. {_EXAMPLE_CONN} and AIRFLOW__DELTACC__LEASE_STORE_CONN_ID=deltacc_leases. If every "
        "task that writes or maintains these tables runs on one machine, opt out with "
        f"{ALLOW_UNSHARED_OPTION} = True ({ALLOW_UNSHARED_ENV}=True).",
        field=LEASE_STORE_CONN_ID,
        value=target.conn_id,
    )


def lease_store_for_task(*, conn_id: str | None, url: str | None, task_id: str) -> LeaseStoreTarget:
    """Resolve a task's lease store and check that it may be used here; what tasks call at their start.

    :param conn_id: the task's ``lease_store_conn_id``.
    :param url: the task's ``lease_store_url``.
    :param task_id: the task, for messages.
    :raises DeltaCCInputError: see :func:`resolve_lease_store` and :func:`require_shared_store`.
    """
    target = resolve_lease_store(conn_id=conn_id, url=url)
    require_shared_store(target, task_id=task_id)
    return target


class UsesLeaseStore:
    """For tasks that hold or read leases: their ``lease_store_conn_id`` and ``lease_store_url`` resolved once
    per run, at its start (:meth:`resolve_lease_store`), and opened when needed."""

    lease_store_conn_id: str | None
    lease_store_url: str | None
    task_id: str
    _lease_store: LeaseStoreTarget | None = None

    def resolve_lease_store(self) -> LeaseStoreTarget:
        """Resolve the store and check that it may be used here; call it at the start of a run.

        :raises DeltaCCInputError: see :func:`lease_store_for_task`.
        """
        self._lease_store = lease_store_for_task(
            conn_id=self.lease_store_conn_id, url=self.lease_store_url, task_id=self.task_id
        )
        return self._lease_store

    def lease_store(self) -> LeaseStoreTarget:
        """The store this run uses: the one resolved at its start, else resolved now (without the check)."""
        if self._lease_store is None:
            self._lease_store = resolve_lease_store(
                conn_id=self.lease_store_conn_id, url=self.lease_store_url
            )
        return self._lease_store

    def open_lease_store(self) -> LeaseStore:
        """Open the store this run uses (the caller closes it)."""
        return self.lease_store().open()
