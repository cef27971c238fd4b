"""The SQL that reads commit reports inside the metadata DB: one dialect per class, the same columns out.

The ``deltacc_report`` XCom is a JSON document in Airflow's ``xcom.value`` (JSONB on PostgreSQL, JSON text on
SQLite). :meth:`JsonDialect.flat` turns the reports into one row per attempt of a try (a try without attempts
keeps one row), with plain columns :mod:`.summary_fill` sums into the summary table:

=============================  =========================================================================
``dag_id`` ... ``pushed``      the XCom's task instance and push time (``x`` is the ``xcom`` row)
``tbl``                        the report's ``table`` as spelled ('' when none)
``try_pos``                    the try's position in the report (from 1)
``status``, ``decision``       the try's
``first_turn_s``               seconds the try waited for its first turn
``day``                        days since 1970-01-01 (UTC) of the try's first attempt, else its end
``att_pos``                    the attempt's position (from 1; NULL for a try without attempts)
``lost``                       1 when the attempt lost a conflict, else 0
``kind``, ``winning_*``        the conflict's kind (upper case) and winning commit, when it lost one
``conflict``, ``pinned``       the conflict and the try's pinned columns, as JSON text, when it lost one
``wasted_s``, ``turn_wait_s``  the attempt's wasted seconds and seconds it waited for its turn after it lost
``won_version``                on the rows of the first try: the version the report committed, if it did
=============================  =========================================================================

A value of the wrong JSON type (a hand-edited report, an older shape) reads as NULL instead of failing the
query: numbers are taken only where the JSON says number, strings where it says string, and elements of
``tries`` and ``attempts`` only where they are objects. Every value a user gives is a bound parameter.
"""

from __future__ import annotations

_PG_NUMBER = "(CASE WHEN jsonb_typeof({v}) = 'number' THEN ({v})::float8 END)"
_PG_TEXT = "(CASE WHEN jsonb_typeof({v}) = 'string' THEN ({v}) #>> '{{}}' END)"


def _pg_number(value: str) -> str:
    return _PG_NUMBER.format(v=value)


def _pg_text(value: str) -> str:
    return _PG_TEXT.format(v=value)


def _sqlite_number(doc: str, path: str) -> str:
    number = f"json_type({doc}, '{path}') IN ('integer', 'real')"
    return f"(CASE WHEN {number} THEN json_extract({doc}, '{path}') END)"


def _sqlite_text(doc: str, path: str) -> str:
    return f"(CASE WHEN json_type({doc}, '{path}') = 'text' THEN json_extract({doc}, '{path}') END)"


class JsonDialect:
    """How one database flattens the reports (see the module docstring)."""

    name = ""

    def flat(self) -> str:
        """``SELECT <the columns> FROM xcom x ...`` without its ``WHERE`` (the caller adds it, on ``x``)."""
        raise NotImplementedError

    def table(self, doc: str) -> str:
        """The ``table`` a report ``doc`` names ('' when none)."""
        raise NotImplementedError

    def committed_version(self, doc: str) -> str:
        """The ``table_version`` of the report ``doc`` when its status says it committed, else NULL."""
        raise NotImplementedError


class PostgreSQL(JsonDialect):
    """JSONB: each try and attempt is read into a record once (``jsonb_to_record``), not path by path."""

    name = "postgresql"

    def flat(self) -> str:
        started = _pg_number("tr.attempts -> 0 -> 'started_at'")
        columns = f"""x.dag_id, x.run_id, x.task_id, x.map_index, x.timestamp AS pushed,
  {self.table("x.value")} AS tbl, t.n AS try_pos,
  {_pg_text("tr.status")} AS status, {_pg_text("tr.decision")} AS decision,
  COALESCE({_pg_number("tr.first_turn_wait_s")}, 0) AS first_turn_s,
  FLOOR(COALESCE({started}, {_pg_number("tr.ended_at")}) / 86400) AS day"""
        tries = """FROM xcom x
JOIN LATERAL jsonb_array_elements(CASE
    WHEN jsonb_typeof(x.value -> 'tries') = 'array' AND jsonb_array_length(x.value -> 'tries') > 0
    THEN x.value -> 'tries' ELSE jsonb_build_array(x.value) END) WITH ORDINALITY AS t(value, n) ON TRUE
CROSS JOIN LATERAL jsonb_to_record(CASE WHEN jsonb_typeof(t.value) = 'object' THEN t.value ELSE '{}' END)
  AS tr(status jsonb, decision jsonb, first_turn_wait_s jsonb, ended_at jsonb, attempts jsonb,
    pinned_columns jsonb)"""
        lost = "jsonb_typeof(a.conflict) = 'object'"
        return f"""SELECT {columns},
  ae.n AS att_pos, CASE WHEN {lost} THEN 1 ELSE 0 END AS lost,
  CASE WHEN {lost} THEN UPPER({_pg_text("a.conflict -> 'kind'")}) END AS kind,
  CASE WHEN {lost} THEN {_pg_number("a.conflict -> 'winning_version'")} END AS winning_version,
  CASE WHEN {lost} THEN {_pg_text("a.conflict -> 'winning_operation'")} END AS winning_operation,
  CASE WHEN {lost} THEN a.conflict::text END AS conflict,
  CASE WHEN {lost} THEN tr.pinned_columns::text END AS pinned,
  COALESCE({_pg_number("a.wasted_s")}, 0) AS wasted_s,
  COALESCE({_pg_number("a.turn_wait_s")}, 0) AS turn_wait_s,
  CASE WHEN t.n = 1 THEN {self.committed_version("x.value")} END AS won_version
{tries}
LEFT JOIN LATERAL jsonb_path_query(
    CASE WHEN jsonb_typeof(tr.attempts) = 'array' THEN tr.attempts ELSE '[]' END,
    'strict $[*] ? (@.type() == "object")') WITH ORDINALITY AS ae(value, n) ON TRUE
LEFT JOIN LATERAL jsonb_to_record(ae.value) AS a(wasted_s jsonb, turn_wait_s jsonb, conflict jsonb) ON TRUE"""

    def table(self, doc: str) -> str:
        table = _pg_text(f"{doc} -> 'table'")
        return f"COALESCE({table}, '')"

    def committed_version(self, doc: str) -> str:
        status = _pg_text(f"{doc} -> 'status'")
        version = _pg_number(f"{doc} -> 'table_version'")
        return f"(CASE WHEN {status} IN ('committed', 'skipped_duplicate') THEN {version} END)"


