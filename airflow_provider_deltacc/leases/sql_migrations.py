"""The lease store's schema versions, and the steps that bring an older store forward.

A store records the version its tables were migrated to in ``deltacc_schema``. Opening a store creates
what is missing and runs every step newer than the recorded version, in order, then records the newest.
Each step is idempotent, so two processes that open an old store at once both succeed. A store whose
recorded version is newer than this code knows (a newer provider on another worker) is used as it is: the
steps only ever add.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.leases.sql_schema import leases, schema_versions

log = logging.getLogger(__name__)

COMPONENT = "leases"


def key_every_table(conn: Connection) -> None:
    """Version 1: leases recorded under a table's other spellings are keyed by the table's key."""
    for (spelled,) in conn.execute(select(leases.c.table_name).distinct()).all():
        key = table_key(Table(spelled))
        if key != spelled:
            conn.execute(update(leases).where(leases.c.table_name == spelled).values(table_name=key))


def _index_expiry(conn: Connection) -> None:
    """Version 2: an index on ``expires_at``, which the purge of old leases reads."""
    for index in leases.indexes:
        if index.name == "ix_deltacc_leases_expires":
            index.create(conn, checkfirst=True)


#: Every step, by the version it brings the store to.
STEPS: dict[int, Callable[[Connection], None]] = {1: key_every_table, 2: _index_expiry}
CURRENT_VERSION = max(STEPS)


def recorded_version(conn: Connection) -> int:
    """The version the store was migrated to; 0 for a store from before versions were recorded."""
    row = conn.execute(
        select(schema_versions.c.version).where(schema_versions.c.component == COMPONENT)
    ).first()
    return int(row[0]) if row is not None else 0


def migrate(conn: Connection) -> int:
    """Run the steps newer than the recorded version and record the newest; return the version now.

    :param conn: a connection inside its transaction, the tables already created.
    """
    found = recorded_version(conn)
    if found > CURRENT_VERSION:
        log.info(
            "lease store schema version %d is newer than this provider's %d; used as is",
            found,
            CURRENT_VERSION,
        )
        return found
    for version in sorted(v for v in STEPS if v > found):
        STEPS[version](conn)
    if found == CURRENT_VERSION:
        return found
    if found == 0:
        try:
            with conn.begin_nested():
                conn.execute(insert(schema_versions).values(component=COMPONENT, version=CURRENT_VERSION))
        except IntegrityError:  # another process recorded it first
            pass
    conn.execute(
        update(schema_versions)
        .where(schema_versions.c.component == COMPONENT, schema_versions.c.version < CURRENT_VERSION)
        .values(version=CURRENT_VERSION)
    )
    if found:
        log.info("lease store schema migrated from version %d to %d", found, CURRENT_VERSION)
    return CURRENT_VERSION
