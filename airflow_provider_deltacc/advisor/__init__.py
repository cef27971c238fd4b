"""The conflict advisor: predict which provider tasks can make each other fail, before they run.

Given DAGs (objects, files or folders), it finds every pair of provider write/maintenance tasks that can
run at the same time on one table (:mod:`.pairs`: dependency paths, schedules, mapped instances, concurrent
runs), reads what each does from its arguments without running anything (:mod:`.tasks`), judges the pair
with the conflict matrix (:mod:`.classify`) and suggests a fix (:mod:`.fixes`); :func:`.analysis.analyse`
ties them together. :mod:`.observed` compares the prediction with the commit reports of past runs;
:mod:`.cli` is ``python -m airflow_provider_deltacc.advisor`` / ``deltacc-advisor``.

The cheap parse-time warnings the operators emit on their own live with them
(:mod:`airflow_provider_deltacc.operators.parse_time`); the advisor reads operators, never the other way
round. Nothing here imports pyspark.
"""

from __future__ import annotations
