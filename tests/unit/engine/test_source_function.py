"""A source function's travel to a Spark driver and the errors it gives, without a JVM: pickling by value,
what stays behind, the Python version check, the spec forms, and the commit loop never taking the user's
exception for a conflict."""

from __future__ import annotations

import base64
import pickle
import threading
from typing import Any

import pytest

from airflow_provider_deltacc.contract.exceptions import CommitLoopError, InputError, SourceFunctionError
from airflow_provider_deltacc.contract.source_function import (
    SourceFunction,
    from_travel_form,
    python_version,
    takes_session_by_name,
)
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.spark_job.source_travel import travel_form

pytestmark = pytest.mark.unit

RATE = 3


def _scaled(spark: Any, amount: int) -> Any:
    return ("frame-of", spark, amount * RATE)


def test_a_module_function_travels_by_value_with_its_arguments_and_picklable_context() -> None:
    source = SourceFunction(
        _scaled, kwargs={"amount": 2}, context={"ds": "2026-11-26", "ti": threading.Lock()}
    )
    form = travel_form(source)

    assert (form["kind"], form["python"]) == ("callable", python_version())
    assert form["name"].endswith("test_source_function._scaled")
    loaded = from_travel_form(form["name"], form["python"], form["pickled"])
    # The function came by value (a test module is not on a driver's path), with its globals.
    payload = base64.b64decode(form["pickled"])
    assert b"_scaled" in payload and loaded.function is not _scaled
    assert loaded.function("session", amount=2) == ("frame-of", "session", 6)
    assert dict(loaded.kwargs) == {"amount": 2}
    assert dict(loaded.context) == {"ds": "2026-11-26"}  # the lock stayed behind: the function did not ask


def test_a_function_that_names_an_unpicklable_context_value_cannot_travel() -> None:
    def wants_ti(spark: Any, ti: Any = None) -> Any:
        return spark

    with pytest.raises(InputError) as raised:
        travel_form(SourceFunction(wants_ti, context={"ti": threading.Lock()}))
    assert raised.value.field == "source" and "takes the context value 'ti'" in str(raised.value)


def test_an_unpicklable_closure_fails_naming_the_function_and_the_fix() -> None:
    lock = threading.Lock()

    def guarded(spark: Any) -> Any:
        with lock:
            return spark

    with pytest.raises(InputError) as raised:
        travel_form(SourceFunction(guarded))
    message = str(raised.value)
    assert "guarded" in message and "cannot travel to the Spark driver" in message
    assert "execution_mode='spark_connect'" in message


def test_another_python_on_the_driver_is_refused_naming_both_versions() -> None:
    form = travel_form(SourceFunction(_scaled))
    with pytest.raises(InputError) as raised:
        from_travel_form(form["name"], "3.9", form["pickled"])
    assert (
        f"pickled by Python 3.9 on the Airflow worker, and the Spark driver runs Python {python_version()}"
        in (str(raised.value))
    )
    with pytest.raises(InputError, match="cannot be loaded on the Spark driver"):
        from_travel_form("f", python_version(), base64.b64encode(b"not a pickle").decode())
    with pytest.raises(InputError, match="unpickled to int"):
        from_travel_form("f", python_version(), base64.b64encode(pickle.dumps(7)).decode())


def test_the_spec_takes_a_function_here_or_its_travel_form_and_refuses_both_mixed() -> None:
    base = {"operation": "merge", "table": "/t", "options": {"keys": ["k"]}}
    here = parse_spec({**base, "source": {"kind": "callable", "function": _scaled}})
    assert here.source is not None and here.source.function is not None
    assert here.source.function.function is _scaled
    travelled = parse_spec({**base, "source": travel_form(SourceFunction(_scaled))})
    assert travelled.source is not None and travelled.source.function is not None
    with pytest.raises(InputError) as raised:
        parse_spec({**base, "source": {"kind": "callable", "function": _scaled, "pickled": "x"}})
    assert raised.value.field == "source.pickled"
    with pytest.raises(InputError) as raised:
        parse_spec({**base, "source": {"kind": "callable", "function": 42}})
    assert raised.value.field == "source.function"


def test_the_session_goes_by_name_when_the_function_has_a_spark_parameter_else_first() -> None:
    assert takes_session_by_name(_scaled) and takes_session_by_name(lambda **context: None)
    assert not takes_session_by_name(lambda session: session)


def test_the_users_exception_names_the_function_and_keeps_its_own_frames() -> None:
    def lookup(spark: Any) -> Any:
        rates = {"eur": 1}
        return rates["usd"]

    with pytest.raises(SourceFunctionError) as raised:
        SourceFunction(lookup)("session")
    message = str(raised.value)
    assert message.startswith("source function ") and "lookup raised KeyError: 'usd'" in message
    assert 'return rates["usd"]' in message and "def __call__" not in message
    assert pickle.loads(pickle.dumps(raised.value)).name == raised.value.name


