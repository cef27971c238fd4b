"""The provider's DB manager: ``airflow db migrate`` creates and upgrades :mod:`.summary_table` with it.

Airflow finds it in the provider's ``db-managers`` (:func:`~airflow_provider_deltacc.get_provider_info.
get_provider_info`) and runs it after its own migrations; ``airflow db reset`` drops the table with
Airflow's. The schema always comes from the migration scripts in ``ui/migrations``, also on a new database
(Airflow's default there is ``create_all`` from the ORM, which cannot make the foreign key to Airflow's
``task_instance``), so every deployment has the same schema however it was made.

On PostgreSQL it also keeps one index on Airflow's ``xcom`` table, :data:`REPORT_INDEX`: the commit
reports' push times and task instances (partial: the provider's key only), which the page's search for
reports it has not summed reads instead of every XCom row (at 100,000 reports, 140 MB of ``xcom`` for a
week's page). It is made on every ``airflow db migrate`` when missing, not by a migration script, because it
lives on a table Airflow's own migrations may rebuild; without it the page is slower, never wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.utils.db_manager import BaseDBManager

from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY
from airflow_provider_deltacc.ui.summary_table import VERSION_TABLE, metadata

_HERE = Path(__file__).resolve().parent
#: The provider's index on Airflow's ``xcom`` (see the module docstring).
REPORT_INDEX = "idx_deltacc_xcom_report_pushed"
#: The index's statement, on PostgreSQL only: MySQL has no partial index (the page reads the reports in
#: Python there), and SQLite's planner prefers Airflow's index on the key whatever this one holds.
_REPORT_INDEX_SQL = (
    f'CREATE INDEX IF NOT EXISTS {REPORT_INDEX} ON xcom ("timestamp") '
    f"INCLUDE (dag_id, run_id, task_id, map_index) WHERE key = '{REPORT_XCOM_KEY}'"
)


class ReportSummaryDBManager(BaseDBManager):
    """Migrations of the conflicts page's summary table (see the module docstring)."""

    metadata = metadata
    migration_dir = str(_HERE / "migrations")
    alembic_file = str(_HERE / "migrations" / "alembic.ini")
    version_table_name = VERSION_TABLE
    supports_table_dropping = True

    def create_db_from_orm(self) -> None:
        """Run the migration scripts (see the module docstring)."""
        from alembic import command

        self.log.info("Creating the deltacc report summary table from its migrations")
        command.upgrade(self.get_alembic_config(), "heads")
        self.ensure_report_index()

    def upgradedb(self, *args: Any, **kwargs: Any) -> None:
        """Airflow's upgrade of the provider's migrations, then :meth:`ensure_report_index`."""
        super().upgradedb(*args, **kwargs)
        if not kwargs.get("show_sql_only"):
            self.ensure_report_index()

    def ensure_report_index(self) -> None:
        """Make :data:`REPORT_INDEX` on ``xcom`` when it is missing (see the module docstring)."""
        from airflow import settings
        from sqlalchemy import text

        assert settings.engine is not None, "Airflow's settings made no engine"
        if settings.engine.dialect.name != "postgresql":
            return
        with settings.engine.begin() as connection:
            connection.execute(text(_REPORT_INDEX_SQL))
