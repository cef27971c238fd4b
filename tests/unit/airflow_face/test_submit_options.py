"""``submit_options``: typed as ``SparkSubmitOperator`` names them, every key and value checked before
anything starts, and the arguments the provider also sets (jars, py_files, env_vars) joined with the
task's, not replaced or clashing."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.hooks.submit_options import OWNED, accepted, check_submit_options
from airflow_provider_deltacc.operators import DeltaAppendOperator, SparkSubmitOptions

pytestmark = pytest.mark.unit

COMMITTED = {"status": "committed", "table": "/t", "table_version": 0, "attempts": [{"number": 1}]}


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("conf", "put Spark settings in spark_conf"),
        ("name", "the job is named after its task"),
        ("application_args", "the job's arguments are its spec"),
        ("driver_memroy", "SparkSubmitHook takes no such argument; use one of"),
    ],
)
def test_keys_a_task_cannot_set_are_refused_naming_them(key: str, says: str) -> None:
    with pytest.raises(DeltaCCInputError) as raised:
        check_submit_options({"driver_memory": "1g", key: "x"})
    assert raised.value.field == f"submit_options.{key}" and says in str(raised.value)


def test_the_operator_refuses_them_before_anything_starts(tmp_path: Path) -> None:
    op = DeltaAppendOperator(
        task_id="append",
        table=str(tmp_path / "t"),
        source={"kind": "rows", "rows": [[1]], "schema": "id INT"},
        submit_options={"conf": {"spark.x": "1"}},
    )
    with pytest.raises(DeltaCCInputError, match=r"submit_options\.conf: the provider sets it itself"):
        op.validate_arguments()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("executor_cores", "2", "must be a positive whole number"),
        ("num_executors", 0, "must be a positive whole number"),
        ("total_executor_cores", True, "must be a positive whole number"),
        ("driver_memory", 2048, "must be a string"),
        ("verbose", "yes", "must be True or False"),
        ("deploy_mode", "both", "must be one of client, cluster"),
        ("env_vars", {"N": 1}, "must be a dict of variable names to string values"),
        ("jars", ["a.jar", 3], "must be a comma-separated string or a list of strings"),
        ("post_submit_commands", "echo done", "must be a list of shell commands"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_field(field: str, value: Any, says: str) -> None:
    for options in ({field: value}, None):
        with pytest.raises(DeltaCCInputError) as raised:
            check_submit_options(options) if options else SparkSubmitOptions(**{field: value})
        assert raised.value.field == f"submit_options.{field}" and says in str(raised.value)
        assert repr(value) in str(raised.value)


def test_typed_options_and_a_dict_reach_the_hook_alike() -> None:
    typed = SparkSubmitOptions(driver_memory="2g", num_executors=4, jars=["a.jar", "b.jar"], verbose=True)
    as_dict = {"driver_memory": "2g", "num_executors": 4, "jars": "a.jar,b.jar", "verbose": True}
    assert check_submit_options(typed) == check_submit_options(as_dict) == as_dict
    assert (
        repr(typed)
        == "SparkSubmitOptions(jars='a.jar,b.jar', driver_memory='2g', num_executors=4, verbose=True)"
    )
    assert check_submit_options(SparkSubmitOptions()) == {}  # unset: the hook's own defaults


def test_the_options_are_every_argument_of_spark_submit_hook_the_provider_does_not_own() -> None:
    """A new SparkSubmitHook argument (an apache-spark provider upgrade) fails here until it is typed."""
    import inspect

    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    hook_args = set(inspect.signature(SparkSubmitHook.__init__).parameters) - {"self", "args", "kwargs"}
    assert set(accepted()) == hook_args - set(OWNED)
    assert set(OWNED) <= hook_args


def test_options_given_to_another_mode_are_checked_and_named_as_unused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def op(options: Any) -> DeltaAppendOperator:
        return DeltaAppendOperator(
            task_id="append",
            table=str(tmp_path / "t"),
            source={"kind": "rows", "rows": [[1]], "schema": "id INT"},
            execution_mode="spark_connect",
            submit_options=options,
        )

    with pytest.raises(DeltaCCInputError, match=r"submit_options\.executor_cores='2'"):
        op({"executor_cores": "2"}).validate_arguments()
    capsys.readouterr()
    op(SparkSubmitOptions(driver_memory="1g")).validate_arguments()
    assert "not used with execution_mode='spark_connect'" in capsys.readouterr().out  # Airflow logs to stdout


class FakeSubmitHook:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.report: dict[str, Any] | None = COMMITTED
        self.returncode = 0
        self.driver_exit_code = None
        self.secrets: list[str] = []
        self.log = logging.getLogger(__name__)

    def submit(self, application: str) -> None:
        return None


def test_jars_py_files_and_env_vars_are_added_to_the_providers_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_LOCAL_SUBMIT", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    options = SparkSubmitOptions(
        jars="/opt/jars/extra.jar",
        py_files=["/opt/py/helpers.zip"],
        env_vars={"TEAM": "orders", "PYSPARK_PYTHON": "/not/used"},
        driver_memory="1g",
    )
    runner = DeltaCCHook(conn_id="deltacc_local_submit", submit_options=options).submit_runner
    made: list[FakeSubmitHook] = []
    monkeypatch.setattr(
        runner, "submit_hook_for", lambda **kwargs: made.append(FakeSubmitHook(**kwargs)) or made[-1]
    )
    spec = parse_spec({"operation": "optimize", "table": str(tmp_path / "t")})
    assert runner.run(spec) == (0, COMMITTED)

    kwargs = made[0].kwargs
    jars, py_files = kwargs["jars"].split(","), kwargs["py_files"].split(",")
    assert jars[0].endswith(".jar") and "delta-spark" in jars[0] and jars[-1] == "/opt/jars/extra.jar"
    assert py_files[-1] == "/opt/py/helpers.zip" and any("deltacc-core" in p for p in py_files[:-1])
    assert kwargs["env_vars"]["TEAM"] == "orders"
    assert kwargs["env_vars"]["PYSPARK_PYTHON"] != "/not/used"  # the driver's Python stays the provider's
    assert kwargs["driver_memory"] == "1g"
