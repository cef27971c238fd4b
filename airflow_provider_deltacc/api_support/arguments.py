"""Arguments of the public API: ``partial()`` refuses a name renamed before the first release as ``__init__``
does (:func:`~airflow_provider_deltacc.contract.exceptions.refuse_renamed`), and a provider warning points at
the DAG file's line."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from airflow_provider_deltacc.contract.exceptions import refuse_renamed

_OWN_MODULES = ("airflow_provider_deltacc.", "airflow.")


def dag_file_stacklevel() -> int:
    """The stack level of the first frame outside this provider and Airflow: the DAG file's line."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_OWN_MODULES):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


class RefusesRenamedArguments:
    """For operators and sensors with renamed arguments: ``partial()`` refuses the old names as ``__init__``
    does (with :func:`refuse_renamed`), since Airflow checks ``partial()``'s names itself."""

    #: old name -> new name
    renamed_arguments: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        refuse_renamed(kwargs, cls.renamed_arguments, owner=cls.__name__)
        return super().partial(**kwargs)  # type: ignore[misc]
