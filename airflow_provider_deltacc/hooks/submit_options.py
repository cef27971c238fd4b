"""``submit_options``: the ``SparkSubmitHook`` arguments a task may add, checked before anything starts.

The hook sets some arguments itself. Of those, ``jars``, ``py_files`` and ``files`` take the task's own
after the provider's (the Delta and S3 jars, the core bundle), and ``env_vars`` adds the task's variables
under the driver's own (``PYSPARK_PYTHON``, the log settings). The others it owns outright: ``conf`` (use
``spark_conf``), ``name`` (the job is named after its task), ``application_args``, ``java_class`` and
``conn_id`` (use ``conn_id``). A key ``SparkSubmitHook`` does not take, or one of those, is refused with
the key, its fix and the keys that are accepted.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from functools import cache
from typing import Any

from airflow_provider_deltacc.exceptions import DeltaCCInputError

#: Arguments the provider sets and the task's own value is added to (``files`` is joined where the spec
#: file is shipped, see :meth:`~airflow_provider_deltacc.hooks.submit.SparkSubmitRunner.ship_spec`).
JOINED = frozenset({"jars", "py_files", "env_vars"})
#: Arguments the provider owns, and where the task says what it wants instead.
OWNED = {
    "conf": "put Spark settings in spark_conf",
    "name": "the job is named after its task (deltacc-<dag>-<task>)",
    "application_args": "the job's arguments are its spec",
    "java_class": "the job is the provider's Python application",
    "conn_id": "pass conn_id to the operator",
}


@cache
def accepted() -> frozenset[str]:
    """The keyword arguments ``SparkSubmitHook`` takes, less those the provider owns."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    names = set(inspect.signature(SparkSubmitHook.__init__).parameters) - {"self", "args", "kwargs"}
    return frozenset(names - set(OWNED))


def check_submit_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options as given, once every key is one a task may set.

    :param options: the task's ``submit_options``.
    :raises DeltaCCInputError: naming ``submit_options.<key>``, the fix and the accepted keys.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise DeltaCCInputError(
            f"submit_options={options!r} must be a dict of SparkSubmitHook arguments, e.g. "
            '{"driver_memory": "2g"}',
            field="submit_options",
            value=options,
        )
    for key in options:
        if key in OWNED:
            raise DeltaCCInputError(
                f"submit_options.{key}: the provider sets it itself; {OWNED[key]}",
                field=f"submit_options.{key}",
                value=options[key],
            )
        if key not in accepted():
            raise DeltaCCInputError(
                f"submit_options.{key}: SparkSubmitHook takes no such argument; use one of "
                f"{', '.join(sorted(accepted()))}",
                field=f"submit_options.{key}",
                value=options[key],
            )
    return dict(options)


def joined(ours: list[str], theirs: Any) -> str:
    """A comma-separated list: the provider's entries, then the task's (a string or a list)."""
    extra = [theirs] if isinstance(theirs, str) else list(theirs or [])
    return ",".join([*ours, *(str(item) for item in extra if item)])
