"""``get_provider_info()`` lists every operator, sensor, trigger, hook, extra link and plugin the package
defines: they are found by importing every module of the package, not from a list kept by hand."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache
from types import ModuleType

import pytest
from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseHook, BaseOperator, BaseOperatorLink, BaseSensorOperator
from airflow.triggers.base import BaseTrigger

import airflow_provider_deltacc
from airflow_provider_deltacc.get_provider_info import get_provider_info

pytestmark = pytest.mark.unit

#: Modules that run something when imported (spark-submit's entry point), not libraries.
_ENTRY_POINTS = ("__main__",)


@cache
def _modules() -> list[ModuleType]:
    found = []
    prefix = airflow_provider_deltacc.__name__ + "."
    for info in pkgutil.walk_packages(airflow_provider_deltacc.__path__, prefix):
        if info.name.rsplit(".", 1)[-1] in _ENTRY_POINTS:
            continue
        found.append(importlib.import_module(info.name))
    return found


def _public_classes(base: type) -> dict[str, type]:
    """``module.Class`` of every class the package defines that subclasses ``base`` and is meant to be used
    as it is: public (no ``_``), not abstract, and not a base the package builds others on."""
    classes: dict[str, type] = {}
    for module in _modules():
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, base):
                continue
            if name.startswith("_") or inspect.isabstract(cls) or _is_a_base(cls):
                continue
            classes[f"{module.__name__}.{name}"] = cls
    return classes


def _is_a_base(cls: type) -> bool:
    prefix = airflow_provider_deltacc.__name__ + "."
    return any(sub.__module__.startswith(prefix) for sub in cls.__subclasses__())


def _listed_modules(section: str) -> set[str]:
    return {module for entry in get_provider_info()[section] for module in entry["python-modules"]}


def _modules_of(classes: dict[str, type]) -> set[str]:
    return {cls.__module__ for cls in classes.values()}


def test_every_operator_module_is_listed() -> None:
    operators = {
        path: cls
        for path, cls in _public_classes(BaseOperator).items()
        if not issubclass(cls, BaseSensorOperator)
    }
    assert operators, "the walk found no operator"
    assert _modules_of(operators) == _listed_modules("operators")


@pytest.mark.parametrize(
    ("base", "section"), [(BaseSensorOperator, "sensors"), (BaseTrigger, "triggers"), (BaseHook, "hooks")]
)
def test_every_sensor_trigger_and_hook_module_is_listed(base: type, section: str) -> None:
    classes = _public_classes(base)
    assert classes, f"the walk found no {section}"
    assert _modules_of(classes) == _listed_modules(section)


def test_every_extra_link_is_listed() -> None:
    links = _public_classes(BaseOperatorLink)
    assert links, "the walk found no extra link"
    assert set(links) == set(get_provider_info()["extra-links"])


def test_every_plugin_is_listed() -> None:
    plugins = _public_classes(AirflowPlugin)
    assert plugins, "the walk found no plugin"
    assert set(plugins) == {entry["plugin-class"] for entry in get_provider_info()["plugins"]}


def test_every_task_decorator_is_listed_and_builds_its_operator() -> None:
    from airflow.sdk import task
    from airflow.sdk.bases.decorator import DecoratedOperator

    listed = {entry["name"]: entry["class-name"] for entry in get_provider_info()["task-decorators"]}
    decorated = {
        cls.custom_operator_name.removeprefix("@task."): cls
        for cls in _public_classes(DecoratedOperator).values()
    }
    assert set(listed) == set(decorated) == {"delta_merge", "delta_append", "delta_overwrite_partitions"}
    for name, path in listed.items():
        module, _, attribute = path.rpartition(".")
        assert getattr(importlib.import_module(module), attribute) is not None

        def build(spark: object) -> None: ...

        # Airflow's own `task` finds it through the provider manager.
        assert getattr(task, name)(table="/tmp/t")(build).operator_class is decorated[name]
