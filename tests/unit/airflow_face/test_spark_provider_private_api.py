"""The private members of the apache-spark provider's ``SparkSubmitHook`` that
:class:`~airflow_provider_deltacc.hooks.submit.ReportingSparkSubmitHook` overrides or reads are still there,
with the signatures it was written against. A provider release that changes one fails here, not in a
customer's task."""

from __future__ import annotations

import inspect

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_provider_deltacc.hooks.submit import ReportingSparkSubmitHook

pytestmark = pytest.mark.unit

#: Overridden private methods: name -> the signature (parameters and return annotation) we override.
OVERRIDDEN = {
    "_mask_cmd": "(self, connection_cmd: 'str | list[str]') -> 'str'",
    "_process_spark_submit_log": "(self, itr: 'Iterator[Any]') -> 'None'",
}
#: Private attributes read after ``__init__``: name -> the value a fresh standalone-master hook has.
READ_ATTRIBUTES = {"_submit_sp": None, "_spark_exit_code": None, "_is_kubernetes": False}


def _signature(function: object) -> str:
    return str(inspect.signature(function))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(OVERRIDDEN))
def test_the_overridden_private_methods_keep_their_signature(name: str) -> None:
    assert _signature(getattr(SparkSubmitHook, name)) == OVERRIDDEN[name], (
        f"apache-airflow-providers-apache-spark changed SparkSubmitHook.{name}; update "
        "ReportingSparkSubmitHook's override and this expectation together"
    )
    ours = inspect.signature(getattr(ReportingSparkSubmitHook, name))
    theirs = inspect.signature(getattr(SparkSubmitHook, name))
    assert list(ours.parameters) == list(theirs.parameters)


def test_the_private_attributes_read_are_set_by_the_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_PRIVATE_API", "spark://spark-master:7077")
    hook = SparkSubmitHook(conn_id="deltacc_private_api")
    for name, value in READ_ATTRIBUTES.items():
        assert hasattr(hook, name), f"SparkSubmitHook no longer sets {name}"
        assert getattr(hook, name) == value, name
