"""The maintenance gate: may OPTIMIZE or VACUUM run on a table now, and if not, until when and why.

- :class:`WriteWindow`, :func:`windows_for`: declared write windows (cron + duration, or explicit times) per
  table, during which a table is being written.
- :func:`decide_gate`, :class:`GateDecision`: the gate itself, asked of the live leases and the declared
  windows; :data:`DELTA_DEFAULT_RETENTION_HOURS` is the retention it assumes when a table says none.
- :class:`GateRequest`, :func:`poll_delay`: a maintenance run's question to the gate as plain data that
  travels from an operator to a trigger, and how long to wait before asking again.

Imports the standard library, croniter, the job contract, the conflict matrix and the leases (``leases/``);
never the turns, the engine, the Spark job, the hooks, the operators or the deployment settings
(``tests/unit/test_import_rules.py``): it runs in operators, triggers and the triggerer alike.
"""

from __future__ import annotations

from airflow_provider_deltacc.gate.decision import DELTA_DEFAULT_RETENTION_HOURS, GateDecision, decide_gate
from airflow_provider_deltacc.gate.declared import WriteWindow, windows_for
from airflow_provider_deltacc.gate.request import GateRequest, poll_delay

__all__ = [
    "DELTA_DEFAULT_RETENTION_HOURS",
    "GateDecision",
    "GateRequest",
    "WriteWindow",
    "decide_gate",
    "poll_delay",
    "windows_for",
]
