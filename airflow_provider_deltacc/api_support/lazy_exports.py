"""Package attributes that load their module on first access, so importing a package stays cheap.

DAG files import the operators, sensors, triggers and hooks packages while they are parsed; a package's
``__init__`` lists which module defines each public class and lets :func:`lazy_exports` do the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names live in its submodules.

    :param package: the package's ``__name__``.
    :param modules: public name -> the submodule (relative to the package) that defines it, or a dotted
        module path for a name another package defines.
    :param namespace: the package's ``globals()``; a loaded name is cached there.
    """

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module if "." in module else f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(modules))

    return __getattr__, __dir__
