"""The Delta conflicts view: an Airflow 3 UI plugin (a FastAPI app and pages in the UI); see ``plugin``."""
