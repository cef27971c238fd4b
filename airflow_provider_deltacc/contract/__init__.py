"""The job contract shared by the Airflow face, the coordination layer and the Spark job: plain Python, no
Airflow, no pyspark."""
