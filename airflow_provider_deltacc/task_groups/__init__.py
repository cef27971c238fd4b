"""Reusable task groups for the patterns that avoid Delta conflicts by design.

- :func:`staging_append_then_merge`: N concurrent blind appends into a staging table (they never
  conflict), then ONE partition-pinned MERGE of this run's batches into the target, then a cleanup that
  deletes exactly the batches that were merged.
- :func:`table_maintenance`: wait for a quiet window, OPTIMIZE the closed partitions (optional Z-order),
  then VACUUM with the retention guard.

Importing this package never imports pyspark: the factories only build operators.
"""

from __future__ import annotations

from airflow_provider_deltacc.task_groups.maintenance import table_maintenance
from airflow_provider_deltacc.task_groups.staging import staging_append_then_merge
from airflow_provider_deltacc.task_groups.staging_batches import merge_source_query, tag_source

__all__ = ["merge_source_query", "staging_append_then_merge", "table_maintenance", "tag_source"]
