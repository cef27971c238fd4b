"""``python -m airflow_provider_deltacc.advisor DAGS...``: see :mod:`.cli`."""

from __future__ import annotations

import sys

from airflow_provider_deltacc.advisor.cli import main

sys.exit(main())
