"""The provider's DB manager: ``airflow db migrate`` creates and upgrades :mod:`.summary_table` with it.

Airflow finds it in the provider's ``db-managers`` (:func:`~airflow_provider_deltacc.get_provider_info.
get_provider_info`) and runs it after its own migrations; ``airflow db reset`` drops the table with
Airflow's. The schema always comes from the migration scripts in ``ui/migrations``, also on a new database
(Airflow's default there is ``create_all`` from the ORM, which cannot make the foreign key to Airflow's
``task_instance``), so every deployment has the same schema however it was made.
"""

from __future__ import annotations

from pathlib import Path

from airflow.utils.db_manager import BaseDBManager

from airflow_provider_deltacc.ui.summary_table import VERSION_TABLE, metadata

_HERE = Path(__file__).resolve().parent


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
