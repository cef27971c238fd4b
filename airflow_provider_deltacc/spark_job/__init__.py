"""The Spark application spark-submit runs: a JSON job spec in, one report line out, an exit code.

The spec is read by the contract (:func:`airflow_provider_deltacc.contract.spec_parse.parse_spec`). This
package module and :mod:`.exit_codes` and :mod:`.report_line` import no pyspark, so the Airflow side can use
them; :mod:`.source_travel` imports pyspark's cloudpickle only when it pickles a source function, and
:mod:`.main` imports pyspark inside its functions.
"""

from __future__ import annotations