def test_the_commit_loop_never_takes_the_users_exception_for_a_conflict() -> None:
    from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
    from airflow_provider_deltacc.occ import run_commit_loop
    from airflow_provider_deltacc.occ.decisions import OperationClass

    attempts: list[int] = []

    def work(attempt: int) -> Any:
        attempts.append(attempt)
        raise SourceFunctionError("f", RuntimeError("io.delta.exceptions.ConcurrentAppendException: no"))

    with pytest.raises(CommitLoopError) as raised:
        run_commit_loop(
            work,
            operation="MERGE",
            table="/t",
            op_class=OperationClass.READ_MODIFY_WRITE,
            policy=CommitRetryPolicy(max_attempts=5),
            owns_txn_identity=False,
        )
    assert attempts == [1] and raised.value.report.attempts[0].outcome == "error"


def test_the_newest_complete_checkpoint_is_read_from_the_listed_files() -> None:
    from airflow_provider_deltacc.contract.checkpoint_names import newest_complete_checkpoint

    log = "s3a://lake/t/_delta_log/"
    files = [
        f"{log}{10:020d}.checkpoint.parquet",
        f"{log}{20:020d}.checkpoint.0000000001.0000000002.parquet",
        f"{log}{20:020d}.checkpoint.0000000002.0000000002.parquet",
        f"{log}{30:020d}.checkpoint.0000000001.0000000003.parquet",  # parts 2 and 3 not written yet
        f"{log}{25:020d}.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        f"{log}{40:020d}.checkpoint.parquet.crc",
    ]
    assert newest_complete_checkpoint(files, latest=100) == 25
    assert newest_complete_checkpoint(files, latest=22) == 20
    assert newest_complete_checkpoint(files[:1], latest=9) is None
    assert newest_complete_checkpoint([], latest=5) is None


def _worker_failure() -> Exception:
    # The shape of the error a Spark Python worker's failed import reaches the client as (its traceback in
    # the text of a Spark error, not an ImportError of this process).
    return RuntimeError(
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker. Traceback (most recent call "
        'last):\n  File "pyspark/serializers.py", line 1, in loads\nModuleNotFoundError: No module named '
        "'deltacc_client_helpers'"
    )


def test_a_module_the_python_workers_cannot_import_is_bad_input_naming_the_function() -> None:
    from airflow_provider_deltacc.engine.source_function import workers_load_the_function

    def work(attempt: int) -> None:
        raise _worker_failure()

    with pytest.raises(InputError) as raised:
        workers_load_the_function(work, "dags.pipeline.enrich")(1)
    assert raised.value.field == "source" and raised.value.value == "dags.pipeline.enrich"
    message = str(raised.value)
    assert "'deltacc_client_helpers', which Spark's Python workers cannot import" in message
    assert "Install the module where those workers run, or inline" in message


def test_an_import_that_failed_in_the_function_itself_stays_the_functions_error() -> None:
    from airflow_provider_deltacc.engine.source_function import unimportable_module

    def imports(spark: Any) -> Any:
        import deltacc_not_installed_anywhere  # type: ignore[import-not-found]  # noqa: F401

    with pytest.raises(SourceFunctionError) as raised:
        SourceFunction(imports)(None)
    assert unimportable_module(raised.value) is None
    wrapped = SourceFunctionError("f", _worker_failure())
    wrapped.__cause__ = _worker_failure()
    assert unimportable_module(wrapped) == ("ModuleNotFoundError", "deltacc_client_helpers")


def test_the_functions_own_module_is_pickled_by_value_while_any_operation_holds_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib
    import sys

    from pyspark import cloudpickle

    from airflow_provider_deltacc.engine.by_value import pickled_by_value

    (tmp_path / "deltacc_dag_file.py").write_text(
        "def tier(amount):\n    return 'gold' if amount >= 100 else 'basic'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("deltacc_dag_file")

    def registered() -> bool:
        return "deltacc_dag_file" in cloudpickle.list_registry_pickle_by_value()

    with pickled_by_value(module.tier):
        with pickled_by_value(module.tier):  # another operation of the same DAG file, in another thread
            assert registered()
        assert registered()
        payload = cloudpickle.dumps(module.tier)  # what a UDF made of it carries to a Python worker
    assert not registered()
    sys.path.remove(str(tmp_path))
    sys.modules.pop("deltacc_dag_file")
    assert pickle.loads(payload)(150) == "gold"  # loads where the DAG file cannot be imported
