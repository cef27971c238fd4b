"""Object-store credentials from Airflow connections, as Spark's S3A settings and delta-rs storage options."""
