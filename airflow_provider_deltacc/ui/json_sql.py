"""The SQL that reads commit reports inside the metadata DB: one dialect per class, the same columns out.

The ``deltacc_report`` XCom is a JSON document in Airflow's ``xcom.value`` (JSONB on PostgreSQL, JSON text on
SQLite). Flattening it into one row per try and one per attempt lets the database filter, group and page the
reports; only the rows a page shows are decoded in Python. Every value a user gives is a bound parameter.

A value of the wrong JSON type (a hand-edited report, an older shape) reads as NULL instead of failing the
query: numbers are taken only where the JSON says number.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JsonDialect:
    """How one database reads JSON: the expressions the queries of :mod:`.aggregate` are built from."""

    name: str
    #: ``FROM`` item producing the rows of a JSON array: ``{array}`` is the array, ``{alias}`` the alias
    #: whose ``value`` column is each element.
    elements: str
    #: An element's position in its array (from 1).
    position_template: str
    #: The array of tries of a report ``{doc}`` (the report itself when it lists none).
    tries: str
    #: The attempts of a try ``{doc}`` (an empty array when it lists none).
    attempts: str
    text_template: str
    number_template: str
    json_template: str
    day_template: str

    def text(self, doc: str, path: str) -> str:
        """The string at ``doc.path`` (a dotted path, ``conflict.kind``), NULL unless it is one."""
        return self.text_template.format(doc=doc, path=self._path(path))

    def number(self, doc: str, path: str) -> str:
        """The number at ``doc.path`` (a dotted path, ``attempts.0.started_at``), NULL unless it is one."""
        return self.number_template.format(doc=doc, path=self._path(path))

    def json(self, doc: str, path: str) -> str:
        """The JSON value at ``doc.path`` as JSON text, NULL when missing or JSON null."""
        return self.json_template.format(doc=doc, path=self._path(path))

    def position(self, alias: str) -> str:
        """The position (from 1) of the element of :attr:`elements` ``alias``."""
        return self.position_template.format(alias=alias)

    def day(self, seconds: str) -> str:
        """``YYYY-MM-DD`` (UTC) of the epoch seconds ``seconds``."""
        return self.day_template.format(seconds=seconds)

    def _path(self, path: str) -> str:
        if self.name == "postgresql":
            return "{" + ",".join(path.split(".")) + "}"
        parts = [f"[{p}]" if p.isdigit() else f".{p}" for p in path.split(".")]
        return "$" + "".join(parts)


POSTGRESQL = JsonDialect(
    name="postgresql",
    elements="jsonb_array_elements({array}) WITH ORDINALITY AS {alias}(value, n)",
    position_template="{alias}.n",
    tries=(
        "CASE WHEN jsonb_typeof({doc}->'tries') = 'array' AND jsonb_array_length({doc}->'tries') > 0 "
        "THEN {doc}->'tries' ELSE jsonb_build_array({doc}) END"
    ),
    attempts=(
        "CASE WHEN jsonb_typeof({doc}->'attempts') = 'array' THEN {doc}->'attempts' ELSE '[]'::jsonb END"
    ),
    text_template="(CASE WHEN jsonb_typeof({doc}#>'{path}') = 'string' THEN {doc}#>>'{path}' END)",
    number_template=(
        "(CASE WHEN jsonb_typeof({doc}#>'{path}') = 'number' THEN ({doc}#>>'{path}')::float8 END)"
    ),
    json_template="(CASE WHEN jsonb_typeof({doc}#>'{path}') <> 'null' THEN ({doc}#>'{path}')::text END)",
    day_template="to_char(to_timestamp({seconds}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
)

SQLITE = JsonDialect(
    name="sqlite",
    elements="json_each({array}) AS {alias}",
    position_template="({alias}.key + 1)",
    tries=(
        "CASE WHEN json_type({doc}, '$.tries') = 'array' AND json_array_length({doc}, '$.tries') > 0 "
        "THEN json_extract({doc}, '$.tries') ELSE json_array(json({doc})) END"
    ),
    attempts="CASE WHEN json_type({doc}, '$.attempts') = 'array' THEN json_extract({doc}, '$.attempts') "
    "ELSE '[]' END",
    text_template="(CASE WHEN json_type({doc}, '{path}') = 'text' THEN json_extract({doc}, '{path}') END)",
    number_template=(
        "(CASE WHEN json_type({doc}, '{path}') IN ('integer', 'real') THEN json_extract({doc}, '{path}') END)"
    ),
    json_template=(
        "(CASE WHEN json_type({doc}, '{path}') NOT IN ('null') THEN json_extract({doc}, '{path}') END)"
    ),
    day_template="strftime('%Y-%m-%d', {seconds}, 'unixepoch')",
)

_DIALECTS = {d.name: d for d in (POSTGRESQL, SQLITE)}


def json_dialect(name: str) -> JsonDialect | None:
    """The JSON SQL of the database ``name`` (SQLAlchemy's dialect name), None where the view reads the
    reports in Python instead (MySQL)."""
    return _DIALECTS.get(name)
