"""TaskFlow decorators: your own PySpark code as the source of a conflict-safe Delta write.

``@task.delta_merge``, ``@task.delta_append`` and ``@task.delta_overwrite_partitions`` turn a function of
the Spark session into the writer operator of the same name: the function returns the DataFrame to write,
and the provider runs the declared write of it inside the commit loop, with everything the operators have
(partition pinning, the exactly-once identity, write leases and turns, classification, in-job retries, the
Airflow retry policy, the report, assets and lineage)::

    @task.delta_merge(table="s3a://lake/balances", keys=["account"])
    def add_interest(spark, ds=None):
        balances = spark.read.format("delta").load("s3a://lake/balances")
        return balances.selectExpr("account", "balance * 1.01 AS balance")

The function gets the session as ``spark``, its own arguments (``add_interest(rate)``, ``.expand(...)``) and
the context values it names, as ``@task.pyspark`` does. It is called again in every attempt, on a fresh
snapshot; see :mod:`airflow_provider_deltacc.contract.source_function`.

The names follow the operators (``DeltaMergeOperator`` is ``@task.delta_merge``): one verb per write kind,
prefixed ``delta_`` so they cannot clash with another provider's ``@task.merge``. UPDATE and DELETE driven by
a DataFrame are MERGEs (``when_matched=[{"action": "delete"}], when_not_matched=[]``), so they need no
decorator of their own.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk.bases.decorator import DecoratedOperator, TaskDecorator, task_decorator_factory

from airflow_provider_deltacc.contract.source_function import SESSION_PARAMETER
from airflow_provider_deltacc.contract.spec import SourceSpec
from airflow_provider_deltacc.contract.spec_sources import callable_source
from airflow_provider_deltacc.lineage.assets import is_template, table_asset
from airflow_provider_deltacc.operators.sources import bind_source_function, check_source_function
from airflow_provider_deltacc.operators.write import (
    DeltaAppendOperator,
    DeltaMergeOperator,
    DeltaOverwritePartitionsOperator,
)

if TYPE_CHECKING:
    from airflow.sdk import Context


class _SourceFunctionTask(DecoratedOperator):
    """The decorated function is the writer's source function (see the module docstring)."""

    custom_operator_name: ClassVar[str]

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any],
        op_args: Collection[Any] | None = None,
        op_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        check_source_function(python_callable, task_id=str(kwargs.get("task_id")), field="python_callable")
        _hide_session_parameter(python_callable)
        kwargs.setdefault("do_xcom_push", True)  # TaskFlow: the task's value is its commit report
        super().__init__(
            python_callable=python_callable,
            op_args=op_args,
            op_kwargs=op_kwargs,
            kwargs_to_upstream={"source": python_callable},
            **kwargs,
        )

    def build_source(self, context: Context) -> SourceSpec | None:
        function = bind_source_function(
            self.python_callable, context, args=tuple(self.op_args), kwargs=self.op_kwargs
        )
        return callable_source(function=function)


def _hide_session_parameter(function: Callable[..., Any]) -> None:
    """Let Airflow bind and check the function's own arguments without the session, which the engine passes
    when it calls the function (``@task.pyspark`` gives ``spark`` a None default instead, which breaks a
    function whose later parameters have none: ``def f(spark, amount)``)."""
    signature = inspect.signature(function)
    parameters = [p for p in signature.parameters.values() if p.name != SESSION_PARAMETER]
    function.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]


def _without_source(fields: Sequence[str]) -> tuple[str, ...]:
    return (*[name for name in fields if name != "source"], "op_args", "op_kwargs")


class DeltaMergeDecoratedOperator(_SourceFunctionTask, DeltaMergeOperator):
    """``@task.delta_merge``: MERGE what the decorated function returns (see :class:`DeltaMergeOperator`)."""

    custom_operator_name = "@task.delta_merge"
    template_fields: Sequence[str] = _without_source(DeltaMergeOperator.template_fields)


class DeltaAppendDecoratedOperator(_SourceFunctionTask, DeltaAppendOperator):
    """``@task.delta_append``: append what the decorated function returns (see
    :class:`DeltaAppendOperator`)."""

    custom_operator_name = "@task.delta_append"
    template_fields: Sequence[str] = _without_source(DeltaAppendOperator.template_fields)


class DeltaOverwritePartitionsDecoratedOperator(_SourceFunctionTask, DeltaOverwritePartitionsOperator):
    """``@task.delta_overwrite_partitions``: replace the partitions of what the decorated function returns
    (see :class:`DeltaOverwritePartitionsOperator`)."""

    custom_operator_name = "@task.delta_overwrite_partitions"
    template_fields: Sequence[str] = _without_source(DeltaOverwritePartitionsOperator.template_fields)


def _factory(operator_class: type[_SourceFunctionTask]) -> Callable[..., TaskDecorator]:
    def decorator(python_callable: Callable[..., Any] | None = None, **kwargs: Any) -> TaskDecorator:
        table = kwargs.get("table")
        if isinstance(table, str) and not is_template(table) and kwargs.get("emit_asset", True):
            # A mapped task's __init__ runs only when it runs: declare the table's asset now, as the
            # operators' partial() does (the unmapped task finds it there and adds nothing).
            outlets = list(kwargs.get("outlets") or [])
            asset = table_asset(table, task_id=str(kwargs.get("task_id", "")))
            kwargs["outlets"] = outlets if asset in outlets else [*outlets, asset]
        return task_decorator_factory(
            python_callable=python_callable,
            multiple_outputs=False,
            decorated_operator_class=operator_class,
            **kwargs,
        )

    decorator.__name__ = operator_class.custom_operator_name.removeprefix("@task.") + "_task"
    decorator.__doc__ = f"{operator_class.custom_operator_name}: see {operator_class.__name__}."
    return decorator


delta_merge_task = _factory(DeltaMergeDecoratedOperator)
delta_append_task = _factory(DeltaAppendDecoratedOperator)
delta_overwrite_partitions_task = _factory(DeltaOverwritePartitionsDecoratedOperator)
