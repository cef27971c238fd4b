"""The provider's own table in the metadata DB: the commit reports' numbers, summed, for the conflicts page.

A ``deltacc_report`` XCom is a JSON document of every try and attempt; adding up a week of them means
expanding each document (about 10 us a report on PostgreSQL). ``deltacc_report_summary`` holds the same
numbers flat, packed together and found by push time: one row per report, try and kind of conflict (a try
that lost no conflict has one row), written once per report by the conflicts page itself
(:mod:`.summary_fill`), never by a task (a task cannot write the metadata DB in Airflow 3).

The columns are the flattened report's (:mod:`.json_sql`), summed over the attempts of a try that share
``lost``, ``kind`` and the winning commit:

=================================  ====================================================================
``dag_id`` ... ``map_index``       the task instance whose report this is (rows go with it: a foreign key
                                   to ``task_instance``, ``ON DELETE CASCADE``)
``pushed``                         the report's XCom push time, which names the report: a re-run's new
                                   report replaces the rows of the one before it
``first_row``                      1 on one row of each report (for counting reports), else 0
``tbl``                            the report's ``table`` as spelled ('' when none)
``try_pos``, ``day``               the try's position in the report; days since 1970-01-01 (UTC) it began
``is_try`` ... ``decided``         1 on the row of the try's first attempt (the try, committed, decided to
                                   retry, decided at all), else 0
``lost``                           the attempts of these that lost a conflict (0 on a row of none)
``kind``, ``winning_*``            the conflict's kind and winning commit, on a row of lost attempts
``conflict``, ``pinned``           one of those conflicts, and the try's pinned columns, as JSON text
``wasted_s`` ... ``turn_wait_s``   seconds: wasted, waited for the first turn, waited for later turns
``won_version``                    the version the report committed, on the row of its first try
=================================  ====================================================================

The schema lives in one place, the migration scripts in ``ui/migrations``, which ``airflow db migrate``
runs through :class:`~.summary_db.ReportSummaryDBManager` (on a new database too: Airflow's default there,
``create_all`` from a model, could not make the foreign key to Airflow's ``task_instance``). The table below
names it for Airflow's DB managers (``airflow db reset`` drops it) and for the page's SQL.
"""

from __future__ import annotations

from sqlalchemy import MetaData, Table

#: The table's name in the metadata DB.
SUMMARY_TABLE = "deltacc_report_summary"
#: The Alembic version table of the provider's migrations (Airflow's is ``alembic_version``).
VERSION_TABLE = "deltacc_alembic_version"

metadata = MetaData()
report_summary = Table(SUMMARY_TABLE, metadata)
