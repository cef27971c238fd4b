"""Delta on Spark, deployed: the jars every Spark the provider starts gets (:mod:`.delta_jars`,
:mod:`.s3_jars`), the settings of a Delta session (:mod:`.delta_conf`) and pyspark's process-wide Spark
Connect mark (:mod:`.connect_mode`).

Plain Python, no pyspark import: the Airflow worker builds spark-submit and Spark Connect command lines with
it, and the Spark job's local session reads the same jar cache.
"""

from __future__ import annotations
