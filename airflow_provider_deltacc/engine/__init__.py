"""Delta Lake on Spark: what runs against a Spark session, inside the OCC commit loop.

The local session (:mod:`.session`), the table's snapshot read through the session's backend (the JVM
``DeltaLog`` or Spark Connect: :mod:`.backend`, :mod:`.table`), the sources, the operations, an attempt's
commit tags and txn session confs, pinning and clustering, and a source function's own module pickled by
value (:mod:`.by_value`). The modules import pyspark only inside functions or for typing, so the bundle
imports on a driver without Airflow; they run only where a session does: the Spark job
(:mod:`airflow_provider_deltacc.spark_job`, whose source travel pickles a function by value on the Airflow
worker too) and the library API (:mod:`airflow_provider_deltacc.conflict_safe`).

What a job is without Spark (the spec, table names, literals, DDL names, storage safety, retention, txn
identities, commit tags, redaction, the input error) lives in :mod:`airflow_provider_deltacc.contract`; the
jar cache and a Delta session's settings in :mod:`airflow_provider_deltacc.spark_jars`. The Airflow face,
the leases, the turns and the gate never import this package (``tests/unit/test_import_rules.py``).
"""

from __future__ import annotations
