"""The arguments both provider sensors take the same way: their old names refused, and the waiting mode."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from airflow_provider_deltacc.contract.exceptions import refuse_renamed

#: The provider sensors' ``poke_interval`` default, in seconds (BaseSensorOperator's own is 60).
DEFAULT_POKE_INTERVAL = 30.0


def sensor_arguments(
    kwargs: MutableMapping[str, Any], *, owner: str, renamed: Mapping[str, str], deferrable: bool
) -> None:
    """Refuse an old name of the sensor's arguments in ``kwargs``, and set ``mode="reschedule"`` in
    ``kwargs`` for a sensor that does not defer (unless a mode is given).

    :param kwargs: the sensor's remaining keyword arguments, passed on to ``BaseSensorOperator``.
    :param owner: the sensor's class name, for the message.
    :param renamed: the sensor's old argument names -> their names now.
    :param deferrable: whether the sensor waits in the triggerer.
    :raises TypeError: an old name was given.
    """
    refuse_renamed(kwargs, renamed, owner=owner)
    if not deferrable:
        kwargs.setdefault("mode", "reschedule")
