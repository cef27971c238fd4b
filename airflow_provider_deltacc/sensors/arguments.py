"""The arguments both provider sensors take the same way: their renamed spellings and the waiting mode."""

from __future__ import annotations

from collections.abc import MutableMapping
from datetime import timedelta
from typing import Any

from airflow_provider_deltacc.api_support.deprecations import renamed_argument

#: The provider sensors' ``poke_interval`` default, in seconds (BaseSensorOperator's own is 60).
DEFAULT_POKE_INTERVAL = 30.0


def sensor_arguments(
    kwargs: MutableMapping[str, Any],
    *,
    owner: str,
    old_partition_name: str,
    partition_values: Any,
    poke_interval: float | timedelta,
    deferrable: bool,
) -> tuple[Any, float | timedelta]:
    """``partition_values`` and ``poke_interval`` with their deprecated spellings taken out of ``kwargs``,
    and ``mode="reschedule"`` set in ``kwargs`` for a sensor that does not defer (unless a mode is given).

    :param kwargs: the sensor's remaining keyword arguments, passed on to ``BaseSensorOperator``.
    :param owner: the sensor's class name, for the warnings.
    :param old_partition_name: the sensor's old name of ``partition_values``.
    :param partition_values: what the caller gave as ``partition_values``.
    :param poke_interval: what the caller gave as ``poke_interval``.
    :param deferrable: whether the sensor waits in the triggerer.
    """
    partition_values = renamed_argument(
        kwargs, old_partition_name, "partition_values", partition_values, owner=owner
    )
    poke_interval = renamed_argument(
        kwargs, "poll_interval", "poke_interval", poke_interval, owner=owner, default=DEFAULT_POKE_INTERVAL
    )
    if not deferrable:
        kwargs.setdefault("mode", "reschedule")
    return partition_values, poke_interval
