"""Arguments of the public API: a name renamed before the first release is refused, naming the new name, and
a provider warning points at the DAG file's line."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from airflow_provider_deltacc.contract.exceptions import short_repr

_OWN_MODULES = ("airflow_provider_deltacc.", "airflow.")


def dag_file_stacklevel() -> int:
    """The stack level of the first frame outside this provider and Airflow: the DAG file's line."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_OWN_MODULES):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


def refuse_renamed(given: Mapping[str, Any], renamed: Mapping[str, str], *, owner: str) -> None:
    """Fail when ``given`` holds a name an argument had before it was renamed.

    Nothing was released under the old names, so one is a mistake to fix in the DAG, not a spelling to keep
    reading; Airflow alone would refuse it as an unknown argument without saying what it is called now.
    ``default_args`` are not read: Airflow passes an operator only the keys it takes, and a DAG's
    ``default_args`` may hold another operator's argument of that name.

    :param given: the caller's keyword arguments.
    :param renamed: old name -> new name.
    :param owner: who takes the arguments (a class or task group factory), for the message.
    :raises TypeError: naming the old name, the value given and the new name.
    """
    for old, new in renamed.items():
        if old in given:
            value = short_repr(given[old])
            raise TypeError(f"{owner} got {old}={value}; it is called {new}: pass {new}={value}")


class RefusesRenamedArguments:
    """For operators and sensors with renamed arguments: ``partial()`` refuses the old names as ``__init__``
    does (with :func:`refuse_renamed`), since Airflow checks ``partial()``'s names itself."""

    #: old name -> new name
    renamed_arguments: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        refuse_renamed(kwargs, cls.renamed_arguments, owner=cls.__name__)
        return super().partial(**kwargs)  # type: ignore[misc]
