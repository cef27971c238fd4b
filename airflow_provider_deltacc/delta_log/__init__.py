"""JVM-free reads of a Delta table's log with delta-rs: the table's facts and commits for sensors
and triggers (``reads``), the answer a job gets before any Spark starts (``fast_path``), and a job's
report rebuilt when its report line never arrived (``lost_report``), and the table's layout and retention the
gate and the writers' leases read (``table_facts``).
"""

from __future__ import annotations
