"""The JVM options of the tests' Spark drivers. Every driver spark-submit starts reads
``tests/support/spark_conf/spark-defaults.conf``: C1 alone and the serial collector, which spend less CPU in
a JVM that lives seconds (a task's driver, a one-off session). A driver that lives the whole run (the shared
local session, a Connect server) runs thousands of jobs, where C2's compiled code pays back: it keeps
HotSpot's tiered compilation."""

from __future__ import annotations

#: ``--conf`` settings of a driver that lives the whole run (they replace the defaults file's options).
LONG_LIVED_DRIVER_CONF = {"spark.driver.defaultJavaOptions": "-XX:+UseSerialGC"}
