"""Renamed arguments keep working for one release, with a :class:`DeprecationWarning` naming the new name."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping, MutableMapping
from typing import Any, ClassVar

_OWN_MODULES = ("airflow_provider_deltacc.", "airflow.")
_UNSET: Any = object()


def dag_file_stacklevel() -> int:
    """The stack level of the first frame outside this provider and Airflow: the DAG file's line."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_OWN_MODULES):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


def renamed_argument(
    kwargs: MutableMapping[str, Any], old: str, new: str, value: Any, *, owner: str, default: Any = _UNSET
) -> Any:
    """Take a renamed argument's old spelling out of ``kwargs``: warn, and return the value to use.

    An operator's ``default_args`` (its own merged with its DAG's, as Airflow passes them to ``__init__``) are
    read too: Airflow fills only the parameters the signature names from them, so an old name there would
    otherwise be ignored without a word. An argument given directly, or under its new name in
    ``default_args``, wins over an old name in ``default_args``; an old name given directly wins over the
    new name in ``default_args`` (a DAG's ``default_args={"poke_interval": 60}`` does not make a sensor's
    ``poll_interval=10`` ambiguous).

    :param kwargs: the caller's remaining keyword arguments; ``old`` is removed from them.
    :param old: the argument's old name.
    :param new: its new name.
    :param value: what the caller got for ``new``.
    :param owner: who takes the argument (a class or task group factory), for the messages.
    :param default: ``new``'s default: given both ``old`` and a ``new`` that differs from it, the call is
        ambiguous and fails. Unset: any ``new`` other than None counts as given.
    :raises TypeError: both names were given.
    """
    given = value is not None if default is _UNSET else value != default
    defaults = kwargs.get("default_args")
    if old not in kwargs:
        if isinstance(defaults, Mapping) and old in defaults and new not in defaults and not given:
            _warn(owner, old, new, defaults[old], where="default_args")
            return defaults[old]
        return value
    old_value = kwargs.pop(old)
    from_defaults = isinstance(defaults, Mapping) and new in defaults and defaults[new] is value
    if given and not from_defaults:
        raise TypeError(f"{owner}: {old!r} is the old name of {new!r}; give only {new}=")
    _warn(owner, old, new, old_value)
    return old_value


def _warn(owner: str, old: str, new: str, value: Any, *, where: str = "") -> None:
    found = " (in default_args)" if where else ""
    warnings.warn(
        f"{owner}: {old!r}{found} is deprecated and will be removed in the next release; use {new}={value!r}",
        DeprecationWarning,
        stacklevel=dag_file_stacklevel(),
    )


class RenamesArguments:
    """For operators and sensors with renamed arguments: ``partial()`` takes the old names too (``__init__``
    takes them with :func:`renamed_argument`), since Airflow checks ``partial()``'s names itself."""

    #: old name -> new name
    renamed_arguments: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        for old, new in cls.renamed_arguments.items():
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{cls.__name__}: {old!r} is the old name of {new!r}; give only {new}=")
                kwargs[new] = kwargs.pop(old)
                _warn(cls.__name__, old, new, kwargs[new])
        return super().partial(**kwargs)  # type: ignore[misc]
