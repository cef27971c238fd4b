"""DDL column lists read without Spark: splitting, and the Delta log's names of simple types."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.ddl import delta_primitive_type, split_ddl_columns

pytestmark = pytest.mark.unit


def test_columns_are_split_at_top_level_commas_only() -> None:
    schema = (
        "id BIGINT, amount DECIMAL(10, 2) NOT NULL, tags MAP<STRING, INT>, `odd, name` STRING, `a``b` INT"
    )
    assert split_ddl_columns(schema) == [
        ("id", "BIGINT"),
        ("amount", "DECIMAL(10, 2) NOT NULL"),
        ("tags", "MAP<STRING, INT>"),
        ("odd, name", "STRING"),
        ("a`b", "INT"),
    ]


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ("id BIGINT, tags ARRAY<STRING", "unbalanced"),
        ("id BIGINT,, day DATE", "empty column definition"),
        ("id", "is not 'name TYPE'"),
    ],
)
def test_malformed_lists_say_what_is_wrong(schema: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        split_ddl_columns(schema)


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ("BIGINT", ("long", True)),
        ("long", ("long", True)),
        ("INT NOT NULL", ("integer", False)),
        ("SMALLINT", ("short", True)),
        ("TINYINT", ("byte", True)),
        ("REAL", ("float", True)),
        ("DOUBLE", ("double", True)),
        ("STRING", ("string", True)),
        ("BOOLEAN", ("boolean", True)),
        ("BINARY", ("binary", True)),
        ("DATE", ("date", True)),
        ("TIMESTAMP", ("timestamp", True)),
        ("TIMESTAMP_LTZ", ("timestamp", True)),
        ("TIMESTAMP_NTZ", ("timestamp_ntz", True)),
        ("DECIMAL(10, 2)", ("decimal(10,2)", True)),
        ("NUMERIC(5)", ("decimal(5,0)", True)),
        ("DECIMAL", ("decimal(10,0)", True)),
        ("ARRAY<STRING>", None),
        ("VARCHAR(10)", None),
        ("STRING COMMENT 'x'", None),
        ("INT(3)", None),
        ("INTERVAL DAY", None),
    ],
)
def test_simple_types_map_to_the_delta_log_names(definition: str, expected: tuple[str, bool] | None) -> None:
    assert delta_primitive_type(definition) == expected
