"""The job contract shared by the Airflow face, the coordination layer and the Spark job: plain Python, no
Airflow, no pyspark (``tests/unit/test_import_rules.py``); what the Spark driver imports of it ships to the
driver in the bundle (:mod:`airflow_provider_deltacc.hooks.bundle`).

The job spec (:mod:`.spec`) and a source function (:mod:`.source_function`), the operation registry
(:mod:`.operations`: ``OperationClass``), the conflict-checker kinds of the operations (:mod:`.op_kinds`:
``OpKind``, only the worker's) and the SQL text they read (:mod:`.sql_text`), the
input error (:mod:`.exceptions`), a table (:mod:`.table`) and where it is (:mod:`.table_location`), SQL
literals and identifiers (:mod:`.literals`), DDL column lists (:mod:`.ddl`), storage safety
(:mod:`.storage_safety`), retention (:mod:`.retention`), txn identities (:mod:`.txn`), commit tags and txn
records in the log (:mod:`.commits`), and the redaction of secrets (:mod:`.redaction`).
"""
