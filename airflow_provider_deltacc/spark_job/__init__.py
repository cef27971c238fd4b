"""The Spark application spark-submit runs: a JSON job spec in, one report line out, an exit code.

What it shares with the submitter lives in the contract: the spec's parser
(:mod:`airflow_provider_deltacc.contract.spec_parse`), the exit codes
(:mod:`airflow_provider_deltacc.contract.exit_codes`) and the report file it leaves
(:mod:`airflow_provider_deltacc.contract.report_file`). This package module and :mod:`.report_line` import no
pyspark, so the Airflow side can use them; :mod:`.source_travel` imports pyspark's cloudpickle only when it
pickles a source function, and :mod:`.main` and :mod:`.leave_report` import pyspark inside their functions.
"""

from __future__ import annotations
