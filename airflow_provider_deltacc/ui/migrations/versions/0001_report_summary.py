"""The conflicts page's summary table (``deltacc_report_summary``): the reports' numbers, flat.

Revision ID: 0001_deltacc_report_summary
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from airflow.migrations.db_types import StringID
from airflow.utils.sqlalchemy import UtcDateTime
from alembic import op

revision = "0001_deltacc_report_summary"
down_revision = None
branch_labels = None
depends_on = None

_TASK_INSTANCE = ["dag_id", "task_id", "run_id", "map_index"]


def upgrade() -> None:
    op.create_table(
        "deltacc_report_summary",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("dag_id", StringID(), nullable=False),
        sa.Column("run_id", StringID(), nullable=False),
        sa.Column("task_id", StringID(), nullable=False),
        sa.Column("map_index", sa.Integer, nullable=False),
        sa.Column("pushed", UtcDateTime, nullable=False),
        sa.Column("first_row", sa.Integer, nullable=False),
        sa.Column("tbl", sa.Text, nullable=False),
        sa.Column("try_pos", sa.Integer, nullable=False),
        sa.Column("day", sa.Integer),
        sa.Column("is_try", sa.Integer, nullable=False),
        sa.Column("committed", sa.Integer, nullable=False),
        sa.Column("retried", sa.Integer, nullable=False),
        sa.Column("decided", sa.Integer, nullable=False),
        sa.Column("lost", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(64)),
        sa.Column("winning_version", sa.Float),
        sa.Column("winning_operation", sa.String(256)),
        sa.Column("conflict", sa.Text),
        sa.Column("pinned", sa.Text),
        sa.Column("wasted_s", sa.Float, nullable=False),
        sa.Column("first_turn_s", sa.Float, nullable=False),
        sa.Column("turn_wait_s", sa.Float, nullable=False),
        sa.Column("won_version", sa.Float),
        sa.ForeignKeyConstraint(
            _TASK_INSTANCE,
            [f"task_instance.{column}" for column in _TASK_INSTANCE],
            name="deltacc_report_summary_ti_fkey",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "idx_deltacc_summary_report",
        "deltacc_report_summary",
        ["dag_id", "run_id", "task_id", "map_index", "pushed"],
    )
    op.create_index("idx_deltacc_summary_pushed", "deltacc_report_summary", ["pushed"])


def downgrade() -> None:
    op.drop_table("deltacc_report_summary")
