"""Handles on JVM classes by their full name.

``spark._jvm.io.delta.tables.DeltaTable`` resolves each dotted part with a py4j round trip, and the JVM
looks each partial name up as a class first: a miss scans every jar on the classpath, once per import of
the gateway's view. Jobs that do little else spend a noticeable share of their CPU there, so the engine
names the classes it calls outright.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_TABLE = "io.delta.tables.DeltaTable"
HADOOP_PATH = "org.apache.hadoop.fs.Path"
IO_UTILS = "org.apache.commons.io.IOUtils"
SCALA_OPTION = "scala.Option"


def java_class(spark: SparkSession, name: str) -> Any:
    """Return a py4j handle on the JVM class ``name`` (static members and constructor), without lookups.

    :param spark: a session of the JVM.
    :param name: the class's fully qualified name, e.g. ``io.delta.tables.DeltaTable``.
    """
    from py4j.java_gateway import JavaClass

    gateway: Any = spark.sparkContext._gateway
    return JavaClass(name, gateway._gateway_client)


def scala_none(spark: SparkSession) -> Any:
    """Return Scala's ``None`` (``Option.empty()``).

    :param spark: a session of the JVM.
    """
    return java_class(spark, SCALA_OPTION).empty()
