"""What a task read and wrote, told to Airflow: Delta tables as assets (``assets``) and OpenLineage
datasets (``openlineage``).
"""

from __future__ import annotations