class SQLite(JsonDialect):
    """JSON text read with ``json_each`` and ``json_extract`` (SQLite 3.38+ for ``json_each`` joins)."""

    name = "sqlite"

    def flat(self) -> str:
        started = _sqlite_number("t.value", "$.attempts[0].started_at")
        ended = _sqlite_number("t.value", "$.ended_at")
        columns = f"""x.dag_id, x.run_id, x.task_id, x.map_index, x.timestamp AS pushed,
  {self.table("x.value")} AS tbl, t.key + 1 AS try_pos,
  {_sqlite_text("t.value", "$.status")} AS status, {_sqlite_text("t.value", "$.decision")} AS decision,
  COALESCE({_sqlite_number("t.value", "$.first_turn_wait_s")}, 0) AS first_turn_s,
  CAST(COALESCE({started}, {ended}) / 86400 AS INTEGER) AS day"""  # no FLOOR without the math functions
        tries = """FROM xcom x
JOIN json_each(CASE
    WHEN json_type(x.value, '$.tries') = 'array' AND json_array_length(x.value, '$.tries') > 0
    THEN json_extract(x.value, '$.tries') ELSE json_array(json(x.value)) END) AS t
  ON t.type = 'object'"""
        lost = "json_type(a.value, '$.conflict') = 'object'"
        return f"""SELECT {columns},
  a.key + 1 AS att_pos, CASE WHEN {lost} THEN 1 ELSE 0 END AS lost,
  CASE WHEN {lost} THEN UPPER({_sqlite_text("a.value", "$.conflict.kind")}) END AS kind,
  CASE WHEN {lost} THEN {_sqlite_number("a.value", "$.conflict.winning_version")} END AS winning_version,
  CASE WHEN {lost} THEN {_sqlite_text("a.value", "$.conflict.winning_operation")} END AS winning_operation,
  CASE WHEN {lost} THEN json_extract(a.value, '$.conflict') END AS conflict,
  CASE WHEN {lost} THEN json_extract(t.value, '$.pinned_columns') END AS pinned,
  COALESCE({_sqlite_number("a.value", "$.wasted_s")}, 0) AS wasted_s,
  COALESCE({_sqlite_number("a.value", "$.turn_wait_s")}, 0) AS turn_wait_s,
  CASE WHEN t.key = 0 THEN {self.committed_version("x.value")} END AS won_version
{tries}
LEFT JOIN json_each(CASE WHEN json_type(t.value, '$.attempts') = 'array'
    THEN json_extract(t.value, '$.attempts') ELSE '[]' END) AS a ON a.type = 'object'"""

    def table(self, doc: str) -> str:
        return f"COALESCE({_sqlite_text(doc, '$.table')}, '')"

    def committed_version(self, doc: str) -> str:
        status = _sqlite_text(doc, "$.status")
        version = _sqlite_number(doc, "$.table_version")
        return f"(CASE WHEN {status} IN ('committed', 'skipped_duplicate') THEN {version} END)"


_DIALECTS: dict[str, JsonDialect] = {d.name: d for d in (PostgreSQL(), SQLite())}


def json_dialect(name: str) -> JsonDialect | None:
    """The JSON SQL of the database ``name`` (SQLAlchemy's dialect name), None where the view reads the
    reports in Python instead (MySQL)."""
    return _DIALECTS.get(name)
