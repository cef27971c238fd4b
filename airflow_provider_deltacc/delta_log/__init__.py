"""JVM-free reads of a Delta table's log with delta-rs: the table's facts and commits for sensors
and triggers (``reads``), the answer a job gets before any Spark starts (``fast_path``), and a job's
outcome learnt from the log when its report never arrived (``outcome_recovery``).
"""

from __future__ import annotations
