"""The provider's command-line tools that need Airflow's settings: ``deltacc-leases`` (:mod:`.leases`), which
reads the lease store's Airflow connection and the ``[deltacc]`` section, over the lease store of
:mod:`airflow_provider_deltacc.leases`.
"""

from __future__ import annotations
