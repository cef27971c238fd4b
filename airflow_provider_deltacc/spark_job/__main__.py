"""Entry point for ``python -m airflow_provider_deltacc.spark_job`` and for spark-submit (run as a file)."""

from __future__ import annotations

import sys

from airflow_provider_deltacc.spark_job.main import main

if __name__ == "__main__":
    sys.exit(main())
