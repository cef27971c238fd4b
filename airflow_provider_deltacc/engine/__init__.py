"""Delta Lake operations on Spark, run inside the OCC commit loop.

Sub-modules import pyspark; this package module does not, so that the Airflow side can use
:mod:`airflow_provider_deltacc.engine.delta_jars` without paying for a pyspark import.
"""

from __future__ import annotations
