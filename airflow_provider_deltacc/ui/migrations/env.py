"""Alembic's environment for the provider's migrations (run by :class:`~..summary_db.ReportSummaryDBManager`):
the provider's own version table, Airflow's database and its connection when Airflow passes one."""

from __future__ import annotations

import contextlib
from typing import Any

from alembic import context

from airflow_provider_deltacc.ui.summary_table import VERSION_TABLE, metadata


def _configure(**kwargs: Any) -> None:
    context.configure(target_metadata=metadata, version_table=VERSION_TABLE, render_as_batch=True, **kwargs)


def run_migrations_offline() -> None:
    """The SQL of the migrations, without a database."""
    _configure(url=context.config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """The migrations, on the connection Airflow gives or on Airflow's engine."""
    from airflow import settings

    with contextlib.ExitStack() as stack:
        connection = context.config.attributes.get("connection")
        if connection is None:
            assert settings.engine is not None, "Airflow's settings made no engine"
            connection = stack.enter_context(settings.engine.connect())
        _configure(connection=connection, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
